//! The step functions' limits and sizes ([`PipelineConfig`], the sheet
//! path's included): what `sluice status` reads too, without any
//! connection's variables.

use crate::variables::part;
use crate::{ConfigError, EnvSource, in_range};
use sluice_pipeline::{PipelineConfig, SheetConfig};
use sluice_redis::BucketSpec;
use sluice_sheets::values::ValueInputOption;
use std::time::Duration;

/// Inline Map iterations Step Functions runs at once at most.
const MAX_MAP_CONCURRENCY: u32 = 40;
/// SQS's upper bound for a redrive policy's maxReceiveCount.
const MAX_RECEIVE_COUNT_LIMIT: u32 = 1000;
/// SQS's longest message delay, which carries a flush's wait.
const MAX_FLUSH_DELAY_SECS: u64 = 900;

part! {
    struct PipelineVars(d = PipelineConfig::default()) {
        bucket_capacity: u32 = d.bucket.capacity, "no", "each mall's Admin API bucket size";
        bucket_leak_per_sec: f64 = d.bucket.leak_per_sec, "no", "its leak rate, calls per second";
        bucket_margin_ms: u64 = millis(d.bucket.margin), "no",
            "room left unused in the bucket against network jitter, as time";
        inline_wait_max_ms: u64 = millis(d.inline_wait_max), "no", "budget waits up to this are waited inside the step";
        step_wait_budget_ms: u64 = millis(d.step_wait_budget), "no", "most time one invocation spends waiting";
        token_refresh_margin_secs: u64 = d.token_refresh_margin.as_secs(), "no", "refresh a token this close to expiry";
        refresh_lock_lease_secs: u64 = d.refresh_lock_lease.as_secs(), "no", "lease of a mall's token-refresh lock";
        max_receive_count: u32 = d.max_receive_count, "no",
            "the queue's maxReceiveCount, 1–1000; must match the redrive policy";
        snapshot_shards: u32 = d.snapshot_shards, "no",
            "snapshot streams the malls are spread over; the same for every function";
        map_max_concurrency: u32 = d.map_max_concurrency, "no", "FIFO groups of a batch processed at once, 1–40";
        trace_retention_secs: u64 = d.trace_retention.as_secs(), "no", "how long event traces are kept";
        google_project: String = d.sheets.google_project.clone(), "no",
            "the Google Cloud project whose quota every credential shares";
        sheets_writes_per_minute: u32 = d.sheets.per_credential.0, "no", "Sheets writes per minute per credential";
        sheets_project_writes_per_minute: u32 = d.sheets.per_project.0, "no", "Sheets writes per minute per project";
        sheets_quota_margin_ms: u64 = millis(d.sheets.quota_margin), "no",
            "added to each quota window against network jitter, at most 10000";
        sheets_max_rows: usize = d.sheets.max_rows, "no", "rows per append, 1–100000";
        sheets_flush_threshold: u64 = d.sheets.flush_threshold, "no", "flush at once from this many buffered rows";
        sheets_max_delay_secs: u64 = d.sheets.max_delay.as_secs(), "no", "below the threshold, flush after this, at most 900";
        sheets_apply_horizon_secs: u64 = d.sheets.apply_horizon.as_secs(), "no",
            "an unanswered append may still land this long (Google: up to 180 s); 1–900";
        sheets_value_input: ValueInputOption = d.sheets.value_input, "no",
            "`RAW` (strings stored as sent) or `USER_ENTERED` (read as typed in the UI, formula-looking text kept \
             text): docs/security.md";
    }
}

fn millis(duration: Duration) -> u64 {
    duration.as_millis() as u64
}

/// The pipeline's settings from `source`, each checked against its range.
pub fn pipeline_config(source: &EnvSource) -> Result<PipelineConfig, ConfigError> {
    let v: PipelineVars = source.extract()?;
    in_range("bucket_capacity", v.bucket_capacity, 1, None)?;
    if !(v.bucket_leak_per_sec.is_finite() && v.bucket_leak_per_sec > 0.0) {
        return Err(ConfigError::invalid("bucket_leak_per_sec", format!("{} is not above 0", v.bucket_leak_per_sec)));
    }
    in_range("bucket_margin_ms", v.bucket_margin_ms, 0, Some(10_000))?;
    in_range("refresh_lock_lease_secs", v.refresh_lock_lease_secs, 1, None)?;
    in_range("max_receive_count", v.max_receive_count, 1, Some(MAX_RECEIVE_COUNT_LIMIT))?;
    in_range("snapshot_shards", v.snapshot_shards, 1, None)?;
    in_range("map_max_concurrency", v.map_max_concurrency, 1, Some(MAX_MAP_CONCURRENCY))?;
    in_range("trace_retention_secs", v.trace_retention_secs, 1, None)?;
    in_range("sheets_writes_per_minute", v.sheets_writes_per_minute, 1, None)?;
    in_range("sheets_project_writes_per_minute", v.sheets_project_writes_per_minute, 1, None)?;
    in_range("sheets_quota_margin_ms", v.sheets_quota_margin_ms, 0, Some(10_000))?;
    in_range("sheets_max_rows", v.sheets_max_rows, 1, Some(100_000))?;
    in_range("sheets_flush_threshold", v.sheets_flush_threshold, 1, None)?;
    in_range("sheets_max_delay_secs", v.sheets_max_delay_secs, 0, Some(MAX_FLUSH_DELAY_SECS))?;
    in_range("sheets_apply_horizon_secs", v.sheets_apply_horizon_secs, 1, Some(MAX_FLUSH_DELAY_SECS))?;
    let minute = Duration::from_secs(60);
    let sheets = SheetConfig {
        google_project: v.google_project,
        per_credential: (v.sheets_writes_per_minute, minute),
        per_project: (v.sheets_project_writes_per_minute, minute),
        quota_margin: Duration::from_millis(v.sheets_quota_margin_ms),
        max_rows: v.sheets_max_rows,
        flush_threshold: v.sheets_flush_threshold,
        max_delay: Duration::from_secs(v.sheets_max_delay_secs),
        value_input: v.sheets_value_input,
        apply_horizon: Duration::from_secs(v.sheets_apply_horizon_secs),
        ..SheetConfig::default()
    };
    Ok(PipelineConfig {
        bucket: BucketSpec::new(v.bucket_capacity, v.bucket_leak_per_sec)
            .with_margin(Duration::from_millis(v.bucket_margin_ms)),
        inline_wait_max: Duration::from_millis(v.inline_wait_max_ms),
        step_wait_budget: Duration::from_millis(v.step_wait_budget_ms),
        token_refresh_margin: Duration::from_secs(v.token_refresh_margin_secs),
        refresh_lock_lease: Duration::from_secs(v.refresh_lock_lease_secs),
        max_receive_count: v.max_receive_count,
        snapshot_shards: v.snapshot_shards,
        map_max_concurrency: v.map_max_concurrency,
        trace_retention: Duration::from_secs(v.trace_retention_secs),
        sheets,
        ..PipelineConfig::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<PipelineConfig, ConfigError> {
        pipeline_config(&EnvSource::from_pairs(pairs.iter().copied()))
    }

    #[test]
    fn unset_is_the_library_default() {
        assert_eq!(config(&[]).unwrap(), PipelineConfig::default());
        // Strings reach the sheet as given unless a deployment opts into USER_ENTERED.
        assert_eq!(config(&[]).unwrap().sheets.value_input, ValueInputOption::Raw);
        let raw = config(&[("SLUICE_SHEETS_VALUE_INPUT", "RAW")]).unwrap();
        assert_eq!(raw.sheets.value_input, ValueInputOption::Raw);
    }

    #[test]
    fn every_variable_overrides_its_default() {
        let c = config(&[
            ("SLUICE_BUCKET_CAPACITY", "10"),
            ("SLUICE_BUCKET_LEAK_PER_SEC", "0.5"),
            ("SLUICE_INLINE_WAIT_MAX_MS", "250"),
            ("SLUICE_STEP_WAIT_BUDGET_MS", "0"),
            ("SLUICE_TOKEN_REFRESH_MARGIN_SECS", "120"),
            ("SLUICE_REFRESH_LOCK_LEASE_SECS", "10"),
            ("SLUICE_MAX_RECEIVE_COUNT", "3"),
            ("SLUICE_SNAPSHOT_SHARDS", "4"),
            ("SLUICE_MAP_MAX_CONCURRENCY", "40"),
            ("SLUICE_TRACE_RETENTION_SECS", "3600"),
            ("SLUICE_GOOGLE_PROJECT", "acme"),
            ("SLUICE_SHEETS_WRITES_PER_MINUTE", "30"),
            ("SLUICE_SHEETS_PROJECT_WRITES_PER_MINUTE", "100"),
            ("SLUICE_SHEETS_QUOTA_MARGIN_MS", "0"),
            ("SLUICE_SHEETS_MAX_ROWS", "500"),
            ("SLUICE_SHEETS_FLUSH_THRESHOLD", "500"),
            ("SLUICE_SHEETS_MAX_DELAY_SECS", "10"),
            ("SLUICE_SHEETS_VALUE_INPUT", "USER_ENTERED"),
        ])
        .unwrap();
        assert_eq!(c.bucket, BucketSpec::new(10, 0.5));
        assert_eq!((c.inline_wait_max, c.step_wait_budget), (Duration::from_millis(250), Duration::ZERO));
        assert_eq!((c.token_refresh_margin, c.refresh_lock_lease), (Duration::from_secs(120), Duration::from_secs(10)));
        assert_eq!((c.max_receive_count, c.snapshot_shards, c.map_max_concurrency), (3, 4, 40));
        assert_eq!(c.trace_retention, Duration::from_secs(3600));
        let s = c.sheets;
        assert_eq!(s.google_project, "acme");
        assert_eq!((s.per_credential.0, s.per_project.0), (30, 100));
        assert_eq!((s.quota_margin, s.max_rows, s.flush_threshold), (Duration::ZERO, 500, 500));
        assert_eq!((s.max_delay, s.value_input), (Duration::from_secs(10), ValueInputOption::UserEntered));
    }

    #[test]
    fn out_of_range_and_malformed_values_are_named() {
        for (name, value) in [
            ("SLUICE_BUCKET_CAPACITY", "0"),
            ("SLUICE_BUCKET_CAPACITY", "-1"),
            ("SLUICE_BUCKET_LEAK_PER_SEC", "0"),
            ("SLUICE_BUCKET_LEAK_PER_SEC", "NaN"),
            ("SLUICE_INLINE_WAIT_MAX_MS", "1s"),
            ("SLUICE_REFRESH_LOCK_LEASE_SECS", "0"),
            ("SLUICE_MAX_RECEIVE_COUNT", "1001"),
            ("SLUICE_SNAPSHOT_SHARDS", "0"),
            ("SLUICE_MAP_MAX_CONCURRENCY", "41"),
            ("SLUICE_TRACE_RETENTION_SECS", "0"),
            ("SLUICE_SHEETS_QUOTA_MARGIN_MS", "10001"),
            ("SLUICE_SHEETS_MAX_ROWS", "0"),
            ("SLUICE_SHEETS_MAX_DELAY_SECS", "901"),
            ("SLUICE_SHEETS_VALUE_INPUT", "FORMULA"),
        ] {
            let err = config(&[(name, value)]).unwrap_err();
            assert_eq!(err.name(), name, "{name}={value}: {err}");
            assert!(matches!(err, ConfigError::Invalid { .. }), "{err}");
        }
    }
}

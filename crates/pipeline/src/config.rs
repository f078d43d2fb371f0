//! The pipeline's settings: one struct, read once (from flags in `sluice
//! dev`, from environment variables in Lambda), never per call.

use sluice_redis::BucketSpec;
use sluice_sheets::values::ValueInputOption;
use std::time::Duration;

/// How the steps behave.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineConfig {
    /// Each mall's Admin API bucket, as Cafe24 meters it (40, leaking 2 /s).
    pub bucket: BucketSpec,
    /// A budget wait up to this long is waited inside the step, exactly;
    /// longer ones go back to the state machine as a Wait state, whose
    /// seconds are whole (Step Functions allows no fractions).
    pub inline_wait_max: Duration,
    /// Most time one step invocation spends waiting in total, so a Lambda
    /// never idles long; past it the wait goes to the state machine.
    pub step_wait_budget: Duration,
    /// An access token this close to expiry is refreshed first.
    pub token_refresh_margin: Duration,
    /// Lease of the per-mall refresh lock; longer than one refresh call.
    pub refresh_lock_lease: Duration,
    /// The queue's maxReceiveCount, so a failure's trace can say whether
    /// the item will be retried or dead-lettered (moved to the dead-letter queue).
    pub max_receive_count: u32,
    /// Streams the snapshots are spread over, by mall.
    pub snapshot_shards: u32,
    /// How many FIFO groups of one batch are processed at once.
    pub map_max_concurrency: u32,
    /// How long event traces are kept after their latest entry.
    pub trace_retention: Duration,
    /// The sheet path's settings.
    pub sheets: SheetConfig,
    /// Flow control per mall: when a mall's webhooks are deferred into its
    /// dirty set, and how its catch-up runs take them (see `catch_up`).
    pub catch_up: CatchUpConfig,
    /// Failed Cafe24 calls of one mall in a row (5xx, timeouts, refused
    /// connections) that raise an alert; the next success raises another.
    /// 6 is one event's whole retry budget in the state machine (the call
    /// and the Fetch state's 5 retries, about 30 s of backoff): a blip a
    /// retry absorbs never alerts, and an event going back to the queue
    /// (on its way to the dead-letter queue) always has.
    pub fetch_failures_alert_after: u32,
}

/// How a mall's flow-control backlog is drained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatchUpConfig {
    /// The thresholds ingest defers by, and the keys' lifetimes.
    pub flow: sluice_redis::FlowControl,
    /// Most dirty resources one run reads (each then waits for its unit of
    /// the mall's bucket).
    pub per_run: usize,
    /// How long one run keeps waiting for budget: the gap between two runs
    /// (a queued request's whole-second delay, a receive) is budget
    /// unused, so a run goes on while the waits are short. Below the drain
    /// function's timeout.
    pub run_budget: Duration,
    /// Upstream calls of one run at once.
    pub fetch_concurrency: usize,
    /// How long a run holds the chain while it queues the next request.
    pub chain_lease: Duration,
    /// How long the next run waits when this one stored nothing for a
    /// reason other than the bucket (5xx answers, timeouts).
    pub failure_backoff: Duration,
}

impl Default for CatchUpConfig {
    fn default() -> Self {
        Self {
            flow: sluice_redis::FlowControl::default(),
            per_run: 200,
            run_budget: Duration::from_secs(20),
            fetch_concurrency: 8,
            chain_lease: Duration::from_secs(30),
            failure_backoff: Duration::from_secs(5),
        }
    }
}

/// How sheet rows are batched, limited and flushed.
#[derive(Debug, Clone, PartialEq)]
pub struct SheetConfig {
    /// The Google Cloud project of the OAuth app: its quota is shared by
    /// every credential.
    pub google_project: String,
    /// Google's write quota per user (credential): 60 per 60 s.
    pub per_credential: (u32, Duration),
    /// Google's write quota per project: 300 per 60 s.
    pub per_project: (u32, Duration),
    /// Google's read quotas (a flush reads to verify an uncertain append
    /// and to check for a header): 60 per 60 s per user, 300 per project.
    pub read_per_credential: (u32, Duration),
    pub read_per_project: (u32, Duration),
    /// Added to every quota window: our limiter stamps a call when it is
    /// admitted, Google counts it when it arrives, and the two clocks see
    /// different gaps when requests take different times on the wire.
    /// A margin longer than that jitter keeps our window's count an upper
    /// bound of Google's (0.4% of a 60 s budget at 250 ms).
    pub quota_margin: Duration,
    /// How Sheets reads the values: `RAW` (the default) stores them as
    /// they are, so an answer such as `=IMPORTXML(…)` stays text;
    /// `USER_ENTERED` reads them as typed in the UI (numbers, dates), with
    /// every string and header title that would read as a formula sent as
    /// text (a leading apostrophe: see `ValueInputOption::inert`).
    pub value_input: ValueInputOption,
    /// A quota wait up to this long is waited inside the flush, holding the
    /// sheet, so the rows arriving meanwhile join the next append; longer
    /// ones end the run with a delayed flush request.
    pub inline_wait_max: Duration,
    /// Before a call, a flush waits while the buffer still grows, checking
    /// every `gather` (a lone row waits one interval), for at most
    /// `gather_max`: a burst arriving through the queue goes out whole.
    /// Zero turns it off.
    pub gather: Duration,
    pub gather_max: Duration,
    /// Most rows in one append (5,000 by default).
    pub max_rows: usize,
    /// Most bytes of rows in one append (Google recommends about 2 MB).
    pub max_bytes: usize,
    /// A flush is asked for at once when the buffer holds this many rows;
    /// with fewer, after `max_delay`. The defaults (1 row, no delay) flush
    /// as soon as the credential's quota allows; 500 rows / 10 s trades
    /// latency for fewer, larger appends.
    pub flush_threshold: u64,
    pub max_delay: Duration,
    /// How long a flush request stays pending if its flush never runs
    /// (then the next row asks again).
    pub request_timeout: Duration,
    /// Lease of a sheet's flush lock; longer than one append.
    pub flush_lease: Duration,
    /// How long one flush invocation keeps appending before it hands the
    /// rest to a new request.
    pub flush_budget: Duration,
    /// At most one alert per key (credential, sheet) in this window.
    pub alert_window: Duration,
    /// Flushes of one sheet in a row delayed by Google's 5xx, 429 or a
    /// timeout that raise an alert; the next append raises another.
    pub delayed_flushes_alert_after: u32,
    /// How long an append that was never answered (a timeout, a dropped
    /// connection, a flush killed mid-call) may still be applied: rows of
    /// it not found in the sheet are sent again only after this. Google
    /// processes a request for at most 180 s (then answers a timeout), so
    /// 200 s by default; see `sluice_redis::sheet_state`, "Landing".
    pub apply_horizon: Duration,
}

impl Default for SheetConfig {
    fn default() -> Self {
        Self {
            google_project: "default".into(),
            per_credential: (60, Duration::from_secs(60)),
            per_project: (300, Duration::from_secs(60)),
            read_per_credential: (60, Duration::from_secs(60)),
            read_per_project: (300, Duration::from_secs(60)),
            quota_margin: Duration::from_millis(250),
            value_input: ValueInputOption::Raw,
            inline_wait_max: Duration::from_secs(2),
            gather: Duration::from_millis(100),
            gather_max: Duration::from_secs(2),
            max_rows: 5_000,
            max_bytes: 2_000_000,
            flush_threshold: 1,
            max_delay: Duration::ZERO,
            request_timeout: Duration::from_secs(15 * 60),
            flush_lease: Duration::from_secs(60),
            flush_budget: Duration::from_secs(30),
            alert_window: Duration::from_secs(15 * 60),
            delayed_flushes_alert_after: 3,
            apply_horizon: Duration::from_secs(200),
        }
    }
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            bucket: BucketSpec::default(),
            inline_wait_max: Duration::from_secs(1),
            step_wait_budget: Duration::from_secs(5),
            token_refresh_margin: Duration::from_secs(60),
            refresh_lock_lease: Duration::from_secs(30),
            max_receive_count: 5,
            snapshot_shards: 16,
            map_max_concurrency: 10,
            trace_retention: sluice_redis::trace::DEFAULT_RETENTION,
            sheets: SheetConfig::default(),
            catch_up: CatchUpConfig::default(),
            fetch_failures_alert_after: 6,
        }
    }
}

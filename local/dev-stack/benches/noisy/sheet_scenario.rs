//! One flooding sheet among quiet ones, on the whole local stack with the
//! SQS-faithful queue: the sheet scenario `make bench` (bench/noisy.md)
//! runs at full scale and `tests/noisy_sheet.rs` at a small one.
//!
//! Quiet sheets (each its own credential) are sent one row every
//! `quiet_interval` for the whole run, one request after another; the hot
//! sheet is sent `hot_rows` rows by `burst_clients` clients at once, each
//! one request after another, starting `burst_after` into the run. A quiet
//! row's latency runs from its `INIT` to its `COMPLETED` (Redis's clock).
//! Order is checked per sender: a quiet sheet's rows exactly as sent, each
//! burst client's rows in its own sending order.

use futures::StreamExt;
use serde_json::{Value, json};
use sluice_cafe24::{Cafe24Config, Secret};
use sluice_dev_stack::{DevConfig, DevStack};
use sluice_ingest::{ApiKeys, IngestConfig, KeyScope};
use sluice_pipeline::{PipelineConfig, SheetConfig};
use sluice_redis::{Keyspace, SheetFlow};
use sluice_sandbox::{SheetsSandbox, SheetsSandboxConfig};
use sluice_sqs_emulator::GroupScan;
use sluice_testkit::sandbox::sheets_config;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const API_KEY: &str = "noisy-sheet-key";
const HOT: &str = "hot";

/// How big a run is.
#[derive(Debug, Clone)]
pub(crate) struct SheetScale {
    pub(crate) hot_rows: usize,
    pub(crate) burst_clients: usize,
    pub(crate) burst_after: Duration,
    pub(crate) quiet_sheets: usize,
    pub(crate) quiet_interval: Duration,
    /// How long the quiet sheets send.
    pub(crate) quiet_for: Duration,
    /// The FIFO queue's scan window (SQS: 120,000).
    pub(crate) scan_window: u32,
    /// Flow control per sheet's threshold, in the mode that has it.
    pub(crate) max_queued: u32,
    /// Google's quota window (a minute), scaled down: the quotas' counts
    /// stay Google's (60 per user, 300 per project).
    pub(crate) quota_window: Duration,
    /// The longest the run may take to land everything.
    pub(crate) limit: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SheetMode {
    /// Quiet sheets alone.
    Quiet,
    /// The burst, every row a message (the design before flow control per
    /// sheet: a threshold no sheet reaches).
    Burst,
    /// The burst with flow control per sheet.
    BurstWithOverflow,
}

impl SheetMode {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Quiet => "(d) quiet sheets alone",
            Self::Burst => "(e) burst, one message per row",
            Self::BurstWithOverflow => "(f) burst, flow control per sheet",
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub(crate) struct SheetOutcome {
    pub(crate) mode: SheetMode,
    /// Quiet rows' INIT → COMPLETED, ms, sorted: all of them, and those
    /// sent while the burst was being sent or drained.
    pub(crate) quiet_ms: Vec<u64>,
    pub(crate) quiet_during_burst_ms: Vec<u64>,
    /// Quiet rows sent before the burst began (same run).
    pub(crate) quiet_before_burst_ms: Vec<u64>,
    /// Most messages in the FIFO queue (visible + in flight) at a sample.
    pub(crate) max_depth: u64,
    pub(crate) sent: usize,
    pub(crate) lost: usize,
    pub(crate) duplicated: usize,
    /// Senders whose rows are not in the sheet in their sending order.
    pub(crate) out_of_order: Vec<String>,
    /// Sheets whose header is not exactly once, at the top.
    pub(crate) bad_headers: usize,
    pub(crate) upstream_429s: usize,
    /// Rows ingest answered `deferred` (put in an overflow).
    pub(crate) overflowed: u64,
    /// From the burst's first row until the hot sheet held every row.
    pub(crate) hot_landed: Duration,
    pub(crate) elapsed: Duration,
}

pub(crate) fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn row(sheet: &str, id: &str) -> Value {
    json!({"credential_id": format!("cred-{sheet}"), "spreadsheet_id": format!("doc-{sheet}"), "sheet_id": 0,
        "submission_id": id, "row_id": id, "header": ["row", "sheet"], "values": [id, sheet]})
}

struct Sender {
    http: reqwest::Client,
    url: String,
    overflowed: AtomicU64,
}

impl Sender {
    /// Sends one row as a form backend would: again on a 5xx or a
    /// connection error (same row id), until it is answered 202.
    async fn send(&self, sheet: &str, id: &str) {
        let body = row(sheet, id);
        for _ in 0..20 {
            match self.http.post(&self.url).header("X-API-Key", API_KEY).json(&body).send().await {
                Ok(answer) if answer.status() == 202 => {
                    let receipt: Value = answer.json().await.unwrap_or_default();
                    if receipt["status"] == "deferred" {
                        self.overflowed.fetch_add(1, Ordering::Relaxed);
                    }
                    return;
                }
                Ok(answer) if answer.status().is_client_error() => {
                    panic!("row {id} refused: {}", answer.text().await.unwrap_or_default())
                }
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        panic!("row {id} never accepted");
    }
}

/// Runs one mode on its own stack (under `keyspace`) and sandbox.
pub(crate) async fn run(
    conn: sluice_redis::Connection,
    keyspace: Keyspace,
    scale: &SheetScale,
    mode: SheetMode,
) -> SheetOutcome {
    let quiet: Vec<String> = (0..scale.quiet_sheets).map(|i| format!("quiet{i}")).collect();
    let sheets: Vec<String> = std::iter::once(HOT.to_owned()).chain(quiet.iter().cloned()).collect();
    let window = scale.quota_window;
    let sandbox = SheetsSandbox::start(SheetsSandboxConfig { quota_window: window, ..SheetsSandboxConfig::default() })
        .await
        .expect("sandbox");
    sandbox.add_client("client", "secret");
    let refresh: Vec<String> = sheets
        .iter()
        .map(|sheet| {
            sandbox.create_spreadsheet(&format!("doc-{sheet}"), &[(0, "Sheet1")]);
            sandbox.add_user("client", &format!("cred-{sheet}"))
        })
        .collect();
    let max_queued = if mode == SheetMode::BurstWithOverflow { scale.max_queued } else { u32::MAX };
    let ingest = IngestConfig {
        keyspace,
        sheet_flow: SheetFlow { max_queued, ..SheetFlow::default() },
        ..IngestConfig::new(ApiKeys::scoped([(Secret::new(API_KEY), KeyScope::any_route())]).expect("keys"))
    };
    let settings = SheetConfig {
        per_credential: (60, window),
        per_project: (300, window),
        read_per_credential: (60, window),
        read_per_project: (300, window),
        ..SheetConfig::default()
    };
    let config = DevConfig {
        group_scan: GroupScan::SqsFifo { window: scale.scan_window },
        pipeline: PipelineConfig { sheets: settings, ..PipelineConfig::default() },
        ..DevConfig::on_free_ports(
            ingest,
            Cafe24Config::new("unused", Secret::new("unused")),
            sheets_config(&sandbox, "client", "secret"),
        )
    };
    let stack = DevStack::start(conn.clone(), config).await.expect("stack");
    for (sheet, refresh) in sheets.iter().zip(&refresh) {
        stack.sheet.set_google_credential(&format!("cred-{sheet}"), &Secret::new(refresh), None).await.expect("cred");
    }
    let url = stack.urls.iter().find(|(w, _)| *w == "Sheet rows").map(|(_, u)| u.clone()).expect("rows url");
    let sender = Arc::new(Sender { http: sluice_http::client(), url, overflowed: AtomicU64::new(0) });
    let started = Instant::now();

    let done = Arc::new(AtomicBool::new(false));
    let max_depth = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (events, done, max_depth) = (stack.events.clone(), done.clone(), max_depth.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::Relaxed) {
                if let Ok(a) = sluice_domain::Queue::attributes(&events).await {
                    max_depth.fetch_max(a.visible + a.in_flight, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };

    // Each quiet sheet: one row per interval, one request after another.
    let quiet_senders: Vec<_> = quiet
        .iter()
        .map(|sheet| {
            let (sender, sheet, scale) = (sender.clone(), sheet.clone(), scale.clone());
            tokio::spawn(async move {
                let mut ids = Vec::new();
                let mut tick = tokio::time::interval(scale.quiet_interval);
                let until = Instant::now() + scale.quiet_for;
                while Instant::now() < until {
                    tick.tick().await;
                    let id = format!("{sheet}-{:05}", ids.len());
                    sender.send(&sheet, &id).await;
                    ids.push(id);
                }
                ids
            })
        })
        .collect();
    let mut burst: Vec<Vec<String>> = Vec::new();
    let mut burst_began_ms = u64::MAX;
    if mode != SheetMode::Quiet {
        tokio::time::sleep(scale.burst_after).await;
        burst_began_ms = redis_ms(&conn).await;
        let per_client = scale.hot_rows.div_ceil(scale.burst_clients);
        let clients = (0..scale.burst_clients).map(|c| {
            let sender = sender.clone();
            let ids: Vec<String> = (c * per_client..((c + 1) * per_client).min(scale.hot_rows))
                .map(|n| format!("hot-{c:02}-{n:06}"))
                .collect();
            async move {
                for id in &ids {
                    sender.send(HOT, id).await;
                }
                ids
            }
        });
        burst = futures::stream::iter(clients).buffer_unordered(scale.burst_clients).collect().await;
    }
    // Until the hot sheet holds every row (watched while the quiet sheets
    // still send), and the quiet senders are done.
    let deadline = started + scale.limit;
    let hot_watch = async {
        if mode == SheetMode::Quiet {
            return Duration::ZERO;
        }
        while column_a(&sandbox, HOT).len() <= scale.hot_rows && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        started.elapsed().saturating_sub(scale.burst_after)
    };
    let quiet_done = async {
        let mut ids: Vec<Vec<String>> = Vec::new();
        for sender in quiet_senders {
            ids.push(sender.await.expect("quiet sender"));
        }
        ids
    };
    let (hot_landed, quiet_ids) = tokio::join!(hot_watch, quiet_done);

    // Until every sheet holds every row sent to it.
    let wanted: HashMap<&str, usize> = std::iter::once((HOT, scale.hot_rows))
        .filter(|_| mode != SheetMode::Quiet)
        .chain(quiet.iter().zip(&quiet_ids).map(|(s, ids)| (s.as_str(), ids.len())))
        .collect();
    while wanted.iter().any(|(s, n)| column_a(&sandbox, s).len() <= *n) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let elapsed = started.elapsed();
    done.store(true, Ordering::Relaxed);
    let _ = sampler.await;

    let (mut lost, mut duplicated, mut bad_headers, mut out_of_order) = (0, 0, 0, Vec::new());
    let senders: Vec<(&str, Vec<String>)> = quiet
        .iter()
        .map(String::as_str)
        .zip(quiet_ids.iter().cloned())
        .chain(burst.iter().map(|ids| (HOT, ids.clone())))
        .collect();
    let mut columns: HashMap<&str, Vec<String>> = HashMap::new();
    for sheet in wanted.keys() {
        let column = column_a(&sandbox, sheet);
        if column.first().map(String::as_str) != Some("row_id") || column.iter().filter(|c| *c == "row_id").count() != 1
        {
            bad_headers += 1;
        }
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for id in column.iter().skip(1) {
            *counts.entry(id).or_default() += 1;
        }
        duplicated += counts.values().filter(|n| **n > 1).map(|n| n - 1).sum::<usize>();
        columns.insert(sheet, column.clone());
    }
    for (sheet, ids) in &senders {
        let column = &columns[sheet];
        let position: HashMap<&str, usize> = column.iter().enumerate().map(|(i, id)| (id.as_str(), i)).collect();
        lost += ids.iter().filter(|id| !position.contains_key(id.as_str())).count();
        let places: Vec<usize> = ids.iter().filter_map(|id| position.get(id.as_str()).copied()).collect();
        if places.windows(2).any(|w| w[0] >= w[1]) {
            out_of_order.push(ids.first().cloned().unwrap_or_default());
        }
    }

    let (mut quiet_ms, mut during, mut before) = (Vec::new(), Vec::new(), Vec::new());
    for (sheet, id) in quiet.iter().zip(&quiet_ids).flat_map(|(s, ids)| ids.iter().map(move |id| (s, id))) {
        let log = sluice_domain::row_trace_id(&format!("cred-{sheet}"), id);
        let trace = stack.sheet.traces().read(&log).await.expect("trace");
        let at = |stage: &str| trace.iter().find(|e| e.stage == stage).map(|e| e.at_ms);
        if let (Some(init), Some(completed)) = (at("INIT"), at("COMPLETED")) {
            let ms = completed.saturating_sub(init);
            quiet_ms.push(ms);
            if init < burst_began_ms {
                before.push(ms);
            } else if init <= burst_began_ms.saturating_add(hot_landed.as_millis() as u64) {
                during.push(ms);
            }
        }
    }
    for v in [&mut quiet_ms, &mut during, &mut before] {
        v.sort_unstable();
    }
    let outcome = SheetOutcome {
        mode,
        quiet_ms,
        quiet_during_burst_ms: during,
        quiet_before_burst_ms: before,
        max_depth: max_depth.load(Ordering::Relaxed),
        sent: wanted.values().sum(),
        lost,
        duplicated,
        out_of_order,
        bad_headers,
        upstream_429s: sandbox.calls().iter().filter(|c| c.status == 429).count(),
        overflowed: sender.overflowed.load(Ordering::Relaxed),
        hot_landed,
        elapsed,
    };
    stack.stop().await.expect("stop");
    sandbox.stop().await;
    outcome
}

/// Column A of a sheet (the row ids, and `row_id` on the header row).
fn column_a(sandbox: &SheetsSandbox, sheet: &str) -> Vec<String> {
    let values = sandbox.sheet_values(&format!("doc-{sheet}"), 0).unwrap_or_default();
    values.iter().map(|r| r.first().and_then(Value::as_str).unwrap_or("").trim_start_matches('\'').to_owned()).collect()
}

async fn redis_ms(conn: &sluice_redis::Connection) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(&mut conn.clone()).await.unwrap_or((0, 0));
    s * 1000 + us / 1000
}

//! The parts of `load_held.rs` that are not its plot: sheet rows posted
//! closed loop (to find ingest's ceiling) or open loop at a rate with a
//! bounded number in flight, every answer noted, and the figures of a
//! window of answers.

use super::redis_outage::{ANSWER_LIMIT, Outcome};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

pub(crate) const API_KEY: &str = "sluice-dev";
pub(crate) const SPREADSHEET: &str = "loaddoc";
/// Sheets the rows are spread over (one FIFO group each).
pub(crate) const SHEETS: u64 = 8;

/// One POST of a row and what came back.
#[derive(Debug, Clone)]
pub(crate) struct Shot {
    pub row: usize,
    pub sent_at: Instant,
    pub answered_at: Instant,
    pub outcome: Outcome,
}

impl Shot {
    pub(crate) fn accepted(&self) -> bool {
        matches!(self.outcome, Outcome::Answer { status: 202, .. })
    }

    pub(crate) fn waited(&self) -> Duration {
        self.answered_at - self.sent_at
    }
}

/// The row ids are `r-<seed>-<n>`; the seed also spreads them over the sheets.
pub(crate) fn row_id(seed: u64, n: usize) -> String {
    format!("r-{seed}-{n}")
}

pub(crate) fn sheet_of(seed: u64, n: usize) -> u64 {
    (n as u64).wrapping_mul(2_654_435_761).wrapping_add(seed) % SHEETS
}

fn row(seed: u64, n: usize) -> Value {
    json!({
        "credential_id": "cred-1",
        "spreadsheet_id": SPREADSHEET,
        "sheet_id": sheet_of(seed, n),
        "submission_id": format!("s-{seed}-{n}"),
        "row_id": row_id(seed, n),
        "header": ["n"],
        "values": [n],
    })
}

/// Posts rows to one ingest and notes every answer.
#[derive(Clone)]
pub(crate) struct Poster {
    pub http: reqwest::Client,
    pub url: String,
    pub seed: u64,
    pub book: Arc<Mutex<Vec<Shot>>>,
    /// The next row number never sent.
    pub next: Arc<AtomicUsize>,
}

impl Poster {
    /// Posts to `url`, ingest's `POST /sheets/rows`.
    pub(crate) fn new(url: &str, seed: u64) -> Self {
        let http = sluice_http::builder()
            .connect_timeout(Duration::from_secs(1))
            .timeout(ANSWER_LIMIT)
            .pool_max_idle_per_host(1024)
            .build()
            .unwrap();
        Self { http, url: url.to_owned(), seed, book: Arc::default(), next: Arc::default() }
    }

    /// Posts row `n` once and notes the answer.
    pub(crate) async fn post(&self, n: usize) -> Shot {
        let sent_at = Instant::now();
        let sent = self.http.post(&self.url).header("X-API-Key", API_KEY).json(&row(self.seed, n)).send().await;
        let outcome = match sent {
            Ok(response) => {
                let status = response.status().as_u16();
                let retry_after = response.headers().contains_key(reqwest::header::RETRY_AFTER);
                let answer: Value = response.json().await.unwrap_or(Value::Null);
                let code = answer["error"]["code"].as_str().map(str::to_owned);
                Outcome::Answer { status, retry_after, code }
            }
            Err(e) => Outcome::NoAnswer(if e.is_timeout() { "timeout" } else { "connection" }.into()),
        };
        let shot = Shot { row: n, sent_at, answered_at: Instant::now(), outcome };
        self.book.lock().unwrap().push(shot.clone());
        shot
    }

    /// `senders` posting new rows back to back until `until`: the most
    /// ingest answers with 202, closed loop.
    pub(crate) async fn closed_loop(&self, senders: usize, until: Instant) {
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..senders {
            let poster = self.clone();
            tasks.spawn(async move {
                while Instant::now() < until {
                    poster.post(poster.next.fetch_add(1, Ordering::Relaxed)).await;
                }
            });
        }
        while tasks.join_next().await.is_some() {}
    }

    /// New rows at `rate` a second until `until`, whatever the answers
    /// (open loop), at most `in_flight` at once: a row due while that many
    /// wait is not sent, and counted in the result. Waits for the last
    /// answers (each is bounded by [`ANSWER_LIMIT`]).
    pub(crate) async fn open_loop(&self, rate: f64, in_flight: usize, until: Instant) -> usize {
        let slots = Arc::new(Semaphore::new(in_flight));
        let started = Instant::now();
        let (mut due_so_far, mut skipped) = (0usize, 0usize);
        let mut tasks = tokio::task::JoinSet::new();
        let mut tick = tokio::time::interval(Duration::from_millis(5));
        while Instant::now() < until {
            tick.tick().await;
            let due = (started.elapsed().as_secs_f64() * rate) as usize;
            for _ in due_so_far..due {
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    skipped += 1;
                    continue;
                };
                let poster = self.clone();
                tasks.spawn(async move {
                    poster.post(poster.next.fetch_add(1, Ordering::Relaxed)).await;
                    drop(slot);
                });
            }
            due_so_far = due;
            while tasks.try_join_next().is_some() {}
        }
        while tasks.join_next().await.is_some() {}
        skipped
    }

    /// Posts row `n` until it is accepted (202), again after a 5xx or no
    /// answer, for `patience` at most; whether it was.
    pub(crate) async fn until_accepted(&self, n: usize, patience: Duration) -> bool {
        let give_up = Instant::now() + patience;
        loop {
            let shot = self.post(n).await;
            match &shot.outcome {
                Outcome::Answer { status: 202, .. } => return true,
                Outcome::Answer { status, .. } if *status < 500 => return false,
                _ if Instant::now() > give_up => return false,
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    pub(crate) fn shots(&self) -> Vec<Shot> {
        self.book.lock().unwrap().clone()
    }
}

/// What the answers to the posts sent within one window came to.
#[derive(Debug, Default)]
pub(crate) struct Window {
    pub sent: usize,
    pub accepted: usize,
    /// 503s, and how many of them came without `Retry-After`.
    pub refused: usize,
    pub refused_bare: usize,
    /// Other answers (a 4xx, a 500) and no answer at all.
    pub other: usize,
    pub no_answer: usize,
    /// Wait for a 202: median and 99th percentile.
    pub p50: Duration,
    pub p99: Duration,
}

impl Window {
    pub(crate) fn of(shots: &[Shot], from: Instant, to: Instant) -> Self {
        let mut w = Self::default();
        let mut waits = Vec::new();
        for s in shots.iter().filter(|s| s.sent_at >= from && s.sent_at < to) {
            w.sent += 1;
            match &s.outcome {
                Outcome::Answer { status: 202, .. } => {
                    w.accepted += 1;
                    waits.push(s.waited());
                }
                Outcome::Answer { status: 503, retry_after, .. } => {
                    w.refused += 1;
                    w.refused_bare += usize::from(!retry_after);
                }
                Outcome::Answer { .. } => w.other += 1,
                Outcome::NoAnswer(_) => w.no_answer += 1,
            }
        }
        waits.sort();
        let at = |q: f64| waits.get(((waits.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default();
        (w.p50, w.p99) = (at(0.5), at(0.99));
        w
    }

    /// The share of posts answered 503, in percent.
    pub(crate) fn refused_pct(&self) -> f64 {
        100.0 * self.refused as f64 / self.sent.max(1) as f64
    }
}

impl std::fmt::Display for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sent {:>5}, 202 {:>5} (p50 {:>4} ms, p99 {:>4} ms), 503 {:>5} ({:>3.0}%), other {}, no answer {}",
            self.sent,
            self.accepted,
            self.p50.as_millis(),
            self.p99.as_millis(),
            self.refused,
            self.refused_pct(),
            self.other,
            self.no_answer
        )
    }
}

/// A field of `/proc/<pid>/status` in kB (`VmRSS`, `VmHWM`).
pub(crate) fn proc_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with(field));
    line.and_then(|l| l.split_whitespace().nth(1)).and_then(|n| n.parse().ok()).unwrap_or(0)
}

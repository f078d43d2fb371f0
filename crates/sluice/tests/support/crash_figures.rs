//! The figures of one crash run of `crash_restart.rs`, and their sum over
//! the seeds of `make chaos` as its row of `bench/chaos.md`.

use super::crash_deliveries::Book;
use super::crash_killer::Restart;
use super::stack::Stale;

/// What the run left stored, checked against what was sent.
pub(crate) struct Checked {
    /// Snapshots stored (stream entries, or drained ones).
    pub(crate) stored: usize,
    /// Products whose stored state differs from the sandbox's.
    pub(crate) stale: Stale,
    /// Accepted events no stored snapshot answers.
    pub(crate) unanswered: Vec<String>,
    pub(crate) answered_twice: usize,
}
use serde_json::Value;
use sluice_testkit::chaos_report::ChaosRow;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// What the run did, printed on one line.
pub(crate) struct Figures {
    sent: usize,
    accepted: BTreeMap<String, usize>,
    retried: usize,
    slowest: Duration,
    retry_reasons: BTreeMap<String, usize>,
    never_accepted: usize,
    stored: usize,
    lost: usize,
    unanswered: usize,
    /// Events answered by more than one stored snapshot: a fetch the kill
    /// interrupted after its store ran again (harmless: the rows are keyed
    /// by resource and a newer version always wins), or two changes of one
    /// product fetched apart.
    answered_twice: usize,
    upstream_429: u64,
    restarts: Vec<Restart>,
    /// From each restart's `Ready.` to the first 202 answered after it.
    first_accept_after_ready: Vec<Option<Duration>>,
    drain: Duration,
}

impl Figures {
    pub(crate) fn new(book: &Book, restarts: &[Restart], counters: &Value, checked: &Checked, drain: Duration) -> Self {
        let mut accepted = BTreeMap::new();
        let mut retry_reasons = BTreeMap::new();
        for (_, d) in &book.deliveries {
            if let Ok(receipt) = &d.outcome {
                *accepted.entry(receipt["status"].as_str().unwrap_or("?").to_owned()).or_default() += 1;
            }
            for why in &d.retried_for {
                *retry_reasons.entry(why.clone()).or_default() += 1;
            }
        }
        let first_accept_after_ready = restarts
            .iter()
            .map(|r| {
                book.deliveries
                    .iter()
                    .filter(|(_, d)| d.outcome.is_ok() && d.answered_at > r.ready_at)
                    .map(|(_, d)| d.answered_at - r.ready_at)
                    .min()
            })
            .collect();
        let upstream = |name: &str| counters[name].as_u64().unwrap_or(0);
        Self {
            sent: book.deliveries.len(),
            accepted,
            retried: book.deliveries.iter().filter(|(_, d)| d.attempts > 1).count(),
            slowest: book.deliveries.iter().map(|(_, d)| d.took).max().unwrap_or_default(),
            retry_reasons,
            never_accepted: book.deliveries.iter().filter(|(_, d)| d.outcome.is_err()).count(),
            stored: checked.stored,
            lost: checked.stale.len(),
            unanswered: checked.unanswered.len(),
            answered_twice: checked.answered_twice,
            upstream_429: upstream("refused_bucket") + upstream("refused_quota"),
            restarts: restarts.to_vec(),
            first_accept_after_ready,
            drain,
        }
    }
}

fn ms(d: Option<Duration>) -> String {
    d.map_or("never".to_owned(), |d| format!("{} ms", d.as_millis()))
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sent {}, accepted {:?}, retried {} (retries for {:?}; the slowest accepted after {:.1} s), never accepted \
             {}, snapshots stored {}, products lost {}, accepted events no snapshot answers {}, answered twice {}, Cafe24 429s {}, \
             drained {:.1} s after the stream",
            self.sent,
            self.accepted,
            self.retried,
            self.retry_reasons,
            self.slowest.as_secs_f64(),
            self.never_accepted,
            self.stored,
            self.lost,
            self.unanswered,
            self.answered_twice,
            self.upstream_429,
            self.drain.as_secs_f64()
        )?;
        for (r, first) in self.restarts.iter().zip(&self.first_accept_after_ready) {
            write!(
                f,
                "\n  kill after change {}: ready again in {} ms having returned {} held messages, the first 202 {} \
                 later; the killed run's redis-server {} at the restart, gone after {}",
                r.after_change,
                r.ready_after.as_millis(),
                r.returned,
                ms(*first),
                if r.old_redis_up_at_restart { "still up" } else { "already gone" },
                ms(r.old_redis_gone_after),
            )?;
        }
        Ok(())
    }
}

/// The seeds' figures added up, for `bench/chaos.md`.
#[derive(Default)]
pub(crate) struct Totals {
    sent: usize,
    lost: usize,
    answered_twice: usize,
    kills: usize,
    upstream_429: u64,
    /// The longest from a kill to the first 202 after it.
    recovered_in: Duration,
    slowest_drain: Duration,
}

impl Totals {
    pub(crate) fn add(&mut self, f: Figures) {
        self.sent += f.sent;
        self.lost += f.lost + f.unanswered + f.never_accepted;
        self.answered_twice += f.answered_twice;
        self.kills += f.restarts.len();
        self.upstream_429 += f.upstream_429;
        for (r, first) in f.restarts.iter().zip(&f.first_accept_after_ready) {
            self.recovered_in = self.recovered_in.max(r.ready_after + first.unwrap_or_default());
        }
        self.slowest_drain = self.slowest_drain.max(f.drain);
    }

    /// Writes the row; `runs` is the number of seeds.
    pub(crate) fn record(&self, runs: usize) {
        ChaosRow {
            scenario: "kill -9 of sluice dev mid-ingest and mid-drain (shop path, drain to PostgreSQL)".into(),
            runs,
            sent: self.sent,
            lost: self.lost,
            duplicated: 0,
            recovered_in: Some(self.recovered_in),
            notes: format!(
                "{} kills; every product's row equals the sandbox's; {} events answered by two snapshots (a fetch \
                 re-run after a kill, version-guarded upsert); Cafe24 429s {}; drained at most {:.0} s after the \
                 stream; recovered = kill to first 202",
                self.kills,
                self.answered_twice,
                self.upstream_429,
                self.slowest_drain.as_secs_f64()
            ),
        }
        .record(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("chaos"), "crash_restart");
    }
}

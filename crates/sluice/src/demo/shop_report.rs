//! The report of `sluice demo shops`: what happened to every webhook, read
//! back from ingest's counters, the stored snapshots, the dead-letter
//! queue, the traces and the sandbox's own record, and the invariants
//! checked against them.

pub(crate) use super::stored_view::StoredView;
use sluice_dev_stack::{DevStack, IngestCounts};
use sluice_domain::{ResourceKind, ResourceRef, ShopEvent, Topic};
use sluice_sandbox::Cafe24Sandbox;
use sluice_sandbox::cafe24::{ChangeReport, Counters};
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

/// One edit and the fate of its webhook.
#[derive(Debug, Clone)]
pub(crate) struct Sent {
    mall: String,
    id: String,
    /// The event id ingest gave it, when ingest answered 202.
    event_id: Option<String>,
    problem: Option<String>,
}

impl Sent {
    pub(crate) fn from_report(report: ChangeReport) -> Self {
        let delivered = report.webhook.as_ref().filter(|d| d.status == Some(202));
        let event_id = delivered.and_then(|d| {
            let resource = ResourceRef { kind: ResourceKind::Product, id: report.id.clone() };
            ShopEvent::new(report.mall_id.clone(), Topic(d.event_no), resource, d.trace_id.clone())
                .ok()
                .map(|e| e.dedup_id().as_str().to_owned())
        });
        let problem = match (&event_id, &report.webhook) {
            (Some(_), _) => None,
            (None, Some(d)) => Some(format!("ingest answered {:?} {}", d.status, d.error.clone().unwrap_or_default())),
            (None, None) => Some("no webhook was sent".into()),
        };
        Self { mall: report.mall_id, id: report.id, event_id, problem }
    }

    pub(crate) fn failed(mall: &str, id: &str, problem: String) -> Self {
        Self { mall: mall.into(), id: id.into(), event_id: None, problem: Some(problem) }
    }
}

/// Everything the report prints and checks.
#[derive(Debug)]
pub(crate) struct Report {
    sent: usize,
    refused_by_ingest: Vec<String>,
    ingest: IngestCounts,
    /// The sandbox's own counts of the calls it answered.
    counters: Counters,
    /// What was stored, where (PostgreSQL when the drain ran, else Redis).
    view: StoredView,
    in_dlq: u64,
    /// Events `sluice status` would still count as waiting in their group.
    ledger_waiting: u64,
    lost: Vec<String>,
    stored_twice: usize,
    stale: Vec<String>,
    /// Distinct products edited per mall: each needs one fetch at least.
    edited_per_mall: BTreeMap<String, usize>,
    /// Admin API calls the sandbox answered per mall.
    fetched_per_mall: BTreeMap<String, usize>,
    elapsed: Duration,
    sending: Duration,
    drained: bool,
}

impl Report {
    pub(crate) async fn gather(
        stack: &DevStack,
        sandbox: &Cafe24Sandbox,
        sent: &[Sent],
        elapsed: Duration,
        sending: Duration,
        drained: bool,
        view: StoredView,
    ) -> anyhow::Result<Self> {
        let ingest = IngestCounts::of(stack);
        let counters = sandbox.counters();
        let (_, dlq) = stack.queues().await?;
        let (groups, _) = stack.shop.core().group_ledger().lagging(usize::MAX).await?;
        let ledger_waiting = groups.iter().map(|g| g.pending).sum();
        let mut lost = Vec::new();
        for event in sent.iter().filter_map(|s| s.event_id.as_ref()) {
            if view.answered.contains_key(event) || dead_lettered(stack, event).await {
                continue;
            }
            lost.push(event.clone());
        }
        let mut stale = Vec::new();
        let mut edited_per_mall: BTreeMap<String, HashSet<&str>> = BTreeMap::new();
        for s in sent {
            edited_per_mall.entry(s.mall.clone()).or_default().insert(&s.id);
        }
        for (mall, ids) in &edited_per_mall {
            for id in ids {
                let truth = sandbox.resource(mall, ResourceKind::Product, id)?;
                let stored = view.current.get(&(mall.clone(), id.to_string()));
                if !stored.is_some_and(|current| current.matches(truth.as_ref())) {
                    stale.push(format!("{mall}/{id}"));
                }
            }
        }
        let mut fetched_per_mall: BTreeMap<String, usize> = BTreeMap::new();
        for call in sandbox.calls().iter().filter(|c| c.refused.is_none() && c.path.contains("/admin/")) {
            *fetched_per_mall.entry(call.mall_id.clone()).or_default() += 1;
        }
        Ok(Self {
            fetched_per_mall,
            sent: sent.len(),
            refused_by_ingest: sent.iter().filter_map(|s| s.problem.clone()).collect(),
            ingest,
            counters,
            in_dlq: dlq.visible + dlq.in_flight,
            ledger_waiting,
            lost,
            stored_twice: view.answered.values().filter(|n| **n > 1).count(),
            view,
            stale,
            edited_per_mall: edited_per_mall.into_iter().map(|(m, ids)| (m, ids.len())).collect(),
            elapsed,
            sending,
            drained,
        })
    }

    /// Prints the report; true when every invariant held.
    pub(crate) fn print(&self, capacity: u32, drain: f64) -> bool {
        // Each edited product must be fetched once after its last edit; a
        // mall's bucket lets `capacity` go at once, then its leak rate per second.
        let least = |per_mall: &BTreeMap<String, usize>| {
            per_mall.values().map(|&n| (n as f64 - f64::from(capacity)).max(0.0) / drain).fold(0.0, f64::max)
        };
        let minimum = least(&self.edited_per_mall);
        let for_calls_made = least(&self.fetched_per_mall);
        let must_wait = self.edited_per_mall.values().filter(|&&n| n > capacity as usize).count();
        let in_postgres = self.view.source == "PostgreSQL";
        println!("\nReport");
        let mut rows = vec![
            ("webhooks sent", self.sent as u64),
            ("accepted and enqueued", self.ingest.enqueued),
            ("coalesced into a pending fetch", self.ingest.coalesced),
            ("deferred into its mall's dirty set (flow control)", self.ingest.deferred),
            ("duplicates dropped at ingest", self.ingest.duplicates),
            ("fetched from Cafe24", self.counters.ok + self.counters.not_found),
            (
                if in_postgres { "snapshots drained to PostgreSQL" } else { "snapshots stored" },
                self.view.snapshots as u64,
            ),
            ("in the dead-letter queue", self.in_dlq),
        ];
        if in_postgres {
            rows.insert(7, ("rows in PostgreSQL (sluice.snapshots)", self.view.current.len() as u64));
        }
        for (what, n) in rows {
            println!("  {what:<50}{n:>7}");
        }
        let mut checks = vec![
            ("webhooks refused by ingest", self.refused_by_ingest.len(), self.refused_by_ingest.first().cloned()),
            ("events lost", self.lost.len(), self.lost.first().cloned()),
            (
                if in_postgres { "events recorded twice in sluice.events" } else { "events stored twice" },
                self.stored_twice,
                None,
            ),
            ("upstream 429s", (self.counters.refused_bucket + self.counters.refused_quota) as usize, None),
            (
                if in_postgres {
                    "rows in sluice.snapshots that differ from Cafe24"
                } else {
                    "resources whose stored state differs from Cafe24"
                },
                self.stale.len(),
                self.stale.first().cloned(),
            ),
            // A dead-lettered event stays pending in its group until redriven.
            (
                "events `sluice status` still sees waiting",
                self.ledger_waiting.saturating_sub(self.in_dlq) as usize,
                None,
            ),
        ];
        if in_postgres {
            checks.push(("snapshots not yet drained to PostgreSQL", self.view.behind as usize, None));
        }
        let mut ok = self.drained;
        for (what, count, example) in checks {
            let verdict = if count == 0 { "ok" } else { "FAILED" };
            ok &= count == 0;
            match example {
                Some(example) if count > 0 => println!("  {what:<50}{count:>7}  {verdict} (e.g. {example})"),
                _ => println!("  {what:<50}{count:>7}  {verdict}"),
            }
        }
        if !self.drained {
            println!("  the pipeline did not drain before the timeout: FAILED");
        }
        let ratio = |least: f64| if least > 0.0 { self.elapsed.as_secs_f64() / least } else { f64::NAN };
        println!(
            "\n  elapsed {:.1} s, of which sending {:.1} s; {must_wait} of {} malls had to wait for budget",
            self.elapsed.as_secs_f64(),
            self.sending.as_secs_f64(),
            self.edited_per_mall.len()
        );
        println!(
            "  theoretical minimum with these buckets: {minimum:.1} s for one fetch per edited product ({:.2}x), \
             {for_calls_made:.1} s for the fetches made ({:.2}x)",
            ratio(minimum),
            ratio(for_calls_made)
        );
        println!("{}", if ok { "\nEvery invariant held." } else { "\nAn invariant FAILED (see above)." });
        ok
    }
}

/// Whether an event's trace says it was dead-lettered (given up to the
/// dead-letter queue: its failure step's `next`), itself or the fetch it
/// was coalesced into. The Redis trace has no outcome stage to read, so
/// neither `dead-lettered` nor the older `parked` is looked for here.
async fn dead_lettered(stack: &DevStack, event: &str) -> bool {
    let traces = stack.shop.traces();
    let mut current = event.to_owned();
    for _ in 0..5 {
        let Ok(trace) = traces.read(&current).await else { return false };
        match trace.last() {
            Some(e) if e.stage == "failed" && e.detail["next"] == "dead-letter queue" => return true,
            Some(e) if e.stage == "coalesced" => match e.detail["into"].as_str() {
                Some(into) => current = into.to_owned(),
                None => return false,
            },
            _ => return false,
        }
    }
    false
}

//! `GET /metrics` of `sluice dev`: the counters a deployed stack sends to
//! CloudWatch, in Prometheus' text format, for a local scrape or a glance
//! with curl. Counters: ingest's and the steps' (`sluice_steps_*`), from the
//! same tables as their EMF lines, and the local pipe's and flush worker's;
//! gauges: each queue's waiting, in-flight and delayed messages, read when
//! scraped.

use crate::flush_worker::FlushStats;
use crate::pipe::PipeStats;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use sluice_aws::{SqsDelayQueue, SqsQueue};
use sluice_domain::Queue;
use sluice_domain::emf::Counter;
use sluice_domain::queue::QueueAttributes;
use sluice_ingest::Counters;
use sluice_pipeline::step_metrics::{self, StepMetrics};
use std::fmt::Write;
use std::sync::Arc;
use tokio::net::TcpListener;

/// The route.
pub const METRICS_PATH: &str = "/metrics";

/// Where the numbers come from.
#[derive(Debug, Clone)]
pub struct MetricSources {
    pub ingest: Arc<Counters>,
    pub pipe: Arc<PipeStats>,
    pub flush: Arc<FlushStats>,
    pub steps: Arc<StepMetrics>,
    pub events: SqsQueue,
    pub events_dlq: SqsQueue,
    pub flush_queue: SqsDelayQueue,
    pub flush_dlq: SqsDelayQueue,
}

pub fn router(sources: MetricSources) -> Router {
    Router::new().route(METRICS_PATH, get(metrics)).with_state(Arc::new(sources))
}

/// Serves `GET /metrics` on `listener` until `stopped`.
pub(crate) async fn serve(
    listener: TcpListener,
    sources: MetricSources,
    stopped: impl Future<Output = ()> + Send + 'static,
) {
    if let Err(e) = axum::serve(listener, router(sources)).with_graceful_shutdown(stopped).await {
        tracing::warn!(error = %e, "the metrics endpoint stopped");
    }
}

async fn metrics(State(sources): State<Arc<MetricSources>>) -> impl IntoResponse {
    let mut queues = Vec::new();
    let probes = [
        ("events", Queue::attributes(&sources.events).await.map_err(|e| e.to_string())),
        ("events_dlq", Queue::attributes(&sources.events_dlq).await.map_err(|e| e.to_string())),
        ("flush", Queue::attributes(&sources.flush_queue).await.map_err(|e| e.to_string())),
        ("flush_dlq", Queue::attributes(&sources.flush_dlq).await.map_err(|e| e.to_string())),
    ];
    for (name, attributes) in probes {
        match attributes {
            Ok(attributes) => queues.push((name, attributes)),
            Err(e) => tracing::warn!(queue = name, error = e, "queue attributes unavailable for /metrics"),
        }
    }
    let text = render(&sources, &queues);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

/// The counts of the local pipe and flush worker (`sluice_<name>_total`),
/// which only `sluice dev` has.
const LOCAL: &[Counter<MetricSources>] = &[
    Counter::new("pipe_batches", "", &[], |s| &s.pipe.batches),
    Counter::new("pipe_items_done", "", &[], |s| &s.pipe.items_done),
    Counter::new("pipe_items_failed", "", &[], |s| &s.pipe.items_failed),
    Counter::new("pipe_executions_failed", "", &[], |s| &s.pipe.executions_failed),
    Counter::new("flushes", "", &[], |s| &s.flush.flushes),
    Counter::new("flushes_failed", "", &[], |s| &s.flush.failed),
    Counter::new("sheet_rows_appended", "", &[], |s| &s.flush.rows_appended),
    Counter::new("sheets_calls", "", &[], |s| &s.flush.calls),
];

/// The exposition text.
pub fn render(sources: &MetricSources, queues: &[(&str, QueueAttributes)]) -> String {
    let mut out = String::new();
    counters(&mut out, "sluice_ingest_", sluice_ingest::counters::COUNTERS, &sources.ingest);
    counters(&mut out, "sluice_", LOCAL, sources);
    counters(&mut out, "sluice_steps_", step_metrics::COUNTERS, &sources.steps);
    let _ = writeln!(out, "# TYPE sluice_queue_messages gauge");
    for (name, q) in queues {
        for (state, n) in [("waiting", q.visible), ("in_flight", q.in_flight), ("delayed", q.delayed)] {
            let _ = writeln!(out, "sluice_queue_messages{{queue=\"{name}\",state=\"{state}\"}} {n}");
        }
    }
    out
}

/// One `# TYPE` line per family, then its lines: the tables list a family's
/// counts together, as the text format requires.
fn counters<S>(out: &mut String, prefix: &str, counters: &[Counter<S>], set: &S) {
    for (i, c) in counters.iter().enumerate() {
        if i == 0 || counters[i - 1].name != c.name {
            let _ = writeln!(out, "# TYPE {prefix}{}_total counter", c.name);
        }
        let _ = writeln!(out, "{prefix}{}_total{} {}", c.name, c.labels, c.get(set));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn ingest_counts_render_one_family_a_name_and_a_line_a_reason() {
        let ingest = Counters::default();
        let rows = sluice_ingest::counters::COUNTERS;
        let add = |name: &str, labels: &str, n: u64| {
            let row = rows.iter().find(|c| c.name == name && c.labels == labels).expect("a row");
            (row.read)(&ingest).fetch_add(n, Ordering::Relaxed);
        };
        add("received", "", 3);
        add("rejected", r#"{reason="invalid_field"}"#, 1);
        let mut out = String::new();
        counters(&mut out, "sluice_ingest_", rows, &ingest);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[..2], ["# TYPE sluice_ingest_received_total counter", "sluice_ingest_received_total 3"]);
        assert!(lines.contains(&r#"sluice_ingest_rejected_total{reason="invalid_field"} 1"#), "{out}");
        let family = |start: &str| lines.iter().filter(|l| l.starts_with(start)).count();
        assert_eq!(family("# TYPE sluice_ingest_rejected_total counter"), 1, "{out}");
        assert_eq!(family("sluice_ingest_rejected_total{reason="), 13, "{out}");
        assert!(lines.contains(&"sluice_ingest_trace_failures_total 0"), "{out}");
    }
}

//! `GET /metrics` of `sluice dev`: the counters a deployed stack sends to
//! CloudWatch, in Prometheus' text format, for a local scrape or a glance
//! with curl. Counters: ingest (received, enqueued, coalesced, duplicates,
//! rejected by reason, batch sends), the pipe (batches, items done and
//! failed, failed executions), the flush worker (flushes, failures, rows
//! appended, upstream calls), the steps (`sluice_steps_*`: upstream calls
//! and 429s per upstream, limiter waits, rows buffered and appended, flush
//! time, pipe batch sizes, redeliveries: what the functions send as EMF);
//! gauges: each queue's waiting, in-flight and delayed messages, read when
//! scraped.

use crate::flush_worker::FlushStats;
use crate::pipe::PipeStats;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::Value;
use sluice_aws::{SqsDelayQueue, SqsQueue};
use sluice_domain::queue::QueueAttributes;
use sluice_domain::{DelayQueue, WorkQueue};
use sluice_ingest::Counters;
use sluice_pipeline::step_metrics::StepMetrics;
use std::fmt::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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

async fn metrics(State(sources): State<Arc<MetricSources>>) -> impl IntoResponse {
    let mut queues = Vec::new();
    let probes = [
        ("events", WorkQueue::attributes(&sources.events).await.map_err(|e| e.to_string())),
        ("events_dlq", WorkQueue::attributes(&sources.events_dlq).await.map_err(|e| e.to_string())),
        ("flush", DelayQueue::attributes(&sources.flush_queue).await.map_err(|e| e.to_string())),
        ("flush_dlq", DelayQueue::attributes(&sources.flush_dlq).await.map_err(|e| e.to_string())),
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

/// The exposition text.
pub fn render(sources: &MetricSources, queues: &[(&str, QueueAttributes)]) -> String {
    let mut out = String::new();
    let ingest = serde_json::to_value(sources.ingest.snapshot()).unwrap_or(Value::Null);
    for (field, value) in ingest.as_object().into_iter().flatten() {
        match value {
            Value::Number(n) => counter(&mut out, &format!("sluice_ingest_{field}_total"), "", n),
            Value::Object(reasons) => {
                for (reason, n) in reasons {
                    if let Value::Number(n) = n {
                        counter(&mut out, "sluice_ingest_rejected_total", &format!("{{reason=\"{reason}\"}}"), n);
                    }
                }
            }
            _ => {}
        }
    }
    let load = |a: &AtomicU64| serde_json::Number::from(a.load(Ordering::Relaxed));
    let pipe = &sources.pipe;
    counter(&mut out, "sluice_pipe_batches_total", "", &load(&pipe.batches));
    counter(&mut out, "sluice_pipe_items_done_total", "", &load(&pipe.items_done));
    counter(&mut out, "sluice_pipe_items_failed_total", "", &load(&pipe.items_failed));
    counter(&mut out, "sluice_pipe_executions_failed_total", "", &load(&pipe.executions_failed));
    let flush = &sources.flush;
    counter(&mut out, "sluice_flushes_total", "", &load(&flush.flushes));
    counter(&mut out, "sluice_flushes_failed_total", "", &load(&flush.failed));
    counter(&mut out, "sluice_sheet_rows_appended_total", "", &load(&flush.rows_appended));
    counter(&mut out, "sluice_sheets_calls_total", "", &load(&flush.calls));
    for total in sources.steps.totals() {
        let name = format!("sluice_steps_{}_total", total.name);
        counter(&mut out, &name, total.labels, &serde_json::Number::from(total.value));
    }
    let _ = writeln!(out, "# TYPE sluice_queue_messages gauge");
    for (name, q) in queues {
        for (state, n) in [("waiting", q.visible), ("in_flight", q.in_flight), ("delayed", q.delayed)] {
            let _ = writeln!(out, "sluice_queue_messages{{queue=\"{name}\",state=\"{state}\"}} {n}");
        }
    }
    out
}

fn counter(out: &mut String, name: &str, labels: &str, value: &serde_json::Number) {
    if labels.is_empty() || !out.contains(&format!("# TYPE {name} ")) {
        let _ = writeln!(out, "# TYPE {name} counter");
    }
    let _ = writeln!(out, "{name}{labels} {value}");
}

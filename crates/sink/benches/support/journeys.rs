//! Event traces for the drain as deployed: each event's journey before
//! the drain, as the pipeline traces it (received, enqueued, fetched,
//! stored), which the drain reads into the event log.

use sluice_redis::{Connection, Traces};
use std::sync::Arc;

/// Each event's journey before the drain, as the pipeline traces it: what
/// the deployed drain reads into the event log.
pub(crate) const JOURNEY: [(&str, &str); 4] = [
    ("received", r#"{"topic":"products/updated"}"#),
    ("enqueued", r#"{"group":"mall0:product"}"#),
    ("fetched", r#"{"status":200,"waited_ms":12}"#),
    ("stored", r#"{"stream":"snap:0"}"#),
];

pub(crate) async fn trace_journeys(traces: &Traces<Connection>, events: usize) {
    let traces = Arc::new(traces.clone());
    let mut tasks = Vec::new();
    for worker in 0..16 {
        let traces = traces.clone();
        tasks.push(tokio::spawn(async move {
            for i in (worker..events).step_by(16) {
                for (stage, detail) in JOURNEY {
                    let detail: serde_json::Value = serde_json::from_str(detail).expect("detail");
                    traces.record(&format!("ev-{i}"), stage, &detail).await.expect("trace");
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("trace journeys");
    }
}

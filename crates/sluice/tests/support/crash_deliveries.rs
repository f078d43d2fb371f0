//! `crash_restart.rs`'s senders: each webhook posted until ingest answers,
//! as Cafe24 would, and what the answers say about which accepted events
//! were never stored.

use super::stack::{NotAccepted, Stale, trace_stages};
use serde_json::Value;
use sluice_cafe24::WebhookBody;
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a sender keeps retrying one delivery before it gives up: well
/// beyond the lease a killed attempt leaves on its delivery (ingest's
/// `accept_lease`), during which a retry is answered 503. Cafe24 itself
/// retries for far longer.
pub(crate) const SENDER_PATIENCE: Duration = Duration::from_secs(45);
/// The key `sluice dev` expects in `X-API-Key` by default.
pub(crate) const API_KEY: &str = "sluice-dev";

/// One webhook as its sender saw it.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    /// The change it reports (its index in the stream).
    pub(crate) change: usize,
    pub(crate) trace_id: String,
    pub(crate) attempts: u32,
    /// Why each retry was needed: a 5xx error code or "connection".
    pub(crate) retried_for: Vec<String>,
    /// The 202 receipt, or the last answer when the sender gave up.
    pub(crate) outcome: Result<Value, NotAccepted>,
    /// From the first attempt to the last answer.
    pub(crate) took: Duration,
    pub(crate) answered_at: Instant,
}

/// Posts a webhook until ingest answers 2xx or 4xx, sending it again with
/// the same X-Trace-ID after a 5xx or a connection error, for up to
/// [`SENDER_PATIENCE`].
pub(crate) async fn deliver(
    http: &reqwest::Client,
    ingest: &str,
    body: &WebhookBody,
    change: usize,
    trace_id: &str,
) -> Delivery {
    let first = Instant::now();
    let give_up = first + SENDER_PATIENCE;
    let mut backoff = Duration::from_millis(50);
    let mut delivery = Delivery {
        change,
        trace_id: trace_id.to_owned(),
        attempts: 0,
        retried_for: Vec::new(),
        outcome: Err(NotAccepted("never sent".into())),
        took: Duration::ZERO,
        answered_at: first,
    };
    loop {
        delivery.attempts += 1;
        let sent =
            http.post(ingest).header("X-API-Key", API_KEY).header("X-Trace-ID", trace_id).json(body).send().await;
        let why = match sent {
            Ok(response) if response.status().is_server_error() => {
                let status = response.status();
                let answer: Value = response.json().await.unwrap_or(Value::Null);
                answer["error"]["code"].as_str().map_or_else(|| status.to_string(), str::to_owned)
            }
            Ok(response) => {
                let status = response.status();
                let answer: Value = response.json().await.unwrap_or(Value::Null);
                delivery.answered_at = Instant::now();
                delivery.took = delivery.answered_at - first;
                delivery.outcome = match status.as_u16() {
                    202 => Ok(answer),
                    _ => Err(NotAccepted(format!("{status} {answer}"))),
                };
                return delivery;
            }
            Err(_) => "connection".to_owned(),
        };
        if Instant::now() + backoff > give_up {
            delivery.answered_at = Instant::now();
            delivery.took = delivery.answered_at - first;
            delivery.outcome =
                Err(NotAccepted(format!("gave up after {} attempts, the last: {why}", delivery.attempts)));
            return delivery;
        }
        delivery.retried_for.push(why);
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

/// The deliveries, by product index.
#[derive(Debug, Default)]
pub(crate) struct Book {
    pub(crate) deliveries: Vec<(usize, Delivery)>,
}

/// Events ingest accepted (enqueued, coalesced or a duplicate of one) that
/// no stored snapshot answers.
pub(crate) fn unanswered_events(book: &Book, answered: &HashMap<String, usize>) -> Vec<String> {
    let accepted = book.deliveries.iter().filter_map(|(_, d)| d.outcome.as_ref().ok());
    let events = accepted.flat_map(|receipt| receipt["event_ids"].as_array().cloned().unwrap_or_default());
    events.filter_map(|e| e.as_str().map(str::to_owned)).filter(|e| !answered.contains_key(e)).collect()
}

/// For each stale product (the first few): its versions, the webhook of
/// its last change, where the traces of that event and of the event it
/// joined end, and what that means.
pub(crate) fn explain_stale(stale: &Stale, book: &Book, products: &[(String, String)], workdir: &Path) -> String {
    let mut lines = Vec::new();
    for (i, stored, truth) in stale.iter().take(8) {
        let (mall, id) = &products[*i];
        lines.push(format!("  {mall}/product {id}: stored version {stored:?}, sandbox version {truth}"));
        let Some((_, last)) = book.deliveries.iter().filter(|(p, _)| p == i).max_by_key(|(_, d)| d.change) else {
            continue;
        };
        let receipt = match &last.outcome {
            Err(why) => {
                lines.push(format!("    the webhook of its last change, {}, was never accepted: {why}", last.trace_id));
                continue;
            }
            Ok(receipt) => receipt,
        };
        let event = receipt["event_ids"][0].as_str().unwrap_or_default();
        let stages = trace_stages(workdir, event);
        lines.push(format!(
            "    the webhook of its last change, {} ({} attempts): {}; {event}: {stages}",
            last.trace_id, last.attempts, receipt["status"]
        ));
        let Some(into) = receipt["into"].as_str() else { continue };
        let joined = trace_stages(workdir, into);
        lines.push(format!("      it joined {into}: {joined}"));
        if !joined.contains("enqueued") {
            lines.push(
                "      => it was coalesced into a mark whose owner never reached the queue (a request killed between \
                 its coalescing mark and its send): issue #12 finding 1"
                    .into(),
            );
        }
    }
    lines.join("\n")
}

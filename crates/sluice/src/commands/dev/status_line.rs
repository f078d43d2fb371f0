//! `sluice dev`'s status line: what ingest, the pipe, the queues and the
//! drain have done, redrawn in place.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sluice_dev_stack::{DevStack, IngestCounts};
use std::time::Duration;

/// On a terminal, one line redrawn every second; elsewhere nothing (the
/// draw target hides itself, so the output stays parseable). Never returns.
pub(super) async fn status_line(stack: &DevStack) {
    let line = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout())
        .with_style(ProgressStyle::with_template("{msg}").unwrap_or_else(|_| ProgressStyle::default_spinner()));
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let ingest = IngestCounts::of(stack);
        let done = stack.pipe.items_done.load(std::sync::atomic::Ordering::Relaxed);
        let failed = stack.pipe.items_failed.load(std::sync::atomic::Ordering::Relaxed);
        let queues = match stack.queues().await {
            Ok((events, dlq)) => {
                format!("queue {} (+{} in flight), DLQ {}", events.visible, events.in_flight, dlq.visible)
            }
            Err(e) => format!("queue: {e}"),
        };
        let drain = match &stack.drain {
            None => String::new(),
            Some(drain) => match drain.behind().await {
                Ok(behind) => format!(" | PostgreSQL {behind} behind"),
                Err(e) => format!(" | drain: {e}"),
            },
        };
        line.set_message(format!(
            "webhooks {} (enqueued {}, coalesced {}, rejected {}) | items done {done}, failed {failed} | {queues}{drain}",
            ingest.received, ingest.enqueued, ingest.coalesced, ingest.rejected
        ));
    }
}

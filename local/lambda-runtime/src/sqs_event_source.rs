//! An SQS event source mapping, as Lambda runs one for a standard queue:
//! pollers receive up to the mapping's batch size, invoke the function
//! synchronously with the SQS event (`{"Records": [...]}`), and delete
//! what it handled. With `ReportBatchItemFailures`, the messages named in
//! the answer's `batchItemFailures` stay; a failed invocation leaves the
//! whole batch. Several pollers run side by side, up to the function's
//! concurrency.
//!
//! One deliberate difference, as in the local pipe: a message left behind
//! is made visible again after `retry_after` instead of waiting out its
//! visibility timeout (540 s in the template), so development need not
//! wait minutes for a retry; the queue's maxReceiveCount still dead-letters it.

use crate::function_pool::FunctionPool;
use crate::function_spec::SqsSource;
use md5::{Digest, Md5};
use serde_json::{Map, Value, json};
use sluice_domain::DelayQueue;
use sluice_domain::queue::{ReceiveRequest, ReceivedDelayedMessage};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How the mapping polls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqsEventSourceConfig {
    pub source: SqsSource,
    pub region: String,
    /// Pollers, each with one invocation at a time.
    pub concurrency: usize,
    /// How long received messages stay invisible.
    pub visibility_timeout: Duration,
    /// Long-poll wait per receive; also how quickly a stop is noticed.
    pub wait: Duration,
    /// A message left behind is visible again after this.
    pub retry_after: Duration,
}

/// What the mapping has done so far.
#[derive(Debug, Default)]
pub struct EventSourceStats {
    pub invocations: AtomicU64,
    pub messages_done: AtomicU64,
    pub messages_failed: AtomicU64,
    pub function_errors: AtomicU64,
}

/// Polls `queue` for `function` until `stop` is cancelled; each poller
/// finishes the batch it holds first.
pub async fn run_sqs_event_source<Q: DelayQueue + 'static>(
    queue: Arc<Q>,
    function: Arc<FunctionPool>,
    config: SqsEventSourceConfig,
    stats: Arc<EventSourceStats>,
    stop: CancellationToken,
) {
    let batch = config.source.batch_size.clamp(1, 10) as u8;
    let request = match ReceiveRequest::new(batch, config.visibility_timeout, config.wait) {
        Ok(request) => request,
        Err(e) => {
            tracing::error!(error = %e, "the SQS event source is misconfigured");
            return;
        }
    };
    // The pollers' own token: dropping this future stops them too (each
    // finishing its batch), as `stop` does.
    let stop = stop.child_token();
    let _stop_when_dropped = stop.clone().drop_guard();
    let pollers = TaskTracker::new();
    for _ in 0..config.concurrency.max(1) {
        let (queue, function, config, stats, stop) =
            (queue.clone(), function.clone(), config.clone(), stats.clone(), stop.clone());
        pollers.spawn(async move {
            while !stop.is_cancelled() {
                let received = tokio::select! {
                    received = queue.receive(request) => received,
                    () = stop.cancelled() => break,
                };
                match received {
                    Ok(messages) if messages.is_empty() => {}
                    Ok(messages) => deliver(&*queue, &function, &config, &stats, messages).await,
                    Err(e) => {
                        tracing::warn!(error = %e, "the SQS event source could not receive");
                        tokio::select! {
                            () = stop.cancelled() => break,
                            () = tokio::time::sleep(config.retry_after) => {}
                        }
                    }
                }
            }
        });
    }
    pollers.close();
    pollers.wait().await;
}

async fn deliver<Q: DelayQueue>(
    queue: &Q,
    function: &FunctionPool,
    config: &SqsEventSourceConfig,
    stats: &EventSourceStats,
    messages: Vec<ReceivedDelayedMessage>,
) {
    let event = json!({"Records": messages.iter().map(|m| record(m, config)).collect::<Vec<_>>()});
    stats.invocations.fetch_add(1, Ordering::Relaxed);
    let failed: HashSet<String> = match function.invoke(event.to_string()).await {
        Ok(answer) if config.source.report_batch_item_failures => match failed_items(&answer, &messages) {
            Some(failed) => failed,
            None => messages.iter().map(|m| m.message_id.to_string()).collect(),
        },
        Ok(_) => HashSet::new(),
        Err(e) => {
            stats.function_errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(function = %function.spec().name, error = %e, "an SQS batch failed; it comes back");
            messages.iter().map(|m| m.message_id.to_string()).collect()
        }
    };
    for message in &messages {
        let settled = if failed.contains(message.message_id.as_str()) {
            stats.messages_failed.fetch_add(1, Ordering::Relaxed);
            queue.change_visibility(&message.receipt, config.retry_after).await
        } else {
            stats.messages_done.fetch_add(1, Ordering::Relaxed);
            queue.delete(&message.receipt).await
        };
        if let Err(e) = settled {
            tracing::warn!(message = %message.message_id, error = %e, "the SQS event source could not settle a message");
        }
    }
}

/// The ids in `batchItemFailures`; `None` when the answer names a message
/// not in the batch or is not a batch response, which Lambda takes as the
/// whole batch failed. An empty or absent list is a whole success.
fn failed_items(answer: &[u8], messages: &[ReceivedDelayedMessage]) -> Option<HashSet<String>> {
    let answer: Value = serde_json::from_slice(answer).ok()?;
    if answer.is_null() {
        return Some(HashSet::new());
    }
    let mut failed = HashSet::new();
    for item in answer.get("batchItemFailures").and_then(Value::as_array).into_iter().flatten() {
        let id = item["itemIdentifier"].as_str()?;
        if !messages.iter().any(|m| m.message_id.as_str() == id) {
            return None;
        }
        failed.insert(id.to_owned());
    }
    Some(failed)
}

/// One message as the event's record.
fn record(message: &ReceivedDelayedMessage, config: &SqsEventSourceConfig) -> Value {
    let sender = Map::from_iter([("SenderId".to_owned(), json!(crate::bindings::LOCAL_ACCOUNT))]);
    sqs_record(message, sender, Some((&config.source.queue_arn, &config.region)))
}

/// A received message as an SQS event record: the shape both Lambda's SQS
/// event source and EventBridge Pipes hand on (camelCase keys, every
/// attribute a string). `attributes` are those beyond the ones every queue
/// kind has (a FIFO queue's group, deduplication id and sequence number);
/// `source` the queue's ARN and region, when known.
pub fn sqs_record(
    message: &ReceivedDelayedMessage,
    attributes: Map<String, Value>,
    source: Option<(&str, &str)>,
) -> Value {
    let ms = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis()).to_string();
    let mut all = Map::from_iter([
        ("ApproximateReceiveCount".to_owned(), json!(message.receive_count.to_string())),
        ("SentTimestamp".to_owned(), json!(ms(message.sent_at))),
        ("ApproximateFirstReceiveTimestamp".to_owned(), json!(ms(message.first_received_at))),
    ]);
    all.extend(attributes);
    let mut record = json!({
        "messageId": message.message_id.as_str(),
        "receiptHandle": message.receipt.as_str(),
        "body": message.body,
        "attributes": all,
        "messageAttributes": {},
        "md5OfBody": hex::encode(Md5::digest(message.body.as_bytes())),
        "eventSource": "aws:sqs",
    });
    if let Some((arn, region)) = source {
        record["eventSourceARN"] = json!(arn);
        record["awsRegion"] = json!(region);
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::Launch;
    use crate::function_logs::LogSink;
    use crate::function_spec::FunctionSpec;
    use sluice_domain::Queue;
    use sluice_domain::queue::{DelayedMessage, DelayedOutcome, QueueAttributes, ReceiptHandle};
    use std::io;
    use std::path::PathBuf;
    use std::sync::atomic::AtomicUsize;
    use tokio::sync::Semaphore;
    use tokio_util::task::TaskTracker;

    /// A standard queue that cannot be reached.
    struct Unreachable {
        receives: AtomicUsize,
        /// A permit per receive.
        received: Semaphore,
    }

    fn down() -> io::Error {
        io::Error::new(io::ErrorKind::ConnectionRefused, "queue unreachable")
    }

    impl Queue for Unreachable {
        type Error = io::Error;

        async fn delete(&self, _: &ReceiptHandle) -> Result<(), io::Error> {
            Err(down())
        }

        async fn change_visibility(&self, _: &ReceiptHandle, _: Duration) -> Result<(), io::Error> {
            Err(down())
        }

        async fn attributes(&self) -> Result<QueueAttributes, io::Error> {
            Err(down())
        }
    }

    impl DelayQueue for Unreachable {
        async fn send_delayed_call(&self, _: &[&DelayedMessage]) -> Result<Vec<DelayedOutcome>, io::Error> {
            Err(down())
        }

        async fn receive(&self, _: ReceiveRequest) -> Result<Vec<ReceivedDelayedMessage>, io::Error> {
            self.receives.fetch_add(1, Ordering::SeqCst);
            self.received.add_permits(1);
            Err(down())
        }
    }

    /// A function that is never invoked here (every receive fails).
    fn function(stop: &CancellationToken) -> Arc<FunctionPool> {
        let spec = FunctionSpec {
            logical_id: "FlushFunction".into(),
            binary: "sluice-fn-flush-sheet".into(),
            name: "sluice-local-flush-sheet".into(),
            arn: "arn:aws:lambda:us-east-1:000000000000:function:sluice-local-flush-sheet".into(),
            memory_mb: 128,
            timeout: Duration::from_secs(3),
            reserved_concurrency: None,
            log_format: None,
            variables: Vec::new(),
            http_routes: Vec::new(),
            sqs_sources: Vec::new(),
        };
        let logs = Arc::new(LogSink { dir: None, metrics: Arc::default() });
        let (binary, region) = (PathBuf::from("/nonexistent"), "us-east-1".to_owned());
        let (stop, tasks) = (stop.child_token(), TaskTracker::new());
        Arc::new(FunctionPool::new(spec, Launch { binary, region, logs, stop, tasks }, 1, None))
    }

    #[tokio::test]
    async fn pollers_backing_off_from_a_failed_receive_stop_at_once() {
        let queue = Arc::new(Unreachable { receives: AtomicUsize::new(0), received: Semaphore::new(0) });
        let stop = CancellationToken::new();
        let config = SqsEventSourceConfig {
            source: SqsSource {
                queue_arn: "arn:aws:sqs:us-east-1:000000000000:q".into(),
                batch_size: 10,
                report_batch_item_failures: true,
            },
            region: "us-east-1".into(),
            concurrency: 3,
            visibility_timeout: Duration::from_secs(30),
            wait: Duration::from_secs(1),
            // Waited out, this back-off would outlast the test's bound.
            retry_after: Duration::from_secs(3_600),
        };
        let source = run_sqs_event_source(queue.clone(), function(&stop), config, Arc::default(), stop.clone());
        let mut source = tokio::spawn(source);
        queue.received.acquire_many(3).await.unwrap().forget();
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(1), &mut source)
            .await
            .expect("the pollers stop without waiting out their back-off")
            .unwrap();
        assert_eq!(queue.receives.load(Ordering::SeqCst), 3, "each poller received once, then backed off");
    }
}

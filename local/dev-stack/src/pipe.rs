//! The pipe: what EventBridge Pipes does in AWS, on one machine. Each
//! worker receives a batch from the FIFO queue, runs the state machine on
//! it synchronously (StartSyncExecution, through `aws-sdk-sfn` against the
//! Step Functions endpoint of `sluice dev`, as the deployed Pipe calls Step
//! Functions), deletes the messages the execution did not report in
//! `batchItemFailures`, and leaves the others to come back. Several
//! workers poll side by side, as several pipes read the one queue in AWS.
//!
//! How many batches one pipe runs at once is not settled: AWS's "Pipes
//! batching and concurrency" page describes an SQS source scaling out (for a
//! FIFO queue, up to the active message groups), as Lambda's SQS event
//! source does, while the engineers of the post this design grew from saw
//! one pipe fall far short of that and ran twelve. So the pipe can be either
//! ([`PipeConcurrency`]): each worker waiting for its execution before it
//! receives again, or workers that start an execution per batch and receive
//! on, up to a ceiling of batches in flight. Either way the queue's group
//! locking keeps two batches of one group from running at once (a group is
//! blocked while any of its messages is in flight), so each group stays in
//! order; what changes is how many executions, and so how many step
//! invocations, run at once, which is what Lambda's reserved concurrency
//! throttles.
//!
//! One deliberate difference: AWS leaves a failed message invisible until
//! its visibility timeout (sized above the state machine's five minutes);
//! locally a failed message can be made visible again sooner
//! ([`PipeConfig::retry_after`]), so development and tests need not wait
//! minutes for a retry. An execution that fails as a whole, or a start
//! that Step Functions refuses or never answers, leaves its whole batch,
//! as in AWS.

use serde_json::{Map, Value, json};
use sluice_aws::{StateMachineClient, SyncOutcome};
use sluice_domain::WorkQueue;
use sluice_domain::queue::{ReceiveRequest, ReceivedMessage};
use sluice_lambda_runtime::sqs_event_source::sqs_record;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How the pipe pulls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipeConfig {
    /// Messages per batch (Pipes: up to 10 from a FIFO queue).
    pub batch_size: u8,
    /// How long received messages stay invisible: above the state
    /// machine's longest run.
    pub visibility_timeout: Duration,
    /// Long-poll wait per receive; also how quickly a stop is noticed.
    pub wait: Duration,
    /// Workers polling at once.
    pub workers: usize,
    /// Whether a worker waits for its batch's execution before it receives
    /// again.
    pub concurrency: PipeConcurrency,
    /// Make a failed message visible again after this (whole seconds, as
    /// SQS takes them; rounded up), instead of waiting out its visibility
    /// timeout (`None`: as AWS does).
    pub retry_after: Option<Duration>,
}

impl Default for PipeConfig {
    fn default() -> Self {
        Self {
            batch_size: sluice_domain::queue::PIPE_BATCH_SIZE as u8,
            visibility_timeout: Duration::from_secs(330),
            wait: Duration::from_secs(1),
            workers: 4,
            concurrency: PipeConcurrency::OneBatchPerWorker,
            retry_after: Some(Duration::from_secs(2)),
        }
    }
}

/// How many batches the pipe runs at once (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipeConcurrency {
    /// A worker receives, runs the execution and waits for it: as many
    /// batches at once as workers.
    OneBatchPerWorker,
    /// Workers receive on while executions run, as a pipe that scales out
    /// does: up to this many batches in flight at once, over all workers.
    ScaleOut { max_batches: usize },
}

impl PipeConcurrency {
    /// `one-per-worker`, or `scale-out:N` (N batches in flight at most).
    pub fn parse(text: &str) -> Result<Self, String> {
        if text == "one-per-worker" {
            return Ok(Self::OneBatchPerWorker);
        }
        let bad = || format!("{text:?} is not one-per-worker or scale-out:N (N a number of batches, 1 to 10000)");
        let max = text.strip_prefix("scale-out:").ok_or_else(bad)?;
        match max.parse::<usize>() {
            Ok(max_batches @ 1..=10_000) => Ok(Self::ScaleOut { max_batches }),
            _ => Err(bad()),
        }
    }
}

/// What the pipe has done so far.
#[derive(Debug, Default)]
pub struct PipeStats {
    pub batches: AtomicU64,
    pub items_done: AtomicU64,
    pub items_failed: AtomicU64,
    /// Executions that failed or timed out, and starts that Step
    /// Functions refused or did not answer.
    pub executions_failed: AtomicU64,
    pub queue_errors: AtomicU64,
    /// The most batches that were in flight at once.
    pub max_in_flight: AtomicU64,
    in_flight: AtomicU64,
}

impl PipeStats {
    fn started(&self) {
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_in_flight.fetch_max(now, Ordering::Relaxed);
    }

    fn finished(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The pipe, ready to run.
#[derive(Debug)]
pub struct Pipe<Q> {
    queue: Arc<Q>,
    state_machine: StateMachineClient,
    config: PipeConfig,
    stats: Arc<PipeStats>,
}

impl<Q: WorkQueue + 'static> Pipe<Q> {
    pub fn new(queue: Arc<Q>, state_machine: StateMachineClient, config: PipeConfig) -> Self {
        Self { queue, state_machine, config, stats: Arc::default() }
    }

    pub fn stats(&self) -> Arc<PipeStats> {
        self.stats.clone()
    }

    /// Runs the workers until `stop` is cancelled; each finishes the batch
    /// it holds before returning, so nothing is left half done.
    pub async fn run(self, stop: CancellationToken) {
        let request =
            match ReceiveRequest::new(self.config.batch_size, self.config.visibility_timeout, self.config.wait) {
                Ok(request) => request,
                Err(e) => {
                    tracing::error!(error = %e, "pipe not started: bad receive settings");
                    return;
                }
            };
        // Scaled out, the batches in flight hold permits of one semaphore
        // and run on the tracker, which `run` waits for before it returns.
        let in_flight = match self.config.concurrency {
            PipeConcurrency::OneBatchPerWorker => None,
            PipeConcurrency::ScaleOut { max_batches } => Some(Arc::new(Semaphore::new(max_batches.max(1)))),
        };
        let batches = TaskTracker::new();
        let worker = Arc::new(Worker {
            queue: self.queue.clone(),
            state_machine: self.state_machine.clone(),
            retry_after: self.config.retry_after,
            settle_patience: self.config.visibility_timeout,
            stats: self.stats.clone(),
        });
        for _ in 0..self.config.workers.max(1) {
            let (worker, stop, in_flight) = (worker.clone(), stop.clone(), in_flight.clone());
            batches.spawn(worker.run(request, stop, in_flight, batches.clone()));
        }
        batches.close();
        batches.wait().await;
    }
}

struct Worker<Q> {
    queue: Arc<Q>,
    state_machine: StateMachineClient,
    retry_after: Option<Duration>,
    /// How long after their receive a settle the queue refuses is tried
    /// again: the messages' visibility timeout, after which the receipt is
    /// stale anyway.
    settle_patience: Duration,
    stats: Arc<PipeStats>,
}

impl<Q: WorkQueue + 'static> Worker<Q> {
    /// Receives until `stop`; with `in_flight`, each batch runs on
    /// `batches` under a permit while the worker receives on.
    async fn run(
        self: Arc<Self>,
        request: ReceiveRequest,
        stop: CancellationToken,
        in_flight: Option<Arc<Semaphore>>,
        batches: TaskTracker,
    ) {
        while !stop.is_cancelled() {
            let permit = match &in_flight {
                None => None,
                Some(slots) => tokio::select! {
                    permit = slots.clone().acquire_owned() => permit.ok(),
                    () = stop.cancelled() => return,
                },
            };
            // Not raced with `stop`: a receive dropped mid-call may have
            // taken messages, hidden then for the visibility timeout. Its
            // long-poll wait bounds how late a stop is seen.
            // The messages' visibility timeout runs from their receive: no
            // later than now.
            let received = Instant::now();
            let batch = match self.queue.receive(request).await {
                Ok(batch) => batch,
                Err(e) => {
                    self.stats.queue_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "pipe receive failed");
                    // Back off so an unreachable queue is not hammered.
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(500)) => {}
                        () = stop.cancelled() => {}
                    }
                    continue;
                }
            };
            if batch.is_empty() {
                continue;
            }
            match permit {
                None => self.process(batch, received, &stop).await,
                Some(permit) => {
                    let (worker, stop) = (self.clone(), stop.clone());
                    batches.spawn(async move {
                        worker.process(batch, received, &stop).await;
                        drop(permit);
                    });
                }
            }
        }
    }

    async fn process(&self, batch: Vec<ReceivedMessage>, received: Instant, stop: &CancellationToken) {
        self.stats.batches.fetch_add(1, Ordering::Relaxed);
        self.stats.started();
        self.run_batch(batch, received, stop).await;
        self.stats.finished();
    }

    /// Runs the execution and settles its messages. A settle the queue
    /// refuses (its Redis away) is tried again until the receipt would be
    /// stale anyway (`received` + the visibility timeout): a message left in flight blocks its whole FIFO group
    /// until its visibility timeout (330 s), where Redis is usually back
    /// within seconds (a fixed 15 s gave up during a 20 s outage, and the
    /// group waited out the 330 s). A stop lets both finish, but a settle
    /// that fails once stopped is not tried again (one backing off when the
    /// stop came tries once more, at once): the message comes back as after
    /// a crash (a stack returns what its predecessor held in flight when it
    /// starts).
    async fn run_batch(&self, batch: Vec<ReceivedMessage>, received: Instant, stop: &CancellationToken) {
        let input = Value::Array(batch.iter().map(pipe_message).collect()).to_string();
        let whole_batch = || batch.iter().map(|m| m.message_id.to_string()).collect();
        let failed: HashSet<String> = match self.state_machine.start_sync(&input, None).await {
            Ok(execution) => match &execution.outcome {
                SyncOutcome::Succeeded { output } => failed_items(output).unwrap_or_else(|| {
                    tracing::warn!(output, "execution output is not JSON: batch left to retry");
                    whole_batch()
                }),
                SyncOutcome::Failed { error, cause } | SyncOutcome::TimedOut { error, cause } => {
                    self.stats.executions_failed.fetch_add(1, Ordering::Relaxed);
                    let (arn, status) = (&execution.execution_arn, execution.outcome.status());
                    tracing::warn!(arn, status, error, cause, "execution did not succeed: batch left to retry");
                    whole_batch()
                }
            },
            Err(e) => {
                self.stats.executions_failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, "execution not started: batch left to retry");
                whole_batch()
            }
        };
        // Settled side by side, as Pipes deletes a batch in one call: the
        // group stays blocked until its last message is settled.
        let settle = batch.iter().map(|message| async {
            let failed = failed.contains(message.message_id.as_str());
            let counter = if failed { &self.stats.items_failed } else { &self.stats.items_done };
            counter.fetch_add(1, Ordering::Relaxed);
            if failed && self.retry_after.is_none() {
                return;
            }
            let give_up = received + self.settle_patience;
            let mut backoff = Duration::from_millis(100);
            loop {
                let outcome = match self.retry_after {
                    Some(after) if failed => {
                        let whole = Duration::from_secs(after.as_secs_f64().ceil() as u64);
                        self.queue.change_visibility(&message.receipt, whole).await
                    }
                    _ => self.queue.delete(&message.receipt).await,
                };
                let Err(e) = outcome else { return };
                self.stats.queue_errors.fetch_add(1, Ordering::Relaxed);
                if Instant::now() + backoff > give_up || stop.is_cancelled() {
                    tracing::warn!(message = %message.message_id, error = %e, "pipe could not settle a message");
                    return;
                }
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        });
        futures::future::join_all(settle).await;
    }
}

/// A received message as Pipes hands it to Step Functions: an SQS event
/// record with the FIFO queue's attributes (the queue's ARN left out: the
/// pipe reads whatever queue it is given).
pub fn pipe_message(message: &ReceivedMessage) -> Value {
    let fifo = Map::from_iter([
        ("MessageGroupId".to_owned(), json!(message.group.as_str())),
        ("MessageDeduplicationId".to_owned(), json!(message.dedup.as_str())),
        ("SequenceNumber".to_owned(), json!(message.sequence_number)),
    ]);
    sqs_record(&message.into(), fifo, None)
}

/// The message ids an execution's output (JSON text) reports failed;
/// `None` when the output is not JSON at all (then nothing is known done).
pub fn failed_items(output: &str) -> Option<HashSet<String>> {
    let output: Value = serde_json::from_str(output).ok()?;
    Some(
        output["batchItemFailures"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["itemIdentifier"].as_str().map(str::to_owned))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_concurrency_reads_both_answers_and_names_a_bad_one() {
        assert_eq!(PipeConcurrency::parse("one-per-worker"), Ok(PipeConcurrency::OneBatchPerWorker));
        assert_eq!(PipeConcurrency::parse("scale-out:48"), Ok(PipeConcurrency::ScaleOut { max_batches: 48 }));
        for bad in ["scale-out:0", "scale-out:", "scale-out:x", "many", ""] {
            let error = PipeConcurrency::parse(bad).expect_err(bad);
            assert!(error.contains("one-per-worker or scale-out:N"), "{error}");
        }
    }
}

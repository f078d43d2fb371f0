//! Packs concurrent sends into `SendMessageBatch`-sized calls.
//!
//! Each request hands its message to one task and awaits its own outcome.
//! The task takes the first waiting message, then keeps collecting until it
//! holds [`BatchConfig::max_entries`] or [`BatchConfig::linger`] has passed
//! since the first, and sends the batch through
//! [`WorkQueue::send_batch`] on a task of its own, so up to
//! [`BatchConfig::max_in_flight`] batches are in flight while the next one
//! fills. Under a burst, batches fill at once and the linger never runs;
//! alone, a webhook waits at most the linger. A morning flood of 50,000
//! shipping updates is 5,000 calls instead of 50,000.
//!
//! Order: messages of one group in one batch keep their order (the batching
//! rule guarantees it), and a sender that waits for each answer before its
//! next webhook never has two in flight, so its group's order holds. Two
//! webhooks in flight at once have no order to keep.
//!
//! Shutdown ([`Batcher::shutdown`]) stops taking new messages, sends every
//! message already handed over, and waits for every batch in flight: no
//! request that got as far as the batcher is left without its answer.

use crate::config::BatchConfig;
use crate::counters::Counters;
use sluice_domain::WorkQueue;
use sluice_domain::queue::rules::codes;
use sluice_domain::queue::{OutgoingMessage, SendFailure, SendOutcome};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

struct Job {
    message: OutgoingMessage,
    reply: oneshot::Sender<SendOutcome>,
}

/// The handle requests send through; cheap to share.
#[derive(Debug)]
pub struct Batcher {
    jobs: mpsc::Sender<Job>,
    stop: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Batcher {
    /// Starts the batching task on the current tokio runtime.
    pub fn start<Q: WorkQueue + 'static>(queue: Arc<Q>, config: BatchConfig, counters: Arc<Counters>) -> Self {
        let (jobs, inbox) = mpsc::channel(config.backlog.max(1));
        let stop = CancellationToken::new();
        let task = tokio::spawn(run(queue, inbox, config, counters, stop.clone()));
        Self { jobs, stop, task: Mutex::new(Some(task)) }
    }

    /// Sends one message as part of some batch; returns its own outcome.
    /// After shutdown it fails at once, as a call that was not made.
    pub async fn send(&self, message: OutgoingMessage) -> SendOutcome {
        let (reply, outcome) = oneshot::channel();
        if self.jobs.send(Job { message, reply }).await.is_err() {
            return not_sent("ingest is shutting down; the message was not sent");
        }
        outcome.await.unwrap_or_else(|_| not_sent("the batcher stopped before sending the message"))
    }

    /// Stops taking messages, sends those already taken and waits for every
    /// batch in flight. Later calls return at once.
    pub async fn shutdown(&self) {
        let task = self.task.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(task) = task {
            self.stop.cancel();
            if let Err(e) = task.await {
                tracing::error!(error = %e, "the ingest batcher ended abnormally");
            }
        }
    }
}

fn not_sent(why: &str) -> SendOutcome {
    SendOutcome::Failed(SendFailure::new(codes::CALL_FAILED, why, false))
}

async fn run<Q: WorkQueue + 'static>(
    queue: Arc<Q>,
    mut inbox: mpsc::Receiver<Job>,
    config: BatchConfig,
    counters: Arc<Counters>,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(config.max_in_flight.max(1)));
    let in_flight = TaskTracker::new();
    let mut stopping = false;
    loop {
        let first = tokio::select! {
            job = inbox.recv() => match job {
                Some(job) => job,
                // Closed and drained: every message taken has been handed on.
                None => break,
            },
            () = stop.cancelled(), if !stopping => {
                stopping = stop_taking(&mut inbox);
                continue;
            }
        };
        let batch = fill(&mut inbox, first, &config, &stop, &mut stopping).await;
        // Wait for a free slot here rather than in the spawned task: while
        // we wait, the next batch fills up in the channel.
        let Ok(slot) = slots.clone().acquire_owned().await else { break };
        counters.batch(batch.len());
        let queue = queue.clone();
        in_flight.spawn(async move {
            send(&*queue, batch).await;
            drop(slot);
        });
    }
    in_flight.close();
    in_flight.wait().await;
}

/// New sends now fail; those already in the channel are still received.
fn stop_taking(inbox: &mut mpsc::Receiver<Job>) -> bool {
    inbox.close();
    true
}

/// Collects up to `max_entries` jobs: whatever is waiting, then whatever
/// arrives within the linger after the first. A shutdown cuts the linger
/// short.
async fn fill(
    inbox: &mut mpsc::Receiver<Job>,
    first: Job,
    config: &BatchConfig,
    stop: &CancellationToken,
    stopping: &mut bool,
) -> Vec<Job> {
    let mut batch = Vec::with_capacity(config.max_entries);
    batch.push(first);
    let deadline = Instant::now() + config.linger;
    while batch.len() < config.max_entries {
        match inbox.try_recv() {
            Ok(job) => {
                batch.push(job);
                continue;
            }
            Err(mpsc::error::TryRecvError::Disconnected) => break,
            Err(mpsc::error::TryRecvError::Empty) => {}
        }
        // Nothing waiting: linger for company, unless shutting down.
        if *stopping || config.linger.is_zero() {
            break;
        }
        tokio::select! {
            job = inbox.recv() => match job {
                Some(job) => batch.push(job),
                None => break,
            },
            () = tokio::time::sleep_until(deadline) => break,
            () = stop.cancelled() => {
                *stopping = stop_taking(inbox);
                break;
            }
        }
    }
    batch
}

async fn send<Q: WorkQueue>(queue: &Q, batch: Vec<Job>) {
    let (messages, replies): (Vec<_>, Vec<_>) = batch.into_iter().map(|j| (j.message, j.reply)).unzip();
    let outcomes = queue.send_batch(&messages).await;
    for (reply, outcome) in replies.into_iter().zip(outcomes) {
        // A request that went away no longer needs its answer.
        let _ = reply.send(outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_domain::{DedupId, GroupKey};
    use sluice_sqs_emulator::{EmbeddedQueue, MemoryBackend, QueueBackend, QueueConfig};
    use std::time::Duration;

    fn message(i: usize) -> OutgoingMessage {
        OutgoingMessage::new(
            GroupKey::parse(&format!("g{}", i % 3)).unwrap(),
            DedupId::parse(&format!("d{i}")).unwrap(),
            format!("m{i}"),
        )
    }

    async fn queue() -> Arc<EmbeddedQueue<MemoryBackend>> {
        let backend = MemoryBackend::new();
        backend.create_queue("q.fifo", &QueueConfig::default()).await.unwrap();
        Arc::new(EmbeddedQueue::new(backend, "q.fifo"))
    }

    #[tokio::test]
    async fn shutdown_sends_everything_already_handed_over() {
        let queue = queue().await;
        let counters = Arc::new(Counters::default());
        // A long linger: without draining, the last five would still wait.
        let config = BatchConfig { linger: Duration::from_secs(30), ..BatchConfig::default() };
        let batcher = Batcher::start(queue.clone(), config, counters.clone());
        let mut sends: Vec<_> = (0..25).map(|i| Box::pin(batcher.send(message(i)))).collect();
        // One poll hands each message over (the channel has room) and then
        // waits for its outcome.
        for send in &mut sends {
            assert!(futures::poll!(send.as_mut()).is_pending());
        }
        // Two full batches go out at once; the last five wait out the linger.
        tokio::time::timeout(Duration::from_secs(5), async {
            while queue.backend().attributes("q.fifo").await.unwrap().visible < 20 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("two full batches are sent at once");
        assert_eq!(counters.snapshot().batch_calls, 2);
        let (outcomes, ()) = tokio::time::timeout(
            Duration::from_secs(5),
            futures::future::join(futures::future::join_all(sends), batcher.shutdown()),
        )
        .await
        .expect("shutdown drains promptly, without waiting out the linger");
        assert!(outcomes.iter().all(SendOutcome::is_accepted), "{outcomes:?}");
        assert_eq!(queue.backend().attributes("q.fifo").await.unwrap().visible, 25);
        assert_eq!(counters.snapshot().batched_entries, 25);
        let after = batcher.send(message(99)).await;
        assert!(!after.is_accepted(), "a send after shutdown is refused, not lost: {after:?}");
    }

    #[tokio::test]
    async fn concurrent_sends_share_calls_of_at_most_ten() {
        let queue = queue().await;
        let counters = Arc::new(Counters::default());
        let batcher = Batcher::start(queue.clone(), BatchConfig::default(), counters.clone());
        let outcomes = tokio::time::timeout(
            Duration::from_secs(5),
            futures::future::join_all((0..35).map(|i| batcher.send(message(i)))),
        )
        .await
        .unwrap();
        assert!(outcomes.iter().all(SendOutcome::is_accepted));
        let snapshot = counters.snapshot();
        assert_eq!(snapshot.batched_entries, 35);
        // join_all hands all 35 over before the batcher runs: 10+10+10+5.
        assert_eq!(snapshot.batch_calls, 4);
        batcher.shutdown().await;
    }
}

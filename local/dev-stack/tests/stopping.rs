//! Stopping the pipe and the delay worker: a stop never waits out a
//! back-off, and the delay worker still waits for the requests it runs.
//!
//! The queues here are fakes that fail on demand; the stops are bounded
//! (1 s of real time for the pipe, which talks HTTP to a Step Functions
//! endpoint; a paused clock for the delay worker, so an hour-long back-off
//! that is waited out would end the test's timeout first).

use futures::future::BoxFuture;
use sluice_aws::{SfnEndpoint, StateMachineClient, sfn_client};
use sluice_dev_stack::sfn_api::{self, StepFunctionsApi};
use sluice_dev_stack::{DelayWorkerConfig, Handled, Pipe, PipeConfig, RequestHandler, run_delay_worker};
use sluice_domain::queue::{
    DelayedMessage, DelayedOutcome, MessageId, OutgoingMessage, QueueAttributes, ReceiptHandle, ReceiveRequest,
    ReceivedDelayedMessage, ReceivedMessage, SendOutcome,
};
use sluice_domain::{DedupId, DelayQueue, GroupKey, Queue, WorkQueue};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::{Notify, Semaphore};
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

/// How soon after its token is cancelled a worker must have returned.
const PROMPTLY: Duration = Duration::from_secs(1);
/// A back-off far longer than any bound here.
const AN_HOUR: Duration = Duration::from_secs(3_600);

fn unreachable() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionRefused, "queue unreachable")
}

/// A FIFO queue that hands out `batch` once, then nothing; it can delete
/// or change the visibility of nothing (Redis away).
struct Unsettled {
    batch: Mutex<Option<Vec<ReceivedMessage>>>,
    settle_failures: AtomicUsize,
    settle_failed: Notify,
}

impl Queue for Unsettled {
    type Error = io::Error;

    async fn delete(&self, _: &ReceiptHandle) -> Result<(), io::Error> {
        self.fail_settle()
    }

    async fn change_visibility(&self, _: &ReceiptHandle, _: Duration) -> Result<(), io::Error> {
        self.fail_settle()
    }

    async fn attributes(&self) -> Result<QueueAttributes, io::Error> {
        Ok(QueueAttributes::default())
    }
}

impl Unsettled {
    fn fail_settle(&self) -> Result<(), io::Error> {
        self.settle_failures.fetch_add(1, Ordering::SeqCst);
        // A stored permit: the test sees it even if it is not yet waiting.
        self.settle_failed.notify_one();
        Err(unreachable())
    }
}

impl WorkQueue for Unsettled {
    async fn send_call(&self, _: &[&OutgoingMessage]) -> Result<Vec<SendOutcome>, io::Error> {
        Err(unreachable())
    }

    async fn receive(&self, request: ReceiveRequest) -> Result<Vec<ReceivedMessage>, io::Error> {
        let batch = self.batch.lock().unwrap().take();
        match batch {
            Some(batch) => Ok(batch),
            // An empty long poll, as a queue answers one.
            None => {
                tokio::time::sleep(request.wait()).await;
                Ok(Vec::new())
            }
        }
    }
}

fn received(id: &str) -> ReceivedMessage {
    ReceivedMessage {
        message_id: MessageId::new(id),
        receipt: ReceiptHandle::new(format!("rh-{id}")),
        body: "{}".to_owned(),
        group: GroupKey::parse("g").unwrap(),
        dedup: DedupId::parse(id).unwrap(),
        sequence_number: "1".to_owned(),
        receive_count: 1,
        sent_at: SystemTime::now(),
        first_received_at: SystemTime::now(),
    }
}

#[tokio::test]
async fn a_pipe_backing_off_from_a_failed_settle_stops_within_a_second() {
    // A Step Functions endpoint without the machine: every execution is
    // refused at once, so the whole batch is made visible again, which the
    // queue keeps failing (a settle backs off for up to 15 s).
    let endpoint_stop = CancellationToken::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let endpoint =
        tokio::spawn(sfn_api::serve(listener, StepFunctionsApi::new(1), endpoint_stop.clone().cancelled_owned()));
    let arn = "arn:aws:states:us-east-1:000000000000:stateMachine:missing";
    let state_machine = StateMachineClient::new(sfn_client(&SfnEndpoint::Local(url)).await, arn);
    let queue = Arc::new(Unsettled {
        batch: Mutex::new(Some(vec![received("m1"), received("m2")])),
        settle_failures: AtomicUsize::new(0),
        settle_failed: Notify::new(),
    });
    // One worker, waiting for its batch: when the stop comes it is backing
    // off, not receiving.
    let config = PipeConfig { workers: 1, ..PipeConfig::default() };
    let pipe = Pipe::new(queue.clone(), state_machine, config);
    let stats = pipe.stats();
    let stop = CancellationToken::new();
    let mut running = tokio::spawn(pipe.run(stop.clone()));

    timeout(Duration::from_secs(30), queue.settle_failed.notified()).await.expect("the batch is settled, and fails");
    stop.cancel();
    timeout(PROMPTLY, &mut running).await.expect("the pipe stops without waiting out its back-off").unwrap();
    assert_eq!(stats.executions_failed.load(Ordering::Relaxed), 1);
    // Each message: the first try, and at most one more once stopped.
    let tries = queue.settle_failures.load(Ordering::SeqCst);
    assert!((2..=4).contains(&tries), "{tries} settle attempts");
    endpoint_stop.cancel();
    endpoint.await.unwrap().unwrap();
}

/// A standard queue whose receives fail (or, `failing` off, hand out
/// `requests` once and then wait), recording deletes.
#[derive(Default)]
struct Requests {
    failing: bool,
    requests: Mutex<Option<Vec<ReceivedDelayedMessage>>>,
    receives: AtomicUsize,
    received: Notify,
    deleted: Mutex<Vec<String>>,
}

impl Queue for Requests {
    type Error = io::Error;

    async fn delete(&self, receipt: &ReceiptHandle) -> Result<(), io::Error> {
        self.deleted.lock().unwrap().push(receipt.to_string());
        Ok(())
    }

    async fn change_visibility(&self, _: &ReceiptHandle, _: Duration) -> Result<(), io::Error> {
        Ok(())
    }

    async fn attributes(&self) -> Result<QueueAttributes, io::Error> {
        Ok(QueueAttributes::default())
    }
}

impl DelayQueue for Requests {
    async fn send_delayed_call(&self, _: &[&DelayedMessage]) -> Result<Vec<DelayedOutcome>, io::Error> {
        Err(unreachable())
    }

    async fn receive(&self, _: ReceiveRequest) -> Result<Vec<ReceivedDelayedMessage>, io::Error> {
        self.receives.fetch_add(1, Ordering::SeqCst);
        self.received.notify_one();
        if self.failing {
            return Err(unreachable());
        }
        let requests = self.requests.lock().unwrap().take();
        match requests {
            Some(requests) => Ok(requests),
            None => std::future::pending().await,
        }
    }
}

/// A handler that holds each request until the test lets it go.
struct Held {
    started: Arc<Notify>,
    release: Arc<Semaphore>,
}

impl RequestHandler for Held {
    fn name(&self) -> &'static str {
        "held"
    }

    fn handle(&self, _: String) -> BoxFuture<'_, Handled> {
        Box::pin(async move {
            self.started.notify_one();
            self.release.acquire().await.unwrap().forget();
            Handled::Done
        })
    }
}

fn held() -> (Arc<Held>, Arc<Notify>, Arc<Semaphore>) {
    let (started, release) = (Arc::new(Notify::new()), Arc::new(Semaphore::new(0)));
    (Arc::new(Held { started: started.clone(), release: release.clone() }), started, release)
}

#[tokio::test(start_paused = true)]
async fn a_delay_worker_backing_off_from_a_failed_receive_stops_at_once() {
    let queue = Arc::new(Requests { failing: true, ..Requests::default() });
    let config = DelayWorkerConfig { retry_after: AN_HOUR, ..DelayWorkerConfig::default() };
    let stop = CancellationToken::new();
    let (handler, _, _) = held();
    let mut worker = tokio::spawn(run_delay_worker(queue.clone(), handler, config, stop.clone()));

    queue.received.notified().await;
    stop.cancel();
    // The paused clock jumps to the next timer: waiting out the hour's
    // back-off would end this timeout first.
    timeout(PROMPTLY, &mut worker).await.expect("the worker stops without waiting out its back-off").unwrap();
    assert_eq!(queue.receives.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_stopped_delay_worker_waits_for_the_requests_it_runs() {
    let request = ReceivedDelayedMessage {
        message_id: MessageId::new("r1"),
        receipt: ReceiptHandle::new("rh-r1"),
        body: "{}".to_owned(),
        receive_count: 1,
        sent_at: SystemTime::now(),
        first_received_at: SystemTime::now(),
    };
    let queue = Arc::new(Requests { requests: Mutex::new(Some(vec![request])), ..Requests::default() });
    let stop = CancellationToken::new();
    let (handler, started, release) = held();
    let config = DelayWorkerConfig::default();
    let mut worker = tokio::spawn(run_delay_worker(queue.clone(), handler, config, stop.clone()));

    started.notified().await;
    stop.cancel();
    assert!(timeout(AN_HOUR, &mut worker).await.is_err(), "returned while a request was still running");
    assert!(queue.deleted.lock().unwrap().is_empty());
    release.add_permits(1);
    timeout(PROMPTLY, &mut worker).await.expect("returns once the request is done").unwrap();
    assert_eq!(*queue.deleted.lock().unwrap(), ["rh-r1"]);
}

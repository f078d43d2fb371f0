//! A burst over 200 malls with every step function held to a reserved
//! concurrency, as Lambda holds it (an invocation past it refused with
//! `TooManyRequestsException`), under both answers to "how many batches
//! does one pipe run at once": one per worker, and a pipe that scales out.
//! Nothing may be lost, nothing may reach the dead-letter queue for having
//! been throttled, and no call may exceed a mall's bucket.
//!
//! The reservation is scaled down with the machine: on two cores a step
//! answers in milliseconds, so 40 places (the template's StepConcurrency)
//! would rarely fill; 4 places against up to 48 batches of 10 malls each do,
//! which is the ratio a burst over many malls meets in AWS (executions ×
//! Map concurrency far above 40). The state machine waits on the wall clock,
//! so its throttle retries take as long as they would in Step Functions.

use crate::support;

use sluice_dev_stack::PipeConcurrency;
use std::time::Duration;
use support::{PRODUCT, Setup, Stack, product};

const MALLS: usize = 200;
const EVENTS_PER_MALL: usize = 3;
const LIMIT: Duration = Duration::from_secs(120);

/// Floods the stack and checks the invariants; the throttles it met and
/// the most batches that ran at once.
async fn flood(test: &str, pipe_concurrency: PipeConcurrency) -> (u64, u64) {
    let malls: Vec<String> = (0..MALLS).map(|m| format!("mall-{m:03}")).collect();
    let names: Vec<&str> = malls.iter().map(String::as_str).collect();
    let mut setup = Setup::new(&names);
    setup.pipe_concurrency = pipe_concurrency;
    setup.workers = 8;
    setup.step_concurrency = Some(4);
    setup.real_clock = true;
    // Tight on purpose: a healthy event bounced back to the queue twice for
    // having been throttled would reach the dead-letter queue.
    setup.max_receive_count = 2;
    let mut stack = Stack::start(test, setup).await;
    let mut changes = Vec::new();
    for mall in &malls {
        for i in 0..EVENTS_PER_MALL {
            changes.push(stack.sandbox.create(mall, PRODUCT, product(&format!("p{i}"))).await.unwrap());
        }
    }
    // Interleaved, as a burst from many shops arrives: consecutive
    // batches hold different malls.
    changes.sort_by_key(|c| c.id.clone());
    for chunk in changes.chunks(10) {
        stack.enqueue(chunk).await;
    }
    stack.wait_until_stored(LIMIT).await;

    let (events, dlq) = stack.dev.queues().await.unwrap();
    assert_eq!((dlq.visible, dlq.in_flight), (0, 0), "{test}: messages reached the dead-letter queue: {dlq:?}");
    assert_eq!(events.visible, 0, "{test}: {events:?}");
    let counters = stack.sandbox.counters();
    assert_eq!((counters.refused_bucket, counters.refused_quota), (0, 0), "{test}: upstream 429s: {counters:?}");
    let throttles = stack.dev.step_throttles();
    let pipe = &stack.dev.pipe;
    // A throttle is ridden out inside the execution, or defers the items
    // concerned; it never fails an execution (Pipes' ExecutionFailed).
    let failed = pipe.executions_failed.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(failed, 0, "{test}: executions failed");
    // Nor is it recorded as the event's failure (a trace entry, an alert,
    // a receive towards the dead-letter queue): a throttle is not its fault.
    let recorded = stack.dev.step_limits().invocations("RecordFailure");
    assert_eq!(recorded, 0, "{test}: throttled events were recorded as failed");
    let in_flight = pipe.max_in_flight.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "{test}: {} events over {MALLS} malls, lost 0, DLQ 0, upstream 429s 0; step invocations throttled {throttles}, \
         most batches in flight {in_flight}, items retried {}",
        stack.sent().len(),
        pipe.items_failed.load(std::sync::atomic::Ordering::Relaxed),
    );
    stack.stop().await;
    (throttles, in_flight)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_scaled_out_pipe_over_throttled_steps_loses_nothing_and_parks_nothing() {
    let (throttles, in_flight) = flood("flood_scale_out", PipeConcurrency::ScaleOut { max_batches: 48 }).await;
    // The premises: the pipe ran more batches than it has workers, and the
    // steps were throttled; it was ridden out.
    assert!(in_flight > 8, "the pipe did not scale out: {in_flight} batches at most");
    assert!(throttles > 0, "no step was throttled: the test did not load the reservation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_batch_per_pipe_worker_over_throttled_steps_loses_nothing_and_parks_nothing() {
    let (_, in_flight) = flood("flood_one_per_worker", PipeConcurrency::OneBatchPerWorker).await;
    assert!(in_flight <= 8, "{in_flight} batches at once from 8 workers");
}

//! The forms of the delay queue (SQS standard with per-message delays):
//! a standard queue of the embedded queue in memory and in Redis, its SQS
//! endpoint through the real `sluice-aws` adapter, and the endpoint in
//! `SLUICE_SQS_ENDPOINT`. Each form also crosses the ports (a FIFO queue
//! through the delay port, a standard one through the work port), for the
//! cases that check those sends fail.

use super::{Embedded, External, Fixture, Form, Sqs, TestBackend};
use aws_sdk_sqs::types::QueueAttributeName;
use sluice_aws::{SqsDelayQueue, SqsQueue};
use sluice_domain::DelayQueue;
use sluice_sqs_emulator::{EmbeddedDelayQueue, EmbeddedQueue, QueueBackend, QueueConfig, RedrivePolicy};
use std::time::Duration;

/// What a delay case asks for.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct DelaySpec {
    /// The queue's `DelaySeconds`, for messages that name none.
    pub(crate) queue_delay: Duration,
    /// With a (standard) dead-letter queue after this many receives.
    pub(crate) max_receive_count: Option<u32>,
}

/// A form that also has standard queues.
pub(crate) trait DelayForm: Form {
    type DelayQueue: DelayQueue;

    async fn delay_queue(&self, spec: DelaySpec) -> Fixture<Self::DelayQueue>;

    /// The FIFO queue behind `fifo`, through the delay queue port.
    fn delay_port_of(&self, fifo: &Self::Queue) -> Self::DelayQueue;

    /// The standard queue behind `standard`, through the work queue port.
    fn work_port_of(&self, standard: &Self::DelayQueue) -> Self::Queue;
}

/// A standard queue's name and its dead-letter queue's (no `.fifo`).
fn standard_names(test: &str) -> (String, String) {
    let (name, dlq) = super::names(test);
    let strip = |n: String| n.strip_suffix(".fifo").map(str::to_owned).unwrap_or(n);
    (strip(name), strip(dlq))
}

async fn embedded<B: QueueBackend>(backend: &B, test: &str, spec: DelaySpec) -> Fixture<EmbeddedDelayQueue<B>> {
    let (name, dlq_name) = standard_names(test);
    let mut config = QueueConfig { delay: spec.queue_delay, ..QueueConfig::default() };
    let dlq = match spec.max_receive_count {
        Some(max_receive_count) => {
            backend.create_queue(&dlq_name, &QueueConfig::default()).await.expect("create the standard DLQ");
            config.redrive = Some(RedrivePolicy { dead_letter_queue: dlq_name.clone(), max_receive_count });
            Some(EmbeddedDelayQueue::new(backend.clone(), &dlq_name))
        }
        None => None,
    };
    backend.create_queue(&name, &config).await.expect("create the standard queue");
    Fixture { queue: EmbeddedDelayQueue::new(backend.clone(), &name), dlq }
}

impl<B: TestBackend> DelayForm for Embedded<B> {
    type DelayQueue = EmbeddedDelayQueue<B>;

    async fn delay_queue(&self, spec: DelaySpec) -> Fixture<Self::DelayQueue> {
        embedded(&self.backend, &self.test, spec).await
    }

    fn delay_port_of(&self, fifo: &Self::Queue) -> Self::DelayQueue {
        EmbeddedDelayQueue::new(fifo.backend().clone(), fifo.name())
    }

    fn work_port_of(&self, standard: &Self::DelayQueue) -> Self::Queue {
        EmbeddedQueue::new(standard.backend().clone(), standard.name())
    }
}

impl Sqs {
    /// CreateQueue for a standard queue: no FifoQueue attribute.
    async fn create_standard(&self, name: &str, delay: Duration, redrive: Option<(&str, u32)>) -> String {
        self.create(name, (QueueAttributeName::DelaySeconds, delay.as_secs().to_string()), redrive).await
    }
}

impl DelayForm for Sqs {
    type DelayQueue = SqsDelayQueue;

    async fn delay_queue(&self, spec: DelaySpec) -> Fixture<SqsDelayQueue> {
        let (name, dlq_name) = standard_names(&self.test);
        let (redrive, dlq) = match spec.max_receive_count {
            Some(max) => {
                let dlq_url = self.create_standard(&dlq_name, Duration::ZERO, None).await;
                (Some((self.arn(&dlq_url).await, max)), Some(SqsDelayQueue::new(self.client.clone(), dlq_url)))
            }
            None => (None, None),
        };
        let redrive = redrive.as_ref().map(|(arn, max)| (arn.as_str(), *max));
        let url = self.create_standard(&name, spec.queue_delay, redrive).await;
        Fixture { queue: SqsDelayQueue::new(self.client.clone(), url), dlq }
    }

    fn delay_port_of(&self, fifo: &SqsQueue) -> SqsDelayQueue {
        SqsDelayQueue::new(self.client.clone(), fifo.url())
    }

    fn work_port_of(&self, standard: &SqsDelayQueue) -> SqsQueue {
        SqsQueue::new(self.client.clone(), standard.url())
    }
}

impl DelayForm for External {
    type DelayQueue = SqsDelayQueue;

    async fn delay_queue(&self, spec: DelaySpec) -> Fixture<SqsDelayQueue> {
        self.0.delay_queue(spec).await
    }

    fn delay_port_of(&self, fifo: &SqsQueue) -> SqsDelayQueue {
        self.0.delay_port_of(fifo)
    }

    fn work_port_of(&self, standard: &SqsDelayQueue) -> SqsQueue {
        self.0.work_port_of(standard)
    }
}

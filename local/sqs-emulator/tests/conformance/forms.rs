//! The forms the suite runs against: the embedded queue in memory and in
//! Redis, its SQS endpoint through the real `sluice-aws` adapter, and any
//! SQS endpoint named by `SLUICE_SQS_ENDPOINT`. Their standard queues, for
//! the delay queue cases, are in `delay`.

mod delay;

use aws_sdk_sqs::types::QueueAttributeName;
use sluice_aws::{SqsEndpoint, SqsQueue, sqs_client};
use sluice_domain::WorkQueue;
use sluice_sqs_emulator::sqs_api::{self, SqsApi};
use sluice_sqs_emulator::{EmbeddedQueue, MemoryBackend, QueueBackend, QueueConfig, RedisBackend, RedrivePolicy};
use sluice_testkit::TestRedis;
use std::time::Duration;

pub(crate) use delay::{DelayForm, DelaySpec};

/// What a case asks for.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Spec {
    /// With a dead-letter queue after this many receives.
    pub(crate) max_receive_count: Option<u32>,
}

/// A queue (and its dead-letter queue) made for one case.
#[derive(Debug)]
pub(crate) struct Fixture<Q> {
    pub(crate) queue: Q,
    pub(crate) dlq: Option<Q>,
}

/// One form of the queue.
pub(crate) trait Form: Sized {
    type Queue: WorkQueue;

    /// Panics, naming what is missing, when the form cannot start here.
    async fn start(test: &str) -> Self;

    async fn queue(&self, spec: Spec) -> Fixture<Self::Queue>;

    /// Moves the dead-letter queue's messages back to the queue.
    async fn redrive(&self, fixture: &Fixture<Self::Queue>);

    /// Whether the form is known to choose groups exactly as the embedded
    /// queue's SQS FIFO scan does (a queue's default), so a case may check
    /// the whole order; for other endpoints it reports what it saw.
    fn scans_as_sqs_fifo(&self) -> bool {
        true
    }
}

fn names(test: &str) -> (String, String) {
    let id = format!("{:08x}", rand::random::<u32>());
    let stem: String = test.chars().take(40).map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    (format!("{stem}-{id}.fifo"), format!("{stem}-{id}-dlq.fifo"))
}

/// Creates the queues of `spec` in an embedded store.
async fn embedded<B: QueueBackend>(backend: &B, test: &str, spec: Spec) -> Fixture<EmbeddedQueue<B>> {
    let (name, dlq_name) = names(test);
    let mut config = QueueConfig::default();
    let dlq = match spec.max_receive_count {
        Some(max_receive_count) => {
            backend.create_queue(&dlq_name, &QueueConfig::default()).await.expect("create the DLQ");
            config.redrive = Some(RedrivePolicy { dead_letter_queue: dlq_name.clone(), max_receive_count });
            Some(EmbeddedQueue::new(backend.clone(), &dlq_name))
        }
        None => None,
    };
    backend.create_queue(&name, &config).await.expect("create the queue");
    Fixture { queue: EmbeddedQueue::new(backend.clone(), &name), dlq }
}

async fn embedded_redrive<B: QueueBackend>(fixture: &Fixture<EmbeddedQueue<B>>) {
    let dlq = fixture.dlq.as_ref().expect("a fixture with a DLQ");
    let queue = fixture.queue.name();
    dlq.backend().move_messages(dlq.name(), queue, Some(queue)).await.expect("redrive");
}

type Conn = sluice_redis::Connection;

/// The embedded queue in memory.
pub(crate) type Memory = Embedded<MemoryBackend>;
/// The embedded queue in Redis.
pub(crate) type Redis = Embedded<RedisBackend<Conn>>;

/// The embedded queue over backend `B`: the forms differ only in how the
/// backend starts.
#[derive(Debug)]
pub(crate) struct Embedded<B> {
    backend: B,
    test: String,
    /// The test's own Redis database, kept until the form is dropped.
    _redis: Option<TestRedis>,
}

/// A backend the suite starts afresh for each test.
pub(crate) trait TestBackend: QueueBackend {
    async fn start(test: &str) -> (Self, Option<TestRedis>);
}

impl TestBackend for MemoryBackend {
    async fn start(_: &str) -> (Self, Option<TestRedis>) {
        (MemoryBackend::new(), None)
    }
}

impl TestBackend for RedisBackend<Conn> {
    async fn start(test: &str) -> (Self, Option<TestRedis>) {
        let redis = TestRedis::new(test);
        (RedisBackend::new(redis.conn().await, redis.keyspace()), Some(redis))
    }
}

impl<B: TestBackend> Form for Embedded<B> {
    type Queue = EmbeddedQueue<B>;

    async fn start(test: &str) -> Self {
        let (backend, redis) = B::start(test).await;
        Self { backend, test: test.to_owned(), _redis: redis }
    }

    async fn queue(&self, spec: Spec) -> Fixture<Self::Queue> {
        embedded(&self.backend, &self.test, spec).await
    }

    async fn redrive(&self, fixture: &Fixture<Self::Queue>) {
        embedded_redrive(fixture).await;
    }
}

/// An SQS endpoint reached through the `sluice-aws` adapter: ours (over the
/// Redis store, on a port of its own) or the one in `SLUICE_SQS_ENDPOINT`.
#[derive(Debug)]
pub(crate) struct Sqs {
    client: aws_sdk_sqs::Client,
    test: String,
    external: bool,
    _server: Option<(TestRedis, tokio::task::JoinHandle<()>)>,
}

impl Sqs {
    pub(crate) async fn ours(test: &str) -> Self {
        let redis = TestRedis::new(test);
        let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let api = SqsApi::new(backend, &url);
        let server = tokio::spawn(async move {
            sqs_api::serve(listener, api, std::future::pending()).await.expect("serve");
        });
        let client = sqs_client(&SqsEndpoint::Local(url)).await;
        Self { client, test: test.to_owned(), external: false, _server: Some((redis, server)) }
    }

    /// CreateQueue with a 30 s visibility timeout and `kind`'s attribute
    /// (FifoQueue for a FIFO queue, DelaySeconds for a standard one).
    async fn create(&self, name: &str, kind: (QueueAttributeName, String), redrive: Option<(&str, u32)>) -> String {
        let mut request = self
            .client
            .create_queue()
            .queue_name(name)
            .attributes(kind.0, kind.1)
            .attributes(QueueAttributeName::VisibilityTimeout, "30");
        if let Some((dlq_arn, max)) = redrive {
            let policy = serde_json::json!({ "deadLetterTargetArn": dlq_arn, "maxReceiveCount": max });
            request = request.attributes(QueueAttributeName::RedrivePolicy, policy.to_string());
        }
        request
            .send()
            .await
            .unwrap_or_else(|e| panic!("CreateQueue {name}: {e:?}"))
            .queue_url()
            .expect("url")
            .to_owned()
    }

    async fn arn(&self, url: &str) -> String {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .expect("GetQueueAttributes");
        out.attributes().and_then(|a| a.get(&QueueAttributeName::QueueArn)).expect("QueueArn").clone()
    }
}

fn fifo() -> (QueueAttributeName, String) {
    (QueueAttributeName::FifoQueue, "true".into())
}

impl Form for Sqs {
    type Queue = SqsQueue;

    async fn start(test: &str) -> Self {
        Self::ours(test).await
    }

    async fn queue(&self, spec: Spec) -> Fixture<SqsQueue> {
        let (name, dlq_name) = names(&self.test);
        let (redrive, dlq) = match spec.max_receive_count {
            Some(max) => {
                let dlq_url = self.create(&dlq_name, fifo(), None).await;
                (Some((self.arn(&dlq_url).await, max)), Some(SqsQueue::new(self.client.clone(), dlq_url)))
            }
            None => (None, None),
        };
        let url = self.create(&name, fifo(), redrive.as_ref().map(|(arn, max)| (arn.as_str(), *max))).await;
        Fixture { queue: SqsQueue::new(self.client.clone(), url), dlq }
    }

    async fn redrive(&self, fixture: &Fixture<SqsQueue>) {
        let dlq = fixture.dlq.as_ref().expect("a fixture with a DLQ");
        let source = self.arn(dlq.url()).await;
        self.client.start_message_move_task().source_arn(&source).send().await.expect("StartMessageMoveTask");
        // Move tasks run in the background on SQS: wait until done.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let tasks = self.client.list_message_move_tasks().source_arn(&source).send().await.expect("list tasks");
            if tasks.results().first().and_then(|t| t.status()) == Some("COMPLETED") {
                return;
            }
            assert!(tokio::time::Instant::now() < deadline, "move task not completed in 60 s: {tasks:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    fn scans_as_sqs_fifo(&self) -> bool {
        !self.external
    }
}

/// Where the external form's SQS is.
const ENDPOINT_VARIABLE: &str = "SLUICE_SQS_ENDPOINT";

/// The SQS endpoint in `SLUICE_SQS_ENDPOINT` (moto, or another stand-in).
/// Its cases are all `#[ignore]`d (`main.rs`): run, they fail without it.
#[derive(Debug)]
pub(crate) struct External(Sqs);

impl Form for External {
    type Queue = SqsQueue;

    async fn start(test: &str) -> Self {
        let url = std::env::var(ENDPOINT_VARIABLE).ok().filter(|u| !u.is_empty()).unwrap_or_else(|| {
            panic!("{test} needs {ENDPOINT_VARIABLE} (moto_server or LocalStack); make check-aws runs it against moto")
        });
        let client = sqs_client(&SqsEndpoint::Local(url)).await;
        Self(Sqs { client, test: test.to_owned(), external: true, _server: None })
    }

    async fn queue(&self, spec: Spec) -> Fixture<SqsQueue> {
        self.0.queue(spec).await
    }

    async fn redrive(&self, fixture: &Fixture<SqsQueue>) {
        self.0.redrive(fixture).await;
    }

    fn scans_as_sqs_fifo(&self) -> bool {
        false
    }
}

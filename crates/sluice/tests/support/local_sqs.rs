//! What an operator command's test needs besides `sluice dev`: the
//! command run on a test's Redis, and an SQS endpoint on 127.0.0.1 over
//! that Redis (the embedded queues, served over real HTTP as `sluice dev`
//! serves them) for commands that take a queue URL.

use sluice_sqs_emulator::sqs_api::{self, SqsApi};
use sluice_sqs_emulator::{QueueBackend, QueueConfig, RedisBackend};
use sluice_testkit::TestRedis;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

/// `sluice ARGS` on `redis`'s keys, in a directory of its own (`name`)
/// with no `sluice dev`, with no queue named by the environment and AWS
/// credentials for local endpoints (checked by no one, wanted by the SDK).
pub(crate) fn operator_command(redis: &TestRedis, name: &str, args: &[&str]) -> Command {
    let prefix = redis.keyspace().prefix().trim_end_matches(':').to_owned();
    let dir = std::env::temp_dir().join(format!("sluice-{name}-{prefix}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_sluice"));
    command
        .args(args)
        .current_dir::<PathBuf>(dir)
        .env("SLUICE_REDIS_URL", redis.url())
        .env("SLUICE_KEY_PREFIX", redis.keyspace().prefix())
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_REGION", "us-east-1");
    let queues = ["SLUICE_QUEUE_URL", "SLUICE_EVENTS_DLQ_URL", "SLUICE_FLUSH_QUEUE_URL", "SLUICE_FLUSH_DLQ_URL"];
    let more = ["SLUICE_CATCH_UP_QUEUE_URL", "SLUICE_CATCH_UP_DLQ_URL", "SLUICE_SQS_ENDPOINT"];
    for name in queues.into_iter().chain(more) {
        command.env_remove(name);
    }
    command
}

pub(crate) struct LocalSqs {
    pub endpoint: String,
    /// The URL of the queue it was started with.
    pub queue_url: String,
    /// Cancelled by [`LocalSqs::stop`], or when it is dropped.
    stop: DropGuard,
    server: JoinHandle<std::io::Result<()>>,
}

impl LocalSqs {
    /// Serves `redis`'s queues with `queue` created (FIFO when its name
    /// ends in `.fifo`).
    pub(crate) async fn start(redis: &TestRedis, queue: &str) -> Self {
        let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
        backend.create_queue(queue, &QueueConfig::default()).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let api = SqsApi::new(backend, endpoint.clone());
        let queue_url = api.queue_url(queue);
        let stop = CancellationToken::new();
        let server = tokio::spawn(sqs_api::serve(listener, api, stop.clone().cancelled_owned()));
        let stop = stop.drop_guard();
        Self { endpoint, queue_url, stop, server }
    }

    pub(crate) async fn stop(self) {
        self.stop.disarm().cancel();
        tokio::time::timeout(Duration::from_secs(10), self.server).await.unwrap().unwrap().unwrap();
    }
}

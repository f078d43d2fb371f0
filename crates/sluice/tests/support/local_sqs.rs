//! An SQS endpoint on 127.0.0.1 over a test's Redis (the embedded queues,
//! served over real HTTP as `sluice dev` serves them), for commands that
//! take a queue URL.

use sluice_queue::sqs_api::{self, SqsApi};
use sluice_queue::{QueueBackend, QueueConfig, RedisBackend};
use sluice_testkit::TestRedis;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct LocalSqs {
    pub endpoint: String,
    /// The URL of the queue it was started with.
    pub queue_url: String,
    stop: oneshot::Sender<()>,
    server: JoinHandle<std::io::Result<()>>,
}

impl LocalSqs {
    /// Serves `redis`'s queues with `queue` created (FIFO when its name
    /// ends in `.fifo`).
    pub async fn start(redis: &TestRedis, queue: &str) -> Self {
        let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
        backend.create_queue(queue, &QueueConfig::default()).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let api = SqsApi::new(backend, endpoint.clone());
        let queue_url = api.queue_url(queue);
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(sqs_api::serve(listener, api, async move {
            let _ = stopped.await;
        }));
        Self { endpoint, queue_url, stop, server }
    }

    pub async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(10), self.server).await.unwrap().unwrap().unwrap();
    }
}

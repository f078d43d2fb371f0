//! `sluice dev`: sluice on one machine. For now it runs the embedded FIFO
//! queue in Redis and serves it over SQS's wire protocol on 127.0.0.1, with
//! the pipeline's queues created: `sluice-events.fifo`, whose messages go
//! to `sluice-events-dlq.fifo` after `--max-receive-count` receives. Later
//! stages (ingest HTTP, the pipeline) join as more services in
//! [`Stack::start`], each printing the URL it serves.
//!
//! The queue lives in Redis (`SLUICE_REDIS_URL`, or a private
//! `redis-server` keeping an append-only file in `--redis-dir`), so a
//! `sluice dev` that is killed loses nothing it acknowledged: the next run
//! finds every message where it was. A private server never outlives
//! `sluice dev`, even when it is killed. The endpoint listens on port 9324 unless
//! told otherwise (`--sqs-port 0` picks a free one); Ctrl-C (or SIGTERM)
//! stops it after answering the requests in progress.

use crate::redis_target::RedisTarget;
use sluice_queue::sqs_api::{self, SqsApi};
use sluice_queue::{QueueBackend, QueueConfig, QueueError, RedisBackend, RedrivePolicy};
use sluice_redis::Keyspace;
use std::process::ExitCode;
use std::time::Duration;
use tokio::net::TcpListener;

/// The SQS endpoint's default port: the one local SQS stand-ins
/// (ElasticMQ) made customary, so existing `--endpoint-url`s work.
pub(crate) const DEFAULT_SQS_PORT: u16 = 9324;
/// The pipeline's queue and its dead-letter queue.
pub(crate) const EVENTS_QUEUE: &str = "sluice-events.fifo";
pub(crate) const EVENTS_DLQ: &str = "sluice-events-dlq.fifo";

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Port of the SQS endpoint on 127.0.0.1; 0 picks a free port.
    #[arg(long, default_value_t = DEFAULT_SQS_PORT)]
    sqs_port: u16,
    /// Receives of a message before it moves to sluice-events-dlq.fifo.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    max_receive_count: u32,
    /// Visibility timeout of sluice-events.fifo, in seconds.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=43_200))]
    visibility_timeout: u64,
    /// Where the private redis-server keeps its data between runs (unused
    /// when SLUICE_REDIS_URL is set).
    #[arg(long, default_value = ".sluice/redis")]
    redis_dir: std::path::PathBuf,
    /// Prefix of every Redis key sluice writes (no '{' or '}').
    #[arg(long, default_value = "sluice:")]
    key_prefix: String,
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, String> {
    let stack = Stack::start(&args).await?;
    for (what, url) in &stack.urls {
        println!("{what}: {url}");
    }
    println!("Ready. Ctrl-C stops.");
    stack.serve_until_signal().await?;
    println!("sluice dev stopped.");
    Ok(ExitCode::SUCCESS)
}

/// What `sluice dev` runs, started and ready to serve.
struct Stack {
    /// Kept for the run: dropping it stops a private redis-server.
    _redis: RedisTarget,
    /// (what, URL) of everything served, in the order printed.
    urls: Vec<(&'static str, String)>,
    sqs: (TcpListener, SqsApi<RedisBackend<redis::aio::ConnectionManager>>),
}

impl Stack {
    async fn start(args: &Args) -> Result<Self, String> {
        let redis = RedisTarget::from_env_or_private(Some(args.redis_dir.clone()))?;
        let conn = redis
            .client
            .get_connection_manager()
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", redis.description))?;
        let keyspace = Keyspace::new(args.key_prefix.clone()).map_err(|e| e.to_string())?;
        let backend = RedisBackend::new(conn, keyspace);
        create_pipeline_queues(&backend, args).await?;

        let listener = TcpListener::bind(("127.0.0.1", args.sqs_port)).await.map_err(|e| {
            format!(
                "cannot listen on 127.0.0.1:{} for the SQS endpoint: {e} (choose another with --sqs-port)",
                args.sqs_port
            )
        })?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let api = SqsApi::new(backend, format!("http://127.0.0.1:{port}"));
        let urls = vec![
            ("Redis", redis.description.clone()),
            ("SQS endpoint", format!("http://127.0.0.1:{port}")),
            ("Queue", api.queue_url(EVENTS_QUEUE)),
            ("Dead-letter queue", api.queue_url(EVENTS_DLQ)),
        ];
        Ok(Self { _redis: redis, urls, sqs: (listener, api) })
    }

    async fn serve_until_signal(self) -> Result<(), String> {
        let (listener, api) = self.sqs;
        sqs_api::serve(listener, api, crate::stop_signal::stop_signal()).await.map_err(|e| format!("SQS endpoint: {e}"))
    }
}

async fn create_pipeline_queues<B: QueueBackend>(backend: &B, args: &Args) -> Result<(), String> {
    let explain = |name: &str, e: QueueError| match e {
        QueueError::QueueNameExists { attribute, .. } => format!(
            "queue {name} already exists in Redis with a different {attribute}; delete it \
             (aws sqs delete-queue --endpoint-url ...) or use another --key-prefix"
        ),
        e => format!("cannot create queue {name}: {e}"),
    };
    backend.create_queue(EVENTS_DLQ, &QueueConfig::default()).await.map_err(|e| explain(EVENTS_DLQ, e))?;
    let events = QueueConfig {
        visibility_timeout: Duration::from_secs(args.visibility_timeout),
        redrive: Some(RedrivePolicy {
            dead_letter_queue: EVENTS_DLQ.to_owned(),
            max_receive_count: args.max_receive_count,
        }),
        ..QueueConfig::default()
    };
    backend.create_queue(EVENTS_QUEUE, &events).await.map_err(|e| explain(EVENTS_QUEUE, e))?;
    Ok(())
}

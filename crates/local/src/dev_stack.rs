//! The whole shop pipeline on one machine, as `sluice dev` and `sluice demo
//! shops` run it: the embedded FIFO queue (in Redis) behind its SQS
//! endpoint, the ingest HTTP server, and the pipe running the deployed
//! state machine with the real steps. Ingest and the pipe talk to the queue
//! through the SQS adapter, exactly as they do in AWS.
//!
//! Stopping is ordered so nothing accepted is left half done: ingest stops
//! taking webhooks and sends what it holds, the pipe finishes the batches
//! it holds, then the SQS endpoint stops.

use crate::pipe::{Pipe, PipeConfig, PipeStats};
use crate::step_functions::{PIPELINE_DEFINITION, registry, substitutions};
use redis::aio::ConnectionManager;
use sluice_asl::{Executor, StateMachine, SystemClock};
use sluice_aws::{SqsEndpoint, SqsQueue, sqs_client};
use sluice_cafe24::{Cafe24Client, Cafe24Config};
use sluice_domain::WorkQueue;
use sluice_domain::queue::QueueAttributes;
use sluice_ingest::{Counters, Ingest, IngestConfig};
use sluice_pipeline::{PipelineConfig, Steps};
use sluice_queue::sqs_api::{self, SqsApi};
use sluice_queue::{QueueBackend, QueueConfig, QueueError, RedisBackend, RedrivePolicy};
use sluice_redis::Keyspace;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The pipeline's queue and its dead-letter queue.
pub const EVENTS_QUEUE: &str = "sluice-events.fifo";
pub const EVENTS_DLQ: &str = "sluice-events-dlq.fifo";

/// Everything `sluice dev` lets a user choose.
#[derive(Debug, Clone)]
pub struct DevConfig {
    pub keyspace: Keyspace,
    /// Ports on 127.0.0.1; 0 picks a free one.
    pub sqs_port: u16,
    pub ingest_port: u16,
    pub max_receive_count: u32,
    pub visibility_timeout: Duration,
    pub ingest: IngestConfig,
    pub pipeline: PipelineConfig,
    pub pipe: PipeConfig,
    pub cafe24: Cafe24Config,
}

/// A running stack.
#[derive(Debug)]
pub struct DevStack {
    /// (what, URL) of everything served, in the order to print.
    pub urls: Vec<(&'static str, String)>,
    pub ingest: Arc<Counters>,
    pub pipe: Arc<PipeStats>,
    pub steps: Steps<ConnectionManager>,
    events: SqsQueue,
    dlq: SqsQueue,
    ingest_stop: watch::Sender<bool>,
    pipe_stop: watch::Sender<bool>,
    sqs_stop: watch::Sender<bool>,
    ingest_task: JoinHandle<std::io::Result<()>>,
    pipe_task: JoinHandle<()>,
    sqs_task: JoinHandle<std::io::Result<()>>,
}

impl DevStack {
    pub async fn start(conn: ConnectionManager, config: DevConfig) -> Result<Self, String> {
        let backend = RedisBackend::new(conn.clone(), config.keyspace.clone());
        create_queues(&backend, &config).await?;

        let sqs_listener = listen(config.sqs_port, "the SQS endpoint", "--sqs-port").await?;
        let sqs_url = format!("http://127.0.0.1:{}", port(&sqs_listener)?);
        let api = SqsApi::new(backend, sqs_url.clone());
        let (events_url, dlq_url) = (api.queue_url(EVENTS_QUEUE), api.queue_url(EVENTS_DLQ));
        let (sqs_stop, stopped) = watch::channel(false);
        let sqs_task = tokio::spawn(sqs_api::serve(sqs_listener, api, stopped_when(stopped)));

        let client = sqs_client(&SqsEndpoint::Local(sqs_url.clone())).await;
        let events = SqsQueue::new(client.clone(), events_url.clone());
        let dlq = SqsQueue::new(client, dlq_url.clone());

        let cafe24 = Cafe24Client::new(config.cafe24).map_err(|e| format!("Cafe24 client: {e}"))?;
        let steps = Steps::new(conn.clone(), config.keyspace.clone(), config.pipeline, cafe24)
            .map_err(|e| format!("pipeline: {}", e.cause))?;
        let machine = StateMachine::load(PIPELINE_DEFINITION, &substitutions())
            .map_err(|e| format!("statemachine/pipeline.asl.json: {e}"))?;
        let executor = Executor::new(machine, registry(steps.clone()), SystemClock);
        let missing = executor.missing_handlers();
        if !missing.is_empty() {
            return Err(format!("the pipeline definition calls tasks with no step: {missing:?}"));
        }
        let pipe = Pipe::new(Arc::new(events.clone()), executor, config.pipe);
        let pipe_stats = pipe.stats();
        let (pipe_stop, stopped) = watch::channel(false);
        let pipe_task = tokio::spawn(pipe.run(stopped));

        let ingest_listener = listen(config.ingest_port, "ingest", "--ingest-port").await?;
        let ingest_url = format!("http://127.0.0.1:{}", port(&ingest_listener)?);
        let ingest = Ingest::new(config.ingest, events.clone(), conn).map_err(|e| format!("ingest: {e}"))?;
        let counters = ingest.counters();
        let (ingest_stop, stopped) = watch::channel(false);
        let ingest_task = tokio::spawn(sluice_ingest::serve(ingest_listener, ingest, stopped_when(stopped)));

        let urls = vec![
            ("Ingest", format!("{ingest_url}{}", sluice_ingest::WEBHOOK_PATH)),
            ("SQS endpoint", sqs_url),
            ("Queue", events_url),
            ("Dead-letter queue", dlq_url),
        ];
        Ok(Self {
            urls,
            ingest: counters,
            pipe: pipe_stats,
            steps,
            events,
            dlq,
            ingest_stop,
            pipe_stop,
            sqs_stop,
            ingest_task,
            pipe_task,
            sqs_task,
        })
    }

    /// The queue's and the dead-letter queue's attributes.
    pub async fn queues(&self) -> Result<(QueueAttributes, QueueAttributes), String> {
        let events = self.events.attributes().await.map_err(|e| e.to_string())?;
        let dlq = self.dlq.attributes().await.map_err(|e| e.to_string())?;
        Ok((events, dlq))
    }

    /// Stops in order: ingest (sending what it holds), the pipe (finishing
    /// its batches), the SQS endpoint.
    pub async fn stop(self) -> Result<(), String> {
        let _ = self.ingest_stop.send(true);
        let ingest = self.ingest_task.await;
        let _ = self.pipe_stop.send(true);
        let _ = self.pipe_task.await;
        let _ = self.sqs_stop.send(true);
        let sqs = self.sqs_task.await;
        for (what, result) in [("ingest", ingest), ("SQS endpoint", sqs)] {
            match result {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(format!("{what}: {e}")),
                Err(e) => return Err(format!("{what} panicked: {e}")),
            }
        }
        Ok(())
    }
}

async fn create_queues<B: QueueBackend>(backend: &B, config: &DevConfig) -> Result<(), String> {
    let explain = |name: &str, e: QueueError| match e {
        QueueError::QueueNameExists { attribute, .. } => format!(
            "queue {name} already exists in Redis with a different {attribute}; delete it \
             (aws sqs delete-queue --endpoint-url ...) or use another --key-prefix"
        ),
        e => format!("cannot create queue {name}: {e}"),
    };
    backend.create_queue(EVENTS_DLQ, &QueueConfig::default()).await.map_err(|e| explain(EVENTS_DLQ, e))?;
    let events = QueueConfig {
        visibility_timeout: config.visibility_timeout,
        redrive: Some(RedrivePolicy {
            dead_letter_queue: EVENTS_DLQ.to_owned(),
            max_receive_count: config.max_receive_count,
        }),
        ..QueueConfig::default()
    };
    backend.create_queue(EVENTS_QUEUE, &events).await.map_err(|e| explain(EVENTS_QUEUE, e))?;
    Ok(())
}

async fn listen(port: u16, what: &str, flag: &str) -> Result<TcpListener, String> {
    TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port} for {what}: {e} (choose another with {flag})"))
}

fn port(listener: &TcpListener) -> Result<u16, String> {
    listener.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

async fn stopped_when(mut stopped: watch::Receiver<bool>) {
    while !*stopped.borrow() {
        if stopped.changed().await.is_err() {
            return;
        }
    }
}

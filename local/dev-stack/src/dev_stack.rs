//! The whole pipeline on one machine, as `sluice dev` and the demos run
//! it: the embedded queues (in Redis) behind their SQS endpoint — the FIFO
//! event queue and the standard flush queue, each with a dead-letter
//! queue — the ingest HTTP server, the deployed state machine with the
//! real steps behind a Step Functions endpoint, the pipe starting its
//! executions there, and the flush worker appending sheet rows.
//! Everything talks to the queues through the SQS adapters and to the
//! state machine through `aws-sdk-sfn`, exactly as it does in AWS.
//!
//! Stopping is ordered so nothing accepted is left half done: ingest stops
//! taking requests and sends what it holds, the pipe finishes the batches
//! it holds, the flush worker finishes its flushes, the Step Functions
//! endpoint finishes the executions it runs, the drain to PostgreSQL (when
//! configured) finishes the batch in hand, then the SQS endpoint stops.
//! Rows still buffered, and snapshots not yet drained, stay in Redis for
//! the next start.
//!
//! A stack is the one consumer of its queues: it holds the store's consumer
//! lease ([`sluice_sqs_emulator::redis_store::lease`]) while it runs. Taking it
//! from a process that died (`kill -9`), it first returns every message
//! that process held in flight in the two queues it consumes (the event
//! queue and the flush queue; nothing consumes the dead-letter queues), so
//! their groups go on at once instead of after the visibility timeout
//! (330 s). A second stack on the same Redis and key prefix while the
//! first lives is refused, never handed the first one's messages. While
//! the lease cannot be renewed (Redis away), receives fail (the backend is
//! fenced) and the rest goes on; once Redis is back the lease is renewed,
//! or taken again if it lapsed. Should another process take it over,
//! [`DevStack::lease_lost`] returns.

use crate::catch_up_worker::{CatchUpStats, CatchUpWorker};
use crate::delay_worker::run_delay_worker;
pub use crate::dev_config::DevConfig;
pub use crate::dev_queues::{CATCH_UP_DLQ, CATCH_UP_QUEUE, EVENTS_DLQ, EVENTS_QUEUE, FLUSH_DLQ, FLUSH_QUEUE};
use crate::dev_queues::{create_queues, release_in_flight};
use crate::drain_task::DrainTask;
use crate::flush_worker::{FlushStats, Flusher};
use crate::function_processes::{
    FunctionsMode, StackQueues, http_function, process_registry, process_substitutions, queue_event_source,
    start_functions,
};
use crate::metrics_endpoint::{self, METRICS_PATH, MetricSources};
use crate::pipe::{Pipe, PipeStats};
use crate::sfn_api::{self, ExecutionTotals, StepFunctionsApi};
use crate::stack_setup::listen;
pub use crate::stack_setup::take_consumer_lease;
use crate::step_functions::{PIPELINE_DEFINITION, PIPELINE_NAME, StepLimits, registry, substitutions};
use anyhow::{Context, anyhow, bail};
use sluice_asl::{Executor, StateMachine};
use sluice_aws::{SfnEndpoint, SqsDelayQueue, SqsEndpoint, SqsQueue, StateMachineClient, sfn_client, sqs_client};
use sluice_cafe24::Cafe24Client;
use sluice_domain::queue::QueueAttributes;
use sluice_domain::{CatchUpRequests, Queue, QueueCatchUpRequests};
use sluice_ingest::{Counters, Ingest};
use sluice_lambda_runtime::LocalLambda;
use sluice_pipeline::flush_trigger::QueueFlushTrigger;
use sluice_pipeline::{CatchUpService, ServiceCore, SheetService, ShopService};
use sluice_redis::Connection;
use sluice_sheets::SheetsClient;
use sluice_sqs_emulator::sqs_api::{self, SqsApi};
use sluice_sqs_emulator::{ConsumerLease, RedisBackend};
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

/// A running stack.
#[derive(Debug)]
pub struct DevStack {
    /// (what, URL) of everything served, in the order to print.
    pub urls: Vec<(&'static str, String)>,
    pub ingest: Arc<Counters>,
    pub pipe: Arc<PipeStats>,
    pub flush: Arc<FlushStats>,
    pub catch_up: Arc<CatchUpStats>,
    /// The two paths' services, over one core (one set of counts).
    pub shop: ShopService<Connection>,
    pub sheet: SheetService<Connection>,
    /// Messages a dead predecessor held in flight, returned at the start.
    pub released: u64,
    /// The event queue and its dead-letter queue, as the pipe and ingest
    /// reach them: for a caller that sends work bypassing ingest (and its
    /// coalescing), or reads what was dead-lettered.
    pub events: SqsQueue,
    pub dlq: SqsQueue,
    /// The local Lambda service running the functions (`--functions processes`).
    pub functions: Option<Arc<LocalLambda>>,
    /// The drain to PostgreSQL, when configured.
    pub drain: Option<DrainTask>,
    /// Counts over every execution of the state machine.
    pub executions: Arc<ExecutionTotals>,
    /// The in-process steps' reservations (empty with `--functions processes`).
    step_limits: StepLimits,
    lease: ConsumerLease<Connection>,
    flush_dlq: SqsDelayQueue,
    /// "Catch up mall M" requests: waiting, in flight or delayed, a mall's
    /// dirty set still has work.
    catch_up_requests: SqsDelayQueue,
    /// One token stops every task: ingest, the pipe and the flush worker
    /// hold children of it, so [`DevStack::stop`] can stop them one at a
    /// time, in order; the SQS and metrics endpoints hold it, and stop last.
    /// Dropped (a stack that failed to start, a test that panicked), it
    /// stops them all.
    shutdown: DropGuard,
    ingest_stop: CancellationToken,
    sfn_stop: CancellationToken,
    drain_stop: CancellationToken,
    ingest_task: JoinHandle<std::io::Result<()>>,
    /// The pipe, the flush worker and the catch-up worker with their
    /// stop tokens, in the order they stop.
    workers: Vec<(CancellationToken, JoinHandle<()>)>,
    sfn_task: JoinHandle<std::io::Result<()>>,
    sqs_task: JoinHandle<std::io::Result<()>>,
}

impl DevStack {
    /// Takes the consumer lease, then starts ([`DevStack::start_with_lease`]).
    pub async fn start(conn: Connection, config: DevConfig) -> anyhow::Result<Self> {
        let lease = take_consumer_lease(&conn, &config.keyspace).await?;
        Self::start_with_lease(conn, config, lease).await
    }

    /// Starts with `lease` held (taken under `config.keyspace`): returns what
    /// a dead predecessor held in flight, then serves.
    pub async fn start_with_lease(
        conn: Connection,
        config: DevConfig,
        lease: ConsumerLease<Connection>,
    ) -> anyhow::Result<Self> {
        let shutdown = CancellationToken::new();
        let guard = shutdown.clone().drop_guard();
        let backend = RedisBackend::new(conn.clone(), config.keyspace.clone());
        create_queues(&backend, &config).await?;
        let released = release_in_flight(&backend, &lease).await?;
        let backend = backend.fenced(lease.guard());

        let (sqs_listener, sqs_url) = listen(config.sqs_port, "the SQS endpoint", "--sqs-port").await?;
        let api = SqsApi::new(backend, sqs_url.clone());
        let (events_url, dlq_url) = (api.queue_url(EVENTS_QUEUE), api.queue_url(EVENTS_DLQ));
        let (flush_url, flush_dlq_url) = (api.queue_url(FLUSH_QUEUE), api.queue_url(FLUSH_DLQ));
        let (catch_up_url, catch_up_dlq_url) = (api.queue_url(CATCH_UP_QUEUE), api.queue_url(CATCH_UP_DLQ));
        let sqs_task = tokio::spawn(sqs_api::serve(sqs_listener, api, shutdown.clone().cancelled_owned()));

        let client = sqs_client(&SqsEndpoint::Local(sqs_url.clone())).await;
        let events = SqsQueue::new(client.clone(), events_url.clone());
        let dlq = SqsQueue::new(client.clone(), dlq_url.clone());
        let flush_queue = Arc::new(SqsDelayQueue::new(client.clone(), flush_url.clone()));
        let flush_dlq = SqsDelayQueue::new(client.clone(), flush_dlq_url.clone());
        let catch_up_queue = Arc::new(SqsDelayQueue::new(client, catch_up_url.clone()));
        let catch_up_requests = SqsDelayQueue::clone(&catch_up_queue);
        let functions = match &config.functions {
            FunctionsMode::InProcess => None,
            FunctionsMode::Processes(processes) => {
                let queues = StackQueues {
                    sqs_url: sqs_url.clone(),
                    events_url: events_url.clone(),
                    flush_url: flush_url.clone(),
                    catch_up_url: catch_up_url.clone(),
                };
                Some(Arc::new(start_functions(&config, processes, &queues, shutdown.child_token()).await?))
            }
        };

        let cafe24 = Cafe24Client::new(config.cafe24).context("Cafe24 client")?;
        let sheets = SheetsClient::new(config.sheets).context("Google Sheets client")?;
        let mut ingest_config = config.ingest;
        ingest_config.flow_control = config.pipeline.catch_up.flow.clone();
        let max_receive_count = config.pipeline.max_receive_count;
        let core = ServiceCore::new(conn.clone(), config.keyspace.clone(), config.pipeline);
        let requester: Arc<dyn CatchUpRequests> =
            Arc::new(QueueCatchUpRequests::new(SqsDelayQueue::clone(&catch_up_queue)));
        let mut shop = ShopService::new(core.clone(), cafe24)
            .map_err(|e| anyhow!("pipeline: {}", e.cause))?
            .with_alert_url(config.alert_url.clone());
        if config.flow_control {
            shop = shop.with_hand_over(requester.clone());
        }
        let trigger = Arc::new(QueueFlushTrigger::new(SqsDelayQueue::clone(&flush_queue)));
        let sheet = SheetService::new(core, trigger).with_sheets(sheets).with_alert_url(config.alert_url.clone());
        let drain_stop = shutdown.child_token();
        let drain = match config.drain {
            None => None,
            Some(setup) => {
                let alerts = (conn.clone(), config.keyspace.clone(), config.alert_url.clone());
                Some(DrainTask::start(setup, &shop, alerts, drain_stop.clone()).await?)
            }
        };
        let (substitutions, (registry, step_limits)) = match &functions {
            None => (substitutions(max_receive_count), registry(shop.clone(), sheet.clone(), config.step_concurrency)),
            Some(lambda) => (process_substitutions(lambda), (process_registry(lambda), StepLimits::default())),
        };
        let machine =
            StateMachine::load(PIPELINE_DEFINITION, &substitutions).context("statemachine/pipeline.asl.json")?;
        let registry = Arc::new(registry);
        let executor = Executor::from_shared(Arc::new(machine), registry, config.clock);
        let missing = executor.missing_handlers();
        if !missing.is_empty() {
            bail!("the pipeline definition calls tasks with no step: {missing:?}");
        }
        let (sfn_listener, sfn_url) = listen(config.sfn_port, "the Step Functions endpoint", "--sfn-port").await?;
        let definition = substitutions.apply(PIPELINE_DEFINITION);
        let sfn = StepFunctionsApi::new(sfn_api::DEFAULT_KEPT_EXECUTIONS).with_state_machine(
            PIPELINE_NAME,
            definition,
            executor,
        );
        let pipeline_arn = sfn.state_machine_arn(PIPELINE_NAME);
        let executions = sfn.totals();
        let sfn_stop = shutdown.child_token();
        let sfn_task = tokio::spawn(sfn_api::serve(sfn_listener, sfn, sfn_stop.clone().cancelled_owned()));
        let state_machine =
            StateMachineClient::new(sfn_client(&SfnEndpoint::Local(sfn_url.clone())).await, pipeline_arn.clone());

        let pipe = Pipe::new(Arc::new(events.clone()), state_machine, config.pipe);
        let pipe_stats = pipe.stats();
        let pipe_stop = shutdown.child_token();
        let pipe_task = tokio::spawn(pipe.run(pipe_stop.clone()));

        let flush_stats = Arc::new(FlushStats::default());
        let flush_stop = shutdown.child_token();
        let flush_task = match &functions {
            None => {
                let flusher = Arc::new(Flusher { sheet: sheet.clone(), stats: flush_stats.clone() });
                tokio::spawn(run_delay_worker(flush_queue.clone(), flusher, config.flush, flush_stop.clone()))
            }
            Some(lambda) => {
                let source =
                    queue_event_source(lambda, FLUSH_QUEUE, flush_queue.clone(), &config.flush, flush_stop.clone());
                tokio::spawn(source?)
            }
        };

        let catch_up_stats = Arc::new(CatchUpStats::default());
        let catch_up_stop = shutdown.child_token();
        let catch_up_task = match &functions {
            None => {
                let service = CatchUpService::new(shop.clone(), requester.clone());
                let worker = Arc::new(CatchUpWorker { service, stats: catch_up_stats.clone() });
                tokio::spawn(run_delay_worker(catch_up_queue, worker, config.catch_up, catch_up_stop.clone()))
            }
            // The catch-up binary, fed as the template maps it; its runs are in its log and EMF lines.
            Some(lambda) => {
                let stop = catch_up_stop.clone();
                tokio::spawn(queue_event_source(lambda, CATCH_UP_QUEUE, catch_up_queue, &config.catch_up, stop)?)
            }
        };

        let (ingest_listener, ingest_url) = listen(config.ingest_port, "ingest", "--ingest-port").await?;
        let ingest_stop = shutdown.child_token();
        let (counters, ingest_task) = match &functions {
            None => {
                let ingest = if config.flow_control {
                    Ingest::with_flow_control(ingest_config, events.clone(), conn, requester)
                } else {
                    Ingest::new(ingest_config, events.clone(), conn)
                };
                let ingest = ingest.context("ingest")?;
                let stopped = ingest_stop.clone().cancelled_owned();
                (ingest.counters(), tokio::spawn(sluice_ingest::serve(ingest_listener, ingest, stopped)))
            }
            // Ingest's counts are in its processes: their EMF lines reach `functions.metrics()`.
            Some(lambda) => {
                let stopped = ingest_stop.clone().cancelled_owned();
                let front = sluice_lambda_runtime::serve_api_gateway(ingest_listener, http_function(lambda)?, stopped);
                (Arc::default(), tokio::spawn(front))
            }
        };

        let (metrics_listener, metrics_url) = listen(config.metrics_port, "metrics", "--metrics-port").await?;
        let sources = MetricSources {
            ingest: counters.clone(),
            pipe: pipe_stats.clone(),
            flush: flush_stats.clone(),
            steps: shop.metrics_handle(),
            events: events.clone(),
            events_dlq: dlq.clone(),
            flush_queue: SqsDelayQueue::clone(&flush_queue),
            flush_dlq: flush_dlq.clone(),
        };
        tokio::spawn(metrics_endpoint::serve(metrics_listener, sources, shutdown.cancelled_owned()));

        let mut urls = vec![
            ("Ingest", format!("{ingest_url}{}", sluice_ingest::WEBHOOK_PATH)),
            ("Sheet rows", format!("{ingest_url}{}", sluice_ingest::SHEET_ROWS_PATH)),
            ("SQS endpoint", sqs_url),
            ("Step Functions endpoint", sfn_url),
            ("State machine", pipeline_arn),
            ("Queue", events_url),
            ("Dead-letter queue", dlq_url),
            ("Flush queue", flush_url),
            ("Flush dead-letter queue", flush_dlq_url),
            ("Catch-up queue", catch_up_url),
            ("Catch-up dead-letter queue", catch_up_dlq_url),
            ("Metrics", format!("{metrics_url}{METRICS_PATH}")),
        ];
        if let Some(drain) = &drain {
            urls.push(("PostgreSQL", drain.endpoint.clone()));
        }
        Ok(Self {
            urls,
            ingest: counters,
            pipe: pipe_stats,
            flush: flush_stats,
            catch_up: catch_up_stats,
            shop,
            sheet,
            released,
            lease,
            events,
            dlq,
            functions,
            drain,
            executions,
            step_limits,
            flush_dlq,
            catch_up_requests,
            shutdown: guard,
            ingest_stop,
            sfn_stop,
            drain_stop,
            ingest_task,
            workers: vec![(pipe_stop, pipe_task), (flush_stop, flush_task), (catch_up_stop, catch_up_task)],
            sfn_task,
            sqs_task,
        })
    }

    /// Step invocations refused for their function's reserved concurrency
    /// so far, as Lambda refuses them (`TooManyRequestsException`).
    pub fn step_throttles(&self) -> u64 {
        let processes = self.functions.iter().flat_map(|lambda| lambda.functions().map(|f| f.throttles()));
        self.step_limits.throttles() + processes.sum::<u64>()
    }

    /// The in-process steps' reservations (their invocations and refusals).
    pub fn step_limits(&self) -> &StepLimits {
        &self.step_limits
    }

    /// The queue's and the dead-letter queue's attributes.
    pub async fn queues(&self) -> anyhow::Result<(QueueAttributes, QueueAttributes)> {
        Ok((self.events.attributes().await?, self.dlq.attributes().await?))
    }

    /// The catch-up queue: while it holds a request (waiting, in flight
    /// or delayed), some mall's dirty set is still being drained.
    pub async fn catch_up_queue(&self) -> anyhow::Result<QueueAttributes> {
        Ok(sluice_domain::Queue::attributes(&self.catch_up_requests).await?)
    }

    /// Flush requests that failed too often, waiting in the flush
    /// dead-letter queue.
    pub async fn flush_dead_letters(&self) -> anyhow::Result<QueueAttributes> {
        Ok(sluice_domain::Queue::attributes(&self.flush_dlq).await?)
    }

    /// Returns once this stack no longer holds its consumer lease (another
    /// process took over after it could not renew): it should stop.
    pub async fn lease_lost(&self) {
        self.lease.guard().lost().await;
    }

    /// Stops in order: ingest (sending what it holds), the pipe (finishing
    /// its batches), the flush worker (finishing its flushes), the Step
    /// Functions endpoint (finishing its executions, whose steps may still
    /// send to the flush queue and store snapshots), the drain (finishing
    /// the batch in hand), the SQS endpoint, then gives up the consumer
    /// lease.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.ingest_stop.cancel();
        let ingest = self.ingest_task.await;
        for (stop, task) in self.workers {
            stop.cancel();
            let _ = task.await;
        }
        self.sfn_stop.cancel();
        let sfn = self.sfn_task.await;
        if let Some(functions) = &self.functions {
            functions.stop().await;
        }
        self.drain_stop.cancel();
        if let Some(drain) = self.drain {
            drain.join().await;
        }
        drop(self.shutdown);
        let sqs = self.sqs_task.await;
        self.lease.release().await;
        for (what, result) in [("ingest", ingest), ("Step Functions endpoint", sfn), ("SQS endpoint", sqs)] {
            match result {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e).context(what),
                Err(e) => bail!("{what} panicked: {e}"),
            }
        }
        Ok(())
    }
}

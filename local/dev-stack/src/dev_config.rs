//! What `sluice dev` lets a user choose, as one struct: ports, the queues'
//! settings, ingest's and the pipeline's, the upstreams, how the functions
//! run, the drain. [`crate::DevStack::start`] takes it whole.

use crate::delay_worker::DelayWorkerConfig;
use crate::drain_task::DrainSetup;
use crate::function_processes::FunctionsMode;
use crate::pipe::PipeConfig;
use sluice_asl::{Clock, SystemClock};
use sluice_cafe24::Cafe24Config;
use sluice_ingest::IngestConfig;
use sluice_pipeline::PipelineConfig;
use sluice_redis::Keyspace;
use sluice_sheets::SheetsConfig;
use sluice_sqs_emulator::GroupScan;
use std::sync::Arc;
use std::time::Duration;

/// Everything `sluice dev` lets a user choose.
#[derive(Debug, Clone)]
pub struct DevConfig {
    pub keyspace: Keyspace,
    /// Ports on 127.0.0.1; 0 picks a free one.
    pub sqs_port: u16,
    /// The Step Functions endpoint's.
    pub sfn_port: u16,
    pub ingest_port: u16,
    /// `GET /metrics` (Prometheus text).
    pub metrics_port: u16,
    pub max_receive_count: u32,
    pub visibility_timeout: Duration,
    /// How the event queue and its dead-letter queue choose among ready
    /// groups: as SQS FIFO does (the default: what runs here sees what AWS
    /// would, a deep group delaying the groups behind it) or round-robin.
    pub group_scan: GroupScan,
    pub ingest: IngestConfig,
    pub pipeline: PipelineConfig,
    pub pipe: PipeConfig,
    /// Each step function refuses invocations past this many at once with
    /// `TooManyRequestsException`, as Lambda does past a function's reserved
    /// concurrency (the template's `StepConcurrency`, 40); `None`: the steps
    /// take every invocation. With `--functions processes` each function is
    /// held to its reservation in the template, this value for the steps.
    pub step_concurrency: Option<usize>,
    pub cafe24: Cafe24Config,
    /// Where Google Sheets and its token endpoint are, and the OAuth client.
    pub sheets: SheetsConfig,
    pub flush: DelayWorkerConfig,
    /// Flow control per mall: ingest defers a mall with a backlog into its
    /// dirty set, drained by requests on the catch-up queue
    /// (`sluice_redis::backlog`). Always on with `--functions processes`
    /// (the template turns it on; off there, the stack refuses to start),
    /// where the catch-up binary consumes that queue.
    pub flow_control: bool,
    pub catch_up: DelayWorkerConfig,
    /// A Slack-compatible incoming webhook for alerts.
    pub alert_url: Option<String>,
    /// The state machine's clock, which times its Retry backoffs and Wait
    /// states: [`SystemClock`], except in tests that would otherwise sit
    /// out seconds of backoff.
    pub clock: Arc<dyn Clock>,
    /// How the functions run: their code in this process, or their
    /// binaries under the local Lambda service.
    pub functions: FunctionsMode,
    /// The drain of the snapshot streams into PostgreSQL; without one the
    /// snapshots stay in Redis.
    pub drain: Option<DrainSetup>,
}

/// The template's `StepConcurrency` default: each step function's
/// reserved concurrency.
pub const STEP_CONCURRENCY: usize = 40;

impl DevConfig {
    /// A stack on free ports with the default settings (5 receives before
    /// the dead-letter queues, a 330 s visibility timeout): what the demos,
    /// benchmarks and tests start.
    pub fn on_free_ports(ingest: IngestConfig, cafe24: Cafe24Config, sheets: SheetsConfig) -> Self {
        Self {
            keyspace: ingest.keyspace.clone(),
            sqs_port: 0,
            sfn_port: 0,
            ingest_port: 0,
            metrics_port: 0,
            max_receive_count: 5,
            visibility_timeout: Duration::from_secs(330),
            group_scan: GroupScan::default(),
            ingest,
            pipeline: PipelineConfig::default(),
            pipe: PipeConfig { workers: 8, ..PipeConfig::default() },
            step_concurrency: Some(STEP_CONCURRENCY),
            cafe24,
            sheets,
            flush: DelayWorkerConfig::default(),
            flow_control: true,
            catch_up: DelayWorkerConfig::default(),
            alert_url: None,
            clock: Arc::new(SystemClock),
            functions: FunctionsMode::InProcess,
            drain: None,
        }
    }
}

//! `sluice dev --functions processes`: the stack with every function run
//! as Lambda runs it ([`sluice_lambda_runtime`]): the state machine's Tasks
//! invoke the step binaries by ARN, webhooks and sheet rows enter through
//! the ingest binary behind the local HTTP API, the flush queue feeds the
//! flush-sheet binary and the catch-up queue the catch-up binary
//! through SQS event sources (flow control per mall is on, as the
//! template deploys it). Each function gets
//! the template's variables, bound here to this stack: its queues, its
//! Redis, its upstreams, its secrets (served by the local Secrets
//! Manager), and the settings the template's parameters carry.
//!
//! Only what the template can say reaches the functions: a setting of
//! this stack that no template parameter carries must be the functions'
//! default, or the stack refuses to start rather than run the two halves
//! on different settings.

use crate::delay_worker::DelayWorkerConfig;
use crate::dev_stack::{CATCH_UP_QUEUE, DevConfig, EVENTS_QUEUE, FLUSH_QUEUE};
use anyhow::{Context, bail};
use serde_json::Value;
use sluice_asl::{Substitutions, TaskError, TaskHandler, TaskRegistry};
use sluice_aws::SqsDelayQueue;
use sluice_domain::Secret;
use sluice_lambda_runtime::{
    Bindings, Endpoints, FunctionBinaries, FunctionPool, LocalLambda, LocalLambdaConfig, SqsEventSourceConfig,
    Template, run_sqs_event_source,
};
use sluice_pipeline::PipelineConfig;
use sluice_pipeline::config::SheetConfig;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How the stack runs the functions.
#[derive(Debug, Clone, Default)]
pub enum FunctionsMode {
    /// The steps' code in this process, called by the interpreter (the default).
    #[default]
    InProcess,
    /// The functions' binaries as child processes under the local Lambda service.
    Processes(ProcessFunctions),
}

impl FunctionsMode {
    /// What the banner says.
    pub fn describe(&self) -> String {
        match self {
            Self::InProcess => "in-process (the steps' code in this process)".to_owned(),
            Self::Processes(p) => format!(
                "processes (the functions/* binaries in {} under a local Lambda Runtime API, configured by infra/template.yaml)",
                p.binaries.dir().display()
            ),
        }
    }
}

/// What the process mode needs beyond the stack's own settings.
#[derive(Debug, Clone)]
pub struct ProcessFunctions {
    pub binaries: FunctionBinaries,
    /// The Redis the functions connect to (the stack's), user and
    /// password included if it has them.
    pub redis_url: String,
    /// The CA that signed the Redis's certificate, when it is a private one.
    pub redis_ca_file: Option<PathBuf>,
    /// The API keys ingest accepts, comma-separated (the `ApiKeys` secret).
    pub api_keys: Secret,
    /// A ceiling on each function's environments (`None`: its reserved concurrency).
    pub max_concurrency: Option<usize>,
    /// Each function's output goes to `<dir>/<function name>.log`.
    pub log_dir: Option<PathBuf>,
}

/// The queue URLs and SQS endpoint of the running stack.
#[derive(Debug, Clone)]
pub(crate) struct StackQueues {
    pub(crate) sqs_url: String,
    pub(crate) events_url: String,
    pub(crate) flush_url: String,
    pub(crate) catch_up_url: String,
}

/// Starts the local Lambda service for the stack `config` describes.
pub(crate) async fn start_functions(
    config: &DevConfig,
    processes: &ProcessFunctions,
    queues: &StackQueues,
    stop: CancellationToken,
) -> anyhow::Result<LocalLambda> {
    if !config.flow_control {
        // The template gives ingest the catch-up queue: flow control is on wherever it is deployed.
        bail!("--functions processes runs ingest as the template deploys it, with flow control per mall on");
    }
    let expressible = template_settings(&config.pipeline);
    if config.pipeline != expressible {
        bail!(
            "--functions processes runs the functions with the template's settings; this stack sets pipeline \
             settings no template parameter carries: {:?}",
            config.pipeline
        );
    }
    let template = Template::bundled()?;
    let bindings = bindings(config, processes, queues);
    let lambda_config = LocalLambdaConfig {
        template,
        bindings,
        binaries: processes.binaries.clone(),
        max_concurrency: processes.max_concurrency,
        throttle: config.step_concurrency.is_some(),
        log_dir: processes.log_dir.clone(),
    };
    LocalLambda::start(lambda_config, stop).await.context("the local Lambda service")
}

/// `pipeline` with only what the template's parameters set kept, the rest
/// the functions' defaults.
fn template_settings(pipeline: &PipelineConfig) -> PipelineConfig {
    let defaults = PipelineConfig::default();
    let sheets = SheetConfig {
        google_project: pipeline.sheets.google_project.clone(),
        per_credential: (pipeline.sheets.per_credential.0, defaults.sheets.per_credential.1),
        per_project: (pipeline.sheets.per_project.0, defaults.sheets.per_project.1),
        value_input: pipeline.sheets.value_input,
        ..defaults.sheets.clone()
    };
    let mut catch_up = defaults.catch_up.clone();
    catch_up.flow.max_queued = pipeline.catch_up.flow.max_queued;
    PipelineConfig {
        bucket: pipeline.bucket,
        max_receive_count: pipeline.max_receive_count,
        map_max_concurrency: pipeline.map_max_concurrency,
        sheets,
        catch_up,
        ..defaults
    }
}

/// The template's parameters, resources, secrets and endpoints as this stack has them.
fn bindings(config: &DevConfig, processes: &ProcessFunctions, queues: &StackQueues) -> Bindings {
    let pipeline = &config.pipeline;
    let bindings = Bindings::new();
    let (events_arn, flush_arn) = (bindings.queue_arn(EVENTS_QUEUE), bindings.queue_arn(FLUSH_QUEUE));
    let catch_up_arn = bindings.queue_arn(CATCH_UP_QUEUE);
    // The template's own value when no alert webhook is set (alerts stay log lines).
    let alert = config.alert_url.clone().unwrap_or_else(|| " ".to_owned());
    bindings
        .parameter("Stage", "local")
        .parameter("Cafe24ClientId", &config.cafe24.client_id)
        .parameter("GoogleClientId", &config.sheets.client_id)
        .parameter("BucketCapacity", pipeline.bucket.capacity)
        .parameter("BucketDrainPerSec", pipeline.bucket.leak_per_sec)
        .parameter("MapMaxConcurrency", pipeline.map_max_concurrency)
        .parameter("StepConcurrency", config.step_concurrency.unwrap_or(crate::dev_config::STEP_CONCURRENCY))
        .parameter("MaxReceiveCount", pipeline.max_receive_count)
        .parameter("GoogleProject", &pipeline.sheets.google_project)
        .parameter("SheetsWritesPerMinute", pipeline.sheets.per_credential.0)
        .parameter("SheetsProjectWritesPerMinute", pipeline.sheets.per_project.0)
        .parameter("SheetsValueInput", pipeline.sheets.value_input.as_str())
        .parameter("FlowMaxQueued", pipeline.catch_up.flow.max_queued)
        .parameter("SheetMaxQueued", config.ingest.sheet_flow.max_queued)
        .resource("EventsQueue", queues.events_url.clone())
        .resource("EventsQueue.Arn", events_arn)
        .resource("FlushQueue", queues.flush_url.clone())
        .resource("FlushQueue.Arn", flush_arn)
        .resource("MallDrainQueue", queues.catch_up_url.clone())
        .resource("MallDrainQueue.Arn", catch_up_arn)
        .secret("ApiKeys", processes.api_keys.clone())
        .secret("Cafe24ClientSecret", config.cafe24.client_secret.clone())
        .secret("GoogleClientSecret", config.sheets.client_secret.clone())
        .secret("AlertWebhookUrl", Secret::new(alert))
        .redis(&processes.redis_url)
        .replace("SLUICE_KEY_PREFIX", config.keyspace.prefix())
        .with_endpoints(Endpoints {
            sqs: Some(queues.sqs_url.clone()),
            cafe24_base_url: Some(config.cafe24.base_url.as_str().to_owned()),
            sheets_api_url: Some(config.sheets.api_base_url.clone()),
            google_token_url: Some(config.sheets.token_url.clone()),
            secrets_manager: None,
            redis_ca_file: processes.redis_ca_file.as_ref().map(|f| f.display().to_string()),
        })
}

/// The function behind the HTTP API (the one with `HttpApi` events: ingest).
pub(crate) fn http_function(lambda: &LocalLambda) -> anyhow::Result<Arc<FunctionPool>> {
    match lambda.functions().find(|f| !f.spec().http_routes.is_empty()) {
        Some(function) => Ok(function.clone()),
        None => bail!("infra/template.yaml has no function with HttpApi events"),
    }
}

/// The event source mapping of the standard queue `name` (the flush
/// queue, the catch-up queue), as the template declares it on its
/// function, polling as the in-process worker `worker` would.
pub(crate) fn queue_event_source(
    lambda: &LocalLambda,
    name: &str,
    queue: Arc<SqsDelayQueue>,
    worker: &DelayWorkerConfig,
    stop: CancellationToken,
) -> anyhow::Result<impl Future<Output = ()> + Send + 'static> {
    let arn = Bindings::new().queue_arn(name);
    let found = lambda
        .functions()
        .find_map(|f| f.spec().sqs_sources.iter().find(|s| s.queue_arn == arn).map(|s| (f.clone(), s.clone())));
    let Some((function, source)) = found else {
        bail!("infra/template.yaml maps no function to the queue {name} ({arn})");
    };
    let config = SqsEventSourceConfig {
        concurrency: worker.concurrency.min(function.concurrency()),
        source,
        region: Bindings::new().region,
        visibility_timeout: worker.visibility_timeout,
        wait: worker.wait,
        retry_after: worker.retry_after,
    };
    Ok(run_sqs_event_source(queue, function, config, Arc::default(), stop))
}

/// The definition's placeholders, each the ARN of a local function.
pub(crate) fn process_substitutions(lambda: &LocalLambda) -> Substitutions {
    lambda.substitutions().iter().fold(Substitutions::new(), |subs, (placeholder, arn)| subs.with(placeholder, arn))
}

/// A task handler per function the definition calls: `lambda:invoke` of
/// its binary by ARN. A function's error report becomes the task's error
/// (its `errorType` is what Retry and Catch match), with the function's
/// last log lines in the cause when its environment failed.
pub(crate) fn process_registry(lambda: &Arc<LocalLambda>) -> TaskRegistry {
    lambda
        .substitutions()
        .iter()
        .fold(TaskRegistry::new(), |registry, (_, arn)| registry.with(arn.clone(), invoke(lambda.clone(), arn.clone())))
}

fn invoke(lambda: Arc<LocalLambda>, arn: String) -> impl TaskHandler {
    move |input: Value| {
        let (lambda, arn) = (lambda.clone(), arn.clone());
        async move {
            match lambda.invoke(&arn, input.to_string()).await {
                // Step Functions keeps a payload that is not JSON as a string.
                Ok(payload) => Ok(serde_json::from_slice(&payload)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&payload).into_owned()))),
                Err(e) => Err(TaskError::new(e.error_type.clone(), e.message_with_log())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_the_template_cannot_carry_are_told_apart() {
        let mut pipeline = PipelineConfig::default();
        pipeline.bucket.capacity = 8;
        pipeline.sheets.per_credential.0 = 30;
        pipeline.catch_up.flow.max_queued = 7;
        assert_eq!(template_settings(&pipeline), pipeline);
        pipeline.snapshot_shards = 4;
        assert_ne!(template_settings(&pipeline), pipeline);
    }
}

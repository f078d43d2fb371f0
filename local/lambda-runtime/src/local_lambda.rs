//! The local Lambda service: every function of the template, each a
//! [`FunctionPool`] of its built binary under the Runtime API, configured
//! from the template through the [`Bindings`], with the Secrets Manager
//! its secrets come from. Functions are invoked by name or ARN.
//!
//! Stopping cancels one token, which stops every environment, and waits
//! until each process has been reaped: none outlives the service.

use crate::bindings::Bindings;
use crate::emf_totals::EmfTotals;
use crate::environment::Launch;
use crate::function_binaries::{BinariesError, FunctionBinaries};
use crate::function_error::FunctionError;
use crate::function_logs::LogSink;
use crate::function_pool::FunctionPool;
use crate::function_spec::{FunctionSpec, SpecError, specs, substitutions};
use crate::secrets_manager::SecretsManager;
use crate::template::Template;
use axum::body::Bytes;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Why the service cannot start.
#[derive(Debug, thiserror::Error)]
pub enum LocalLambdaError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Binaries(#[from] BinariesError),
    #[error("cannot start the local Secrets Manager: {0}")]
    Secrets(std::io::Error),
    #[error("cannot create the functions' log directory {0}: {1}")]
    LogDir(PathBuf, std::io::Error),
}

/// What the service runs.
#[derive(Debug, Clone)]
pub struct LocalLambdaConfig {
    pub template: Template,
    pub bindings: Bindings,
    pub binaries: FunctionBinaries,
    /// A local ceiling on each function's environments, below its reserved
    /// concurrency (`None`: that concurrency, or 10 without one).
    pub max_concurrency: Option<usize>,
    /// Refuse an invocation of a state-machine step past the function's
    /// reserved concurrency with `TooManyRequestsException`, as Lambda does
    /// (false, and for the other functions: every invocation waits for an
    /// environment).
    pub throttle: bool,
    /// Each function's output goes to `<dir>/<function name>.log`.
    pub log_dir: Option<PathBuf>,
}

/// Environments a function without reserved concurrency may run locally.
const UNRESERVED_CONCURRENCY: usize = 10;

/// See the module docs.
#[derive(Debug)]
pub struct LocalLambda {
    functions: BTreeMap<String, Arc<FunctionPool>>,
    substitutions: Vec<(String, String)>,
    metrics: Arc<EmfTotals>,
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl LocalLambda {
    /// Starts the Secrets Manager and readies every function (no process
    /// starts before its first invocation). `stop` (and [`LocalLambda::stop`])
    /// stop it all.
    pub async fn start(config: LocalLambdaConfig, stop: CancellationToken) -> Result<Self, LocalLambdaError> {
        if let Some(dir) = &config.log_dir {
            std::fs::create_dir_all(dir).map_err(|e| LocalLambdaError::LogDir(dir.clone(), e))?;
        }
        let secrets = SecretsManager::start(config.bindings.secrets().to_vec(), stop.clone())
            .await
            .map_err(LocalLambdaError::Secrets)?;
        let mut bindings = config.bindings;
        bindings.endpoints.secrets_manager = Some(secrets.url);
        let specs = specs(&config.template, &bindings)?;
        let substitutions = substitutions(&config.template, &bindings)?;
        let binaries: Vec<&str> = specs.iter().map(|s| s.binary.as_str()).collect();
        config.binaries.check(&binaries)?;
        let metrics = Arc::new(EmfTotals::default());
        let logs = Arc::new(LogSink { dir: config.log_dir, metrics: metrics.clone() });
        let tasks = TaskTracker::new();
        let functions = specs
            .into_iter()
            .map(|spec| {
                let reserved = spec.reserved_concurrency.map_or(UNRESERVED_CONCURRENCY, |r| r as usize);
                let concurrency = config.max_concurrency.map_or(reserved, |max| max.min(reserved));
                let binary = config.binaries.path(&spec.binary);
                let name = spec.name.clone();
                // The state machine's steps: what Step Functions invokes and
                // retries when Lambda refuses (ingest and the event-source
                // functions are bounded by their callers here).
                let step = substitutions.iter().any(|(_, arn)| *arn == spec.arn);
                let limit = spec.reserved_concurrency.filter(|_| config.throttle && step);
                let (region, logs, stop, tasks) =
                    (bindings.region.clone(), logs.clone(), stop.child_token(), tasks.clone());
                let launch = Launch { binary, region, logs, stop, tasks };
                let pool = FunctionPool::new(spec, launch, concurrency, limit.map(|r| r as usize));
                (name, Arc::new(pool))
            })
            .collect();
        Ok(Self { functions, substitutions, metrics, stop, tasks })
    }

    /// The function named `name`, or whose ARN or binary is `name`.
    pub fn function(&self, name: &str) -> Option<&Arc<FunctionPool>> {
        self.functions
            .get(name)
            .or_else(|| self.functions.values().find(|f| f.spec().arn == name || f.spec().binary == name))
    }

    pub fn functions(&self) -> impl Iterator<Item = &Arc<FunctionPool>> {
        self.functions.values()
    }

    pub fn specs(&self) -> impl Iterator<Item = &FunctionSpec> {
        self.functions.values().map(|f| f.spec())
    }

    /// Invokes the function `name` (or ARN) synchronously.
    pub async fn invoke(&self, name: &str, payload: impl Into<Bytes>) -> Result<Bytes, FunctionError> {
        match self.function(name) {
            Some(function) => function.invoke(payload).await,
            None => Err(FunctionError::new("ResourceNotFoundException", format!("Function not found: {name}"))),
        }
    }

    /// The state machine's placeholders, each a local function's ARN.
    pub fn substitutions(&self) -> &[(String, String)] {
        &self.substitutions
    }

    /// What the functions' EMF lines added up to.
    pub fn metrics(&self) -> &Arc<EmfTotals> {
        &self.metrics
    }

    /// Stops every environment and waits until each process is gone.
    pub async fn stop(&self) {
        self.stop.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}

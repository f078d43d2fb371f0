//! `--functions in-process|processes`, shared by `sluice dev` and the
//! demos: whether the functions' code runs in this process, or their
//! built binaries run as Lambda runs them (`sluice_dev_stack::function_processes`).

use crate::redis_target::RedisTarget;
use sluice_cafe24::Secret;
use sluice_dev_stack::{FunctionsMode, ProcessFunctions};
use sluice_lambda_runtime::FunctionBinaries;
use sluice_private_servers::DeploymentKind;
use std::path::PathBuf;

/// Where the functions' output goes in process mode, one file per function.
pub(crate) const FUNCTION_LOG_DIR: &str = ".sluice/logs";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum Functions {
    /// The functions' code in this process, called directly.
    #[default]
    InProcess,
    /// The built binaries of functions/* as child processes under a local
    /// Lambda Runtime API, configured only by infra/template.yaml.
    Processes,
}

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct FunctionsArgs {
    /// How the functions run.
    #[arg(long, value_enum, default_value_t)]
    functions: Functions,
    /// With --functions processes: the directory of the function binaries
    /// (default: beside this executable, where `cargo build -p sluice-fn-…` puts them).
    #[arg(long)]
    functions_dir: Option<PathBuf>,
    /// With --functions processes: at most this many processes per function
    /// (and never more than its reserved concurrency in the template, which
    /// sizes them for AWS, 40 or 50: more debug processes than two cores serve).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=200))]
    function_concurrency: u32,
    /// The private Redis started when SLUICE_REDIS_URL is unset: one plain
    /// redis-server, or (tls-cluster) three masters in cluster mode, TLS
    /// only with an ACL user, as ElastiCache Serverless is.
    #[arg(long, value_enum, default_value_t)]
    private_redis: PrivateRedisKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum PrivateRedisKind {
    #[default]
    Plain,
    TlsCluster,
}

impl FunctionsArgs {
    /// Whether the steps and ingest run in this process (the default).
    pub(crate) fn in_process(&self) -> bool {
        self.functions == Functions::InProcess
    }

    /// `SLUICE_REDIS_URL`, or the private Redis `--private-redis` asks for.
    pub(crate) fn redis_target(&self) -> anyhow::Result<RedisTarget> {
        RedisTarget::from_env_or_deployment(match self.private_redis {
            PrivateRedisKind::Plain => DeploymentKind::Plain,
            PrivateRedisKind::TlsCluster => DeploymentKind::Cluster,
        })
    }

    /// The mode for a stack on `redis` whose ingest accepts `api_keys`.
    pub(crate) fn mode(&self, redis: &RedisTarget, api_keys: &str) -> anyhow::Result<FunctionsMode> {
        if self.functions == Functions::InProcess {
            return Ok(FunctionsMode::InProcess);
        }
        let binaries = match &self.functions_dir {
            Some(dir) => FunctionBinaries::in_dir(dir),
            None => FunctionBinaries::beside_current_exe()?,
        };
        Ok(FunctionsMode::Processes(ProcessFunctions {
            binaries,
            redis_url: redis.url.clone(),
            redis_ca_file: redis.ca_file(),
            api_keys: Secret::new(api_keys),
            max_concurrency: Some(self.function_concurrency as usize),
            log_dir: Some(PathBuf::from(FUNCTION_LOG_DIR)),
        }))
    }
}

/// The banner's line about the mode.
pub(crate) fn describe(mode: &FunctionsMode) -> String {
    match mode {
        FunctionsMode::InProcess => mode.describe(),
        FunctionsMode::Processes(_) => format!("{}; logs in {FUNCTION_LOG_DIR}/<function>.log", mode.describe()),
    }
}

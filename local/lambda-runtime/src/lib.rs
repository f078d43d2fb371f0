//! The Lambda service on one machine, so that what `make test` and
//! `sluice dev --functions processes` run is what is deployed: the real
//! binaries of `functions/*`, started as child processes under a local
//! Lambda Runtime API, each with exactly the environment variables
//! `infra/template.yaml` gives it (its AWS references replaced by the local
//! endpoints), invoked as Step Functions, API Gateway and an SQS event
//! source invoke them.
//!
//! Why a crate of its own: it is the Lambda service, not sluice's code;
//! `sluice-dev-stack` assembles it into `sluice dev`, and the tests of the
//! functions' cold starts use it alone. It knows nothing of the state
//! machine or the pipeline: they reach a function through
//! [`LocalLambda::invoke`]. It starts the functions' binaries and never
//! links them, so the `sluice` binary does not depend on the function crates.
//!
//! # Layout
//!
//! - [`template`], [`template_tree`], [`template_value`]: the SAM template as text: the functions, their environment, events and limits.
//! - [`template_condition`]: the template's `Conditions`, evaluated with the local stack's values (a function runs when it would be deployed).
//! - [`bindings`]: what the local stack puts where the template names AWS (parameters, resources, secrets, endpoints).
//! - [`function_spec`]: each function resolved: name, ARN, timeout, concurrency, environment; unknown variables refused.
//! - [`function_binaries`]: where the built binaries are, whether they are stale, building them for tests.
//! - `runtime_api`: one environment's Runtime API (`/2018-06-01/runtime/…`).
//! - `environment`: one execution environment, a child process serving one invocation at a time.
//! - [`function_pool`]: a function's environments, scaled up to its concurrency, reused when idle.
//! - [`local_lambda`]: [`LocalLambda`], every function of the template, invoked by name or ARN.
//! - [`function_error`]: an invocation's failure, as the function or Lambda reports it.
//! - [`function_logs`], [`emf_totals`]: the functions' output: log files, failure tails, EMF metrics.
//! - [`secrets_manager`]: the local Secrets Manager (`GetSecretValue`).
//! - [`api_gateway`], [`api_gateway_event`]: the local HTTP API in front of a function (payload 2.0).
//! - [`sqs_event_source`]: an SQS event source mapping (ReportBatchItemFailures).

pub mod api_gateway;
pub mod api_gateway_event;
pub mod bindings;
pub mod emf_totals;
mod environment;
pub mod function_binaries;
pub mod function_error;
pub mod function_logs;
pub mod function_pool;
pub mod function_spec;
pub mod local_lambda;
pub mod reserved_concurrency;
mod runtime_api;
pub mod secrets_manager;
pub mod sqs_event_source;
pub mod template;
pub mod template_condition;
pub mod template_tree;
pub mod template_value;

pub use api_gateway::serve_api_gateway;
pub use bindings::{Bindings, Endpoints};
pub use emf_totals::EmfTotals;
pub use function_binaries::FunctionBinaries;
pub use function_error::FunctionError;
pub use function_pool::FunctionPool;
pub use function_spec::FunctionSpec;
pub use local_lambda::{LocalLambda, LocalLambdaConfig, LocalLambdaError};
pub use reserved_concurrency::ReservedConcurrency;
pub use sqs_event_source::{EventSourceStats, SqsEventSourceConfig, run_sqs_event_source};
pub use template::Template;

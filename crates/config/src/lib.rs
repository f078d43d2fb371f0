//! One typed configuration per deployable, from the `SLUICE_*` environment
//! variables: the ingest function ([`IngestSettings`]), the step functions
//! ([`StepSettings`], [`ShopSettings`], [`SheetSettings`]), the drain
//! function ([`DrainSettings`]), the catch-up function
//! ([`CatchUpSettings`]), and the parts
//! `sluice dev` and the operator commands read ([`OperatorQueues`]). Each is read with figment from an
//! [`EnvSource`], then validated into the libraries' typed configs; an
//! error names the variable ([`ConfigError`]) and never shows a secret.
//!
//! Every variable is declared once, with its type, default and meaning,
//! in its part's `part!`, which gives the part's `VARIABLES`;
//! `functions/README.md`'s tables are rendered from those lists and their
//! defaults ([`table`]), and a test keeps them equal.
//!
//! # Layout
//!
//! - `source`: [`EnvSource`], the variables as a figment provider.
//! - `variables`: [`Variable`], `part!` (a part declared in one line a variable) and the table renderer.
//! - `common`: what every deployable reads (Redis, key prefix, stage).
//! - `pipeline_vars`: the pipeline's limits and sizes ([`PipelineConfig`]).
//! - `cafe24_vars`: the Cafe24 app (shop functions).
//! - `sheet_vars`: the Google client and the flush queue (sheet functions).
//! - `alert_vars`: the alert webhook (the functions that can raise an alert).
//! - `ingest_vars`: the ingest function.
//! - `flow_vars`: flow control per mall ([`FlowSettings`]): the catch-up queue and threshold (ingest, the catch-up function).
//! - `database_vars`: the PostgreSQL the drain writes to ([`database_url`]).
//! - `cli_vars`: [`OperatorQueues`], the queues and state machine the operator commands fall back to.
//! - `secret_setting`: [`SecretSetting`], a secret's value or its Secrets Manager ARN.
//! - `deployables`: the per-deployable structs built from the parts.
//!
//! [`PipelineConfig`]: sluice_pipeline::PipelineConfig

mod alert_vars;
mod cafe24_vars;
mod cli_vars;
mod common;
mod database_vars;
mod deployables;
mod flow_vars;
mod ingest_vars;
mod pipeline_vars;
mod secret_setting;
mod sheet_vars;
mod source;
mod variables;

pub use alert_vars::alert_url;
pub use cafe24_vars::cafe24_config;
pub use cli_vars::OperatorQueues;
pub use common::{Common, Serving};
pub use database_vars::database_url;
pub use deployables::{
    CatchUpSettings, DrainSettings, FetchSettings, FlushQueue, IngestSettings, SheetSettings, ShopSettings,
    StepSettings,
};
pub use flow_vars::{CatchUpQueue, FlowSettings};
pub use pipeline_vars::pipeline_config;
pub use secret_setting::SecretSetting;
pub use sheet_vars::{GoogleClient, google_client};
pub use source::{EnvSource, PREFIX, variable};
pub use variables::{Variable, all_tables, is_variable, table};

/// A variable that is missing or cannot be used, named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{name} is not set: {what}")]
    Missing { name: String, what: &'static str },
    #[error("{name} is invalid: {problem}")]
    Invalid { name: String, problem: String },
}

impl ConfigError {
    /// The variable `field` (no prefix) is missing; what it is comes from the tables.
    pub(crate) fn missing(field: &str) -> Self {
        let name = variable(field);
        let what = variables::meaning(&name).unwrap_or("required");
        Self::Missing { name, what }
    }

    /// The variable `field` (a name without the prefix) is invalid.
    pub(crate) fn invalid(field: &str, problem: impl Into<String>) -> Self {
        Self::Invalid { name: variable(field), problem: problem.into() }
    }

    /// The variable concerned, e.g. `SLUICE_REDIS_URL`.
    pub fn name(&self) -> &str {
        match self {
            Self::Missing { name, .. } | Self::Invalid { name, .. } => name,
        }
    }
}

/// `Ok(())` when `min <= value <= max`, else the variable named with the range.
pub(crate) fn in_range<T>(field: &str, value: T, min: T, max: Option<T>) -> Result<(), ConfigError>
where
    T: PartialOrd + Copy + std::fmt::Display,
{
    if value >= min && max.is_none_or(|max| value <= max) {
        return Ok(());
    }
    Err(ConfigError::invalid(
        field,
        match max {
            Some(max) => format!("{value} is not from {min} to {max}"),
            None => format!("{value} is below {min}"),
        },
    ))
}

//! Step Functions' request shapes (AWS JSON 1.0, members in camelCase).
//! Every member is optional here so that a missing one is answered with a
//! `ValidationException` naming it, not a parse error; members Step
//! Functions has and the local endpoint does not use (`traceHeader`) are
//! accepted and ignored, as they change nothing an execution does.

use super::error::ApiError;
use serde::Deserialize;

/// The member `name`, or the error naming it.
pub(super) fn required<T>(value: Option<T>, name: &str) -> Result<T, ApiError> {
    value.ok_or_else(|| ApiError::missing(name))
}

/// StartExecution's and StartSyncExecution's request.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StartExecution {
    pub(super) state_machine_arn: Option<String>,
    pub(super) name: Option<String>,
    pub(super) input: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DescribeExecution {
    pub(super) execution_arn: Option<String>,
    /// `ALL_DATA` (the default) or `METADATA_ONLY` (no input or output).
    pub(super) included_data: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GetExecutionHistory {
    pub(super) execution_arn: Option<String>,
    pub(super) max_results: Option<i64>,
    #[serde(default)]
    pub(super) reverse_order: bool,
    pub(super) next_token: Option<String>,
    pub(super) include_execution_data: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListStateMachines {
    pub(super) max_results: Option<i64>,
    pub(super) next_token: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DescribeStateMachine {
    pub(super) state_machine_arn: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListExecutions {
    pub(super) state_machine_arn: Option<String>,
    /// `RUNNING`, `SUCCEEDED`, `FAILED`, `TIMED_OUT`, … or none for all.
    pub(super) status_filter: Option<String>,
    pub(super) max_results: Option<i64>,
    pub(super) next_token: Option<String>,
}

//! A Step Functions state machine, started through `aws-sdk-sfn`: what the
//! local pipe does for every batch (StartSyncExecution, as the deployed
//! Pipe does for the Express machine) and what `sluice redrive` does for
//! each dead-lettered message. Inputs and outputs are JSON text, as the API
//! carries them; the caller parses what it needs.

use crate::error::SfnError;
use aws_sdk_sfn::Client;
use aws_sdk_sfn::types::SyncExecutionStatus;

/// One state machine, by ARN.
#[derive(Debug, Clone)]
pub struct StateMachineClient {
    client: Client,
    arn: String,
}

/// A synchronous execution that ran: StartSyncExecution answers 200 even
/// when the execution failed, so a failure is an outcome, not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncExecution {
    pub execution_arn: String,
    pub outcome: SyncOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncOutcome {
    /// The execution's output, JSON text.
    Succeeded {
        output: String,
    },
    Failed {
        error: String,
        cause: String,
    },
    /// It ran past the state machine's `TimeoutSeconds`.
    TimedOut {
        error: String,
        cause: String,
    },
}

impl SyncOutcome {
    /// `SUCCEEDED`, `FAILED` or `TIMED_OUT`, as Step Functions names it.
    pub fn status(&self) -> &'static str {
        match self {
            Self::Succeeded { .. } => "SUCCEEDED",
            Self::Failed { .. } => "FAILED",
            Self::TimedOut { .. } => "TIMED_OUT",
        }
    }
}

impl StateMachineClient {
    pub fn new(client: Client, arn: impl Into<String>) -> Self {
        Self { client, arn: arn.into() }
    }

    pub fn arn(&self) -> &str {
        &self.arn
    }

    /// Runs an execution to its end (StartSyncExecution: Express machines
    /// only). `name` must be unique among the machine's executions; `None`
    /// lets Step Functions pick one.
    pub async fn start_sync(&self, input: &str, name: Option<&str>) -> Result<SyncExecution, SfnError> {
        const OP: &str = "StartSyncExecution";
        let answer = self
            .client
            .start_sync_execution()
            .state_machine_arn(&self.arn)
            .input(input)
            .set_name(name.map(str::to_owned))
            .send()
            .await
            .map_err(|e| SfnError::call(OP, e))?;
        let (error, cause) =
            (answer.error().unwrap_or_default().to_owned(), answer.cause().unwrap_or_default().to_owned());
        let outcome = match answer.status() {
            SyncExecutionStatus::Succeeded => {
                SyncOutcome::Succeeded { output: answer.output().unwrap_or("null").to_owned() }
            }
            SyncExecutionStatus::Failed => SyncOutcome::Failed { error, cause },
            SyncExecutionStatus::TimedOut => SyncOutcome::TimedOut { error, cause },
            other => {
                return Err(SfnError::Malformed { operation: OP, detail: format!("status {:?}", other.as_str()) });
            }
        };
        Ok(SyncExecution { execution_arn: answer.execution_arn().to_owned(), outcome })
    }

    /// Starts an execution and returns its ARN at once (StartExecution).
    pub async fn start(&self, input: &str, name: Option<&str>) -> Result<String, SfnError> {
        let answer = self
            .client
            .start_execution()
            .state_machine_arn(&self.arn)
            .input(input)
            .set_name(name.map(str::to_owned))
            .send()
            .await
            .map_err(|e| SfnError::call("StartExecution", e))?;
        Ok(answer.execution_arn().to_owned())
    }
}

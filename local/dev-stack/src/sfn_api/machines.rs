//! ListStateMachines and DescribeStateMachine: the machines `sluice dev`
//! serves, each the deployed definition with its local substitutions.

use super::error::ApiError;
use super::page::{page, with_next};
use super::timestamp::epoch_seconds;
use super::wire::{self, required};
use super::{LocalStateMachine, StepFunctionsApi};
use serde_json::{Value, json};

pub(super) fn list_state_machines(api: &StepFunctionsApi, request: wire::ListStateMachines) -> Result<Value, ApiError> {
    let (machines, next) = page(&api.machines, request.max_results, request.next_token.as_deref())?;
    let listed: Vec<Value> = machines
        .iter()
        .map(|m| {
            json!({
                "stateMachineArn": m.arn,
                "name": m.name,
                "type": LocalStateMachine::TYPE,
                "creationDate": epoch_seconds(m.created),
            })
        })
        .collect();
    Ok(with_next(json!({ "stateMachines": listed }), next))
}

pub(super) fn describe_state_machine(
    api: &StepFunctionsApi,
    request: wire::DescribeStateMachine,
) -> Result<Value, ApiError> {
    let machine = api.machine(&required(request.state_machine_arn, "stateMachineArn")?)?;
    Ok(json!({
        "stateMachineArn": machine.arn,
        "name": machine.name,
        "status": "ACTIVE",
        "definition": machine.definition,
        "roleArn": api.role_arn(),
        "type": LocalStateMachine::TYPE,
        "creationDate": epoch_seconds(machine.created),
    }))
}

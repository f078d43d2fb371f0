//! The ARNs an execution sees in `$$.Execution.Id` and `$$.StateMachine.Id`,
//! in Step Functions' form. One place forms them, so the local Step
//! Functions endpoint (`sluice_dev_stack::sfn_api`) answers the very ARN the
//! execution itself reads.

/// The account in every local ARN (the SQS endpoint's too).
pub const LOCAL_ACCOUNT: &str = "000000000000";
/// The region of an execution run with no region of its own.
pub const DEFAULT_REGION: &str = "local";

/// `arn:aws:states:<region>:000000000000:stateMachine:<name>`.
pub fn state_machine_arn(region: &str, machine: &str) -> String {
    format!("arn:aws:states:{region}:{LOCAL_ACCOUNT}:stateMachine:{machine}")
}

/// `arn:aws:states:<region>:000000000000:execution:<machine>:<name>`.
pub fn execution_arn(region: &str, machine: &str, name: &str) -> String {
    format!("arn:aws:states:{region}:{LOCAL_ACCOUNT}:execution:{machine}:{name}")
}

//! The AWS API calls the adapters make, each with the IAM action that
//! allows it: what a deployed function's IAM policy must grant. Each
//! adapter lists its calls beside them ([`SqsQueueOf::SEND_CALLS`] and the
//! other port methods' lists, `SecretsReader::CALLS`); its tests record
//! what it sends to a stand-in and check the two agree. Each function
//! names the lists it uses, on which resource ([`AwsUse`]), and
//! `tests/tests/template_iam.rs` checks `infra/template.yaml` allows them.
//!
//! [`SqsQueueOf::SEND_CALLS`]: crate::SqsQueueOf::SEND_CALLS

/// One AWS API operation, and the IAM action a policy must allow for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiCall {
    /// The operation as the service's API names it, and as the SDK sends
    /// it (the suffix of the `X-Amz-Target` header): `SendMessageBatch`.
    pub operation: &'static str,
    /// The IAM action that allows it, `service:Action`. Not always the
    /// operation's name: SQS allows each batch operation by its
    /// single-message action (`SendMessageBatch` by `sqs:SendMessage`).
    pub action: &'static str,
}

impl ApiCall {
    pub const fn new(operation: &'static str, action: &'static str) -> Self {
        Self { operation, action }
    }
}

/// Which resource a function's calls act on, as its environment names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// The one whose URL or ARN this variable holds (`SLUICE_QUEUE_URL`).
    Variable(&'static str),
    /// Each secret whose ARN one of the function's `…_SECRET_ARN`
    /// variables holds.
    EachSecretArn,
}

/// What a deployed function calls in AWS: `calls`, on `resource`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AwsUse {
    pub calls: &'static [ApiCall],
    pub resource: Resource,
}

/// The suffix by which IAM's SQS actions differ from the batch operations
/// they allow.
const BATCH: &str = "Batch";

/// Whether `call`'s action is the one IAM documents for its operation:
/// `service:Operation`, and for SQS's batch operations the single-message
/// action ("setting permissions for SendMessage, DeleteMessage, or
/// ChangeMessageVisibility sets permissions for the corresponding batch
/// versions", Amazon SQS Developer Guide, batch actions).
pub fn action_matches_operation(call: &ApiCall) -> bool {
    let Some((service, action)) = call.action.split_once(':') else { return false };
    let single = match service {
        "sqs" => call.operation.strip_suffix(BATCH).unwrap_or(call.operation),
        _ => call.operation,
    };
    action == single
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_sqs_batch_operation_is_allowed_by_its_single_message_action() {
        assert!(action_matches_operation(&ApiCall::new("SendMessageBatch", "sqs:SendMessage")));
        assert!(action_matches_operation(&ApiCall::new("GetSecretValue", "secretsmanager:GetSecretValue")));
        assert!(!action_matches_operation(&ApiCall::new("SendMessageBatch", "sqs:SendMessageBatch")));
        assert!(!action_matches_operation(&ApiCall::new("ReceiveMessage", "sqs:SendMessage")));
        assert!(!action_matches_operation(&ApiCall::new("ReceiveMessage", "ReceiveMessage")));
    }
}

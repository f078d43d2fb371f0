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

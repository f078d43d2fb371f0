//! The queues and the state machine the operator commands (`sluice
//! status`, `sluice dlq`, `sluice redrive`, `sluice credentials`, `sluice
//! tokens`) look at
//! when no flag names them; without either, they use the running `sluice
//! dev`'s.

use crate::variables::{Variable, var};
use crate::{ConfigError, EnvSource};
use serde::{Deserialize, Serialize};

pub(crate) const VARIABLES: &[Variable] = &[
    var("queue_url", "no", "the events queue (SQS FIFO)"),
    var("events_dlq_url", "no", "the events dead-letter queue"),
    var("flush_queue_url", "no", "the flush queue (SQS standard)"),
    var("flush_dlq_url", "no", "the flush dead-letter queue"),
    var(
        "mall_drain_queue_url",
        "no",
        "the mall drain queue (`sluice tokens set` releases a parked mall's events there)",
    ),
    var("mall_drain_dlq_url", "no", "the mall drain dead-letter queue"),
    var("sqs_endpoint", "no", "a local SQS endpoint instead of AWS"),
    var("state_machine_arn", "no", "the pipeline state machine (`sluice redrive`)"),
    var("sfn_endpoint", "no", "a local Step Functions endpoint instead of AWS"),
];

/// The queue URLs and state machine an operator command falls back to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct OperatorQueues {
    pub queue_url: Option<String>,
    pub events_dlq_url: Option<String>,
    pub flush_queue_url: Option<String>,
    pub flush_dlq_url: Option<String>,
    pub mall_drain_queue_url: Option<String>,
    pub mall_drain_dlq_url: Option<String>,
    pub sqs_endpoint: Option<String>,
    pub state_machine_arn: Option<String>,
    pub sfn_endpoint: Option<String>,
}

impl OperatorQueues {
    pub fn from_source(source: &EnvSource) -> Result<Self, ConfigError> {
        source.extract()
    }
}

pub(crate) fn defaults() -> serde_json::Value {
    serde_json::to_value(OperatorQueues::default()).unwrap_or_default()
}

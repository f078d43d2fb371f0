//! The queues and the state machine the operator commands (`sluice
//! status`, `sluice dlq`, `sluice redrive`, `sluice credentials`, `sluice
//! tokens`) look at
//! when no flag names them; without either, they use the running `sluice
//! dev`'s.

use crate::variables::part;
use crate::{ConfigError, EnvSource};

part! {
    /// The queue URLs and state machine an operator command falls back to.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct OperatorQueues {
        pub queue_url: Option<String> = None, "no", "the events queue (SQS FIFO)";
        pub events_dlq_url: Option<String> = None, "no", "the events dead-letter queue";
        pub flush_queue_url: Option<String> = None, "no", "the flush queue (SQS standard)";
        pub flush_dlq_url: Option<String> = None, "no", "the flush dead-letter queue";
        pub catch_up_queue_url: Option<String> = None, "no",
            "the catch-up queue (`sluice tokens set` releases a parked mall's events there)";
        pub catch_up_dlq_url: Option<String> = None, "no", "the catch-up dead-letter queue";
        pub sqs_endpoint: Option<String> = None, "no", "a local SQS endpoint instead of AWS";
        pub state_machine_arn: Option<String> = None, "no", "the pipeline state machine (`sluice redrive`)";
        pub sfn_endpoint: Option<String> = None, "no", "a local Step Functions endpoint instead of AWS";
    }
}

impl OperatorQueues {
    pub fn from_source(source: &EnvSource) -> Result<Self, ConfigError> {
        source.extract()
    }
}

//! The work queue port on SQS FIFO.

use crate::error::SqsError;
use crate::queue_calls::{Fifo, Received, SqsEntry, SqsQueueOf};
use aws_sdk_sqs::types::builders::SendMessageBatchRequestEntryBuilder;
use aws_sdk_sqs::types::{MessageSystemAttributeName as Attr, SendMessageBatchResultEntry};
use sluice_domain::queue::rules::{self, RuleViolation};
use sluice_domain::queue::{Accepted, MessageId, OutgoingMessage, ReceiveRequest, ReceivedMessage, SendOutcome};
use sluice_domain::{DedupId, GroupKey, WorkQueue};

/// One SQS FIFO queue, by URL, as a [`WorkQueue`].
pub type SqsQueue = SqsQueueOf<Fifo>;

impl WorkQueue for SqsQueue {
    async fn send_call(&self, entries: &[&OutgoingMessage]) -> Result<Vec<SendOutcome>, SqsError> {
        let outcomes = self.send_checked(entries).await?;
        Ok(outcomes
            .into_iter()
            .map(|outcome| match outcome {
                Ok(ok) => accepted(&ok),
                Err(failure) => SendOutcome::Failed(failure),
            })
            .collect())
    }

    async fn receive(&self, request: ReceiveRequest) -> Result<Vec<ReceivedMessage>, SqsError> {
        self.receive_messages(request).await?.iter().map(received).collect()
    }
}

impl SqsEntry for OutgoingMessage {
    fn body(&self) -> &str {
        &self.body
    }

    fn check(&self) -> Result<(), RuleViolation> {
        rules::check_message(self)
    }

    fn kind_fields(&self, entry: SendMessageBatchRequestEntryBuilder) -> SendMessageBatchRequestEntryBuilder {
        entry.message_group_id(self.group.as_str()).message_deduplication_id(self.dedup.as_str())
    }
}

fn accepted(ok: &SendMessageBatchResultEntry) -> SendOutcome {
    SendOutcome::Accepted(Accepted {
        message_id: MessageId::new(ok.message_id()),
        sequence_number: ok.sequence_number().unwrap_or_default().to_owned(),
    })
}

fn received(message: &aws_sdk_sqs::types::Message) -> Result<ReceivedMessage, SqsError> {
    let m = Received::new(message);
    let id = |e: sluice_domain::sqs_token::InvalidToken| Received::bad(e.to_string());
    Ok(ReceivedMessage {
        message_id: m.message_id()?,
        receipt: m.receipt()?,
        body: m.body(),
        group: GroupKey::parse(&m.attribute(Attr::MessageGroupId)?).map_err(id)?,
        dedup: DedupId::parse(&m.attribute(Attr::MessageDeduplicationId)?).map_err(id)?,
        sequence_number: m.attribute(Attr::SequenceNumber)?,
        receive_count: m.receive_count()?,
        sent_at: m.sent_at()?,
        first_received_at: m.first_received_at(),
    })
}

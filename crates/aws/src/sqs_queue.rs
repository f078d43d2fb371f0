//! The work queue port on SQS FIFO.

use crate::batch_retry::BatchRetry;
use crate::error::SqsError;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{
    MessageSystemAttributeName as Attr, QueueAttributeName, SendMessageBatchRequestEntry, SendMessageBatchResultEntry,
};
use sluice_domain::queue::rules::{self, MAX_BATCH_ENTRIES, codes};
use sluice_domain::queue::{
    Accepted, MessageId, OutgoingMessage, QueueAttributes, ReceiptHandle, ReceiveRequest, ReceivedMessage, SendFailure,
    SendOutcome,
};
use sluice_domain::{DedupId, GroupKey, WorkQueue};
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One SQS FIFO queue, by URL.
#[derive(Debug, Clone)]
pub struct SqsQueue {
    client: Client,
    url: String,
    retry: BatchRetry,
}

impl SqsQueue {
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        Self { client, url: url.into(), retry: BatchRetry::default() }
    }

    pub fn with_retry(mut self, retry: BatchRetry) -> Self {
        self.retry = retry;
        self
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn client(&self) -> &Client {
        &self.client
    }
}

/// Why an entry is still unsent after an attempt: SQS's code and message.
type Retryable = (String, String);

impl WorkQueue for SqsQueue {
    type Error = SqsError;

    async fn send_call(&self, entries: &[&OutgoingMessage]) -> Result<Vec<SendOutcome>, SqsError> {
        // The batching rule checks all this already; an adapter called
        // directly checks again rather than let SQS find out.
        if entries.len() > MAX_BATCH_ENTRIES {
            return Err(rules::RuleViolation::TooManyEntries { count: entries.len() }.into());
        }
        for entry in entries {
            rules::check_message(entry)?;
        }
        rules::check_batch_payload(entries.iter().map(|e| e.body.as_str()))?;

        let mut outcomes: Vec<Option<SendOutcome>> = vec![None; entries.len()];
        // Entry index -> why it is not sent yet (none before the first try).
        let mut pending: HashMap<usize, Option<Retryable>> = (0..entries.len()).map(|i| (i, None)).collect();
        let attempts = self.retry.attempts.max(1);
        for attempt in 1..=attempts {
            if pending.is_empty() {
                break;
            }
            tokio::time::sleep(self.retry.backoff(attempt)).await;
            let mut indices: Vec<usize> = pending.keys().copied().collect();
            indices.sort_unstable();
            let request = indices.iter().map(|&i| batch_entry(i, entries[i])).collect::<Result<Vec<_>, _>>()?;
            let answer = self.client.send_message_batch().queue_url(&self.url).set_entries(Some(request)).send().await;
            let output = match answer {
                Ok(output) => output,
                // Nothing decided yet: the whole call failed.
                Err(err) if outcomes.iter().all(Option::is_none) => {
                    return Err(SqsError::call("SendMessageBatch", err));
                }
                // Some entries were accepted by an earlier attempt: keep
                // them, and report the rest as failed with this error.
                Err(err) => {
                    let err = SqsError::call("SendMessageBatch", err);
                    for i in indices {
                        pending.insert(i, Some((codes::CALL_FAILED.to_owned(), err.to_string())));
                    }
                    break;
                }
            };
            for ok in output.successful() {
                let Some(i) = entry_index(ok.id(), &pending) else { continue };
                pending.remove(&i);
                outcomes[i] = Some(accepted(ok));
            }
            for failed in output.failed() {
                let Some(i) = entry_index(failed.id(), &pending) else { continue };
                let code = failed.code().to_owned();
                let message = failed.message().unwrap_or_default().to_owned();
                if failed.sender_fault() {
                    pending.remove(&i);
                    outcomes[i] = Some(SendOutcome::Failed(SendFailure::new(code, message, true)));
                } else {
                    pending.insert(i, Some((code, message)));
                }
            }
            // An entry SQS reported on neither list was not accepted.
            for (i, why) in pending.iter_mut() {
                if indices.contains(i) && why.is_none() {
                    *why = Some(("MissingResult".into(), "SQS reported neither success nor failure".into()));
                }
            }
        }
        for (i, why) in pending {
            let (code, message) = why.unwrap_or_else(|| (codes::CALL_FAILED.into(), "not attempted".into()));
            let message = format!("{message} (still failing after {attempts} attempts)");
            outcomes[i] = Some(SendOutcome::Failed(SendFailure::new(code, message, false)));
        }
        Ok(outcomes
            .into_iter()
            .map(|o| {
                o.unwrap_or_else(|| SendOutcome::Failed(SendFailure::new(codes::CALL_FAILED, "no outcome", false)))
            })
            .collect())
    }

    async fn receive(&self, request: ReceiveRequest) -> Result<Vec<ReceivedMessage>, SqsError> {
        let output = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(i32::from(request.max_messages()))
            .visibility_timeout(seconds(request.visibility_timeout()))
            .wait_time_seconds(seconds(request.wait()))
            .message_system_attribute_names(Attr::All)
            .send()
            .await
            .map_err(|e| SqsError::call("ReceiveMessage", e))?;
        output.messages().iter().map(received).collect()
    }

    async fn delete(&self, receipt: &ReceiptHandle) -> Result<(), SqsError> {
        self.client
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(receipt.as_str())
            .send()
            .await
            .map_err(|e| SqsError::call("DeleteMessage", e))?;
        Ok(())
    }

    async fn change_visibility(&self, receipt: &ReceiptHandle, timeout: Duration) -> Result<(), SqsError> {
        rules::check_visibility_timeout(timeout)?;
        self.client
            .change_message_visibility()
            .queue_url(&self.url)
            .receipt_handle(receipt.as_str())
            .visibility_timeout(seconds(timeout))
            .send()
            .await
            .map_err(|e| SqsError::call("ChangeMessageVisibility", e))?;
        Ok(())
    }

    async fn attributes(&self) -> Result<QueueAttributes, SqsError> {
        let output = self
            .client
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .map_err(|e| SqsError::call("GetQueueAttributes", e))?;
        let attributes = output.attributes().cloned().unwrap_or_default();
        let count = |name: QueueAttributeName| -> Result<u64, SqsError> {
            let value = attributes
                .get(&name)
                .ok_or_else(|| SqsError::malformed("GetQueueAttributes", format!("no {}", name.as_str())))?;
            value.parse().map_err(|_| SqsError::malformed("GetQueueAttributes", format!("{}={value:?}", name.as_str())))
        };
        Ok(QueueAttributes {
            visible: count(QueueAttributeName::ApproximateNumberOfMessages)?,
            in_flight: count(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)?,
            oldest_age: None,
        })
    }
}

fn batch_entry(index: usize, entry: &OutgoingMessage) -> Result<SendMessageBatchRequestEntry, SqsError> {
    SendMessageBatchRequestEntry::builder()
        .id(index.to_string())
        .message_body(&entry.body)
        .message_group_id(entry.group.as_str())
        .message_deduplication_id(entry.dedup.as_str())
        .build()
        .map_err(|e| SqsError::malformed("SendMessageBatch", e.to_string()))
}

/// The index an entry id names, if it is one still pending. Ids SQS made
/// up, or answered twice, are ignored: only an entry we sent and SQS
/// listed can be decided.
fn entry_index(id: &str, pending: &HashMap<usize, Option<Retryable>>) -> Option<usize> {
    id.parse().ok().filter(|i| pending.contains_key(i))
}

fn accepted(ok: &SendMessageBatchResultEntry) -> SendOutcome {
    SendOutcome::Accepted(Accepted {
        message_id: MessageId::new(ok.message_id()),
        sequence_number: ok.sequence_number().unwrap_or_default().to_owned(),
    })
}

fn received(message: &aws_sdk_sqs::types::Message) -> Result<ReceivedMessage, SqsError> {
    let bad = |detail: String| SqsError::malformed("ReceiveMessage", detail);
    let attributes = message.attributes().cloned().unwrap_or_default();
    let attr =
        |name: Attr| attributes.get(&name).cloned().ok_or_else(|| bad(format!("no {} attribute", name.as_str())));
    let number = |name: Attr| -> Result<u64, SqsError> {
        let value = attr(name.clone())?;
        value.parse().map_err(|_| bad(format!("{}={value:?} is not a number", name.as_str())))
    };
    let millis = |name: Attr| number(name).map(|ms| UNIX_EPOCH + Duration::from_millis(ms));
    Ok(ReceivedMessage {
        message_id: MessageId::new(message.message_id().ok_or_else(|| bad("no MessageId".into()))?),
        receipt: ReceiptHandle::new(message.receipt_handle().ok_or_else(|| bad("no ReceiptHandle".into()))?),
        body: message.body().unwrap_or_default().to_owned(),
        group: GroupKey::parse(&attr(Attr::MessageGroupId)?).map_err(|e| bad(e.to_string()))?,
        dedup: DedupId::parse(&attr(Attr::MessageDeduplicationId)?).map_err(|e| bad(e.to_string()))?,
        sequence_number: attr(Attr::SequenceNumber)?,
        receive_count: u32::try_from(number(Attr::ApproximateReceiveCount)?).map_err(|e| bad(e.to_string()))?,
        sent_at: millis(Attr::SentTimestamp)?,
        first_received_at: millis(Attr::ApproximateFirstReceiveTimestamp).unwrap_or(SystemTime::UNIX_EPOCH),
    })
}

/// SQS takes whole seconds; [`ReceiveRequest`] and
/// [`rules::check_visibility_timeout`] have checked that they are.
fn seconds(d: Duration) -> i32 {
    i32::try_from(d.as_secs()).unwrap_or(i32::MAX)
}

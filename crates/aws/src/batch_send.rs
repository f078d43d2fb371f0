//! One `SendMessageBatch`, its failed entries retried by the [`BatchRetry`]
//! policy: the loop both queue adapters share (FIFO and standard differ
//! only in how an entry is built and what an accepted one is read as).

use crate::batch_retry::BatchRetry;
use crate::error::SqsError;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{SendMessageBatchRequestEntry, SendMessageBatchResultEntry};
use sluice_domain::queue::SendFailure;
use sluice_domain::queue::rules::codes;
use std::collections::HashMap;

/// What became of one entry: SQS's answer for it, or why it is not sent.
pub(crate) type EntryOutcome = Result<SendMessageBatchResultEntry, SendFailure>;

/// Why an entry is still unsent after an attempt: SQS's code and message.
type Retryable = (String, String);

/// Sends `entries`, whose ids must be their indices ("0", "1", …), to the
/// queue at `url`. Returns one outcome per entry, in order; `Err` only when
/// the first attempt failed as a whole (nothing was accepted).
pub(crate) async fn send_with_retry(
    client: &Client,
    url: &str,
    retry: BatchRetry,
    entries: &[SendMessageBatchRequestEntry],
) -> Result<Vec<EntryOutcome>, SqsError> {
    let mut outcomes: Vec<Option<EntryOutcome>> = vec![None; entries.len()];
    // Entry index -> why it is not sent yet (none before the first try).
    let mut pending: HashMap<usize, Option<Retryable>> = (0..entries.len()).map(|i| (i, None)).collect();
    let attempts = retry.attempts.max(1);
    for attempt in 1..=attempts {
        if pending.is_empty() {
            break;
        }
        tokio::time::sleep(retry.backoff(attempt)).await;
        let mut indices: Vec<usize> = pending.keys().copied().collect();
        indices.sort_unstable();
        let request = indices.iter().map(|&i| entries[i].clone()).collect();
        let answer = client.send_message_batch().queue_url(url).set_entries(Some(request)).send().await;
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
            outcomes[i] = Some(Ok(ok.clone()));
        }
        for failed in output.failed() {
            let Some(i) = entry_index(failed.id(), &pending) else { continue };
            let code = failed.code().to_owned();
            let message = failed.message().unwrap_or_default().to_owned();
            if failed.sender_fault() {
                pending.remove(&i);
                outcomes[i] = Some(Err(SendFailure::new(code, message, true)));
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
        outcomes[i] = Some(Err(SendFailure::new(code, message, false)));
    }
    Ok(outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Err(SendFailure::new(codes::CALL_FAILED, "no outcome", false))))
        .collect())
}

/// The index an entry id names, if it is one still pending. Ids SQS made
/// up, or answered twice, are ignored: only an entry we sent and SQS
/// listed can be decided.
fn entry_index(id: &str, pending: &HashMap<usize, Option<Retryable>>) -> Option<usize> {
    id.parse().ok().filter(|i| pending.contains_key(i))
}

//! The SQS event source's side of the functions it feeds (flush-sheet,
//! catch-up): each record handled on its own, the ones that failed
//! reported in `batchItemFailures` (`ReportBatchItemFailures`), so a
//! standard queue returns only those after its visibility timeout.

use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};

/// Runs `handle` on each record's message id and body in turn; a record
/// it answers `Ok(false)` for, and one without a body, is reported failed.
/// An `Err` ends the invocation at once (every record of the batch comes
/// back), for what the whole function must answer, such as a refused
/// credential that `serve_step` retries with its secrets re-read.
pub async fn each_record<E>(
    event: SqsEvent,
    mut handle: impl AsyncFnMut(&str, &str) -> Result<bool, E>,
) -> Result<SqsBatchResponse, E> {
    let mut response = SqsBatchResponse::default();
    for record in event.records {
        let id = record.message_id.unwrap_or_default();
        let done = match record.body.as_deref() {
            Some(body) => handle(&id, body).await?,
            None => false,
        };
        if !done {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            response.batch_item_failures.push(failure);
        }
    }
    Ok(response)
}

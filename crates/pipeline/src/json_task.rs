//! [`call_json`]: a typed step called with JSON and answering JSON, the
//! way both of its callers need it: a step Lambda (the payload
//! `lambda:invoke` sends, the value it returns) and the local interpreter's
//! task handlers. Neither depends on the other: the Lambda adapters turn
//! the [`StepError`] into the runtime's error report, the interpreter into
//! its task error, each under the same name.
//!
//! Input that does not parse as the step's input is
//! `Sluice.InvalidRequest` (no retry can fix it, so the item goes to its
//! Catch at once); a step's own error keeps its kind, the name Retry and
//! Catch match; an output that cannot be serialised is `Sluice.Internal`.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sluice_domain::{ErrorKind, StepError};
use std::future::Future;

/// Parses `input` as the step's input, calls `step` with it and serialises
/// its output.
pub async fn call_json<I, O, F, Fut>(input: Value, step: F) -> Result<Value, StepError>
where
    I: DeserializeOwned,
    O: Serialize,
    F: FnOnce(I) -> Fut,
    Fut: Future<Output = Result<O, StepError>>,
{
    let input = serde_json::from_value::<I>(input)
        .map_err(|e| StepError::new(ErrorKind::InvalidRequest, format!("{}: {e}", short_type_name::<I>())))?;
    let output = step(input).await?;
    serde_json::to_value(output)
        .map_err(|e| StepError::new(ErrorKind::Internal, format!("{}: {e}", short_type_name::<O>())))
}

/// `FetchInput` rather than `sluice_pipeline::step_io::FetchInput`: the
/// cause names the step's input as `step_io` does.
fn short_type_name<T>() -> &'static str {
    let name = std::any::type_name::<T>();
    name.rsplit("::").next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step_io::{TokenInput, TokenOutput};
    use serde_json::json;
    use std::collections::BTreeMap;

    #[tokio::test]
    async fn input_that_is_not_the_steps_input_is_an_invalid_request_naming_it() {
        let mut called = false;
        let err = call_json(json!({"stale_token": null}), |_: TokenInput| {
            called = true;
            async { Ok(TokenOutput { wait_seconds: 0 }) }
        })
        .await
        .unwrap_err();
        assert!(!called, "the step must not run on bad input");
        assert_eq!(err.kind, ErrorKind::InvalidRequest);
        assert_eq!(err.cause, "TokenInput: missing field `item`");
    }

    #[tokio::test]
    async fn a_step_error_keeps_its_kind_and_an_answer_is_json() {
        let input = json!({"n": 2});
        let err = call_json(input.clone(), |_: BTreeMap<String, u32>| async {
            Err::<(), _>(StepError::new(ErrorKind::UpstreamUnavailable, "503 from the mall"))
        })
        .await
        .unwrap_err();
        assert_eq!(err, StepError::new(ErrorKind::UpstreamUnavailable, "503 from the mall"));

        let doubled = call_json(input, |m: BTreeMap<String, u32>| async move {
            Ok(m.into_iter().map(|(k, v)| (k, v * 2)).collect::<BTreeMap<_, _>>())
        })
        .await
        .unwrap();
        assert_eq!(doubled, json!({"n": 4}));
        let err = call_json(json!({}), |_: BTreeMap<String, u32>| async { Ok(BTreeMap::from([((1u8, 2u8), 3u8)])) })
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Internal, "JSON object keys must be strings: {err}");
        // A step without an answer (record_failure) answers null.
        assert_eq!(call_json(json!({}), |_: BTreeMap<String, u32>| async { Ok(()) }).await.unwrap(), Value::Null);
    }
}

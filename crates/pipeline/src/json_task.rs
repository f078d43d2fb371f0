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
//!
//! The step runs inside a `step` span carrying the item's `event_id` (or,
//! for a flush, its `sheet`), so every log line the step writes names what
//! it was working on: the JSON log format prints the span's fields.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sluice_domain::{ErrorKind, StepError};
use std::future::Future;
use tracing::Instrument;

/// Parses `input` as the step's input, calls `step` with it and serialises
/// its output.
pub async fn call_json<I, O, F, Fut>(input: Value, step: F) -> Result<Value, StepError>
where
    I: DeserializeOwned,
    O: Serialize,
    F: FnOnce(I) -> Fut,
    Fut: Future<Output = Result<O, StepError>>,
{
    let span = match (input.pointer("/item/work/event_id"), input.get("sheet")) {
        (Some(Value::String(id)), _) => tracing::info_span!("step", event_id = id.as_str()),
        (_, Some(Value::String(sheet))) => tracing::info_span!("step", sheet = sheet.as_str()),
        _ => tracing::info_span!("step"),
    };
    let input = serde_json::from_value::<I>(input)
        .map_err(|e| StepError::new(ErrorKind::InvalidRequest, format!("{}: {e}", short_type_name::<I>())))?;
    let output = step(input).instrument(span).await?;
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

    /// Log lines, as JSON, written to a buffer.
    #[derive(Clone, Default)]
    struct Lines(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn every_line_a_step_logs_names_its_event() {
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt().json().with_writer(move || writer.clone()).finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let input = json!({"item": {"work": {"kind": "shop", "event_id": "s:acme:1"}}, "n": 1});
        call_json(input, |_: serde_json::Value| async {
            tracing::warn!("the mall answered 503");
            Ok(())
        })
        .await
        .unwrap();
        call_json(json!({"sheet": "gr:c:s:0"}), |_: serde_json::Value| async {
            tracing::info!("appended");
            Ok(())
        })
        .await
        .unwrap();
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        let logged: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(logged.len(), 2, "{text}");
        assert_eq!(logged[0]["span"]["event_id"], "s:acme:1", "{text}");
        assert_eq!(logged[1]["span"]["sheet"], "gr:c:s:0", "{text}");
    }

    #[tokio::test]
    async fn input_that_is_not_the_steps_input_is_an_invalid_request_naming_it() {
        let mut called = false;
        let err = call_json(json!({"stale_token": null}), |_: TokenInput| {
            called = true;
            async { Ok(TokenOutput::ready()) }
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

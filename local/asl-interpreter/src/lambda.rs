//! What Step Functions does around a Lambda function: the
//! `arn:aws:states:::lambda:invoke` result shape, the cause it reports when
//! the function fails, and how function names and ARNs relate.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/connect-lambda.html>.

use crate::task_registry::TaskError;
use serde_json::{Value, json};

/// The optimised Lambda integration.
pub const LAMBDA_INVOKE: &str = "arn:aws:states:::lambda:invoke";

/// The function name in a bare name (`fetch`), a full ARN
/// (`arn:aws:lambda:eu-west-1:123456789012:function:fetch:live`) or a
/// partial ARN (`123456789012:function:fetch`); a qualifier is dropped.
/// `None` for anything else (another service's resource).
pub(crate) fn function_name(text: &str) -> Option<&str> {
    if !text.contains(':') {
        return (!text.is_empty()).then_some(text);
    }
    if text.starts_with("arn:") && !is_function_arn(text) {
        return None;
    }
    let (_, after) = text.split_once(":function:")?;
    after.split(':').next().filter(|name| !name.is_empty())
}

/// Whether a Task `Resource` is a Lambda function ARN (the legacy direct
/// integration, whose result is the function's output as is).
pub(crate) fn is_function_arn(resource: &str) -> bool {
    let mut parts = resource.splitn(7, ':');
    parts.next() == Some("arn")
        && parts.next().is_some()
        && parts.next() == Some("lambda")
        && parts.nth(1).is_some()
        && parts.next() == Some("function")
        && parts.next().is_some_and(|name| !name.is_empty())
}

/// The result of `lambda:invoke`: the Lambda Invoke response with the
/// function's output as `Payload`.
pub(crate) fn invoke_result(payload: Value, request_id: &str) -> Value {
    json!({
        "ExecutedVersion": "$LATEST",
        "Payload": payload,
        "SdkHttpMetadata": {
            "AllHttpHeaders": {
                "Content-Type": ["application/json"],
                "X-Amz-Executed-Version": ["$LATEST"],
                "x-amzn-RequestId": [request_id],
            },
            "HttpHeaders": {
                "Content-Type": "application/json",
                "X-Amz-Executed-Version": "$LATEST",
                "x-amzn-RequestId": request_id,
            },
            "HttpStatusCode": 200,
        },
        "SdkResponseMetadata": {"RequestId": request_id},
        "StatusCode": 200,
    })
}

/// When a function fails, Step Functions reports the function's
/// `errorType` as the error and the whole error document Lambda returned
/// as the cause, a JSON string (the Rust runtime's document has
/// `errorType` and `errorMessage`; see
/// <https://docs.aws.amazon.com/lambda/latest/dg/nodejs-exceptions.html>
/// for the shape).
pub(crate) fn failure_cause(error: &TaskError) -> String {
    // Written by hand to keep Lambda's field order (a `json!` map sorts
    // its keys).
    let quoted = |text: &str| Value::String(text.to_owned()).to_string();
    format!("{{\"errorType\":{},\"errorMessage\":{}}}", quoted(&error.error), quoted(&error.cause))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_arns() {
        assert_eq!(function_name("fetch"), Some("fetch"));
        assert_eq!(function_name("arn:aws:lambda:eu-west-1:123456789012:function:fetch"), Some("fetch"));
        assert_eq!(function_name("arn:aws:lambda:eu-west-1:123456789012:function:fetch:$LATEST"), Some("fetch"));
        assert_eq!(function_name("123456789012:function:fetch"), Some("fetch"));
        assert_eq!(function_name("arn:aws:states:::sqs:sendMessage"), None);
        assert_eq!(function_name(LAMBDA_INVOKE), None);
        assert!(is_function_arn("arn:aws:lambda:us-east-1:123456789012:function:HelloFunction"));
        assert!(!is_function_arn(LAMBDA_INVOKE));
        assert!(!is_function_arn("arn:aws:lambda:us-east-1:123456789012:layer:x"));
    }

    #[test]
    fn a_failure_cause_is_lambdas_error_document() {
        let cause = failure_cause(&TaskError::new("Sluice.LockBusy", "held by another worker"));
        assert_eq!(cause, r#"{"errorType":"Sluice.LockBusy","errorMessage":"held by another worker"}"#);
        let quotes = failure_cause(&TaskError::new("E", "say \"hi\""));
        let document: Value = serde_json::from_str(&quotes).unwrap();
        assert_eq!(document, json!({"errorType": "E", "errorMessage": "say \"hi\""}));
    }
}

//! A local Secrets Manager for the functions' cold starts: the service's
//! JSON protocol (`awsJson1_1`, `X-Amz-Target: secretsmanager.GetSecretValue`)
//! on 127.0.0.1, answering the secrets it holds, by ARN or name, as the
//! service does, and any other with its `ResourceNotFoundException`. Only
//! `GetSecretValue` is served: it is the one call the functions make (their
//! IAM policies allow no other). Signatures are not checked, but a request
//! must carry one, as the SDK always signs.

use crate::bindings::LocalSecret;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The stand-in, serving until its stop token is cancelled.
#[derive(Debug, Clone)]
pub struct SecretsManager {
    pub url: String,
}

impl SecretsManager {
    /// Serves `secrets` on a free port until `stop` is cancelled.
    pub async fn start(secrets: Vec<LocalSecret>, stop: CancellationToken) -> std::io::Result<Self> {
        let app = Router::new().route("/", axum::routing::post(get_secret_value)).with_state(Arc::new(secrets));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned()).await {
                tracing::warn!(error = %e, "the local Secrets Manager stopped");
            }
        });
        Ok(Self { url })
    }
}

fn answer(status: StatusCode, body: Value) -> Response {
    (status, [("content-type", "application/x-amz-json-1.1")], body.to_string()).into_response()
}

/// Every refusal here is a 400, as the service's client errors are.
fn refusal(kind: &str, message: &str) -> Response {
    answer(StatusCode::BAD_REQUEST, json!({"__type": kind, "Message": message}))
}

async fn get_secret_value(State(held): State<Arc<Vec<LocalSecret>>>, headers: HeaderMap, body: Bytes) -> Response {
    let target = headers.get("x-amz-target").and_then(|t| t.to_str().ok()).unwrap_or_default();
    if target != "secretsmanager.GetSecretValue" {
        return refusal("UnknownOperationException", &format!("{target:?} is not served locally"));
    }
    if !headers.contains_key("authorization") {
        return refusal("IncompleteSignatureException", "the request is not signed");
    }
    let id = serde_json::from_slice::<Value>(&body).ok().and_then(|r| r["SecretId"].as_str().map(str::to_owned));
    let Some(id) = id else {
        return refusal("InvalidParameterException", "SecretId is required");
    };
    let name = |s: &LocalSecret| format!("sluice-local/{}", s.logical_id);
    match held.iter().find(|s| s.arn == id || name(s) == id) {
        Some(secret) => answer(
            StatusCode::OK,
            json!({
                "ARN": secret.arn, "Name": name(secret), "SecretString": secret.value.expose(),
                "VersionId": "00000000-0000-0000-0000-000000000001", "VersionStages": ["AWSCURRENT"],
                "CreatedDate": 1_764_000_000.0
            }),
        ),
        None => refusal("ResourceNotFoundException", "Secrets Manager can't find the specified secret."),
    }
}

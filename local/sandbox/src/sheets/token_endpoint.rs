//! `POST /token`: Google's OAuth 2.0 token endpoint, the refresh grant.
//!
//! The form carries `grant_type=refresh_token`, `refresh_token`, and the
//! client's `client_id` and `client_secret` (HTTP Basic credentials are
//! accepted instead, as RFC 6749 allows). Success is
//! `{"access_token","expires_in","scope","token_type":"Bearer"}` with
//! `expires_in` the lifetime in whole seconds, rounded up (so a sub-second
//! test lifetime reads 1). Refusals are RFC 6749 errors (see
//! [`crate::sheets::oauth`]). Token calls are recorded but count against no
//! quota; probabilistic faults leave them alone, queued ones for
//! [`SheetsOp::Token`] do not.

use crate::server::{Answer, Delivery, credentials};
use crate::sheets::answer::BROKEN;
use crate::sheets::faults::QueuedFault;
use crate::sheets::oauth::{OAuthRefusal, SCOPE, TokenRequest};
use crate::sheets::record::{RecordedFault, SheetsCall, SheetsOp};
use crate::sheets::state::Shared;
use axum::Router;
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use base64::Engine;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

pub(crate) fn router() -> Router<Arc<Shared>> {
    Router::new().route("/token", post(token))
}

#[derive(Debug, Default, Deserialize)]
struct TokenForm {
    grant_type: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    refresh_token: Option<String>,
}

async fn token(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    form: Result<Form<TokenForm>, FormRejection>,
) -> Response {
    let answer = {
        let mut guard = shared.lock();
        let now = Instant::now();
        let form = form.map(|Form(f)| f);
        let basic = basic_credentials(&headers);
        let mut request = TokenRequest::default();
        if let Ok(f) = &form {
            request = TokenRequest {
                grant_type: f.grant_type.as_deref(),
                client_id: f.client_id.as_deref(),
                client_secret: f.client_secret.as_deref(),
                refresh_token: f.refresh_token.as_deref(),
            };
        }
        if let Some((id, secret)) = &basic {
            (request.client_id, request.client_secret) = (Some(id.as_str()), Some(secret.as_str()));
        }
        let client_id = request.client_id.map(str::to_owned);
        let mut record = SheetsCall { client_id, ..SheetsCall::new(SheetsOp::Token, shared.since_epoch(now)) };
        let queued = guard.queued.take(SheetsOp::Token);
        let answer = match (queued, &form) {
            (Some(QueuedFault::Status(status)), _) => {
                record.fault = Some(RecordedFault::Status);
                injected(status)
            }
            (_, Err(_)) => Answer::oauth_refusal(&OAuthRefusal::new(
                400,
                "invalid_request",
                "The body must be application/x-www-form-urlencoded",
            )),
            (_, Ok(_)) => match guard.oauth.refresh(&request, now) {
                Err(refusal) => Answer::oauth_refusal(&refusal),
                Ok(issued) => {
                    record.user = Some(issued.caller.user);
                    record.applied = true;
                    let expires_in = issued.expires_in.as_secs_f64().ceil() as u64;
                    let body = json!({"access_token": issued.access_token, "expires_in": expires_in,
                                      "scope": SCOPE, "token_type": "Bearer"});
                    Answer::json(StatusCode::OK, body)
                }
            },
        };
        let answer = match queued {
            Some(QueuedFault::ApplyThenHold(hold)) => {
                record.fault = Some(RecordedFault::ApplyThenHold);
                answer.after(Delivery::Hold(hold))
            }
            Some(QueuedFault::ApplyThenStatus(status)) => {
                record.fault = Some(RecordedFault::ApplyThenStatus);
                injected(status)
            }
            _ => answer,
        };
        record.status = answer.status.as_u16();
        guard.log.push(record);
        answer
    };
    answer.deliver(BROKEN).await
}

/// An injected token endpoint error, in RFC 6749's words.
fn injected(status: u16) -> Answer {
    let refusal = match status {
        400 => OAuthRefusal::new(400, "invalid_grant", "Token has been expired or revoked."),
        401 => OAuthRefusal::new(401, "invalid_client", "Unauthorized"),
        429 | 503 => OAuthRefusal::new(status, "temporarily_unavailable", "Try again later (injected by the sandbox)."),
        500..=599 => OAuthRefusal::new(status, "server_error", "Backend error (injected by the sandbox)."),
        _ => OAuthRefusal::new(status, "invalid_request", "Refused (injected by the sandbox)."),
    };
    Answer::oauth_refusal(&refusal)
}

/// `Authorization: Basic base64(client_id:client_secret)`, if sent.
fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let decoded = base64::engine::general_purpose::STANDARD.decode(credentials(headers, "basic")?).ok()?;
    String::from_utf8(decoded).ok()?.split_once(':').map(|(id, secret)| (id.to_owned(), secret.to_owned()))
}

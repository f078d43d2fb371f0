//! The Cafe24 side of the sandbox: the Admin API reads and the token
//! endpoint, each mall under `/malls/{mall_id}`.
//!
//! An Admin API call goes through, in order (each step can end it):
//! the mall exists (else 404) → the Bearer token is valid for the mall
//! (else 401, not counted in the bucket) → the mall has not withdrawn the
//! app's access (else 403 until tokens are issued again) → no 429 storm
//! injected for the mall (else 429 with `Retry-After`, not counted) → the
//! usage quota is not spent (else 429 with `Remain` headers; counted in
//! the quota, not the bucket) → the bucket takes it (else 429, not
//! counted) → faults (500, a held 504, a connection dropped mid-answer or
//! closed before any, latency) → `Content-Type` is JSON when given (else
//! 400) → the resource (200 `{"product": {…}}` or 404). Every answer for a
//! known mall carries `X-Api-Call-Limit` and the usage headers.

use crate::cafe24::bucket::QuotaReading;
use crate::cafe24::record::{CallRecord, Refusal, TOKEN_PATH};
use crate::cafe24::state::{Inner, Mall, Shared};
use crate::fault::{Fault, FaultDecision, TimeoutMode};
use crate::server::{Answer, Broken, Delivery, credentials};
use axum::Router;
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::{get, post};
use base64::Engine;
use serde::Deserialize;
use serde_json::Value;
use sluice_cafe24::{Cafe24Error, OAuthError, admin_resource_by_path, usage};
use std::sync::Arc;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

pub(crate) fn router() -> Router<Arc<Shared>> {
    Router::new()
        .route("/malls/{mall_id}/api/v2/admin/{resource}/{id}", get(get_resource))
        .route("/malls/{mall_id}/api/v2/oauth/token", post(token))
}

/// How a broken-off Admin API answer starts.
const BROKEN: Broken = (b"{\"resource\":", "application/json");

impl Answer {
    fn error(status: StatusCode, message: &str) -> Self {
        Self::json(status, Cafe24Error::new(status.as_u16().to_string(), message).to_body())
    }

    fn oauth(status: StatusCode, error: &OAuthError) -> Self {
        Self::json(status, serde_json::to_value(error).unwrap_or(Value::Null))
    }
}

/// The answer an injected fault gives, if any.
fn faulted(fault: Option<Fault>, latency: Duration) -> Option<Answer> {
    Some(match fault? {
        Fault::ServerError => Answer::error(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error, unknown error.")
            .after(Delivery::After(latency)),
        Fault::Timeout(TimeoutMode::Hold(hold)) => {
            Answer::error(StatusCode::GATEWAY_TIMEOUT, "The request timed out.").after(Delivery::Hold(hold))
        }
        Fault::Timeout(TimeoutMode::Drop) => Answer::json(StatusCode::OK, Value::Null).after(Delivery::Drop(latency)),
        Fault::Timeout(TimeoutMode::Close) => Answer::json(StatusCode::OK, Value::Null).after(Delivery::Close(latency)),
    })
}

/// Serves one call to `mall_id` and records it. `call` answers it, or
/// finds no such mall (`None`: a 404).
async fn serve_call(
    shared: &Shared,
    mall_id: &str,
    method: &str,
    path: String,
    headers: &HeaderMap,
    call: impl FnOnce(&mut Inner, &mut CallRecord, Instant) -> Option<Answer>,
) -> Response {
    let answer = {
        // The clock is read under the lock, so records are in time order.
        let mut guard = shared.lock();
        let now = Instant::now();
        let api_version = headers.get(sluice_cafe24::API_VERSION_HEADER).and_then(|v| v.to_str().ok());
        let mut rec = CallRecord {
            seq: 0,
            at: shared.since_epoch(now),
            mall_id: mall_id.to_owned(),
            method: method.to_owned(),
            path,
            status: 0,
            bucket_before: 0.0,
            bucket_after: 0.0,
            refused: None,
            fault: None,
            api_version: api_version.map(str::to_owned),
        };
        let answer = call(&mut guard, &mut rec, now)
            .unwrap_or_else(|| Answer::error(StatusCode::NOT_FOUND, "Cannot locate API. (no such mall)"));
        rec.status = answer.status.as_u16();
        guard.log.push(rec);
        answer
    };
    answer.deliver(BROKEN).await
}

async fn get_resource(
    State(shared): State<Arc<Shared>>,
    Path((mall_id, segment, id)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/api/v2/admin/{segment}/{id}");
    serve_call(&shared, &mall_id, "GET", path, &headers, |inner, rec, now| {
        let mall = inner.malls.get_mut(&mall_id)?;
        let answer = admin_call(mall, &mut inner.faults, now, &segment, &id, &headers, rec);
        Some(with_limit_headers(answer, mall, rec.bucket_after, now))
    })
    .await
}

fn admin_call(
    mall: &mut Mall,
    faults: &mut crate::fault::FaultInjector,
    now: Instant,
    segment: &str,
    id: &str,
    headers: &HeaderMap,
    rec: &mut CallRecord,
) -> Answer {
    let level = mall.bucket.level(now);
    (rec.bucket_before, rec.bucket_after) = (level, level);
    if !credentials(headers, "bearer").is_some_and(|token| mall.tokens.access_is_valid(token, now)) {
        return Answer::error(StatusCode::UNAUTHORIZED, "Authority to access is not valid.");
    }
    if mall.forbidden {
        return Answer::error(
            StatusCode::FORBIDDEN,
            "Insufficient scope: the app's access to this mall was withdrawn.",
        );
    }
    if let Some((until, retry_after)) = mall.storm {
        if now < until {
            rec.refused = Some(Refusal::Storm);
            let mut answer = Answer::error(StatusCode::TOO_MANY_REQUESTS, "The API call limit (bucket) was exceeded.");
            answer.headers.push(("retry-after", retry_after.to_string()));
            return answer;
        }
        mall.storm = None;
    }
    if mall.quota.reading(now).blocked() {
        mall.quota.charge_refused(now);
        rec.refused = Some(Refusal::Quota);
        return Answer::error(
            StatusCode::TOO_MANY_REQUESTS,
            "API usage quota exceeded. Retry after X-Cafe24-*-Remain.",
        );
    }
    let take = mall.bucket.try_take(now);
    rec.bucket_after = take.after;
    if !take.admitted {
        rec.refused = Some(Refusal::Bucket);
        return Answer::error(StatusCode::TOO_MANY_REQUESTS, "The API call limit (bucket) was exceeded.");
    }
    let FaultDecision { fault, latency } = faults.decide();
    mall.quota.charge(latency, now);
    rec.fault = fault;
    faulted(fault, latency)
        .unwrap_or_else(|| serve_resource(mall, segment, id, headers).after(Delivery::After(latency)))
}

fn serve_resource(mall: &Mall, segment: &str, id: &str, headers: &HeaderMap) -> Answer {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    if content_type.is_some_and(|ct| !ct.trim_start().starts_with("application/json")) {
        return Answer::error(StatusCode::BAD_REQUEST, "Content-type is not an application/json in the header.");
    }
    let Some(resource) = admin_resource_by_path(segment) else {
        return Answer::error(StatusCode::NOT_FOUND, "Cannot locate API.");
    };
    match mall.store.get(resource.kind, id) {
        Some(body) => Answer::json(StatusCode::OK, serde_json::json!({ resource.response_key: body })),
        None => Answer::error(StatusCode::NOT_FOUND, "No resource found with the requested id."),
    }
}

fn with_limit_headers(mut answer: Answer, mall: &Mall, bucket_level: f64, now: Instant) -> Answer {
    let QuotaReading { call_percent, time_percent, call_remain_secs, time_remain_secs } = mall.quota.reading(now);
    answer.headers.push((usage::API_CALL_LIMIT, mall.bucket.header(bucket_level).to_string()));
    answer.headers.push((usage::CALL_USAGE, format!("{call_percent:.2}")));
    answer.headers.push((usage::TIME_USAGE, format!("{time_percent:.2}")));
    if let Some(secs) = call_remain_secs {
        answer.headers.push((usage::CALL_REMAIN, secs.to_string()));
    }
    if let Some(secs) = time_remain_secs {
        answer.headers.push((usage::TIME_REMAIN, secs.to_string()));
    }
    answer
}

#[derive(Debug, Deserialize)]
struct TokenForm {
    grant_type: Option<String>,
    refresh_token: Option<String>,
}

async fn token(
    State(shared): State<Arc<Shared>>,
    Path(mall_id): Path<String>,
    headers: HeaderMap,
    form: Result<Form<TokenForm>, FormRejection>,
) -> Response {
    serve_call(&shared, &mall_id, "POST", TOKEN_PATH.to_owned(), &headers, |inner, rec, now| {
        let fault = if inner.faults_on_token_endpoint { Some(inner.faults.decide()) } else { None };
        let mall = inner.malls.get_mut(&mall_id)?;
        let level = mall.bucket.level(now);
        (rec.bucket_before, rec.bucket_after) = (level, level);
        rec.fault = fault.and_then(|f| f.fault);
        Some(faulted(rec.fault, Duration::ZERO).unwrap_or_else(|| {
            let client_ok = basic_auth_matches(&headers, &shared.client_id, shared.client_secret.expose());
            exchange(mall, &mall_id, client_ok, form, &shared, &mut inner.token_rng, now)
        }))
    })
    .await
}

fn exchange(
    mall: &mut Mall,
    mall_id: &str,
    client_ok: bool,
    form: Result<Form<TokenForm>, FormRejection>,
    shared: &Shared,
    rng: &mut rand::rngs::StdRng,
    now: Instant,
) -> Answer {
    if !client_ok {
        let e = OAuthError::new("invalid_client", "Client authentication failed (check the Basic credentials)");
        return Answer::oauth(StatusCode::UNAUTHORIZED, &e);
    }
    let Ok(Form(form)) = form else {
        let e = OAuthError::new("invalid_request", "The body must be application/x-www-form-urlencoded");
        return Answer::oauth(StatusCode::BAD_REQUEST, &e);
    };
    if form.grant_type.as_deref() != Some("refresh_token") {
        let e = OAuthError::new("unsupported_grant_type", "The sandbox supports grant_type=refresh_token");
        return Answer::oauth(StatusCode::BAD_REQUEST, &e);
    }
    let Some(refresh_token) = form.refresh_token.filter(|t| !t.is_empty()) else {
        return Answer::oauth(StatusCode::BAD_REQUEST, &OAuthError::new("invalid_request", "refresh_token is missing"));
    };
    match mall.tokens.refresh(&refresh_token, mall_id, &shared.tokens, rng, now) {
        Ok(grant) => Answer::json(StatusCode::OK, serde_json::to_value(grant).unwrap_or(Value::Null)),
        Err(e) => Answer::oauth(StatusCode::BAD_REQUEST, &e),
    }
}

fn basic_auth_matches(headers: &HeaderMap, client_id: &str, client_secret: &str) -> bool {
    let decoded = credentials(headers, "basic").and_then(|c| base64::engine::general_purpose::STANDARD.decode(c).ok());
    // Constant time: a sandbox stands in for the real check, timing included.
    decoded.is_some_and(|d| bool::from(d.ct_eq(format!("{client_id}:{client_secret}").as_bytes())))
}

//! The sandbox's control plane, for the `sluice sandbox cafe24` command and
//! anything else outside the process. JSON in and out; not rate-limited,
//! not recorded.
//!
//! ```text
//! GET    /sandbox/malls                                  malls, bucket levels, refresh counts
//! POST   /sandbox/malls/{mall}                           add a mall (body: optional {capacity, leak_per_sec})
//! PUT    /sandbox/malls/{mall}/bucket                    {capacity, leak_per_sec}
//! POST   /sandbox/malls/{mall}/tokens                    issue tokens (Cafe24's token response)
//! POST   /sandbox/malls/{mall}/tokens/expire             expire the mall's access tokens now
//! POST   /sandbox/malls/{mall}/tokens/revoke             revoke its access and refresh tokens (app removed)
//! POST   /sandbox/malls/{mall}/forbid                    every call 403 until tokens are issued again
//! POST   /sandbox/malls/{mall}/storm                     429 storm: {millis, retry_after_secs?} every call 429
//! POST   /sandbox/malls/{mall}/resources/{kind}          create (body: fields) → change report, webhook sent
//! GET    /sandbox/malls/{mall}/resources/{kind}/{id}     the resource as held
//! PUT    /sandbox/malls/{mall}/resources/{kind}/{id}     update (body: fields) → change report, webhook sent
//! DELETE /sandbox/malls/{mall}/resources/{kind}/{id}     delete → change report, webhook sent
//! GET    /sandbox/calls?after=SEQ                        call records
//! GET    /sandbox/counters                               counters
//! GET    /sandbox/faults, PUT /sandbox/faults            the fault plan (JSON of FaultConfig)
//! ```
//!
//! `{kind}` is `products`, `orders` or `customers`. Errors are
//! `{"error": "…"}` with 400, 404 or 409.

use crate::cafe24::SandboxError;
use crate::cafe24::changes::{self, Edit};
use crate::cafe24::config::BucketConfig;
use crate::cafe24::state::Shared;
use crate::control_plane::{After, Answer, Body, ControlError, Fail, body, ok};
use crate::fault::FaultConfig;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sluice_domain::ResourceKind;
use std::sync::Arc;
use std::time::Instant;

pub(crate) fn router() -> Router<Arc<Shared>> {
    Router::new()
        .route("/sandbox/malls", get(malls))
        .route("/sandbox/malls/{mall}", post(add_mall))
        .route("/sandbox/malls/{mall}/bucket", put(set_bucket))
        .route("/sandbox/malls/{mall}/tokens", post(issue_tokens))
        .route("/sandbox/malls/{mall}/tokens/expire", post(expire_tokens))
        .route("/sandbox/malls/{mall}/tokens/revoke", post(revoke_tokens))
        .route("/sandbox/malls/{mall}/storm", post(storm))
        .route("/sandbox/malls/{mall}/forbid", post(forbid))
        .route("/sandbox/malls/{mall}/resources/{kind}", post(create))
        .route("/sandbox/malls/{mall}/resources/{kind}/{id}", get(read).put(update).delete(delete))
        .route("/sandbox/calls", get(calls))
        .route("/sandbox/counters", get(counters))
        .route("/sandbox/faults", get(faults).put(set_faults))
}

/// Unknown paths, in Cafe24's error shape (the Admin API's answer for a
/// wrong URL).
pub(crate) async fn not_found() -> Response {
    let body = sluice_cafe24::Cafe24Error::new("404", "Cannot locate API.").to_body();
    (StatusCode::NOT_FOUND, Json(body)).into_response()
}

impl ControlError for SandboxError {
    fn status(&self) -> StatusCode {
        match self {
            Self::UnknownMall(_) | Self::UnknownResource { .. } => StatusCode::NOT_FOUND,
            Self::MallExists(_) | Self::AlreadyExists { .. } => StatusCode::CONFLICT,
            Self::InvalidInput(_) => StatusCode::BAD_REQUEST,
            Self::Io(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

fn kind(segment: &str) -> Result<ResourceKind, Fail> {
    match segment {
        "products" => Ok(ResourceKind::Product),
        "orders" => Ok(ResourceKind::Order),
        "customers" => Ok(ResourceKind::Customer),
        other => Err(SandboxError::InvalidInput(format!(
            "resource kind `{other}` is not one of products, orders, customers"
        ))
        .into()),
    }
}

async fn malls(State(shared): State<Arc<Shared>>) -> Response {
    let now = Instant::now();
    let inner = shared.lock();
    let list: Vec<Value> = inner
        .malls
        .iter()
        .map(|(id, mall)| {
            let c = mall.bucket.config();
            json!({"mall_id": id, "capacity": c.capacity, "leak_per_sec": c.leak_per_sec,
                   "level": mall.bucket.level(now), "refreshes": mall.tokens.refreshes()})
        })
        .collect();
    Json(list).into_response()
}

async fn add_mall(State(shared): State<Arc<Shared>>, Path(mall): Path<String>, bucket: Body<BucketConfig>) -> Answer {
    // No body means the default bucket.
    let bucket = match bucket {
        Err(JsonRejection::MissingJsonContentType(_)) => BucketConfig::default(),
        other => body(other)?,
    };
    shared.lock().add_mall(&mall, bucket, Instant::now())?;
    ok(StatusCode::CREATED, json!({"mall_id": mall}))
}

async fn set_bucket(State(shared): State<Arc<Shared>>, Path(mall): Path<String>, b: Body<BucketConfig>) -> Answer {
    let bucket = body(b)?;
    bucket.validate().map_err(SandboxError::InvalidInput)?;
    shared.lock().mall_mut(&mall)?.bucket.reconfigure(bucket, Instant::now());
    ok(StatusCode::OK, bucket)
}

async fn issue_tokens(State(shared): State<Arc<Shared>>, Path(mall): Path<String>) -> Answer {
    let mut guard = shared.lock();
    let inner = &mut *guard;
    let m = inner.malls.get_mut(&mall).ok_or_else(|| SandboxError::UnknownMall(mall.clone()))?;
    // A new grant, as a shop consenting again: a withdrawn access ends.
    m.forbidden = false;
    ok(StatusCode::OK, m.tokens.issue(&mall, &shared.tokens, &mut inner.token_rng, Instant::now()))
}

async fn expire_tokens(State(shared): State<Arc<Shared>>, Path(mall): Path<String>) -> Answer {
    shared.lock().mall_mut(&mall)?.tokens.expire_access();
    ok(StatusCode::OK, json!({"mall_id": mall, "access_tokens": "expired"}))
}

async fn revoke_tokens(State(shared): State<Arc<Shared>>, Path(mall): Path<String>) -> Answer {
    shared.lock().mall_mut(&mall)?.tokens.revoke();
    ok(StatusCode::OK, json!({"mall_id": mall, "tokens": "revoked"}))
}

async fn forbid(State(shared): State<Arc<Shared>>, Path(mall): Path<String>) -> Answer {
    shared.lock().mall_mut(&mall)?.forbidden = true;
    ok(StatusCode::OK, json!({"mall_id": mall, "admin_api": "forbidden until tokens are issued again"}))
}

#[derive(Debug, Deserialize)]
struct Storm {
    millis: u64,
    /// One second when not given.
    retry_after_secs: Option<u64>,
}

async fn storm(State(shared): State<Arc<Shared>>, Path(mall): Path<String>, storm: Body<Storm>) -> Answer {
    let Storm { millis, retry_after_secs } = body(storm)?;
    let retry_after_secs = retry_after_secs.unwrap_or(1);
    let until = Instant::now() + std::time::Duration::from_millis(millis);
    shared.lock().mall_mut(&mall)?.storm = Some((until, retry_after_secs));
    ok(StatusCode::OK, json!({"mall_id": mall, "storm_ms": millis, "retry_after_secs": retry_after_secs}))
}

async fn create(
    State(shared): State<Arc<Shared>>,
    Path((mall, k)): Path<(String, String)>,
    fields: Body<Map<String, Value>>,
) -> Answer {
    let (kind, fields) = (kind(&k)?, body(fields)?);
    ok(StatusCode::CREATED, changes::apply(&shared, &mall, kind, Edit::Create(fields)).await?)
}

async fn read(State(shared): State<Arc<Shared>>, Path((mall, k, id)): Path<(String, String, String)>) -> Answer {
    let kind = kind(&k)?;
    let held = shared.lock().mall(&mall)?.store.resource(kind, &id);
    ok(StatusCode::OK, held.ok_or(SandboxError::UnknownResource { kind, id })?)
}

async fn update(
    State(shared): State<Arc<Shared>>,
    Path((mall, k, id)): Path<(String, String, String)>,
    fields: Body<Map<String, Value>>,
) -> Answer {
    let (kind, fields) = (kind(&k)?, body(fields)?);
    ok(StatusCode::OK, changes::apply(&shared, &mall, kind, Edit::Update(id, fields)).await?)
}

async fn delete(State(shared): State<Arc<Shared>>, Path((mall, k, id)): Path<(String, String, String)>) -> Answer {
    let kind = kind(&k)?;
    ok(StatusCode::OK, changes::apply(&shared, &mall, kind, Edit::Delete(id)).await?)
}

async fn calls(State(shared): State<Arc<Shared>>, Query(q): Query<After>) -> Response {
    Json(shared.lock().log.since(q.after)).into_response()
}

async fn counters(State(shared): State<Arc<Shared>>) -> Response {
    Json(shared.lock().log.counters.clone()).into_response()
}

async fn faults(State(shared): State<Arc<Shared>>) -> Response {
    Json(*shared.lock().faults.config()).into_response()
}

async fn set_faults(State(shared): State<Arc<Shared>>, config: Body<FaultConfig>) -> Answer {
    let config = body(config)?;
    shared.lock().faults.set(config).map_err(SandboxError::InvalidInput)?;
    ok(StatusCode::OK, config)
}

//! The Sheets sandbox's control plane, for the `sluice sandbox sheets`
//! command and anything else outside the process. JSON in and out; not
//! rate-limited, not recorded.
//!
//! ```text
//! GET    /sandbox/sheets/calls?after=SEQ                          call records (SheetsCall)
//! POST   /sandbox/sheets/clients        {client_id, client_secret} add an OAuth client (a project)
//! POST   /sandbox/sheets/users          {client_id, user}         → {refresh_token}
//! POST   /sandbox/sheets/users/{user}/expire                      expire the user's access tokens now
//! POST   /sandbox/sheets/users/{user}/revoke                      revoke the user's refresh tokens
//! GET    /sandbox/sheets/spreadsheets                             spreadsheets, sheets, rows held
//! POST   /sandbox/sheets/spreadsheets   {spreadsheet_id, sheets:[{gid, title}]}  create (or replace)
//! POST   /sandbox/sheets/spreadsheets/{id}/deny   {user}          the user gets 403 from now on
//! GET    /sandbox/sheets/spreadsheets/{id}/sheets/{gid}/values    → {values} as held (typed, null = empty, {"formula"} a formula)
//! DELETE /sandbox/sheets/spreadsheets/{id}/sheets/{gid}           delete a sheet
//! POST   /sandbox/sheets/spreadsheets/{id}/sheets/{gid}/rows/delete {start, end}            a person deletes rows
//! POST   /sandbox/sheets/spreadsheets/{id}/sheets/{gid}/rows/insert {start, end}            a person inserts blank rows
//! POST   /sandbox/sheets/spreadsheets/{id}/sheets/{gid}/rows/sort   {start, end, column, descending?}  a person sorts rows
//! GET    /sandbox/sheets/faults, POST /sandbox/sheets/faults      queued faults; queue one (SheetsFault JSON)
//! GET    /sandbox/sheets/late                                     {arrived, applied}: writes held by applied_late
//! POST   /sandbox/sheets/late/release                             apply the held ones now → {released}
//! GET    /sandbox/sheets/plan, PUT /sandbox/sheets/plan           the probabilistic plan (JSON of FaultConfig)
//! ```
//!
//! Rows are 0-based, `end` exclusive, `column` 0 for `A`; the row edits act
//! as a person in the sheet (no quota, not recorded), as the handle's
//! `delete_rows`, `insert_rows`, `sort_rows` do.
//!
//! Errors are `{"error": "…"}` with 400 or 404.

use crate::control_plane::{After, Answer, Body, ControlError, body, ok};
use crate::fault::FaultConfig;
use crate::sheets::SandboxError;
use crate::sheets::faults::SheetsFault;
use crate::sheets::state::Shared;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

pub(crate) fn router() -> Router<Arc<Shared>> {
    Router::new()
        .route("/sandbox/sheets/calls", get(calls))
        .route("/sandbox/sheets/clients", post(add_client))
        .route("/sandbox/sheets/users", post(add_user))
        .route("/sandbox/sheets/users/{user}/expire", post(expire))
        .route("/sandbox/sheets/users/{user}/revoke", post(revoke))
        .route("/sandbox/sheets/spreadsheets", get(spreadsheets).post(create_spreadsheet))
        .route("/sandbox/sheets/spreadsheets/{id}/deny", post(deny))
        .route("/sandbox/sheets/spreadsheets/{id}/sheets/{gid}/values", get(values))
        .route("/sandbox/sheets/spreadsheets/{id}/sheets/{gid}", delete(delete_sheet))
        .route("/sandbox/sheets/spreadsheets/{id}/sheets/{gid}/rows/{edit}", post(edit_rows))
        .route("/sandbox/sheets/faults", get(faults).post(inject))
        .route("/sandbox/sheets/late", get(late))
        .route("/sandbox/sheets/late/release", post(release_late))
        .route("/sandbox/sheets/plan", get(plan).put(set_plan))
}

impl ControlError for SandboxError {
    fn status(&self) -> StatusCode {
        match self {
            Self::UnknownSpreadsheet(_) | Self::UnknownSheet { .. } => StatusCode::NOT_FOUND,
            Self::InvalidInput(_) => StatusCode::BAD_REQUEST,
            Self::Io(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

async fn calls(State(shared): State<Arc<Shared>>, Query(q): Query<After>) -> Response {
    Json(shared.lock().log.since(q.after)).into_response()
}

#[derive(Debug, Deserialize)]
struct NewClient {
    client_id: String,
    client_secret: String,
}

async fn add_client(State(shared): State<Arc<Shared>>, new: Body<NewClient>) -> Answer {
    let new = body(new)?;
    if new.client_id.is_empty() || new.client_secret.is_empty() {
        return Err(SandboxError::InvalidInput("client_id and client_secret must not be empty".into()).into());
    }
    shared.lock().oauth.add_client(&new.client_id, &new.client_secret);
    ok(StatusCode::CREATED, json!({"client_id": new.client_id}))
}

#[derive(Debug, Deserialize)]
struct NewUser {
    client_id: String,
    user: String,
}

async fn add_user(State(shared): State<Arc<Shared>>, new: Body<NewUser>) -> Answer {
    let new = body(new)?;
    if new.user.is_empty() {
        return Err(SandboxError::InvalidInput("user must not be empty".into()).into());
    }
    let refresh_token = shared.lock().oauth.issue_refresh(&new.client_id, &new.user);
    ok(StatusCode::CREATED, json!({"client_id": new.client_id, "user": new.user, "refresh_token": refresh_token}))
}

async fn expire(State(shared): State<Arc<Shared>>, Path(user): Path<String>) -> Answer {
    shared.lock().oauth.expire_access(&user, Instant::now());
    ok(StatusCode::OK, json!({"user": user, "access_tokens": "expired"}))
}

async fn revoke(State(shared): State<Arc<Shared>>, Path(user): Path<String>) -> Answer {
    shared.lock().oauth.revoke_refresh(&user, Instant::now());
    ok(StatusCode::OK, json!({"user": user, "refresh_tokens": "revoked"}))
}

async fn spreadsheets(State(shared): State<Arc<Shared>>) -> Response {
    let inner = shared.lock();
    let list: Vec<Value> = inner
        .spreadsheets
        .iter()
        .map(|(id, s)| {
            let sheets: Vec<Value> =
                s.sheets.iter().map(|sh| json!({"gid": sh.gid, "title": sh.title, "rows": sh.filled_rows()})).collect();
            json!({"spreadsheet_id": id, "sheets": sheets, "denied": s.denied})
        })
        .collect();
    Json(list).into_response()
}

#[derive(Debug, Deserialize)]
struct NewSheet {
    gid: u64,
    title: String,
}

#[derive(Debug, Deserialize)]
struct NewSpreadsheet {
    spreadsheet_id: String,
    sheets: Vec<NewSheet>,
}

async fn create_spreadsheet(State(shared): State<Arc<Shared>>, new: Body<NewSpreadsheet>) -> Answer {
    let new = body(new)?;
    let sheets: Vec<(u64, &str)> = new.sheets.iter().map(|s| (s.gid, s.title.as_str())).collect();
    shared.lock().create_spreadsheet(&new.spreadsheet_id, &sheets)?;
    ok(StatusCode::CREATED, json!({"spreadsheet_id": new.spreadsheet_id}))
}

#[derive(Debug, Deserialize)]
struct Deny {
    user: String,
}

async fn deny(State(shared): State<Arc<Shared>>, Path(id): Path<String>, who: Body<Deny>) -> Answer {
    let who = body(who)?;
    shared.lock().spreadsheet_mut(&id)?.denied.insert(who.user.clone());
    ok(StatusCode::OK, json!({"spreadsheet_id": id, "denied": who.user}))
}

async fn values(State(shared): State<Arc<Shared>>, Path((id, gid)): Path<(String, u64)>) -> Answer {
    let values = shared.lock().sheet_values(&id, gid);
    let values = values.ok_or(SandboxError::UnknownSheet { spreadsheet_id: id, gid })?;
    ok(StatusCode::OK, json!({ "values": values }))
}

async fn delete_sheet(State(shared): State<Arc<Shared>>, Path((id, gid)): Path<(String, u64)>) -> Answer {
    shared.lock().delete_sheet(&id, gid)?;
    ok(StatusCode::OK, json!({"spreadsheet_id": id, "deleted_gid": gid}))
}

#[derive(Debug, Deserialize)]
struct RowEdit {
    start: u32,
    end: u32,
    /// For a sort: the column (0 is `A`) and the direction.
    column: Option<u32>,
    #[serde(default)]
    descending: bool,
}

async fn edit_rows(
    State(shared): State<Arc<Shared>>,
    Path((id, gid, edit)): Path<(String, u64, String)>,
    rows: Body<RowEdit>,
) -> Answer {
    let rows = body(rows)?;
    let mut inner = shared.lock();
    match (edit.as_str(), rows.column) {
        ("delete", _) => inner.delete_rows(&id, gid, rows.start..rows.end)?,
        ("insert", _) => inner.insert_rows(&id, gid, rows.start..rows.end)?,
        ("sort", Some(column)) => inner.sort_rows(&id, gid, rows.start..rows.end, column, rows.descending)?,
        ("sort", None) => return Err(SandboxError::InvalidInput("a sort needs a column".into()).into()),
        _ => {
            return Err(
                SandboxError::InvalidInput(format!("rows can be deleted, inserted or sorted, not `{edit}`")).into()
            );
        }
    }
    ok(StatusCode::OK, json!({"spreadsheet_id": id, "gid": gid, edit: {"start": rows.start, "end": rows.end}}))
}

async fn late(State(shared): State<Arc<Shared>>) -> Response {
    Json(shared.lock().late.counts()).into_response()
}

async fn release_late(State(shared): State<Arc<Shared>>) -> Answer {
    let released = shared.lock().apply_late(None);
    ok(StatusCode::OK, json!({ "released": released }))
}

async fn faults(State(shared): State<Arc<Shared>>) -> Response {
    Json(shared.lock().queued.pending()).into_response()
}

async fn inject(State(shared): State<Arc<Shared>>, fault: Body<SheetsFault>) -> Answer {
    let fault = body(fault)?;
    fault.validate().map_err(SandboxError::InvalidInput)?;
    let mut inner = shared.lock();
    inner.queued.push(fault);
    ok(StatusCode::OK, inner.queued.pending())
}

async fn plan(State(shared): State<Arc<Shared>>) -> Response {
    Json(*shared.lock().faults.config()).into_response()
}

/// Replaces the plan (and restarts its RNG from the plan's seed), so a
/// test can switch seeded faults on after its setup ran clean.
async fn set_plan(State(shared): State<Arc<Shared>>, config: Body<FaultConfig>) -> Answer {
    let config = body(config)?;
    shared.lock().faults.set(config).map_err(SandboxError::InvalidInput)?;
    ok(StatusCode::OK, config)
}

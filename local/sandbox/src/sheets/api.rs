//! The Sheets API v4 at Google's paths:
//!
//! ```text
//! GET  /v4/spreadsheets/{id}                          spreadsheets.get (a read)
//! POST /v4/spreadsheets/{id}:batchUpdate              spreadsheets.batchUpdate (a write; see batch_update)
//! GET  /v4/spreadsheets/{id}/values/{range}           values.get (a read)
//! PUT  /v4/spreadsheets/{id}/values/{range}           values.update (a write)
//! POST /v4/spreadsheets/{id}/values/{range}:append    values.append (a write)
//! ```
//!
//! `{range}` is one percent-encoded path segment. A call goes through, in
//! order (each step can end it): the Bearer token (else 401, not counted)
//! → the quotas (else 429, not counted) → from here the call counts → a
//! queued or probabilistic fault → the spreadsheet exists (else 404) → the
//! user may use it (else 403) → the request is valid (else 400) → the
//! operation. Then an `ApplyThen…` fault may hold or replace the answer,
//! and the configured latency delays it. An `AppliedLate` fault instead
//! holds the operation itself, to run later (see `late`).

use crate::fault::{Fault, FaultDecision, TimeoutMode};
use crate::server::{Answer, Delivery, credentials};
use crate::sheets::a1;
use crate::sheets::answer::BROKEN;
use crate::sheets::batch_update;
use crate::sheets::cells::{InputOption, RenderOption};
use crate::sheets::faults::QueuedFault;
use crate::sheets::grid::{BadRequest, Major, Spreadsheet, Written, columns_to_rows};
use crate::sheets::late::Held;
use crate::sheets::quota::RequestKind;
use crate::sheets::record::{RecordedFault, SheetsCall, SheetsOp};
use crate::sheets::state::{Inner, Shared};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

type Params = Result<Query<HashMap<String, String>>, QueryRejection>;

pub(crate) fn router() -> Router<Arc<Shared>> {
    Router::new()
        .route("/v4/spreadsheets/{spreadsheet_id}", get(spreadsheet_get).post(batch_update::batch_update))
        .route(
            "/v4/spreadsheets/{spreadsheet_id}/values/{range}",
            get(values_get).put(values_update).post(values_append),
        )
}

/// Unknown paths and methods, in Google's error shape.
pub(crate) async fn not_found() -> Response {
    Answer::google(StatusCode::NOT_FOUND, "Method not found.").deliver(BROKEN).await
}

/// The 404 for a spreadsheet that does not exist (or no longer does).
pub(crate) fn no_spreadsheet() -> Answer {
    Answer::google(StatusCode::NOT_FOUND, "Requested entity was not found.")
}

/// What an operation did, for its answer and its record.
#[derive(Debug)]
pub(crate) struct Done {
    pub(crate) answer: Answer,
    pub(crate) rows: usize,
    pub(crate) applied: bool,
}

impl Done {
    pub(crate) fn ok(body: Value, rows: usize) -> Self {
        Self { answer: Answer::json(StatusCode::OK, body), rows, applied: true }
    }

    pub(crate) fn refused(answer: Answer) -> Self {
        Self { answer, rows: 0, applied: false }
    }

    /// An operation's answer and the rows it touched, or its 400.
    pub(crate) fn of(outcome: Result<(Value, usize), BadRequest>) -> Self {
        let bad = |e: BadRequest| Self::refused(Answer::google(StatusCode::BAD_REQUEST, &e.0));
        outcome.map_or_else(bad, |(body, rows)| Self::ok(body, rows))
    }
}

/// What a call does to its spreadsheet. It owns what it needs (the
/// request's body and parameters) because an `AppliedLate` fault runs it
/// after the request's own task may be gone.
pub(crate) type Operation = Box<dyn FnOnce(&mut Spreadsheet) -> Done + Send>;

/// What a call gets: an answer, or, held by an `AppliedLate` fault, an
/// answer to come once its operation has run.
#[derive(Debug)]
pub(crate) enum Served {
    Now(Answer),
    Late(Held),
}

impl Served {
    pub(crate) async fn deliver(self) -> Response {
        match self {
            Self::Now(answer) => answer.deliver(BROKEN).await,
            Self::Late(held) => held.deliver().await,
        }
    }
}

/// How far `gate_and_run` got.
enum Gated {
    Now(Answer),
    /// Past every check, the operation held for later.
    Late {
        hold: Duration,
        apply_after: Option<Duration>,
        operation: Operation,
    },
}

/// Serves one call: the gate, the faults, the operation, the record.
pub(crate) fn serve(
    shared: &Arc<Shared>,
    op: SheetsOp,
    headers: &HeaderMap,
    spreadsheet_id: String,
    range: Option<String>,
    operation: Operation,
) -> Served {
    let mut guard = shared.lock();
    let now = Instant::now();
    let at = shared.since_epoch(now);
    let mut record = SheetsCall { spreadsheet_id: Some(spreadsheet_id.clone()), range, ..SheetsCall::new(op, at) };
    let gated = gate_and_run(&mut guard, shared.project_number, headers, now, &mut record, &spreadsheet_id, operation);
    match gated {
        Gated::Now(answer) => {
            record.status = answer.status.as_u16();
            guard.log.push(record);
            Served::Now(answer)
        }
        Gated::Late { hold, apply_after, operation } => {
            // Recorded now, when it counted; its outcome is filled in when
            // it is applied.
            let seq = guard.log.push(record);
            Served::Late(guard.late.hold(shared, seq, spreadsheet_id, operation, hold, apply_after))
        }
    }
}

/// `record.op` is the call's operation.
fn gate_and_run(
    inner: &mut Inner,
    project_number: u64,
    headers: &HeaderMap,
    now: Instant,
    record: &mut SheetsCall,
    spreadsheet_id: &str,
    operation: Operation,
) -> Gated {
    let caller = match inner.oauth.authenticate(credentials(headers, "bearer"), now) {
        Ok(caller) => caller,
        Err(failure) => return Gated::Now(Answer::unauthenticated(failure)),
    };
    (record.user, record.client_id) = (Some(caller.user.clone()), Some(caller.client_id.clone()));
    let op = record.op;
    let kind = if op.is_write() { RequestKind::Write } else { RequestKind::Read };
    if let Err(exceeded) = inner.quotas.admit(kind, &caller.client_id, &caller.user, now) {
        return Gated::Now(Answer::quota(exceeded, project_number));
    }
    record.counted = true;
    let FaultDecision { fault, latency } = inner.faults.decide();
    let queued = inner.queued.take(op);
    let quota = inner.quotas.per_user(kind);
    let injected = move |status| Answer::injected(status, quota, project_number).after(Delivery::After(latency));
    match (queued, fault) {
        (Some(QueuedFault::Status(status)), _) => {
            record.fault = Some(RecordedFault::Status);
            return Gated::Now(injected(status));
        }
        (Some(_), _) | (None, None) => {}
        (None, Some(Fault::ServerError)) => {
            record.fault = Some(RecordedFault::ServerError);
            let error = Answer::google(StatusCode::INTERNAL_SERVER_ERROR, "Internal error encountered.");
            return Gated::Now(error.after(Delivery::After(latency)));
        }
        (None, Some(Fault::Timeout(mode))) => {
            record.fault = Some(RecordedFault::Timeout(mode));
            return Gated::Now(match mode {
                TimeoutMode::Hold(hold) => {
                    Answer::google(StatusCode::GATEWAY_TIMEOUT, "Deadline exceeded.").after(Delivery::Hold(hold))
                }
                TimeoutMode::Drop => Answer::json(StatusCode::OK, Value::Null).after(Delivery::Drop(latency)),
                TimeoutMode::Close => Answer::json(StatusCode::OK, Value::Null).after(Delivery::Close(latency)),
            });
        }
    }
    let spreadsheet = match inner.spreadsheets.get_mut(spreadsheet_id) {
        None => Err(no_spreadsheet()),
        Some(s) if s.denied.contains(&caller.user) => {
            Err(Answer::google(StatusCode::FORBIDDEN, "The caller does not have permission"))
        }
        Some(s) => Ok(s),
    };
    let done = match (spreadsheet, queued) {
        (Ok(_), Some(QueuedFault::AppliedLate { hold, apply_after })) => {
            record.fault = Some(RecordedFault::AppliedLate);
            return Gated::Late { hold, apply_after, operation };
        }
        (Ok(spreadsheet), _) => operation(spreadsheet),
        (Err(refusal), _) => Done::refused(refusal),
    };
    (record.rows, record.applied) = (done.rows, done.applied);
    Gated::Now(match queued {
        Some(QueuedFault::ApplyThenHold(hold)) => {
            record.fault = Some(RecordedFault::ApplyThenHold);
            done.answer.after(Delivery::Hold(hold))
        }
        // Refused on arrival (404, 403): there is nothing to apply later,
        // so the refusal is what is held.
        Some(QueuedFault::AppliedLate { hold, .. }) => {
            record.fault = Some(RecordedFault::AppliedLate);
            done.answer.after(Delivery::Hold(hold))
        }
        Some(QueuedFault::ApplyThenStatus(status)) => {
            record.fault = Some(RecordedFault::ApplyThenStatus);
            injected(status)
        }
        _ => done.answer.after(Delivery::After(latency)),
    })
}

fn param(params: &Params, name: &str) -> Option<String> {
    params.as_ref().ok().and_then(|Query(p)| p.get(name).cloned())
}

async fn spreadsheet_get(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    params: Params,
    headers: HeaderMap,
) -> Response {
    // With a field mask (sluice asks for `sheets.properties`) only the
    // sheets come back, besides the id.
    let masked = param(&params, "fields").is_some();
    let answer_id = id.clone();
    let get =
        Box::new(move |spreadsheet: &mut Spreadsheet| Done::ok(spreadsheet_json(&answer_id, spreadsheet, masked), 0));
    serve(&shared, SheetsOp::SpreadsheetGet, &headers, id, None, get).deliver().await
}

/// `spreadsheets.get`'s answer (also batchUpdate's `updatedSpreadsheet`).
pub(crate) fn spreadsheet_json(id: &str, spreadsheet: &Spreadsheet, masked: bool) -> Value {
    let mut body = json!({"spreadsheetId": id, "sheets": spreadsheet.sheet_properties()});
    if !masked {
        body["properties"] = json!({"title": id, "locale": "en_US", "timeZone": "Etc/GMT"});
        body["spreadsheetUrl"] = json!(format!("https://docs.google.com/spreadsheets/d/{id}/edit"));
    }
    body
}

async fn values_get(
    State(shared): State<Arc<Shared>>,
    Path((id, range)): Path<(String, String)>,
    params: Params,
    headers: HeaderMap,
) -> Response {
    let (major, render) = (param(&params, "majorDimension"), param(&params, "valueRenderOption"));
    let record_range = range.clone();
    let get = Box::new(move |spreadsheet: &mut Spreadsheet| {
        Done::of(Major::parse(major.as_deref()).and_then(|major| {
            let render = RenderOption::parse(render.as_deref()).map_err(BadRequest)?;
            let read = spreadsheet.get(&range, major, render)?;
            let rows = read.values.len();
            let mut body = json!({"range": read.range, "majorDimension": major.name()});
            if rows > 0 {
                body["values"] = Value::from(read.values);
            }
            Ok((body, rows))
        }))
    });
    serve(&shared, SheetsOp::ValuesGet, &headers, id, Some(record_range), get).deliver().await
}

/// A request's `ValueRange`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ValueRangeBody {
    range: Option<String>,
    major_dimension: Option<String>,
    #[serde(default)]
    values: Vec<Vec<Value>>,
}

/// The body's rows (row-major), after checking its range and dimension.
fn rows_of(body: &Bytes, path_range: &str) -> Result<Vec<Vec<Value>>, BadRequest> {
    let body: ValueRangeBody =
        serde_json::from_slice(body).map_err(|e| BadRequest(format!("Invalid JSON payload received. {e}")))?;
    // The body may repeat the range; it must name the same cells.
    if let Some(range) = body.range.as_deref() {
        let same = a1::parse(range).is_some_and(|r| Some(r) == a1::parse(path_range));
        if !same {
            return Err(BadRequest(format!(
                "Requested range [{path_range}] does not match the range in the request body [{range}]"
            )));
        }
    }
    Ok(match Major::parse(body.major_dimension.as_deref())? {
        Major::Rows => body.values,
        Major::Columns => columns_to_rows(&body.values),
    })
}

fn written_json(id: &str, written: &Written) -> Value {
    match &written.range {
        Some(range) => json!({"spreadsheetId": id, "updatedRange": range, "updatedRows": written.rows,
                              "updatedColumns": written.columns, "updatedCells": written.cells}),
        None => json!({"spreadsheetId": id}),
    }
}

async fn values_append(
    State(shared): State<Arc<Shared>>,
    Path((id, segment)): Path<(String, String)>,
    params: Params,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // `{range}:append` is one segment; other custom methods (`:clear`, …)
    // are not served.
    let Some(range) = segment.strip_suffix(":append").map(str::to_owned) else { return not_found().await };
    let (input, insert) = (param(&params, "valueInputOption"), param(&params, "insertDataOption"));
    let (answer_id, record_range) = (id.clone(), range.clone());
    let append = Box::new(move |spreadsheet: &mut Spreadsheet| {
        let appended = (|| {
            let option = InputOption::parse(input.as_deref()).map_err(BadRequest)?;
            let insert_rows = match insert.as_deref() {
                None | Some("OVERWRITE") => false,
                Some("INSERT_ROWS") => true,
                Some(other) => return Err(BadRequest(format!("Invalid value at 'insert_data_option' ({other})"))),
            };
            let rows = rows_of(&body, &range)?;
            spreadsheet.append(&range, &rows, option, insert_rows)
        })();
        Done::of(appended.map(|(table_range, written)| {
            let id = answer_id;
            let mut answer = json!({"spreadsheetId": id, "updates": written_json(&id, &written)});
            if let Some(table_range) = table_range {
                answer["tableRange"] = json!(table_range);
            }
            (answer, written.rows)
        }))
    });
    serve(&shared, SheetsOp::ValuesAppend, &headers, id, Some(record_range), append).deliver().await
}

async fn values_update(
    State(shared): State<Arc<Shared>>,
    Path((id, range)): Path<(String, String)>,
    params: Params,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let input = param(&params, "valueInputOption");
    let (answer_id, record_range) = (id.clone(), range.clone());
    let update = Box::new(move |spreadsheet: &mut Spreadsheet| {
        let updated = InputOption::parse(input.as_deref())
            .map_err(BadRequest)
            .and_then(|option| spreadsheet.update(&range, &rows_of(&body, &range)?, option));
        Done::of(updated.map(|written| (written_json(&answer_id, &written), written.rows)))
    });
    serve(&shared, SheetsOp::ValuesUpdate, &headers, id, Some(record_range), update).deliver().await
}

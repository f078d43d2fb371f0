//! `sluice trace EVENT_ID`: where an event is and what happened to it,
//! from received to stored (or dead-lettered), following it into the fetch
//! it was coalesced into. Event ids are what ingest answered (`event_ids`). A
//! sheet row is traced by its event id (`r:…`, what ingest answered) or
//! by its row id and credential (`sluice trace ROW_ID --credential C`:
//! each credential's rows have their own logs): its transaction log (INIT
//! → ENQUEUED → BUFFERED → COMPLETED; INIT → OVERFLOW → BUFFERED →
//! COMPLETED for a row flow control held back; or VALIDATION_FAILED /
//! FAILED / PARKED / DUPLICATED with the reason).
//!
//! Once the Redis trace has expired, a shop event is looked up in the
//! event log the drain keeps in PostgreSQL (`sluice.events`): in
//! `SLUICE_DATABASE_URL`, else in the database `sluice dev` drains into by
//! default (see `database_target`).

use crate::database_target::DatabaseTarget;
use crate::redis_target::StateRedis;
use sluice_redis::{TraceEntry, Traces};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The event id (from ingest's answer, or a stored snapshot's
    /// event_ids), or a sheet row's row id with `--credential`.
    event_id: String,
    /// The credential whose row EVENT_ID is (a row id names a row only
    /// within its credential).
    #[arg(long)]
    credential: Option<String>,
    /// Print the entries as JSON lines.
    #[arg(long)]
    json: bool,
}

/// How deep to follow "coalesced into" links (each hop is a pending fetch
/// the event joined; more than a few means a loop).
const MAX_HOPS: usize = 5;

pub(crate) async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let redis = StateRedis::locate("sluice")?;
    let traces = Traces::new(redis.connection().await?, redis.keyspace.clone(), Default::default());
    let mut event = match (&args.credential, row_of_event(&args.event_id)) {
        (Some(credential), _) => sluice_domain::row_trace_id(credential, &args.event_id),
        // A row's event id names the row's transaction log.
        (None, Some((credential, row_id))) => sluice_domain::row_trace_id(&credential, &row_id),
        (None, None) => args.event_id.clone(),
    };
    for hop in 0..MAX_HOPS {
        let trace = traces.read(&event).await?;
        if trace.is_empty() {
            if hop == 0 {
                if args.credential.is_none() && row_of_event(&event).is_none() && !event.starts_with("s:") {
                    println!("(a sheet row's log is its credential's: `sluice trace ROW_ID --credential CREDENTIAL`)");
                }
                return from_event_log(&event).await;
            }
            println!("no trace for {event} (the fetch it joined)");
            break;
        }
        if hop > 0 {
            println!("\n{} was coalesced into {event}:", args.event_id);
        }
        print_trace(&event, &trace, args.json);
        let done = trace.iter().any(|e| matches!(e.stage.as_str(), "stored" | "written" | "superseded"));
        match trace.iter().rev().find(|e| e.stage == "coalesced").and_then(|e| e.detail["into"].as_str()) {
            Some(into) if into != event && !done => event = into.to_owned(),
            _ => break,
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The credential and row id a sheet row's event id (`r:cred:doc:gid:sub:row`) names.
fn row_of_event(event_id: &str) -> Option<(String, String)> {
    match sluice_domain::sqs_token::decode(event_id)? {
        (kind, parts) if kind == "r" && parts.len() == 5 => Some((parts[0].clone(), parts[4].clone())),
        _ => None,
    }
}

/// After the Redis trace expired: what the drain recorded in PostgreSQL
/// (`SLUICE_DATABASE_URL`, else `sluice dev`'s default database).
async fn from_event_log(event: &str) -> anyhow::Result<ExitCode> {
    let retention = "unknown, or older than the trace retention (7 days by default)";
    let pool = match crate::database_target::for_operator("sluice trace").await? {
        DatabaseTarget::Found(database) => database.pool,
        DatabaseTarget::Absent(why) => {
            println!(
                "no trace for {event}: {retention}; PostgreSQL not searched: {why} (SLUICE_DATABASE_URL names one)"
            );
            return Ok(ExitCode::FAILURE);
        }
    };
    let outcomes = sluice_sink::outcomes(&pool, event).await?;
    let Some(last) = outcomes.last() else {
        println!("no trace for {event}: {retention}, and not in PostgreSQL's sluice.events");
        return Ok(ExitCode::FAILURE);
    };
    println!("{event} (from PostgreSQL: its Redis trace has expired)");
    for outcome in &outcomes {
        println!("  {}  {:<10} {}", timestamp(outcome.at_ms as u64), outcome.outcome, outcome.detail);
    }
    let now = match last.outcome.as_str() {
        "written" => "in PostgreSQL (sluice.snapshots)",
        "superseded" => "answered by a newer snapshot in PostgreSQL (sluice.snapshots)",
        // `parked`: the same outcome, as rows written before it was renamed say.
        "dead-lettered" | "parked" => {
            "dead-lettered: in the dead-letter queue when last seen (sluice dlq show, sluice redrive)"
        }
        _ => "see above",
    };
    println!("  now: {now}");
    Ok(ExitCode::SUCCESS)
}

/// A stage's detail as printed: the drain's stages in words (the time is
/// the line's), the others as their JSON.
fn describe(entry: &TraceEntry) -> String {
    let detail = &entry.detail;
    if entry.stage == "deferred" {
        if detail["by"] == "fetch" {
            // Handed over by its fetch step: the mall's bucket had no unit.
            return format!("into {} (flow control: its mall's bucket was empty)", dirty_set(detail));
        }
        return format!("into {} (flow control: its mall has a backlog)", dirty_set(detail));
    }
    if entry.stage == "OVERFLOW" {
        return format!("into {} (flow control: its sheet has a backlog)", overflow(detail));
    }
    if entry.stage == "BUFFERED" && detail["from"] == "overflow" {
        return format!("moved from {} into its buffer", overflow(detail));
    }
    if detail["sink"] != "postgresql" {
        return detail.to_string();
    }
    let (version, resource) = (&detail["version"], detail["resource"].as_str().unwrap_or_default());
    match entry.stage.as_str() {
        "written" => format!("to PostgreSQL, row version {version} ({resource})"),
        "superseded" => format!("not written: PostgreSQL holds a newer row than version {version} ({resource})"),
        _ => detail.to_string(),
    }
}

/// "mall M's dirty set since T", from a `deferred` entry.
fn dirty_set(detail: &serde_json::Value) -> String {
    let since = detail["dirty_since_ms"].as_u64().map_or_else(|| "?".to_owned(), timestamp);
    format!("mall {}'s dirty set since {since}", detail["mall_id"].as_str().unwrap_or("?"))
}

/// "sheet S's overflow", from an `OVERFLOW` entry.
fn overflow(detail: &serde_json::Value) -> String {
    format!("sheet {}'s overflow", detail["sheet"].as_str().unwrap_or("?"))
}

fn timestamp(at_ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(at_ms as i64)
        .map_or_else(|| at_ms.to_string(), |t| t.format("%Y-%m-%d %H:%M:%S%.3fZ").to_string())
}

fn print_trace(event: &str, trace: &[TraceEntry], json: bool) {
    if json {
        for entry in trace {
            println!("{}", serde_json::to_string(entry).unwrap_or_default());
        }
        return;
    }
    println!("{event}");
    for entry in trace {
        println!("  {}  {:<10} {}", timestamp(entry.at_ms), entry.stage, describe(entry));
    }
    if let Some(last) = trace.last() {
        println!("  now: {}", now(last));
    }
}

/// Where an event is now, from its latest entry.
fn now(last: &TraceEntry) -> String {
    if last.stage == "deferred" {
        // Flow control: the mall's catch-up chain fetches it within the
        // mall's budget (docs/shop-path.md: "One flooding mall").
        return format!("in {}, drained within the mall's budget", dirty_set(&last.detail));
    }
    if last.stage == "OVERFLOW" {
        // Flow control per sheet (docs/sheet-path.md: "One flooding sheet").
        return format!(
            "in {} since {}; it joins the buffer once the sheet's queued rows are buffered",
            overflow(&last.detail),
            timestamp(last.at_ms)
        );
    }
    let now = match last.stage.as_str() {
        "stored" => "stored in Redis, waiting for the drain to PostgreSQL",
        "written" => "in PostgreSQL (sluice.snapshots)",
        "superseded" => "answered by a newer snapshot already in PostgreSQL",
        "coalesced" => "answered by the pending fetch it joined",
        "failed" if last.detail["next"] == "dead-letter queue" => "dead-lettered: in the dead-letter queue",
        "failed" => "waiting for redelivery",
        "enqueued" | "dequeued" | "fetch" | "token" | "penalized" => "in the pipeline",
        "rejected" => "rejected at ingest",
        "COMPLETED" => "in the sheet",
        "held" => "held, in order, with its parked mall's events; released after `sluice tokens set` (tokens show)",
        "PARKED" => "held for a person (see the reason above); redriven when the credential is updated",
        "INIT" | "ENQUEUED" | "BUFFERED" => "on its way to the sheet",
        "DUPLICATE" => "buffered or held already (see its earlier entries)",
        "VALIDATION_FAILED" | "FAILED" => "rejected; nothing was enqueued",
        _ => "see above",
    };
    now.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(stage: &str, detail: serde_json::Value) -> TraceEntry {
        TraceEntry { at_ms: 1_763_000_000_000, stage: stage.into(), detail }
    }

    #[test]
    fn a_held_row_says_which_overflow_it_is_in_and_where_it_went() {
        let held = entry("OVERFLOW", json!({"sheet": "gr:cred:doc:0", "overflow_len": 3}));
        assert_eq!(describe(&held), "into sheet gr:cred:doc:0's overflow (flow control: its sheet has a backlog)");
        assert_eq!(
            now(&held),
            "in sheet gr:cred:doc:0's overflow since 2025-11-13 02:13:20.000Z; it joins the buffer once the sheet's \
             queued rows are buffered"
        );
        let moved = entry("BUFFERED", json!({"from": "overflow", "sheet": "gr:cred:doc:0", "buffer_len": 9}));
        assert_eq!(describe(&moved), "moved from sheet gr:cred:doc:0's overflow into its buffer");
        assert_eq!(now(&moved), "on its way to the sheet");
        assert_eq!(describe(&entry("BUFFERED", json!({"buffer_len": 1}))), r#"{"buffer_len":1}"#);
    }
}

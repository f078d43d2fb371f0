//! What travels through the queue: one work item per message body, tagged
//! by kind, so one pipe batch may mix kinds (a batch typed by its first item
//! would run the other kinds' items down the wrong path). The state machine
//! routes each item by `kind`.
//!
//! Every item carries its event id: the event's deduplication id, which is
//! also the key of its trace (`sluice trace EVENT_ID`).

use crate::event::{SheetRow, ShopEvent};
use crate::queue::OutgoingMessage;
use serde::{Deserialize, Serialize};

/// One message body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkItem {
    /// A Cafe24 webhook: fetch the resource and store its snapshot.
    Shop(ShopWork),
    /// A row for a Google Sheet: buffer it for the sheet's next flush.
    SheetRow(SheetWork),
}

/// A sheet row as queued.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SheetWork {
    /// The row's event id: its deduplication id.
    pub event_id: String,
    pub row: SheetRow,
    /// When ingest accepted it, ms since the epoch (ingest's clock).
    pub received_at_ms: u64,
}

impl SheetWork {
    pub fn new(row: SheetRow, received_at_ms: u64) -> Self {
        Self { event_id: row.dedup_id().as_str().to_owned(), row, received_at_ms }
    }

    /// The queue message: grouped by sheet, deduplicated by the row's id.
    pub fn to_message(&self) -> OutgoingMessage {
        let body = serde_json::to_string(&WorkItem::SheetRow(self.clone()))
            .unwrap_or_else(|e| unreachable!("a sheet row always serialises: {e}"));
        OutgoingMessage::new(self.row.group_key(), self.row.dedup_id(), body)
    }

    /// The key of the row's transaction log (`sluice trace ROW_ID
    /// --credential CREDENTIAL`).
    pub fn trace_id(&self) -> String {
        row_trace_id(&self.row.credential_id, &self.row.row_id)
    }
}

/// The trace key of a sheet row: its credential and row id, `row:cred:id`.
/// The row id is what people know; the credential keeps one tenant's log
/// apart from another's that uses the same row ids. Escaped as SQS tokens
/// are (`sqs_token::encode`), so no two pairs share a key.
pub fn row_trace_id(credential_id: &str, row_id: &str) -> String {
    crate::sqs_token::encode("row", &[credential_id, row_id])
}

/// A sheet row as it waits in its sheet's buffer (or overflow): what the
/// append needs, nothing more. Written by the buffer step and, under flow
/// control, by ingest (the sheet's overflow joins the buffer as is), so
/// both write it from here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferedRow {
    pub row_id: String,
    pub event_id: String,
    pub values: Vec<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Vec<String>>,
}

impl BufferedRow {
    /// The row as its buffer holds it.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| unreachable!("a buffered row always serialises: {e}"))
    }

    /// The row id of a row as a buffer holds it, for its trace.
    pub fn row_id_of(json: &str) -> Option<String> {
        #[derive(Deserialize)]
        struct Id {
            row_id: String,
        }
        serde_json::from_str::<Id>(json).ok().map(|id| id.row_id)
    }

    /// The transaction logs (`row_trace_id`) of rows of `credential_id` as
    /// a buffer holds them: where a move from a sheet's overflow is recorded.
    pub fn trace_ids_of(credential_id: &str, rows: &[String]) -> Vec<String> {
        rows.iter().filter_map(|row| Self::row_id_of(row)).map(|id| row_trace_id(credential_id, &id)).collect()
    }
}

impl From<&SheetWork> for BufferedRow {
    fn from(work: &SheetWork) -> Self {
        Self {
            row_id: work.row.row_id.clone(),
            event_id: work.event_id.clone(),
            values: work.row.values.clone(),
            header: work.row.header.clone(),
        }
    }
}

/// A shop event as queued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShopWork {
    /// The event's id: its deduplication id.
    pub event_id: String,
    pub event: ShopEvent,
    /// When ingest accepted it, ms since the epoch (ingest's clock).
    pub received_at_ms: u64,
}

impl ShopWork {
    pub fn new(event: ShopEvent, received_at_ms: u64) -> Self {
        Self { event_id: event.dedup_id().as_str().to_owned(), event, received_at_ms }
    }

    /// The queue message for this work: grouped by mall and topic,
    /// deduplicated by the event's id.
    pub fn to_message(&self) -> OutgoingMessage {
        let body = serde_json::to_string(&WorkItem::Shop(self.clone()))
            .unwrap_or_else(|e| unreachable!("a shop event always serialises: {e}"));
        OutgoingMessage::new(self.event.group_key(), self.event.dedup_id(), body)
    }

    /// The name of the resource's coalescing gate within its mall.
    pub fn resource_gate(&self) -> String {
        format!("{}:{}", self.event.resource.kind, self.event.resource.id)
    }
}

impl WorkItem {
    pub fn event_id(&self) -> &str {
        match self {
            Self::Shop(work) => &work.event_id,
            Self::SheetRow(work) => &work.event_id,
        }
    }

    /// The key the item's trace is kept under: the event id for shop
    /// events, `row:<credential>:<row id>` for sheet rows.
    pub fn trace_id(&self) -> String {
        match self {
            Self::Shop(work) => work.event_id.clone(),
            Self::SheetRow(work) => work.trace_id(),
        }
    }

    /// The FIFO group the item was sent under.
    pub fn group_key(&self) -> crate::GroupKey {
        match self {
            Self::Shop(work) => work.event.group_key(),
            Self::SheetRow(work) => work.row.group_key(),
        }
    }

    /// The item's kind as the state machine routes it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Shop(_) => "shop",
            Self::SheetRow(_) => "sheet_row",
        }
    }

    /// Parses a message body.
    pub fn from_body(body: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ResourceKind, ResourceRef, Topic};

    #[test]
    fn a_shop_item_round_trips_through_its_message() {
        let event = ShopEvent::new(
            "acme",
            Topic(90002),
            ResourceRef { kind: ResourceKind::Product, id: "7".into() },
            "trace-1",
        )
        .unwrap();
        let work = ShopWork::new(event.clone(), 1_763_000_000_000);
        let message = work.to_message();
        assert_eq!(message.group, event.group_key());
        assert_eq!(message.dedup, event.dedup_id());
        assert_eq!(work.event_id, "s:acme:90002:product:7:trace-1");
        assert_eq!(work.resource_gate(), "product:7");
        let item = WorkItem::from_body(&message.body).unwrap();
        assert_eq!(item, WorkItem::Shop(work));
        assert!(message.body.starts_with(r#"{"kind":"shop","#), "{}", message.body);
    }
}

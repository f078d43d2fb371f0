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
use std::fmt;

/// One message body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkItem {
    /// A Cafe24 webhook: fetch the resource and store its snapshot.
    Shop(ShopWork),
    /// A row for a Google Sheet: buffer it for the sheet's next flush.
    SheetRow(SheetWork),
}

/// What a message body is, as the state machine routes it: the `kind` of
/// the plan step's `ItemPlan`, which the definition's `Route` Choice state
/// compares with `StringEquals`. Its serialised names are that contract,
/// so they come from `rename_all` alone, never from strings typed
/// elsewhere; `Shop` and `SheetRow` are also [`WorkItem`]'s `kind` tags
/// (a unit test holds the two together).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// A [`WorkItem::Shop`]: the fetch path.
    Shop,
    /// A [`WorkItem::SheetRow`]: the buffer path.
    SheetRow,
    /// A body that is not a work item: the definition routes it, by its
    /// Choice's `Default`, to a failure naming why.
    Invalid,
}

impl ItemKind {
    /// Every kind, in declaration order (the definition's routes are
    /// checked against this list: `tests/tests/asl_choice_values.rs`).
    pub const ALL: [Self; 3] = [Self::Shop, Self::SheetRow, Self::Invalid];
}

impl fmt::Display for ItemKind {
    /// The serialised name (`sheet_row`), so it is spelt in one place.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(name)) => f.write_str(&name),
            _ => Err(fmt::Error),
        }
    }
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
    pub fn kind(&self) -> ItemKind {
        match self {
            Self::Shop(_) => ItemKind::Shop,
            Self::SheetRow(_) => ItemKind::SheetRow,
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

    /// A body's `kind` tag (serde's, from `WorkItem`'s variant names) is
    /// the `kind` the plan step routes it by (`ItemKind`'s): two derives
    /// that must spell each work item alike.
    #[test]
    fn a_work_items_tag_is_its_routed_kind() {
        let resource = ResourceRef { kind: ResourceKind::Product, id: "7".into() };
        let shop = ShopWork::new(ShopEvent::new("acme", Topic(90002), resource, "t").unwrap(), 0);
        let row = SheetRow {
            credential_id: "cred".into(),
            spreadsheet_id: "doc".into(),
            sheet_gid: 0,
            submission_id: "sub".into(),
            row_id: "r1".into(),
            values: vec![],
            header: None,
        };
        for item in [WorkItem::Shop(shop), WorkItem::SheetRow(SheetWork::new(row, 0))] {
            let tag = serde_json::to_value(&item).unwrap()["kind"].clone();
            assert_eq!(tag, serde_json::to_value(item.kind()).unwrap());
            assert_eq!(tag, item.kind().to_string().as_str(), "Display is the serialised name");
        }
    }
}

//! The JSON the state machine (`statemachine/pipeline.asl.json`) and the
//! steps exchange. Field names here are the contract with the definition:
//! a rename here is a rename there. Outputs always carry every field (null
//! when empty), because a `ResultSelector` path that matches nothing fails
//! the state.
//!
//! Secrets never travel in these payloads (they would land in the
//! execution history): the steps read tokens from Redis, and only a
//! token's fingerprint goes back and forth.
//!
//! Bodies never travel in them either. Step Functions fails an execution
//! with `States.DataLimitExceeded` when a state's input or output passes
//! 256 KiB, and a product with many variants, an order with many items,
//! or a snapshot answering thousands of coalesced webhooks passes it. The
//! fetch step leaves the snapshot in Redis (`{store:<n>}:fetched:<event>`,
//! see `sluice_redis::snapshot_store`) and hands on a [`SnapshotRef`]; the
//! store step moves it from there to the shard's stream.

use serde::{Deserialize, Serialize};
use serde_json::Value;
pub use sluice_domain::ItemKind;
use sluice_domain::{ErrorKind, SheetWork, ShopWork, StepError, WorkItem};
use std::fmt;

/// One SQS message as EventBridge Pipes hands it to the state machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipeMessage {
    pub message_id: String,
    #[serde(default)]
    pub receipt_handle: String,
    pub body: String,
    pub attributes: PipeAttributes,
}

/// The SQS attributes of a pipe message that the pipeline reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipeAttributes {
    #[serde(rename = "ApproximateReceiveCount")]
    pub approximate_receive_count: String,
    #[serde(rename = "MessageGroupId")]
    pub message_group_id: String,
    #[serde(rename = "MessageDeduplicationId", default, skip_serializing_if = "Option::is_none")]
    pub message_deduplication_id: Option<String>,
    #[serde(rename = "SentTimestamp", default, skip_serializing_if = "Option::is_none")]
    pub sent_timestamp: Option<String>,
}

/// The plan step's input: the pipe's batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanInput {
    pub messages: Vec<PipeMessage>,
}

/// The batch split into its FIFO groups, each processed in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanOutput {
    /// How many groups run at once (the Map's MaxConcurrencyPath).
    pub max_concurrency: u32,
    pub groups: Vec<GroupPlan>,
}

/// One group's items in arrival order, and the loop state the definition
/// walks them with.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GroupPlan {
    pub group: String,
    pub count: usize,
    pub position: usize,
    pub items: Vec<ItemPlan>,
    /// `remaining[i]`: the failures to report when item `i` fails: it and
    /// every later item of the group (the FIFO rule).
    pub remaining: Vec<Vec<ItemFailure>>,
}

/// One item of a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemPlan {
    /// The SQS message id: what `batchItemFailures` reports.
    pub item_id: String,
    pub receive_count: u32,
    /// This is the message's last receive before its dead-letter queue: a
    /// step throttled past its retries then records the item's failure (its
    /// reason goes with it to the queue) instead of deferring it.
    #[serde(default)]
    pub last_receive: bool,
    /// What the state machine's `Route` state sends the item down.
    pub kind: ItemKind,
    pub work: Option<WorkItem>,
    /// Why the body is not a work item.
    pub invalid: Option<String>,
}

impl ItemPlan {
    /// The plan of one pipe message: its work read from the body (or why
    /// it is not a work item), and whether this receive is its last.
    pub fn of(message: PipeMessage, max_receive_count: u32) -> Self {
        let receive_count = message.attributes.approximate_receive_count.parse().unwrap_or(1);
        let (kind, work, invalid) = match WorkItem::from_body(&message.body) {
            Ok(work) => (work.kind(), Some(work), None),
            Err(e) => (ItemKind::Invalid, None, Some(format!("the body is not a work item: {e}"))),
        };
        let last_receive = receive_count >= max_receive_count;
        Self { item_id: message.message_id, receive_count, last_receive, kind, work, invalid }
    }

    /// The item's shop work, or an `InvalidRequest` step error.
    pub fn shop_work(&self) -> Result<&ShopWork, StepError> {
        match &self.work {
            Some(WorkItem::Shop(work)) => Ok(work),
            _ => Err(self.not_a("shop event")),
        }
    }

    /// The item's sheet row, or an `InvalidRequest` step error.
    pub fn sheet_work(&self) -> Result<&SheetWork, StepError> {
        match &self.work {
            Some(WorkItem::SheetRow(work)) => Ok(work),
            _ => Err(self.not_a("sheet row")),
        }
    }

    fn not_a(&self, what: &str) -> StepError {
        let why = match &self.work {
            Some(other) => format!("it is a {} item", other.kind()),
            None => self.invalid.clone().unwrap_or_else(|| "?".into()),
        };
        StepError::new(ErrorKind::InvalidRequest, format!("message {} is not a {what}: {why}", self.item_id))
    }

    /// The key of the item's trace: its event id (`row:<row id>` for a
    /// sheet row), or the message id when the body could not be read.
    pub fn trace_id(&self) -> String {
        match &self.work {
            Some(work) => work.trace_id(),
            None => format!("message:{}", self.item_id),
        }
    }
}

/// One entry of `batchItemFailures`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemFailure {
    #[serde(rename = "itemIdentifier")]
    pub item_identifier: String,
}

/// The token step's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenInput {
    pub item: ItemPlan,
    /// Fingerprint of a token the upstream rejected: refresh unless the
    /// stored token is already a different one.
    #[serde(default)]
    pub stale_token: Option<String>,
    /// The upstream refused even the refreshed token: park the mall and
    /// hold the item (see `mall_park`).
    #[serde(default)]
    pub rejected: bool,
}

/// The token step's answer: come back after `wait_seconds` (0 = go on),
/// or `held`: the mall is parked and the item waits with its events, so
/// it ends here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenOutput {
    pub wait_seconds: u64,
    pub held: bool,
}

impl TokenOutput {
    pub fn ready() -> Self {
        Self { wait_seconds: 0, held: false }
    }

    pub fn wait(seconds: u64) -> Self {
        Self { wait_seconds: seconds, held: false }
    }

    pub fn held() -> Self {
        Self { wait_seconds: 0, held: true }
    }
}

/// The fetch step's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchInput {
    pub item: ItemPlan,
    /// The token step ran for this item since it started (or since the
    /// token was last refused): the fetch calls with the stored token
    /// whatever its expiry, rather than send the item back for a refresh
    /// that could never make it fresher (a token endpoint whose tokens
    /// live shorter than the refresh margin).
    #[serde(default)]
    pub token_checked: bool,
}

impl FetchInput {
    /// An item's first fetch: its token not checked yet.
    pub fn new(item: ItemPlan) -> Self {
        Self { item, token_checked: false }
    }
}

/// What the fetch step did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchOutput {
    pub outcome: FetchNext,
    pub wait_seconds: u64,
    /// Where the fetched snapshot waits for the store step.
    pub snapshot: Option<SnapshotRef>,
    /// Fingerprint of the token the upstream rejected.
    pub token: Option<String>,
}

/// The fetch step's `outcome`: what the state machine's `Fetched` Choice
/// state does next, comparing it with `StringEquals`. The serialised names
/// are that contract, spelt only by `rename_all`; every variant is checked
/// against the definition's branches (`tests/tests/asl_choice_values.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FetchNext {
    /// See `snapshot`: store it (the Choice's `Default`).
    Fetched,
    /// See `wait_seconds`: the mall's bucket has no room yet.
    Wait,
    /// To the mall's dirty set: nothing left to do here.
    HandedOver,
    /// The mall is parked, or Cafe24 answered 403 and parked it: the event
    /// is held until `sluice tokens set`.
    Held,
    /// No token stored, or about to expire: the token step, then fetch again.
    NeedsToken,
    /// See `token`: refresh it, then fetch again.
    Unauthorized,
}

impl FetchNext {
    /// Every outcome, in declaration order.
    pub const ALL: [Self; 6] =
        [Self::Fetched, Self::Wait, Self::HandedOver, Self::Held, Self::NeedsToken, Self::Unauthorized];
}

impl fmt::Display for FetchNext {
    /// The serialised name (`needs_token`), so it is spelt in one place.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_value(self) {
            Ok(Value::String(name)) => f.write_str(&name),
            _ => Err(fmt::Error),
        }
    }
}

impl FetchOutput {
    pub fn fetched(snapshot: SnapshotRef) -> Self {
        Self { outcome: FetchNext::Fetched, wait_seconds: 0, snapshot: Some(snapshot), token: None }
    }

    pub fn wait(seconds: u64) -> Self {
        Self { outcome: FetchNext::Wait, wait_seconds: seconds.max(1), snapshot: None, token: None }
    }

    pub fn handed_over() -> Self {
        Self { outcome: FetchNext::HandedOver, wait_seconds: 0, snapshot: None, token: None }
    }

    pub fn held() -> Self {
        Self { outcome: FetchNext::Held, wait_seconds: 0, snapshot: None, token: None }
    }

    pub fn needs_token() -> Self {
        Self { outcome: FetchNext::NeedsToken, wait_seconds: 0, snapshot: None, token: None }
    }

    pub fn unauthorized(fingerprint: String) -> Self {
        Self { outcome: FetchNext::Unauthorized, wait_seconds: 0, snapshot: None, token: Some(fingerprint) }
    }
}

/// A fetched snapshot by reference: its Redis key, and a summary for the
/// execution history. Its size does not grow with the resource's body or
/// with the number of events it answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotRef {
    /// The Redis hash holding the [`Snapshot`]'s fields, in the shard of
    /// the mall's stream.
    pub key: String,
    /// `found` or `deleted`.
    pub status: String,
    pub version: Option<u64>,
    /// The body's size as JSON, in bytes.
    pub body_bytes: u64,
    /// How many events the snapshot answers.
    pub answers: usize,
}

/// A resource as fetched, or its tombstone: what the fetch step leaves in
/// Redis and the store step appends to the stream as one entry (see
/// `sluice_redis::snapshot_entry`). Not part of any state's payload (see
/// the module's documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub mall_id: String,
    pub kind: String,
    pub id: String,
    /// `found` or `deleted` (the upstream answered 404).
    pub status: String,
    pub updated_date: Option<String>,
    pub version: Option<u64>,
    pub body: Value,
    /// Every event this snapshot answers: the fetching event and those
    /// coalesced into it.
    pub answers: Vec<String>,
    pub fetched_at_ms: u64,
}

impl Snapshot {
    /// The stream entry's one field (what the drain worker reads), and the
    /// body's size as JSON.
    pub fn entry_field(&self) -> ((&'static str, String), u64) {
        // A `Value` and a list of texts always print as JSON.
        let body = serde_json::value::to_raw_value(&self.body).expect("a JSON value prints");
        let event_ids = serde_json::value::to_raw_value(&self.answers).expect("a list of texts prints");
        let entry = sluice_redis::SnapshotEntry {
            mall_id: self.mall_id.as_str().into(),
            kind: self.kind.as_str().into(),
            id: self.id.as_str().into(),
            status: self.status.as_str().into(),
            updated_date: self.updated_date.clone(),
            version: self.version,
            event_ids: &event_ids,
            fetched_at_ms: self.fetched_at_ms,
            body: &body,
        };
        (entry.to_field(), body.get().len() as u64)
    }

    /// The fields of the hash the fetch step leaves for the store step:
    /// the entry's one field and the three the store step answers with;
    /// and the body's size as JSON.
    pub fn hash_fields(&self) -> (Vec<(&'static str, String)>, u64) {
        let (entry, body_bytes) = self.entry_field();
        let fields = vec![
            ("event_ids", serde_json::json!(self.answers).to_string()),
            ("status", self.status.clone()),
            ("version", self.version.map(|v| v.to_string()).unwrap_or_default()),
            entry,
        ];
        (fields, body_bytes)
    }
}

/// The store step's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoreInput {
    pub item: ItemPlan,
    pub snapshot: SnapshotRef,
}

/// Where the snapshot went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoreOutput {
    pub shard: u32,
    pub entry_id: String,
    pub duplicate: bool,
}

/// The failure step's input: the item, or the pipe's message when no plan
/// was made (PlanBatch throttled on the message's last receive), and Step
/// Functions' error output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<ItemPlan>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<PipeMessage>,
    pub failure: StateFailure,
}

/// `{"Error", "Cause"}` as a Catch hands it on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateFailure {
    #[serde(rename = "Error")]
    pub error: String,
    #[serde(rename = "Cause", default)]
    pub cause: Option<String>,
}

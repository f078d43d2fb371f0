//! What the shop demo stored, read from where it ended up: PostgreSQL when
//! the drain ran (it trims from the Redis streams what it committed), else
//! the snapshot streams in Redis.

use sluice_dev_stack::DevStack;
use sluice_sandbox::cafe24::SandboxResource;
use sqlx::PgPool;
use std::collections::HashMap;

/// A resource's stored state, as its source can tell it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Current {
    /// The newest stream entry's sandbox version.
    Version(u64),
    /// The row's body in `sluice.snapshots`.
    Body(serde_json::Value),
}

impl Current {
    /// Whether this is the sandbox's current state of the resource.
    pub(crate) fn matches(&self, truth: Option<&SandboxResource>) -> bool {
        match (self, truth) {
            (Current::Version(version), truth) => *version == truth.map_or(0, |r| r.version),
            (Current::Body(body), Some(truth)) => *body == truth.body,
            (Current::Body(_), None) => false,
        }
    }
}

/// Snapshots stored, the events they answer, each resource's stored state.
#[derive(Debug, Default)]
pub(crate) struct StoredView {
    /// Where it was read: `PostgreSQL` or `Redis`.
    pub(crate) source: &'static str,
    /// Snapshots stored (stream entries, or entries the drain recorded).
    pub(crate) snapshots: usize,
    /// Per event, how many records answer it: stream entries naming it, or
    /// outcome rows in `sluice.events` (one per snapshot answering it).
    pub(crate) answered: HashMap<String, usize>,
    /// Per (mall, resource id), its stored state.
    pub(crate) current: HashMap<(String, String), Current>,
    /// Snapshots the drain had not written yet (0 without a drain).
    pub(crate) behind: u64,
}

impl StoredView {
    /// Read from `sluice.snapshots` and `sluice.events`, with the drain
    /// `behind` by that many snapshots.
    pub(crate) async fn from_postgres(pool: &PgPool, behind: u64) -> anyhow::Result<Self> {
        // An entry id is unique within its stream only; the mall names the
        // stream. Only the drain's outcomes name a snapshot: the other rows
        // of an event are the stages of its journey. The mall is a column
        // since migration 0005 (in `detail` before it).
        let drained = "outcome IN ('written', 'superseded')";
        let distinct = format!(
            "SELECT count(DISTINCT (coalesce(mall_id, detail->>'mall_id'), entry_id)) FROM sluice.events WHERE {drained}"
        );
        let snapshots: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(distinct)).fetch_one(pool).await?;
        let answered = format!("SELECT event_id, count(*) FROM sluice.events WHERE {drained} GROUP BY event_id");
        let answered: Vec<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(answered)).fetch_all(pool).await?;
        let rows: Vec<(String, String, Option<serde_json::Value>)> =
            sqlx::query_as("SELECT mall_id, resource_id, body FROM sluice.snapshots WHERE kind = 'product'")
                .fetch_all(pool)
                .await?;
        Ok(Self {
            source: "PostgreSQL",
            snapshots: snapshots as usize,
            answered: answered.into_iter().map(|(event, n)| (event, n as usize)).collect(),
            current: rows
                .into_iter()
                .map(|(mall, id, body)| ((mall, id), Current::Body(body.unwrap_or_default())))
                .collect(),
            behind,
        })
    }

    /// Read from the snapshot streams: every entry still there.
    pub(crate) async fn from_redis(stack: &DevStack) -> anyhow::Result<Self> {
        let store = stack.shop.snapshots();
        let mut view = Self { source: "Redis", ..Self::default() };
        let mut newest: HashMap<(String, String), u64> = HashMap::new();
        for shard in 0..store.shards() {
            let mut after = "-".to_owned();
            loop {
                let entries = store.read(shard, &after, 1000).await?;
                let Some(last) = entries.last() else { break };
                after = last.id.clone();
                // Outcome entries (dead-lettered events) are no snapshots.
                for entry in entries.iter().filter(|e| !e.is_outcome()) {
                    view.snapshots += 1;
                    // An entry that holds no snapshot answers nothing and
                    // shows no resource: the check below finds what it misses.
                    let Ok(snapshot) = entry.snapshot() else { continue };
                    let events: Vec<String> = serde_json::from_str(snapshot.event_ids.get()).unwrap_or_default();
                    for event in events {
                        *view.answered.entry(event).or_default() += 1;
                    }
                    let key = (snapshot.mall_id.into_owned(), snapshot.id.into_owned());
                    let version = snapshot.version.unwrap_or(0);
                    let slot = newest.entry(key).or_default();
                    *slot = (*slot).max(version);
                }
            }
        }
        view.current = newest.into_iter().map(|(key, version)| (key, Current::Version(version))).collect();
        Ok(view)
    }
}

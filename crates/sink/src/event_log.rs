//! Reading `sluice.events`: an event's outcomes after its Redis trace (7
//! days by default) has expired, for `sluice trace`. A snapshot's outcome
//! names its row in columns (migration 0005; before, in `detail`): read
//! back, the detail holds them either way.

use crate::error::SinkError;
use serde_json::Value;
use sqlx::PgPool;

/// One outcome of an event, as the drain recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct EventOutcome {
    /// A stage of its journey from its Redis trace (`received`, `enqueued`,
    /// `coalesced`, `fetched`, `stored`, `failed`, …), then `written` (its
    /// snapshot's row) or `superseded` (a newer row answers it), once per
    /// snapshot answering it, or `dead-lettered` (the pipeline gave it up
    /// to the dead-letter queue; rows written before that word say `parked`).
    pub outcome: String,
    /// When, in ms since the epoch.
    pub at_ms: i64,
    pub detail: Value,
}

/// `event_id`'s outcomes, oldest first; empty when the drain never saw it.
pub async fn outcomes(pool: &PgPool, event_id: &str) -> Result<Vec<EventOutcome>, SinkError> {
    let rows: Vec<(String, i64, Value)> = sqlx::query_as(
        "SELECT outcome, (extract(epoch FROM at) * 1000)::int8 AS at_ms, CASE WHEN version IS NULL THEN detail
             ELSE detail || jsonb_build_object('mall_id', mall_id, 'kind', kind, 'resource_id', resource_id,
                 'version', version, 'entry_id', entry_id) END
         FROM sluice.events WHERE event_id = $1 ORDER BY at, position",
    )
    .bind(event_id)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|(outcome, at_ms, detail)| EventOutcome { outcome, at_ms, detail }).collect())
}

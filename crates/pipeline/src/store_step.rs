//! The store step: appends the snapshot to its mall's shard stream, once
//! per event however often the item is redelivered, and marks every event
//! it answers as stored in their traces.

use crate::shop_service::ShopService;
use crate::step_io::{StoreInput, StoreOutput};
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_domain::StepError;

impl<C: ConnectionLike + Clone + Send + Sync> ShopService<C> {
    pub async fn store(&self, input: StoreInput) -> Result<StoreOutput, StepError> {
        let work = input.item.shop_work()?;
        let snapshot = &input.snapshot;
        let fields = [
            ("mall_id", snapshot.mall_id.clone()),
            ("kind", snapshot.kind.clone()),
            ("id", snapshot.id.clone()),
            ("status", snapshot.status.clone()),
            ("updated_date", snapshot.updated_date.clone().unwrap_or_default()),
            ("version", snapshot.version.map(|v| v.to_string()).unwrap_or_default()),
            ("event_ids", json!(snapshot.answers).to_string()),
            ("fetched_at_ms", snapshot.fetched_at_ms.to_string()),
            ("body", snapshot.body.to_string()),
        ];
        let appended = self.snapshots.append(&snapshot.mall_id, &work.event_id, &fields).await?;
        let detail = json!({
            "shard": appended.shard,
            "entry_id": appended.entry_id,
            "duplicate": appended.duplicate,
            "status": snapshot.status,
            "version": snapshot.version,
        });
        for event in &snapshot.answers {
            self.trace(event, "stored", detail.clone()).await;
        }
        if let Some(work) = &input.item.work {
            self.item_done(work).await;
        }
        Ok(StoreOutput { shard: appended.shard, entry_id: appended.entry_id, duplicate: appended.duplicate })
    }
}

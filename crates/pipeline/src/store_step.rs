//! The store step: moves the snapshot the fetch step left in Redis to its
//! mall's shard stream, once per event however often the item is
//! redelivered, and marks every event it answers as stored in their
//! traces. The snapshot arrives by key (see `step_io`): its body never
//! passes through the state machine.

use crate::shop_service::ShopService;
use crate::step_io::{SnapshotRef, StoreInput, StoreOutput};
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_domain::{ErrorKind, StepError};
use sluice_redis::Tag;

impl<C: ConnectionLike + Clone + Send + Sync> ShopService<C> {
    pub async fn store(&self, input: StoreInput) -> Result<StoreOutput, StepError> {
        let work = input.item.shop_work()?;
        let output = self.store_snapshot(&work.event.mall_id, &input.snapshot, &work.event_id).await?;
        // Two independent writes in two slots (the group ledger's shard,
        // the mall's tag): side by side, and either may be lost to a crash
        // (the ledger forgets done events by age, the count by its horizon).
        let tag = Tag::for_mall(&work.event.mall_id);
        tokio::join!(
            async {
                if let Some(work) = &input.item.work {
                    self.core.item_done(work).await;
                }
            },
            async {
                // Its message no longer counts toward the mall's flow control.
                if let Err(e) = self.backlogs.left(&tag, &work.event_id).await {
                    tracing::warn!(event_id = %work.event_id, error = %e, "flow-control count not updated; it lapses");
                }
            },
        );
        Ok(output)
    }

    /// Moves the snapshot `owner`'s fetch left under `reference` to its
    /// mall's stream (once per owner) and traces every event it answers
    /// as stored.
    pub(crate) async fn store_snapshot(
        &self,
        mall: &str,
        reference: &SnapshotRef,
        owner: &str,
    ) -> Result<StoreOutput, StepError> {
        let stored = self.snapshots.store_fetched(mall, &reference.key, owner).await?.ok_or_else(|| {
            // Expired (the execution outlived the key's TTL) or lost by
            // Redis: retrying cannot bring it back, but a redelivery
            // fetches the resource again.
            StepError::new(
                ErrorKind::StoreUnavailable,
                format!("the fetched snapshot {} is gone; a redelivery fetches it again", reference.key),
            )
        })?;
        let appended = stored.appended;
        // The events the snapshot answers, as the fetch recorded them;
        // only the owner once a duplicate's hash has expired.
        let answers: Vec<String> = stored
            .event_ids
            .as_deref()
            .and_then(|ids| serde_json::from_str(ids).ok())
            .unwrap_or_else(|| vec![owner.to_owned()]);
        let detail = json!({
            "shard": appended.shard,
            "entry_id": appended.entry_id,
            "duplicate": appended.duplicate,
            "status": stored.status.as_deref().unwrap_or(&reference.status),
            "version": reference.version,
            "body_bytes": reference.body_bytes,
        });
        for event in &answers {
            self.core.trace(event, "stored", detail.clone()).await;
        }
        Ok(StoreOutput { shard: appended.shard, entry_id: appended.entry_id, duplicate: appended.duplicate })
    }
}

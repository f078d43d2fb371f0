//! The store step: moves the snapshot the fetch step left in Redis to its
//! mall's shard stream, once per event however often the item is
//! redelivered, and marks every event it answers as stored in their
//! traces. The snapshot arrives by key (see `step_io`): its body never
//! passes through the state machine.

use crate::shop_service::ShopService;
use crate::step_io::{StoreInput, StoreOutput};
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_domain::{ErrorKind, StepError};

impl<C: ConnectionLike + Clone + Send + Sync> ShopService<C> {
    pub async fn store(&self, input: StoreInput) -> Result<StoreOutput, StepError> {
        let work = input.item.shop_work()?;
        let reference = &input.snapshot;
        let stored =
            self.snapshots.store_fetched(&work.event.mall_id, &reference.key, &work.event_id).await?.ok_or_else(
                || {
                    // Expired (the execution outlived the key's TTL) or
                    // lost by Redis: retrying cannot bring it back, but a
                    // redelivery fetches the resource again.
                    StepError::new(
                        ErrorKind::StoreUnavailable,
                        format!("the fetched snapshot {} is gone; a redelivery fetches it again", reference.key),
                    )
                },
            )?;
        let appended = stored.appended;
        // The events the snapshot answers, as the fetch step recorded them;
        // only this event once a duplicate's hash has expired.
        let answers: Vec<String> = stored
            .event_ids
            .as_deref()
            .and_then(|ids| serde_json::from_str(ids).ok())
            .unwrap_or_else(|| vec![work.event_id.clone()]);
        let detail = json!({
            "shard": appended.shard,
            "entry_id": appended.entry_id,
            "duplicate": appended.duplicate,
            "status": stored.status.as_deref().unwrap_or(&reference.status),
            "version": reference.version,
            "body_bytes": reference.body_bytes,
        });
        for event in &answers {
            self.trace(event, "stored", detail.clone()).await;
        }
        if let Some(work) = &input.item.work {
            self.item_done(work).await;
        }
        Ok(StoreOutput { shard: appended.shard, entry_id: appended.entry_id, duplicate: appended.duplicate })
    }
}

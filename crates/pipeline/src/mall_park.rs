//! A parked mall on the shop path, as the sheet path treats a credential
//! Google rejects: when Cafe24 refuses a mall's refresh token
//! (`invalid_grant`: revoked, expired, spent), a freshly refreshed token
//! is refused, or there is no token at all, nothing can succeed for that mall
//! until a person stores a new token. So instead of failing each event into
//! the dead-letter queue (where `sluice tokens set` would leave them to be
//! redriven by hand, out of order):
//!
//! - the token step holds the event (`sluice_redis::mall_park`: in Redis,
//!   under the mall's tag, in arrival order), parks the mall and answers
//!   `held`; the state machine ends the item, so its message is deleted and
//!   nothing goes to the dead-letter queue;
//! - every later event of the mall is held behind it, without a call;
//! - one alert goes out when the mall is parked ([`ShopService::park_mall`]);
//! - `sluice tokens set` stores the new token and asks for a catch-up run of
//!   the mall ([`CatchUpService::set_token`]), which releases the held
//!   events oldest first through the same token, fetch and store code
//!   (`mall_release`), then the mall's events go straight through again
//!   and one more alert says it is back;
//! - the mall's flow-control catch-up runs stop, without failing, while it is
//!   parked (their dirty set waits too).
//!
//! Not yet: webhooks that joined a held event's pending fetch at ingest
//! (coalesced) are answered by its release only while their coalescing
//! mark lasts (the pending timeout, 15 minutes). A mall parked longer
//! still gets a snapshot fetched after them, so the data is current, but
//! those events' traces end at `coalesced`.
//!
//! Only the mall's own refusals park it: a refused app (`invalid_client`,
//! the secret is wrong) concerns every mall and stays a failure, which the
//! functions answer by re-reading their secrets. A mall that never had a
//! token is parked too (webhooks that come before its `sluice tokens set`
//! wait for it), and so is one whose calls Cafe24 refuses with 403 (a scope
//! missing, the app removed). The cost: a mall id nobody ever sets up
//! holds its events in Redis until someone does; only Cafe24, with the
//! API key, sends webhooks, so such an id is a shop that installed the app.

use crate::catch_up::CatchUpService;
use crate::service_core::now_ms;
use crate::shop_service::{ADMIN_API, ShopService};
use crate::step_io::ItemPlan;
use crate::suggested_command::command;
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_domain::{ErrorKind, StepError};
use sluice_redis::{Parking, StoredToken, Tag};

impl<C: ConnectionLike + Clone + Send + Sync> ShopService<C> {
    /// Holds `item` if its mall is parked or releasing (events held
    /// before it). True when held: the item must not be fetched.
    pub(crate) async fn hold_if_parked(&self, mall: &str, event_id: &str, item: &ItemPlan) -> Result<bool, StepError> {
        let body = item_json(item)?;
        let hold = self.holds.check(&Tag::for_mall(mall), event_id, &body).await?;
        if hold.held {
            self.core.trace(event_id, "held", json!({"mall": mall, "held": hold.count})).await;
        }
        Ok(hold.held)
    }

    /// Parks `mall` (why: `reason`, which holds no secret), holding
    /// `item` if given, and alerts when the mall was not parked yet.
    pub(crate) async fn park_mall(
        &self,
        mall: &str,
        reason: &str,
        item: Option<(&str, &ItemPlan)>,
    ) -> Result<Parking, StepError> {
        let body = item.map(|(_, item)| item_json(item)).transpose()?;
        let event = item.zip(body.as_deref()).map(|((id, _), body)| (id, body));
        let hold = self.holds.park(&Tag::for_mall(mall), reason, event).await?;
        if let Some((event_id, _)) = item {
            self.core.trace(event_id, "held", json!({"mall": mall, "parked": reason, "held": hold.count})).await;
        }
        if hold.newly_parked {
            tracing::warn!(mall, reason, "mall parked");
            let text = format!(
                "sluice: mall `{mall}` is parked: {reason}. Its events are held in order (none goes to the \
                 dead-letter queue) and resume by themselves once a new token is stored with \
                 `{} --token-json FILE`.",
                command(&["sluice", "tokens", "set", mall])
            );
            self.alerter.episode(&format!("mall:{mall}:parked"), &text).await;
        }
        Ok(hold)
    }

    /// The one alert of a parked mall's end: its held events are released.
    pub(crate) async fn alert_unparked(&self, mall: &str) {
        tracing::info!(mall, "mall released");
        let text = format!(
            "sluice: mall `{mall}` is back: its new token works and the events held for it were released, in order."
        );
        self.alerter.episode(&format!("mall:{mall}:unparked"), &text).await;
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> CatchUpService<C> {
    /// What `sluice tokens set` does: stores `mall`'s new token and, when
    /// the mall was parked, releases it: a catch-up run is queued at once to
    /// send its held events in order. Returns whether it was parked.
    pub async fn set_token(&self, mall: &str, token: &StoredToken) -> Result<bool, StepError> {
        let shop = self.shop();
        let tag = Tag::for_mall(mall);
        shop.core.tokens.put(&tag, ADMIN_API, token, now_ms()).await?;
        if !shop.holds.release(&tag).await? {
            return Ok(false);
        }
        // The chain is taken whoever held it: a parked mall's chain has no
        // run coming (its last run stopped on the parking).
        let request = sluice_domain::CatchUpRequest::new(mall, format!("release-{}", now_ms()));
        let lease = shop.core.config.catch_up.chain_lease;
        shop.backlogs.take_chain(&tag, &request.token, lease).await?;
        self.requests().request(&request, std::time::Duration::ZERO).await?;
        if !shop.backlogs.confirm_chain(&tag, &request.token).await? {
            tracing::debug!(mall, "another run carries the chain now");
        }
        Ok(true)
    }
}

fn item_json(item: &ItemPlan) -> Result<String, StepError> {
    serde_json::to_string(item).map_err(|e| StepError::new(ErrorKind::Internal, format!("an item to hold: {e}")))
}

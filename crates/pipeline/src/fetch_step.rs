//! The fetch step: one Admin API call for the item's resource, inside the
//! mall's budget.
//!
//! The step's own part is what it checks before any budget is taken: a
//! parked mall's item is held, without a call (`mall_park`); a mall whose
//! token is missing or about to expire answers `needs_token`, and the
//! state machine runs the token step before fetching again. Checked here
//! rather than in a token step before every fetch: the common case is then
//! one Lambda and two states fewer per item.
//!
//! The rest (the mall's bucket, waited for or handed over to flow control,
//! the coalesced events, the call and what each answer leads to) is
//! `upstream_fetch`, which the catch-up runs and the release of a parked
//! mall's held events go through too: the three fetch alike. The step's
//! output carries the snapshot's key, never its body (see `step_io`).

use crate::shop_service::ShopService;
use crate::step_io::{FetchInput, FetchOutput};
use redis::aio::ConnectionLike;
use sluice_domain::StepError;

impl<C: ConnectionLike + Clone + Send + Sync> ShopService<C> {
    pub async fn fetch(&self, input: FetchInput) -> Result<FetchOutput, StepError> {
        let work = input.item.shop_work()?;
        let mall = &work.event.mall_id;
        // Two independent reads under the mall's tag, side by side: the
        // common case pays one round trip for both checks.
        let token_usable = async { if input.token_checked { Ok(true) } else { self.token_usable(mall).await } };
        let (held, token_usable) = tokio::join!(self.hold_if_parked(mall, &work.event_id, &input.item), token_usable);
        if held? {
            return Ok(FetchOutput::held());
        }
        if !token_usable? {
            return Ok(FetchOutput::needs_token());
        }
        self.fetch_item(&input.item).await
    }
}

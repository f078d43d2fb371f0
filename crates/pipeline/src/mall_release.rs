//! The release of a parked mall's held events (see `mall_park` and
//! `sluice_redis::mall_park`), by the mall's catch-up run once `sluice tokens
//! set` stored a new token: oldest first, one at a time, each through the
//! very token, fetch and store code an event from the queue goes through,
//! and each leaving the held set only after its snapshot is stored (the
//! store is idempotent per event, so a run that dies sends it again and
//! stores it once). Events arriving meanwhile are held behind them; the
//! last one out ends the parking, and the mall's events go straight through
//! again.
//!
//! An upstream failure (5xx, a timeout) is retried here a few times,
//! quickly, as the state machine's Fetch retries it: the events go out one
//! at a time, so ending the run at every failure would hold all of them
//! back by the failure backoff each time (at Cafe24's 20% bad minutes, a
//! release of 15 events took 30 s instead of 5). A budget wait longer than
//! the inline maximum, or failures that outlast those retries, end the run
//! with the next request delayed (held events keep the chain
//! going, `lua/catch_up_next.lua`); a token refused again parks the mall
//! again, with the event still first. An event whose fetch fails for good
//! (a refusal no retry mends) parks the mall too, naming why: it is never
//! skipped, which would break the order, nor dropped.

use crate::catch_up::CatchUpService;
use crate::step_io::{FetchNext, ItemPlan, StoreInput};
use crate::token_step::{REFUSED_AFTER_REFRESH, TokenState};
use redis::aio::ConnectionLike;
use sluice_domain::{ErrorKind, StepError};
use sluice_redis::Tag;
use std::time::{Duration, Instant};

/// Tries of a held event's fetch that fails with a retryable error before
/// the run gives up for `failure_backoff`, and the first nap between two
/// (doubling): the state machine's Fetch retry, shortened to fit a run.
const FETCH_TRIES: u32 = 4;
const FIRST_NAP: Duration = Duration::from_millis(250);

/// How a release ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Release {
    /// Nothing is held (any more): drain the dirty set.
    Done,
    /// The mall is (again) parked.
    Parked,
    /// Held events are left: the next run comes after this.
    Later(Duration),
}

/// One held event's fate.
enum One {
    Stored,
    Parked,
    Later(Duration),
}

impl<C: ConnectionLike + Clone + Send + Sync> CatchUpService<C> {
    pub(crate) async fn release_held(&self, mall: &str, tag: &Tag) -> Result<Release, StepError> {
        let shop = self.shop();
        match shop.holds.state(tag).await? {
            None => return Ok(Release::Done),
            Some(state) if state.parked => return Ok(Release::Parked),
            Some(_) => {}
        }
        let started = Instant::now();
        loop {
            let Some(event) = shop.holds.oldest(tag).await? else {
                // Released with nothing (left) held: the parking ends here,
                // unless an event was held meanwhile (then it goes next).
                match self.end_release(mall, tag, None).await? {
                    Some(end) => return Ok(end),
                    None => continue,
                }
            };
            if started.elapsed() >= self.settings().run_budget {
                return Ok(Release::Later(Duration::ZERO));
            }
            let item: ItemPlan = serde_json::from_str(&event.item).map_err(|e| {
                StepError::new(ErrorKind::Internal, format!("held event {} is unreadable: {e}", event.event_id))
            })?;
            match self.release_one(mall, &item).await? {
                One::Stored => {
                    if let Some(end) = self.end_release(mall, tag, Some(&event.event_id)).await? {
                        return Ok(end);
                    }
                }
                One::Parked => return Ok(Release::Parked),
                One::Later(delay) => return Ok(Release::Later(delay)),
            }
        }
    }

    /// `released` (if any) leaves the held set. When it was the last, the
    /// hold ends and the one recovery alert goes out (`Done`); with none
    /// left and the parking not ended, the mall was parked again meanwhile
    /// (`Parked`); `None` while events are left.
    async fn end_release(&self, mall: &str, tag: &Tag, released: Option<&str>) -> Result<Option<Release>, StepError> {
        let shop = self.shop();
        let (left, ended) = shop.holds.done(tag, released).await?;
        if ended {
            shop.alert_unparked(mall).await;
            return Ok(Some(Release::Done));
        }
        Ok((left == 0).then_some(Release::Parked))
    }

    /// Token, fetch and store for one held event, as the state machine
    /// runs them: a refused token is refreshed once.
    async fn release_one(&self, mall: &str, item: &ItemPlan) -> Result<One, StepError> {
        let shop = self.shop();
        let event_id = item.shop_work()?.event_id.clone();
        let mut stale: Option<String> = None;
        let mut failures = 0;
        loop {
            match shop.ensure_mall_token(mall, stale.as_deref(), &event_id).await? {
                TokenState::Ready => {}
                TokenState::Wait(seconds) => return Ok(One::Later(Duration::from_secs(seconds))),
                TokenState::Refused(reason) => return self.park_again(mall, &reason).await,
            }
            let fetched = match shop.fetch_item(item).await {
                Ok(fetched) => fetched,
                Err(e) if e.kind.is_retryable() => {
                    failures += 1;
                    if failures < FETCH_TRIES {
                        tokio::time::sleep(FIRST_NAP * 2u32.pow(failures - 1)).await;
                        continue;
                    }
                    tracing::warn!(mall, event_id, cause = %e.cause, "a held event's fetch failed; a later run retries");
                    return Ok(One::Later(self.settings().failure_backoff));
                }
                Err(e) => return self.park_again(mall, &format!("a held event's fetch was refused: {e}")).await,
            };
            match (fetched.outcome, fetched.snapshot) {
                (FetchNext::Wait, _) => return Ok(One::Later(Duration::from_secs(fetched.wait_seconds))),
                // A 403: the fetch parked the mall again, the event kept first.
                (FetchNext::Held, _) => return Ok(One::Parked),
                (FetchNext::Unauthorized, _) if stale.is_none() => stale = fetched.token,
                (FetchNext::Unauthorized, _) => return self.park_again(mall, REFUSED_AFTER_REFRESH).await,
                (_, Some(snapshot)) => {
                    shop.store(StoreInput { item: item.clone(), snapshot }).await?;
                    return Ok(One::Stored);
                }
                (outcome, None) => {
                    let cause = format!("the fetch answered \"{outcome}\" without a snapshot");
                    return Err(StepError::new(ErrorKind::Internal, cause));
                }
            }
        }
    }

    async fn park_again(&self, mall: &str, reason: &str) -> Result<One, StepError> {
        self.shop().park_mall(mall, reason, None).await?;
        Ok(One::Parked)
    }
}

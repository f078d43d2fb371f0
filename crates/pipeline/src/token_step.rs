//! The token step: makes sure the mall has a usable access token, when the
//! fetch step found none (missing, about to expire, or refused by Cafe24:
//! `needs_token`, `unauthorized`), refreshing it through Cafe24's token endpoint under the
//! mall's lock, so two refreshes never race (Cafe24 rotates refresh tokens:
//! the loser of a race would present a spent one and lock the mall out).
//!
//! The lock holder re-reads the token before refreshing: if someone else
//! refreshed meanwhile, it uses theirs. Before writing, it extends its
//! lease, which fails if the lease ran out, so a slow holder can never
//! overwrite a newer token.
//!
//! It is also where a mall is parked (`mall_park`): an event of a held
//! mall is parked without a call, and a refresh Cafe24 refuses for the
//! mall (`invalid_grant`), a token refused even after a refresh
//! (`rejected`, from the state machine), or no token at all (a mall never
//! set up) park the mall and hold the event. The step then answers
//! `held: true` and the item ends.

use crate::service_core::{now_ms, wait_seconds};
use crate::shop_service::{ADMIN_API, ShopService};
use crate::step_io::{TokenInput, TokenOutput};
use crate::suggested_command::command;
use redis::aio::ConnectionLike;
use serde_json::json;
use sha2::{Digest, Sha256};
use sluice_cafe24::{RefreshError, Secret, TokenGrant};
use sluice_domain::OAuthError;
use sluice_domain::{ErrorKind, StepError};
use sluice_redis::{Acquire, Lease, StoredToken, Tag};
use std::time::{Duration, Instant};

/// How long a refresh token lives when the upstream does not say (Cafe24:
/// two weeks).
const DEFAULT_REFRESH_LIFETIME_MS: u64 = 14 * 24 * 3600 * 1000;
/// Longest nap while another worker holds the refresh lock.
const LOCK_NAP: Duration = Duration::from_millis(50);

/// A token's fingerprint: enough to tell two tokens apart, useless to an
/// attacker, safe in an execution history.
pub fn fingerprint(token: &str) -> String {
    hex::encode(&Sha256::digest(token.as_bytes())[..8])
}

/// A token grant as stored: the refresh token's expiry defaults to Cafe24's
/// two weeks from `now_ms` when the grant does not state it.
pub fn stored_token(grant: &TokenGrant, now_ms: u64) -> StoredToken {
    StoredToken {
        access_token: grant.access_token.expose().to_owned(),
        access_expires_ms: u64::try_from(grant.expires_at_unix_ms()).unwrap_or(0),
        refresh_token: grant.refresh_token.expose().to_owned(),
        refresh_expires_ms: grant
            .refresh_token_expires_at
            .and_then(|t| u64::try_from(t.timestamp_millis()).ok())
            .unwrap_or(now_ms + DEFAULT_REFRESH_LIFETIME_MS),
    }
}

/// Why a mall that never had a token is parked.
pub(crate) const NO_TOKEN: &str = "no Cafe24 token was ever stored for it";

/// Why a mall is parked when a freshly refreshed token is refused.
pub(crate) const REFUSED_AFTER_REFRESH: &str = "Cafe24 refused its access token even right after a refresh";

/// Whether the mall can be called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenState {
    Ready,
    /// Another worker is refreshing, or the token endpoint asked to wait.
    Wait(u64),
    /// Only a person can help (a new token): park the mall, saying why.
    Refused(String),
}

impl<C: ConnectionLike + Clone + Send + Sync> ShopService<C> {
    pub async fn ensure_token(&self, input: TokenInput) -> Result<TokenOutput, StepError> {
        let work = input.item.shop_work()?;
        let (mall, event_id) = (work.event.mall_id.as_str(), work.event_id.as_str());
        if self.hold_if_parked(mall, event_id, &input.item).await? {
            return Ok(TokenOutput::held());
        }
        let refused = if input.rejected {
            REFUSED_AFTER_REFRESH.to_owned()
        } else {
            match self.ensure_mall_token(mall, input.stale_token.as_deref(), event_id).await? {
                TokenState::Ready => return Ok(TokenOutput::ready()),
                TokenState::Wait(seconds) => return Ok(TokenOutput::wait(seconds)),
                TokenState::Refused(reason) => reason,
            }
        };
        self.park_mall(mall, &refused, Some((event_id, &input.item))).await?;
        Ok(TokenOutput::held())
    }

    /// Whether `mall` has a token that is not about to expire: the fetch
    /// step calls with it, or asks for the token step first.
    pub(crate) async fn token_usable(&self, mall: &str) -> Result<bool, StepError> {
        let token = self.core.tokens.get(&Tag::for_mall(mall), ADMIN_API).await?;
        Ok(token.is_some_and(|token| self.fresh(&token)))
    }

    /// Whether `token` outlives the refresh margin.
    fn fresh(&self, token: &StoredToken) -> bool {
        token.access_expires_ms > now_ms() + self.core.config.token_refresh_margin.as_millis() as u64
    }

    /// Makes sure `mall` has a usable token: `stale`, the fingerprint of
    /// one the upstream refused, is refreshed even if unexpired. A refresh
    /// is traced under `trace_id`.
    pub(crate) async fn ensure_mall_token(
        &self,
        mall: &str,
        stale: Option<&str>,
        trace_id: &str,
    ) -> Result<TokenState, StepError> {
        let tag = Tag::for_mall(mall);
        let started = Instant::now();
        loop {
            // A mall that never had a token (its webhooks came before
            // `sluice tokens set`, as when a shop installs the app) is
            // parked like a revoked one: its events wait in order for the
            // token instead of failing into the dead-letter queue, where
            // `sluice tokens set` would not find them.
            let Some(token) = self.core.tokens.get(&tag, ADMIN_API).await? else {
                return Ok(TokenState::Refused(NO_TOKEN.to_owned()));
            };
            let rejected = stale == Some(fingerprint(&token.access_token).as_str());
            if !rejected && self.fresh(&token) {
                return Ok(TokenState::Ready);
            }
            match self.core.locks.acquire(&tag, "token-refresh", self.core.config.refresh_lock_lease).await? {
                Acquire::Acquired(lease) => {
                    let outcome = self.refresh_holding(&tag, mall, &token, &lease, trace_id).await;
                    if let Err(e) = self.core.locks.release(&lease).await {
                        tracing::warn!(mall, error = %e, "token refresh lock not released");
                    }
                    return outcome;
                }
                Acquire::Busy { retry_after } => {
                    // Someone is refreshing: wait for them, then use theirs.
                    let nap = retry_after.min(LOCK_NAP);
                    if started.elapsed() + nap > self.core.config.step_wait_budget {
                        return Ok(TokenState::Wait(wait_seconds(retry_after)));
                    }
                    tokio::time::sleep(nap).await;
                }
            }
        }
    }

    /// The mall's stored token; `CredentialRejected` when it has none.
    async fn stored_token(&self, tag: &Tag, mall: &str) -> Result<StoredToken, StepError> {
        self.core.tokens.get(tag, ADMIN_API).await?.ok_or_else(|| {
            StepError::new(
                ErrorKind::CredentialRejected,
                format!(
                    "no Cafe24 token for mall {mall}: seed it with `{} …`",
                    command(&["sluice", "tokens", "set", mall])
                ),
            )
        })
    }

    /// Refreshes `seen` unless someone already replaced it; the caller
    /// holds `lease` on the mall's refresh lock.
    async fn refresh_holding(
        &self,
        tag: &Tag,
        mall: &str,
        seen: &StoredToken,
        lease: &Lease,
        event_id: &str,
    ) -> Result<TokenState, StepError> {
        let current = self.stored_token(tag, mall).await?;
        if current.access_token != seen.access_token {
            return Ok(TokenState::Ready);
        }
        let grant = match self.cafe24.refresh(mall, &Secret::new(current.refresh_token.clone())).await {
            Ok(grant) => grant,
            Err(RefreshError::Throttled { retry_after }) => {
                let wait = retry_after.unwrap_or(Duration::from_secs(1));
                return Ok(TokenState::Wait(wait_seconds(wait)));
            }
            Err(e) => {
                self.core.trace(event_id, "token", json!({"refreshed": false, "error": e.to_string()})).await;
                if refused_for_the_mall(&e) {
                    return Ok(TokenState::Refused(format!("Cafe24 refused its refresh token ({e})")));
                }
                return Err(StepError::new(e.error_kind(), format!("refreshing mall {mall}'s token: {e}")));
            }
        };
        let now = now_ms();
        let refreshed = stored_token(&grant, now);
        // Still the holder? A lease that ran out must not overwrite a token
        // a later holder has stored.
        self.core.locks.extend(lease, self.core.config.refresh_lock_lease).await?;
        self.core.tokens.put(tag, ADMIN_API, &refreshed, now).await?;
        let detail = json!({"refreshed": true, "expires_at_ms": refreshed.access_expires_ms});
        self.core.trace(event_id, "token", detail).await;
        Ok(TokenState::Ready)
    }
}

/// `invalid_grant`: this mall's refresh token is revoked, expired or
/// spent, which only a new token mends. Anything else refused (the app's
/// own credentials, `invalid_client`) concerns every mall and is no reason
/// to park one.
fn refused_for_the_mall(e: &RefreshError) -> bool {
    matches!(e, RefreshError::Rejected { error: Some(OAuthError { error, .. }), .. } if error == "invalid_grant")
}

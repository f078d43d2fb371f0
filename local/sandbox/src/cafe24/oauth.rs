//! One mall's OAuth tokens, as Cafe24 hands them out.
//!
//! - Issuing gives an access token (two hours by default) and a refresh
//!   token (two weeks); the mall has one live refresh token, the latest.
//! - A refresh spends the refresh token and returns a new pair: Cafe24
//!   says "the Refresh Token is reissued when exchanging with an Access
//!   Token, and the old Refresh Token can no longer be used".
//! - Access tokens issued earlier stay valid until they expire; Cafe24 does
//!   not say it revokes them on refresh, and keeping them avoids failing
//!   calls already in flight.

use crate::cafe24::config::SandboxConfig;
use chrono::{DateTime, FixedOffset, Utc};
use rand::distr::{Alphanumeric, SampleString};
use rand::rngs::StdRng;
use sluice_cafe24::token::format_token_time;
use sluice_cafe24::{OAuthError, Secret, TokenResponse};
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

/// Scopes every sandbox token carries: enough to read what sluice fetches.
pub(crate) const SCOPES: [&str; 4] =
    ["mall.read_product", "mall.read_order", "mall.read_customer", "mall.read_privacy"];

/// Length of generated tokens (Cafe24's examples are 22–23 characters).
const TOKEN_LEN: usize = 22;

/// Lifetimes and the app id, fixed for a sandbox's life.
#[derive(Debug, Clone)]
pub(crate) struct TokenPolicy {
    pub(crate) client_id: String,
    pub(crate) access_lifetime: Duration,
    pub(crate) refresh_lifetime: Duration,
}

impl TokenPolicy {
    pub(crate) fn from_config(config: &SandboxConfig) -> Self {
        Self {
            client_id: config.client_id.clone(),
            access_lifetime: config.access_token_lifetime,
            refresh_lifetime: config.refresh_token_lifetime,
        }
    }
}

/// One mall's tokens and its refresh count.
#[derive(Debug, Default)]
pub(crate) struct TokenBook {
    /// Valid access tokens and when each expires.
    access: HashMap<String, Instant>,
    /// The one live refresh token.
    refresh: Option<(String, Instant)>,
    refreshes: u64,
}

impl TokenBook {
    pub(crate) fn issue(
        &mut self,
        mall_id: &str,
        policy: &TokenPolicy,
        rng: &mut StdRng,
        now: Instant,
    ) -> TokenResponse {
        self.access.retain(|_, expires| *expires > now);
        let access = Alphanumeric.sample_string(rng, TOKEN_LEN);
        let refresh = Alphanumeric.sample_string(rng, TOKEN_LEN);
        self.access.insert(access.clone(), now + policy.access_lifetime);
        self.refresh = Some((refresh.clone(), now + policy.refresh_lifetime));
        let wall: DateTime<FixedOffset> = DateTime::<Utc>::from(SystemTime::now()).fixed_offset();
        let at =
            |lifetime: Duration| format_token_time(wall + chrono::Duration::from_std(lifetime).unwrap_or_default());
        TokenResponse {
            access_token: Secret::new(access),
            expires_at: at(policy.access_lifetime),
            refresh_token: Secret::new(refresh),
            refresh_token_expires_at: Some(at(policy.refresh_lifetime)),
            client_id: Some(policy.client_id.clone()),
            mall_id: Some(mall_id.to_owned()),
            user_id: Some(mall_id.to_owned()),
            scopes: SCOPES.iter().map(|s| (*s).to_owned()).collect(),
            issued_at: Some(format_token_time(wall)),
        }
    }

    pub(crate) fn access_is_valid(&self, token: &str, now: Instant) -> bool {
        self.access.get(token).is_some_and(|expires| *expires > now)
    }

    /// Spends `refresh_token` for a new pair, or says why not in OAuth terms.
    pub(crate) fn refresh(
        &mut self,
        refresh_token: &str,
        mall_id: &str,
        policy: &TokenPolicy,
        rng: &mut StdRng,
        now: Instant,
    ) -> Result<TokenResponse, OAuthError> {
        match &self.refresh {
            Some((live, expires)) if same(live, refresh_token) && *expires > now => {
                self.refreshes += 1;
                Ok(self.issue(mall_id, policy, rng, now))
            }
            Some((live, _)) if same(live, refresh_token) => {
                Err(OAuthError::new("invalid_grant", "Validation error: refresh_token has expired"))
            }
            _ => Err(OAuthError::new("invalid_grant", "Validation error: refresh_token is invalid")),
        }
    }

    /// Every access token of the mall stops working now.
    pub(crate) fn expire_access(&mut self) {
        self.access.clear();
    }

    /// The live refresh token stops working now.
    pub(crate) fn expire_refresh(&mut self) {
        self.refresh = None;
    }

    /// Every token of the mall stops working now (the app was removed).
    pub(crate) fn revoke(&mut self) {
        self.expire_access();
        self.expire_refresh();
    }

    pub(crate) fn refreshes(&self) -> u64 {
        self.refreshes
    }
}

/// Token equality in constant time, as the real endpoint's should be.
fn same(live: &str, presented: &str) -> bool {
    bool::from(subtle::ConstantTimeEq::ct_eq(live.as_bytes(), presented.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn policy() -> TokenPolicy {
        TokenPolicy {
            client_id: "app".into(),
            access_lifetime: Duration::from_secs(60),
            refresh_lifetime: Duration::from_secs(600),
        }
    }

    #[test]
    fn refresh_rotates_and_spends_the_old_refresh_token() {
        let (mut book, mut rng, t0) = (TokenBook::default(), StdRng::seed_from_u64(1), Instant::now());
        let first = book.issue("acme", &policy(), &mut rng, t0);
        assert!(book.access_is_valid(first.access_token.expose(), t0));
        let second = book.refresh(first.refresh_token.expose(), "acme", &policy(), &mut rng, t0).unwrap();
        assert_ne!(second.refresh_token, first.refresh_token);
        let again = book.refresh(first.refresh_token.expose(), "acme", &policy(), &mut rng, t0).unwrap_err();
        assert_eq!(again.error, "invalid_grant");
        assert_eq!(book.refreshes(), 1);
        // The earlier access token lives until its own expiry.
        assert!(book.access_is_valid(first.access_token.expose(), t0 + Duration::from_secs(59)));
        assert!(!book.access_is_valid(first.access_token.expose(), t0 + Duration::from_secs(60)));
        assert_eq!(second.mall_id.as_deref(), Some("acme"));
        assert_eq!(second.scopes.len(), SCOPES.len());
    }

    #[test]
    fn expired_tokens_are_refused() {
        let (mut book, mut rng, t0) = (TokenBook::default(), StdRng::seed_from_u64(2), Instant::now());
        let grant = book.issue("acme", &policy(), &mut rng, t0);
        book.expire_access();
        assert!(!book.access_is_valid(grant.access_token.expose(), t0));
        let late = t0 + Duration::from_secs(601);
        let err = book.refresh(grant.refresh_token.expose(), "acme", &policy(), &mut rng, late).unwrap_err();
        assert_eq!(err.error_description.as_deref(), Some("Validation error: refresh_token has expired"));
        book.expire_refresh();
        assert!(book.refresh(grant.refresh_token.expose(), "acme", &policy(), &mut rng, t0).is_err());
    }
}

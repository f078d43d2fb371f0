//! Ingest takes work only for tenants sluice has been given: a webhook's
//! mall, a row's credential, each enrolled when its token was stored
//! (`sluice_redis::enrolment`). Anything else is answered 422
//! `unknown_tenant` before any key is written, so a sender inventing malls
//! or credentials leaves nothing behind (no held events, parked rows or
//! alerts, which would wait for a person who will never come).
//!
//! One `EXISTS` per request, saved by remembering tenants found enrolled
//! for [`KNOWN_FOR`]; a tenant found unknown is asked again each time, so
//! enrolling takes effect at once. Withdrawing one takes up to `KNOWN_FOR`
//! in an ingest that saw it lately.

use crate::rejection::{ErrorCode, Rejection};
use redis::aio::ConnectionLike;
use sluice_redis::{Enrolments, Tag};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a tenant found enrolled is taken on trust.
pub const KNOWN_FOR: Duration = Duration::from_secs(60);
/// Tenants remembered at most; past it the memory starts over (a burst of
/// real tenants costs one `EXISTS` each again, nothing more).
const REMEMBERED: usize = 10_000;

/// The token names a tenant is enrolled under (the token store's).
const MALL_TOKEN: &str = sluice_redis::enrolment::CAFE24_TOKEN;
const CREDENTIAL_TOKEN: &str = sluice_redis::credential_state::GOOGLE_TOKEN;

/// Which senders' tenants ingest takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TenantPolicy {
    /// Only enrolled malls and credentials (the default, and what every
    /// deployment runs).
    #[default]
    Enrolled,
    /// Any: for tests of acceptance itself, which invent malls freely.
    Any,
}

/// A webhook's or row's tenant.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tenant<'a> {
    Mall(&'a str),
    Credential(&'a str),
}

impl Tenant<'_> {
    fn tag_and_token(&self) -> (Tag, &'static str) {
        match self {
            Self::Mall(mall) => (Tag::for_mall(mall), MALL_TOKEN),
            Self::Credential(credential) => (Tag::for_credential(credential), CREDENTIAL_TOKEN),
        }
    }

    fn refusal(&self) -> Rejection {
        let (field, message) = match self {
            Self::Mall(mall) => (
                "resource.mall_id",
                format!(
                    "mall {mall} is not a tenant of this sluice: store its tokens first (`sluice tokens set {mall}`)"
                ),
            ),
            Self::Credential(credential) => (
                "credential_id",
                format!(
                    "credential {credential} is not a tenant of this sluice: store it first \
                     (`sluice credentials set {credential}`)"
                ),
            ),
        };
        Rejection { code: ErrorCode::UnknownTenant, message, field: Some(field.into()) }
    }
}

/// Ingest's check, with its memory of tenants found enrolled.
#[derive(Debug)]
pub(crate) struct TenantCheck<C> {
    enrolments: Enrolments<C>,
    policy: TenantPolicy,
    known: Mutex<HashMap<String, Instant>>,
}

impl<C: ConnectionLike + Clone + Send> TenantCheck<C> {
    pub(crate) fn new(enrolments: Enrolments<C>, policy: TenantPolicy) -> Self {
        Self { enrolments, policy, known: Mutex::new(HashMap::new()) }
    }

    /// `Ok` when `tenant` may send; the 422 naming it, or the 503 of an
    /// unreachable Redis, otherwise.
    pub(crate) async fn check(&self, tenant: Tenant<'_>) -> Result<(), Rejection> {
        if self.policy == TenantPolicy::Any {
            return Ok(());
        }
        let (tag, token) = tenant.tag_and_token();
        let now = Instant::now();
        if self.remembered(tag.as_str(), now) {
            return Ok(());
        }
        match self.enrolments.is_enrolled(&tag, token).await {
            Ok(true) => {
                self.remember(tag.as_str(), now);
                Ok(())
            }
            Ok(false) => Err(tenant.refusal()),
            Err(e) => {
                tracing::warn!(error = %e, "cannot check a tenant's enrolment");
                let message = "ingest could not reach Redis to check the tenant; nothing was kept, send it again";
                Err(Rejection::new(ErrorCode::StoreUnavailable, message))
            }
        }
    }

    fn remembered(&self, tag: &str, now: Instant) -> bool {
        let known = self.known.lock().expect("the tenant memory's lock is never poisoned");
        known.get(tag).is_some_and(|since| now.duration_since(*since) < KNOWN_FOR)
    }

    fn remember(&self, tag: &str, now: Instant) {
        let mut known = self.known.lock().expect("the tenant memory's lock is never poisoned");
        if known.len() >= REMEMBERED {
            known.clear();
        }
        known.insert(tag.to_owned(), now);
    }
}

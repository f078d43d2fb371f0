//! Which tenants sluice has been given: a Cafe24 mall is a tenant once
//! `sluice tokens set` stored its tokens, a Google credential once `sluice
//! credentials set` stored it. Ingest refuses webhooks and rows for any
//! other (`unknown_tenant`), so a sender inventing malls or credentials
//! leaves nothing behind: no parked mall with its held events, no parked
//! rows, no alert. Those keys have owners (a person's `tokens set`), which
//! an invented tenant never has.
//!
//! The marker is not the token: a mall whose refresh token lapsed (its
//! token key expired) is still a tenant, whose events are held until a
//! person sets a new token. And ingest may read the marker without being
//! able to read any token (its cache user has no token keys).
//!
//! Key: `{prefix}{<tag>}:enrolled:<name>`, a STRING holding the unix ms of
//! the first enrolment; the tag and name are the token's. No TTL; owner:
//! the operator. [`TokenStore::put`](crate::TokenStore::put) writes it with
//! every stored token, `sluice tokens|credentials enrol` for tokens stored before
//! enrolment existed, and deleting it refuses the tenant again.

use crate::error::Error;
use crate::keyspace::{Keyspace, Tag};
use redis::aio::ConnectionLike;

/// The name a mall's Cafe24 Admin API token is stored (and enrolled)
/// under. A Google credential's is [`GOOGLE_TOKEN`](crate::credential_state::GOOGLE_TOKEN).
pub const CAFE24_TOKEN: &str = "cafe24";

/// The enrolment marker of `tag`'s token `name`.
pub(crate) fn key(keyspace: &Keyspace, tag: &Tag, name: &str) -> String {
    keyspace.key(tag, "enrolled", name)
}

#[derive(Debug, Clone)]
pub struct Enrolments<C> {
    conn: C,
    keyspace: Keyspace,
}

impl<C: ConnectionLike + Clone + Send> Enrolments<C> {
    pub fn new(conn: C, keyspace: Keyspace) -> Self {
        Self { conn, keyspace }
    }

    pub fn key(&self, tag: &Tag, name: &str) -> String {
        key(&self.keyspace, tag, name)
    }

    /// Whether `tag`'s `name` is enrolled.
    pub async fn is_enrolled(&self, tag: &Tag, name: &str) -> Result<bool, Error> {
        let exists: bool = redis::cmd("EXISTS").arg(self.key(tag, name)).query_async(&mut self.conn.clone()).await?;
        Ok(exists)
    }

    /// Enrols `tag`'s `name` (keeping the first enrolment's time). True
    /// when it was not enrolled before.
    pub async fn enrol(&self, tag: &Tag, name: &str, now_ms: u64) -> Result<bool, Error> {
        let set: bool = redis::cmd("SET")
            .arg(self.key(tag, name))
            .arg(now_ms)
            .arg("NX")
            .query_async::<Option<String>>(&mut self.conn.clone())
            .await?
            .is_some();
        Ok(set)
    }

    /// Withdraws `tag`'s `name`: ingest refuses it from now on (its stored
    /// token, if any, stays). True when it was enrolled.
    pub async fn withdraw(&self, tag: &Tag, name: &str) -> Result<bool, Error> {
        let removed: u32 = redis::cmd("DEL").arg(self.key(tag, name)).query_async(&mut self.conn.clone()).await?;
        Ok(removed > 0)
    }
}

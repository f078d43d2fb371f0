//! OAuth tokens per upstream account (a Cafe24 mall, a Google credential),
//! kept where every Lambda can read them. Seeded by `sluice tokens set`,
//! replaced by each refresh (a Google credential's only while it still
//! holds the refresh token refreshed with: `lua/token_put_if_refresh.lua`).
//!
//! Key: `{prefix}{<tag>}:token:<name>`, a HASH `access`, `access_expires_ms`,
//! `refresh`, `refresh_expires_ms`; TTL: until the refresh token expires
//! (after that the account needs a person anyway). The tag is the
//! account's, so the refresh lock sits in the same slot. ElastiCache keeps
//! it encrypted at rest and in transit; nothing here logs it.

use crate::error::Error;
use crate::keyspace::{Keyspace, Tag};
use crate::scripts;
use redis::aio::ConnectionLike;
use std::fmt;

/// A stored token pair. `Debug` never shows the tokens.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredToken {
    pub access_token: String,
    pub access_expires_ms: u64,
    pub refresh_token: String,
    pub refresh_expires_ms: u64,
}

impl fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredToken")
            .field("access_token", &"***")
            .field("access_expires_ms", &self.access_expires_ms)
            .field("refresh_token", &"***")
            .field("refresh_expires_ms", &self.refresh_expires_ms)
            .finish()
    }
}

/// The key of `tag`'s token `name` (also read by `credential_state`'s
/// conditional rejection).
pub(crate) fn key(keyspace: &Keyspace, tag: &Tag, name: &str) -> String {
    keyspace.key(tag, "token", name)
}

#[derive(Debug, Clone)]
pub struct TokenStore<C> {
    conn: C,
    keyspace: Keyspace,
}

impl<C: ConnectionLike + Clone + Send> TokenStore<C> {
    pub fn new(conn: C, keyspace: Keyspace) -> Self {
        Self { conn, keyspace }
    }

    pub fn key(&self, tag: &Tag, name: &str) -> String {
        key(&self.keyspace, tag, name)
    }

    /// Stores `token`, replacing any earlier one, and enrols the tenant
    /// ([`Enrolments`](crate::Enrolments)). Refuses a token whose refresh
    /// token has already expired (it could never be used).
    pub async fn put(&self, tag: &Tag, name: &str, token: &StoredToken, now_ms: u64) -> Result<(), Error> {
        if token.refresh_expires_ms <= now_ms {
            return Err(Error::Config("the refresh token has already expired".into()));
        }
        let key = self.key(tag, name);
        redis::pipe()
            .atomic()
            .del(&key)
            .hset_multiple(
                &key,
                &[
                    ("access", token.access_token.clone()),
                    ("access_expires_ms", token.access_expires_ms.to_string()),
                    ("refresh", token.refresh_token.clone()),
                    ("refresh_expires_ms", token.refresh_expires_ms.to_string()),
                ],
            )
            .pexpire_at(&key, i64::try_from(token.refresh_expires_ms).unwrap_or(i64::MAX))
            // Storing a tenant's token enrols it (see `enrolment`).
            .set_options(
                crate::enrolment::key(&self.keyspace, tag, name),
                now_ms,
                redis::SetOptions::default().conditional_set(redis::ExistenceCheck::NX),
            )
            .exec_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Stores `token` (as [`put`](Self::put) does) only while the stored
    /// refresh token is still `expected_refresh`, the one the caller read
    /// and refreshed with. False when another is stored now, or none: a
    /// refresh answered late must not undo a token a person set (or
    /// removed) meanwhile. Refuses a token whose refresh token has already
    /// expired, as `put` does.
    pub async fn put_if_refresh(
        &self,
        tag: &Tag,
        name: &str,
        token: &StoredToken,
        now_ms: u64,
        expected_refresh: &str,
    ) -> Result<bool, Error> {
        if token.refresh_expires_ms <= now_ms {
            return Err(Error::Config("the refresh token has already expired".into()));
        }
        let stored: i64 = scripts::TOKEN_PUT_IF_REFRESH
            .key(self.key(tag, name))
            .arg(expected_refresh)
            .arg(&token.access_token)
            .arg(token.access_expires_ms)
            .arg(&token.refresh_token)
            .arg(token.refresh_expires_ms)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(stored == 1)
    }

    /// The stored token, if any.
    pub async fn get(&self, tag: &Tag, name: &str) -> Result<Option<StoredToken>, Error> {
        let fields: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(self.key(tag, name))
            .arg(&["access", "access_expires_ms", "refresh", "refresh_expires_ms"])
            .query_async(&mut self.conn.clone())
            .await?;
        let [Some(access), Some(access_expires), Some(refresh), Some(refresh_expires)] = fields.as_slice() else {
            return Ok(None);
        };
        let number = |v: &str| {
            v.parse::<u64>().map_err(|_| Error::UnexpectedReply { script: "HMGET token", reply: v.to_owned() })
        };
        Ok(Some(StoredToken {
            access_token: access.clone(),
            access_expires_ms: number(access_expires)?,
            refresh_token: refresh.clone(),
            refresh_expires_ms: number(refresh_expires)?,
        }))
    }
}

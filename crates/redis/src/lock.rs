//! A lock per shop or sheet: `SET NX PX` with a random 128-bit token (not a
//! GET then a SET, where racing callers all read "free" and all win), plus a
//! fencing number that strictly increases per lock name, so a store can
//! refuse a holder whose lease has run out. Release and extend compare the
//! token first; a stale token's release or extend fails with
//! [`Error::StaleLease`].
//!
//! Keys: `{prefix}{tag}:lock:<name>` (the holder's token, TTL = the lease)
//! and `{prefix}{tag}:fence:<name>` (the last fencing number, TTL = 7 days
//! after its last use; fences follow Redis's clock in µs, so they keep
//! increasing after that key expires). Scripts: `lua/lock_acquire.lua`,
//! `lua/compare_and_delete.lua`, `lua/compare_and_extend.lua`.

use crate::error::{Error, StaleReason};
use crate::keyspace::{Keyspace, Tag};
use crate::scripts;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// How long a fence key outlives its lock's last acquisition.
const FENCE_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// A held lock: present the lease to release or extend it, and the fence to
/// any store that must refuse stale holders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    key: String,
    token: String,
    fence: u64,
}

impl Lease {
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Strictly greater than the fence of every earlier holder of this lock.
    pub fn fence(&self) -> u64 {
        self.fence
    }
}

/// The outcome of trying to take a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquire {
    Acquired(Lease),
    /// Someone else holds it; their lease ends in `retry_after` at the latest.
    Busy {
        retry_after: Duration,
    },
}

#[derive(Debug, Clone)]
pub struct Locks<C> {
    conn: C,
    keyspace: Keyspace,
}

impl<C: ConnectionLike + Clone + Send> Locks<C> {
    pub fn new(conn: C, keyspace: Keyspace) -> Self {
        Self { conn, keyspace }
    }

    /// Tries once to take the lock `name` under `tag` for `lease`.
    pub async fn acquire(&self, tag: &Tag, name: &str, lease: Duration) -> Result<Acquire, Error> {
        let lease = lease_ms(lease)?;
        let key = self.keyspace.key(tag, "lock", name);
        let token = hex::encode(rand::random::<u128>().to_be_bytes());
        let (taken, value): (i64, i64) = scripts::LOCK_ACQUIRE
            .key(&key)
            .key(self.keyspace.key(tag, "fence", name))
            .arg(&token)
            .arg(lease)
            .arg(lease_ms(FENCE_TTL)?)
            .invoke_async(&mut self.conn.clone())
            .await?;
        if taken == 1 {
            let fence = u64::try_from(value)
                .map_err(|_| Error::UnexpectedReply { script: "lock_acquire.lua", reply: value.to_string() })?;
            return Ok(Acquire::Acquired(Lease { key, token, fence }));
        }
        // PTTL is -1 only for a key without TTL, which this module never writes.
        let retry_after = Duration::from_millis(u64::try_from(value).unwrap_or(0));
        Ok(Acquire::Busy { retry_after })
    }

    /// Releases the lock if `lease` still holds it.
    pub async fn release(&self, lease: &Lease) -> Result<(), Error> {
        let code: i64 =
            scripts::COMPARE_AND_DELETE.key(&lease.key).arg(&lease.token).invoke_async(&mut self.conn.clone()).await?;
        stale_check(lease, code, "compare_and_delete.lua")
    }

    /// Extends the lease to `lease` from now, if it still holds the lock.
    pub async fn extend(&self, held: &Lease, lease: Duration) -> Result<(), Error> {
        let code: i64 = scripts::COMPARE_AND_EXTEND
            .key(&held.key)
            .arg(&held.token)
            .arg(lease_ms(lease)?)
            .invoke_async(&mut self.conn.clone())
            .await?;
        stale_check(held, code, "compare_and_extend.lua")
    }
}

fn lease_ms(lease: Duration) -> Result<u64, Error> {
    let ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return Err(Error::Config(format!("lease {lease:?} is shorter than 1 ms")));
    }
    Ok(ms)
}

fn stale_check(lease: &Lease, code: i64, script: &'static str) -> Result<(), Error> {
    let reason = match code {
        1 => return Ok(()),
        0 => StaleReason::Gone,
        -1 => StaleReason::HeldByAnother,
        other => return Err(Error::UnexpectedReply { script, reply: other.to_string() }),
    };
    Err(Error::StaleLease { key: lease.key.clone(), reason })
}

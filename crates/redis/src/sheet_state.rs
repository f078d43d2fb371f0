//! What a sheet's flush remembers between runs, besides its rows
//! ([`crate::SheetBuffers`]): where the sheet ended after sluice's latest
//! append (for `sluice status`), whether its header
//! row is known to be there (checked once per sheet, then cached), and how
//! many flushes in a row failed (for the backoff).
//!
//! Keys, under the sheet's tag (`Tag::for_sheet`):
//!
//! ```text
//! {prefix}{sheet:…}:tail:       STRING  last row of sluice's latest append   TTL: 30 days after that append
//! {prefix}{sheet:…}:header:     STRING  "1" once the header row is there     TTL: 30 days after it was checked
//! {prefix}{sheet:…}:failures:   STRING  failed flushes in a row              TTL: 1 hour; the flush deletes it on success
//! {prefix}{sheet:…}:landing:    STRING  an append may still land             TTL: the apply horizon; deleted once answered
//! {prefix}{sheet:…}:unanswered: STRING  the latest append got no answer      TTL: 1 day; deleted once answered or resent
//! {prefix}{sheet:…}:resent:     SET     row ids sent again after a verify    TTL: 1 day; the flush deletes it once checked
//! {prefix}{sheet:…}:resent_at:  STRING  "1" until the check is due          TTL: the apply horizon
//! {prefix}{sheet:…}:duplicated: STRING  rows found in the sheet twice        TTL: 30 days after the latest (`sluice status`)
//! ```
//!
//! **Landing.** An append whose answer never came (a timeout, a dropped
//! connection, a flush killed mid-call) may still be applied by Google
//! afterwards: Sheets keeps processing a request for up to 180 seconds
//! ([usage limits](https://developers.google.com/workspace/sheets/api/limits):
//! "When Sheets processes a request for more than 180 seconds, the request
//! returns a timeout error") and applies each request atomically. So the
//! flush marks the sheet *landing* for the apply horizon just before each
//! append and clears the mark when an answer arrives; while the mark
//! lasts, rows not found in the sheet are not yet known to be missing.

use crate::error::Error;
use crate::keyspace::{Keyspace, Tag};
use redis::aio::ConnectionLike;
use std::time::Duration;

/// How long a sheet's tail and header flag outlive their last use.
pub const SHEET_STATE_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// How long rows sent again stay to be checked for copies, at most.
const RESENT_TTL: Duration = Duration::from_secs(24 * 3600);
/// How long a failure count lasts without a new failure.
const FAILURES_TTL: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone)]
pub struct SheetState<C> {
    conn: C,
    keyspace: Keyspace,
}

impl<C: ConnectionLike + Clone + Send> SheetState<C> {
    pub fn new(conn: C, keyspace: Keyspace) -> Self {
        Self { conn, keyspace }
    }

    fn key(&self, sheet: &Tag, kind: &str) -> String {
        self.keyspace.key(sheet, kind, "")
    }

    /// The last row of sluice's latest append, if known.
    pub async fn tail(&self, sheet: &Tag) -> Result<Option<u32>, Error> {
        Ok(redis::cmd("GET").arg(self.key(sheet, "tail")).query_async(&mut self.conn.clone()).await?)
    }

    /// Records the last row of sluice's latest append. Only the sheet's
    /// flush-lock holder writes it, one append at a time, so each value is
    /// the newest.
    pub async fn set_tail(&self, sheet: &Tag, row: u32) -> Result<(), Error> {
        self.set_for_state_ttl(sheet, "tail", row).await
    }

    pub async fn header_known(&self, sheet: &Tag) -> Result<bool, Error> {
        Ok(redis::cmd("EXISTS").arg(self.key(sheet, "header")).query_async::<u32>(&mut self.conn.clone()).await? == 1)
    }

    pub async fn set_header_known(&self, sheet: &Tag) -> Result<(), Error> {
        self.set_for_state_ttl(sheet, "header", "1").await
    }

    /// `SET` with [`SHEET_STATE_TTL`]: the tail and the header flag live
    /// alike.
    async fn set_for_state_ttl(&self, sheet: &Tag, kind: &str, value: impl redis::ToRedisArgs) -> Result<(), Error> {
        redis::cmd("SET")
            .arg(self.key(sheet, kind))
            .arg(value)
            .arg(px(SHEET_STATE_TTL))
            .exec_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Marks the sheet's next append as possibly landing until `horizon`
    /// from now, and as unanswered (set just before the call).
    pub async fn mark_landing(&self, sheet: &Tag, horizon: Duration) -> Result<(), Error> {
        redis::pipe()
            .atomic()
            .set_options(self.key(sheet, "landing"), 1, px(horizon))
            .ignore()
            .set_options(self.key(sheet, "unanswered"), 1, px(RESENT_TTL))
            .ignore()
            .exec_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// The append was answered (applied or refused): nothing is in the air.
    pub async fn clear_landing(&self, sheet: &Tag) -> Result<(), Error> {
        redis::cmd("DEL")
            .arg(self.key(sheet, "landing"))
            .arg(self.key(sheet, "unanswered"))
            .exec_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Whether the latest append was never answered (then forgotten): its
    /// rows, sent again, might yet meet a late copy of themselves.
    pub async fn take_unanswered(&self, sheet: &Tag) -> Result<bool, Error> {
        let removed: u32 =
            redis::cmd("DEL").arg(self.key(sheet, "unanswered")).query_async(&mut self.conn.clone()).await?;
        Ok(removed > 0)
    }

    /// How much longer an unanswered append may still land; zero when
    /// none may.
    pub async fn landing_for(&self, sheet: &Tag) -> Result<Duration, Error> {
        let ms: i64 = redis::cmd("PTTL").arg(self.key(sheet, "landing")).query_async(&mut self.conn.clone()).await?;
        Ok(Duration::from_millis(ms.max(0) as u64))
    }

    /// Notes rows sent again because a verify did not find them: should
    /// their first append land after all (later than the horizon), the
    /// sheet holds them twice. Checked once the horizon has passed again.
    pub async fn note_resent(&self, sheet: &Tag, row_ids: &[&str], horizon: Duration) -> Result<(), Error> {
        if row_ids.is_empty() {
            return Ok(());
        }
        let key = self.key(sheet, "resent");
        redis::pipe()
            .atomic()
            .sadd(&key, row_ids)
            .pexpire(&key, RESENT_TTL.as_millis() as i64)
            .set_options(self.key(sheet, "resent_at"), 1, px(horizon))
            .exec_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// The rows sent again, and how long until they may be checked.
    pub async fn resent(&self, sheet: &Tag) -> Result<(Vec<String>, Duration), Error> {
        let (ids, wait): (Vec<String>, i64) = redis::pipe()
            .smembers(self.key(sheet, "resent"))
            .pttl(self.key(sheet, "resent_at"))
            .query_async(&mut self.conn.clone())
            .await?;
        Ok((ids, Duration::from_millis(wait.max(0) as u64)))
    }

    /// The rows sent again were checked.
    pub async fn clear_resent(&self, sheet: &Tag) -> Result<(), Error> {
        redis::cmd("DEL").arg(self.key(sheet, "resent")).exec_async(&mut self.conn.clone()).await?;
        Ok(())
    }

    /// Counts `rows` of sluice's found in the sheet more than once, for
    /// `sluice status` (kept 30 days after the latest).
    pub async fn note_duplicated(&self, sheet: &Tag, rows: u64) -> Result<(), Error> {
        let key = self.key(sheet, "duplicated");
        redis::pipe()
            .atomic()
            .incr(&key, rows)
            .ignore()
            .pexpire(&key, SHEET_STATE_TTL.as_millis() as i64)
            .ignore()
            .exec_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Rows of sluice's found in the sheet more than once lately.
    pub async fn duplicated(&self, sheet: &Tag) -> Result<u64, Error> {
        let count: Option<u64> =
            redis::cmd("GET").arg(self.key(sheet, "duplicated")).query_async(&mut self.conn.clone()).await?;
        Ok(count.unwrap_or(0))
    }

    /// Counts one more failed flush; returns the count.
    pub async fn note_failure(&self, sheet: &Tag) -> Result<u32, Error> {
        let key = self.key(sheet, "failures");
        let (count,): (u32,) = redis::pipe()
            .incr(&key, 1)
            .pexpire(&key, FAILURES_TTL.as_millis() as i64)
            .ignore()
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(count)
    }

    pub async fn clear_failures(&self, sheet: &Tag) -> Result<(), Error> {
        redis::cmd("DEL").arg(self.key(sheet, "failures")).exec_async(&mut self.conn.clone()).await?;
        Ok(())
    }
}

/// `SET`'s expiry option: `PX` and `ttl` in milliseconds, at least one.
fn px(ttl: Duration) -> redis::SetOptions {
    redis::SetOptions::default().with_expiration(redis::SetExpiry::PX(ttl.as_millis().max(1) as u64))
}

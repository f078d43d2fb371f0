//! What sluice knows about an upstream credential beyond its tokens: that
//! it was rejected (so nobody keeps calling with it until a person updates
//! it), and which sheets write with it (so updating it redrives them).
//!
//! Keys, under the credential's tag (`Tag::for_credential`):
//!
//! ```text
//! {prefix}{gcred:<id>}:rejected:   STRING  why it was rejected       owner: `sluice credentials set` deletes it
//! {prefix}{gcred:<id>}:sheets:     SET     sheets writing with it    TTL: 30 days after the latest row
//!                                          (each member the sheet's flush request JSON, without a token)
//! ```

use crate::error::Error;
use crate::keyspace::{Keyspace, Tag};
use redis::aio::ConnectionLike;
use std::time::Duration;

/// How long a credential remembers a sheet after the sheet's latest row.
pub const SHEETS_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

#[derive(Debug, Clone)]
pub struct CredentialState<C> {
    conn: C,
    keyspace: Keyspace,
}

impl<C: ConnectionLike + Clone + Send> CredentialState<C> {
    pub fn new(conn: C, keyspace: Keyspace) -> Self {
        Self { conn, keyspace }
    }

    fn key(&self, credential: &str, kind: &str) -> String {
        self.keyspace.key(&Tag::for_credential(credential), kind, "")
    }

    /// Remembers that `sheet` writes with `credential`.
    pub async fn add_sheet(&self, credential: &str, sheet: &str) -> Result<(), Error> {
        let key = self.key(credential, "sheets");
        redis::pipe()
            .sadd(&key, sheet)
            .ignore()
            .pexpire(&key, SHEETS_TTL.as_millis() as i64)
            .ignore()
            .exec_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// The sheets writing with `credential`.
    pub async fn sheets(&self, credential: &str) -> Result<Vec<String>, Error> {
        let mut sheets: Vec<String> =
            redis::cmd("SMEMBERS").arg(self.key(credential, "sheets")).query_async(&mut self.conn.clone()).await?;
        sheets.sort();
        Ok(sheets)
    }

    /// Marks `credential` rejected, with why.
    pub async fn reject(&self, credential: &str, reason: &str) -> Result<(), Error> {
        redis::cmd("SET").arg(self.key(credential, "rejected")).arg(reason).exec_async(&mut self.conn.clone()).await?;
        Ok(())
    }

    /// Why `credential` was rejected, if it was.
    pub async fn rejected(&self, credential: &str) -> Result<Option<String>, Error> {
        Ok(redis::cmd("GET").arg(self.key(credential, "rejected")).query_async(&mut self.conn.clone()).await?)
    }

    /// Clears the rejection (a person updated the credential).
    pub async fn accept(&self, credential: &str) -> Result<(), Error> {
        redis::cmd("DEL").arg(self.key(credential, "rejected")).exec_async(&mut self.conn.clone()).await?;
        Ok(())
    }
}

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
//!
//! The rejection is conditional (`lua/credential_reject.lua`): it is set
//! only while the credential's stored token (`token_store`'s
//! `{gcred:<id>}:token:google`, same tag, so one script checks and sets)
//! still holds the refresh token the refused call read, or still holds
//! none when none was read. A flush whose call with the old token fails
//! after `sluice credentials set` stored a new one and cleared the
//! rejection would otherwise mark the new credential rejected, and its
//! rows would wait for a redrive nobody asks for.

use crate::error::Error;
use crate::keyspace::{Keyspace, Tag};
use crate::{scripts, token_store};
use redis::aio::ConnectionLike;
use std::time::Duration;

/// The name of a credential's token in the token store (under the
/// credential's tag): the one its rejection is checked against.
pub const GOOGLE_TOKEN: &str = "google";

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

    /// Marks `credential` rejected, with why, if its stored refresh token
    /// is still `read`, the one the refused call read (`None`: it found
    /// no token, and there is still none). False when a person stored
    /// another since: the refusal was of the old one, nothing is marked.
    pub async fn reject(&self, credential: &str, reason: &str, read: Option<&str>) -> Result<bool, Error> {
        let token = token_store::key(&self.keyspace, &Tag::for_credential(credential), GOOGLE_TOKEN);
        let mut script = scripts::CREDENTIAL_REJECT.key(self.key(credential, "rejected"));
        script.key(token).arg(reason);
        if let Some(read) = read {
            script.arg(read);
        }
        let code: i64 = script.invoke_async(&mut self.conn.clone()).await?;
        Ok(code == 1)
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

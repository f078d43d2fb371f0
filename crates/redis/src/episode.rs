//! Episodes of trouble, for alerts that say "it started" once and "it is
//! over" once: something that fails several times in a row (a sheet's
//! flush delayed by 5xx or 429 answers, a mall's fetches failing) opens an
//! episode when the failures in a row reach a threshold, and the next
//! success closes it. Every worker reports each outcome; the decision is one
//! script (`lua/episode_note.lua`), so two workers failing at once open the
//! episode once.
//!
//! Keys, under the tag of what fails (`{sheet:<g>}`, `{mall:<m>}`):
//!
//! ```text
//! {prefix}{<tag>}:streak:<name>    STRING  failures in a row      TTL: `ttl` after the latest failure; a success deletes it
//! {prefix}{<tag>}:episode:<name>   STRING  '1' while it is open   TTL: `ttl` after the latest failure; a success deletes it
//! ```
//!
//! An episode that nobody reports on for `ttl` (the sheet was abandoned,
//! the mall sends no more webhooks) lapses without a recovery alert.

use crate::error::Error;
use crate::gate::ttl_ms;
use crate::keyspace::{Keyspace, Tag};
use crate::scripts;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// What one outcome did to its episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpisodeChange {
    /// Nothing to say.
    None,
    /// The failures in a row reached the threshold: the episode started.
    Started,
    /// A success after the episode started: it is over.
    Ended,
}

/// One kind of episode: its name, threshold and lifetime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeRule {
    pub name: &'static str,
    /// Failures in a row that start an episode (at least 1).
    pub threshold: u32,
    /// How long the count and the episode outlive the latest failure.
    pub ttl: Duration,
}

#[derive(Debug, Clone)]
pub struct Episodes<C> {
    conn: C,
    keyspace: Keyspace,
}

impl<C: ConnectionLike + Clone + Send> Episodes<C> {
    pub fn new(conn: C, keyspace: Keyspace) -> Self {
        Self { conn, keyspace }
    }

    /// One more failure in a row.
    pub async fn failed(&self, tag: &Tag, rule: &EpisodeRule) -> Result<EpisodeChange, Error> {
        self.note(tag, rule, "fail").await
    }

    /// A success: the streak ends.
    pub async fn succeeded(&self, tag: &Tag, rule: &EpisodeRule) -> Result<EpisodeChange, Error> {
        self.note(tag, rule, "ok").await
    }

    async fn note(&self, tag: &Tag, rule: &EpisodeRule, outcome: &str) -> Result<EpisodeChange, Error> {
        let code: i64 = scripts::EPISODE_NOTE
            .key(self.keyspace.key(tag, "streak", rule.name))
            .key(self.keyspace.key(tag, "episode", rule.name))
            .arg(outcome)
            .arg(rule.threshold.max(1))
            .arg(ttl_ms(rule.ttl)?)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(match code {
            1 => EpisodeChange::Started,
            2 => EpisodeChange::Ended,
            _ => EpisodeChange::None,
        })
    }
}

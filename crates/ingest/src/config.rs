//! What an [`Ingest`](crate::Ingest) is built from, with its defaults:
//! 256 KiB bodies, a 5-minute duplicate window (SQS's own deduplication
//! window), a 15-minute pending timeout for coalescing, traces kept 7 days,
//! and batches of up to 10 sent after at most 2 ms; back-pressure past 512
//! webhooks and rows accepted at once, or 5 s of one's work before its send;
//! and for the HTTP server [`serve`](crate::serve) runs (`sluice dev`),
//! request heads of at most 32 KiB, read within 10 s, on at most 1,024 open
//! connections.

use crate::api_keys::ApiKeys;
use crate::server::{HEAD_READ_BUFFER_BYTES, MAX_CONNECTIONS_LIMIT};
use sluice_cafe24::{WEBHOOK_TOPICS, WebhookTopic, topic};
use sluice_domain::queue::rules::{DEDUP_WINDOW, MAX_BATCH_ENTRIES};
use sluice_redis::Keyspace;
use std::time::Duration;

/// Largest webhook body accepted, by default.
pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024;
/// How long a delivery id is remembered, by default: as long as SQS
/// remembers a deduplication id, so a redelivery that ingest lets through
/// again is one SQS would no longer drop either.
pub const DEFAULT_DUPLICATE_WINDOW: Duration = DEDUP_WINDOW;
/// How long a coalescing mark waits for its fetch, by default. A mark whose
/// fetch never runs (its message dead-lettered) lapses after this, so
/// later webhooks for the resource are enqueued again.
pub const DEFAULT_PENDING_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// How long one attempt at accepting a webhook may hold its delivery and
/// the resource's coalescing mark before they are the next request's, by
/// default. A killed attempt holds up the sender's retry (503) for this
/// long at most. An attempt gives up before sending once half of it is
/// gone, and one that outlives it anyway is harmless (see `acceptance`):
/// its send repeats the retry's, which the queue drops as a duplicate.
pub const DEFAULT_ACCEPT_LEASE: Duration = Duration::from_secs(10);
/// How many webhooks and rows one ingest accepts at once, by default: from a
/// valid body to its answer, the span in which a request holds Redis and
/// queue work. Past it a request is answered 503 `overloaded` at once,
/// before it touches Redis, instead of queueing behind the others: with
/// Redis at its usual ~0.2 ms a round trip, 512 at once is far above any
/// rate one process reaches, so the bound only bites when Redis or the
/// queue is slow, which is when a queue of waiting requests would grow
/// without end.
pub const DEFAULT_MAX_ACCEPTING: usize = 512;
/// The most [`IngestConfig::max_accepting`] can be (a semaphore's permits).
pub const MAX_ACCEPTING_LIMIT: usize = 1 << 20;
/// How long one webhook's or row's Redis work may take before its send, by
/// default; past it the request gives up what it holds and answers 503
/// `deadline_exceeded`. Capped at half the accept lease (see
/// [`IngestConfig::accept_deadline`]).
pub const DEFAULT_ACCEPT_DEADLINE: Duration = Duration::from_secs(5);
/// How long a batch waits for company after its first entry, by default.
pub const DEFAULT_LINGER: Duration = Duration::from_millis(2);
/// How many batch calls may be in flight at once, by default.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 16;
/// How many sends may wait for the batcher before callers wait, by default.
pub const DEFAULT_BATCH_BACKLOG: usize = 1024;
/// Largest request head (request line and headers) answered by the routes,
/// by default; a larger one gets a JSON 431. Real webhooks send well under
/// 2 KiB; 32 KiB is what common proxies allow.
pub const DEFAULT_MAX_HEAD_BYTES: usize = 32 * 1024;
/// How long a connection may take to send a complete request head, by
/// default (also how long an idle keep-alive connection stays open).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How many connections [`serve`](crate::serve) keeps open at once, by
/// default; more wait in the listen backlog until one closes.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// An ingest's settings. `Debug` is safe to log: API keys show as `***`.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    pub api_keys: ApiKeys,
    /// Where the gates and traces live in Redis.
    pub keyspace: Keyspace,
    /// The `event_no`s accepted; any other is answered 422.
    pub topics: TopicTable,
    pub max_body_bytes: usize,
    pub duplicate_window: Duration,
    pub pending_timeout: Duration,
    /// How long one attempt at accepting a webhook holds its leases.
    pub accept_lease: Duration,
    /// Webhooks and rows accepted at once (from a valid body to the
    /// answer); one more is answered 503 `overloaded` with `Retry-After`
    /// before it touches Redis. In `sluice dev` this bounds the work (and
    /// memory) a slow Redis can pile up. Behind API Gateway each Lambda
    /// environment serves one request at a time, so it never bites there:
    /// the bound is the function's concurrency (reserved concurrency, or
    /// the account's), and [`accept_deadline`](Self::accept_deadline) is
    /// what answers a slow Redis.
    pub max_accepting: usize,
    /// How long a webhook's or row's Redis work may take before its send;
    /// past it the request gives up its leases (nothing is kept) and is
    /// answered 503 `deadline_exceeded` with `Retry-After`. The send itself,
    /// once started, is waited for: its answer decides the 202. The
    /// deadline in force is at most half of `accept_lease`, the point past
    /// which another attempt may have taken over (see `acceptance`).
    pub accept_deadline: Duration,
    /// How long an event's trace is kept after its latest entry.
    pub trace_retention: Duration,
    pub batch: BatchConfig,
    /// Largest request head, in bytes: 1 to
    /// [`HEAD_READ_BUFFER_BYTES`](crate::server::HEAD_READ_BUFFER_BYTES)
    /// (beyond which hyper answers a bare 431 itself).
    pub max_head_bytes: usize,
    /// How long a connection may take to send a request head before it is
    /// closed (with a JSON 408 if it had started one). [`serve`](crate::serve)
    /// only: behind API Gateway the gateway does this.
    pub header_read_timeout: Duration,
    /// Open connections at once. [`serve`](crate::serve) only.
    pub max_connections: usize,
    /// Flow control per mall's thresholds; on only when ingest is built
    /// [`with_flow_control`](crate::Ingest::with_flow_control).
    pub flow_control: sluice_redis::FlowControl,
    /// Flow control per sheet's thresholds: always on (it needs nothing
    /// but Redis): a sheet with `max_queued` rows in the queue has its
    /// next rows held in its overflow (`sluice_redis::sheet_flow`).
    pub sheet_flow: sluice_redis::SheetFlow,
    /// Whose work is taken: only enrolled malls and credentials by default
    /// (`tenants`).
    pub tenants: crate::TenantPolicy,
}

impl IngestConfig {
    /// The defaults above, with these keys, under the default key prefix.
    pub fn new(api_keys: ApiKeys) -> Self {
        Self {
            api_keys,
            keyspace: Keyspace::default(),
            topics: TopicTable::default(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            duplicate_window: DEFAULT_DUPLICATE_WINDOW,
            pending_timeout: DEFAULT_PENDING_TIMEOUT,
            accept_lease: DEFAULT_ACCEPT_LEASE,
            max_accepting: DEFAULT_MAX_ACCEPTING,
            accept_deadline: DEFAULT_ACCEPT_DEADLINE,
            trace_retention: sluice_redis::trace::DEFAULT_RETENTION,
            batch: BatchConfig::default(),
            max_head_bytes: DEFAULT_MAX_HEAD_BYTES,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            flow_control: sluice_redis::FlowControl::default(),
            sheet_flow: sluice_redis::SheetFlow::default(),
            tenants: crate::TenantPolicy::default(),
        }
    }

    /// Checks every setting; the error names the one that cannot work.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.max_body_bytes == 0 {
            return Err(ConfigError::Setting("max_body_bytes must be at least 1".into()));
        }
        for (name, value, max) in [
            ("max_head_bytes", self.max_head_bytes, HEAD_READ_BUFFER_BYTES),
            ("max_connections", self.max_connections, MAX_CONNECTIONS_LIMIT),
            ("max_accepting", self.max_accepting, MAX_ACCEPTING_LIMIT),
        ] {
            if !(1..=max).contains(&value) {
                return Err(ConfigError::Setting(format!("{name} is {value}; it must be 1 to {max}")));
            }
        }
        for (name, value) in [
            ("accept_deadline", self.accept_deadline),
            ("header_read_timeout", self.header_read_timeout),
            ("duplicate_window", self.duplicate_window),
            ("pending_timeout", self.pending_timeout),
            ("accept_lease", self.accept_lease),
            ("trace_retention", self.trace_retention),
        ] {
            if value < Duration::from_millis(1) {
                return Err(ConfigError::Setting(format!("{name} must be at least 1 ms")));
            }
        }
        if self.accept_lease >= self.pending_timeout || self.accept_lease >= self.duplicate_window {
            return Err(ConfigError::Setting(format!(
                "accept_lease ({:?}) must be shorter than pending_timeout and duplicate_window",
                self.accept_lease
            )));
        }
        self.batch.check()
    }

    /// The deadline in force: [`accept_deadline`](Self::accept_deadline),
    /// at most half of `accept_lease`.
    pub fn effective_accept_deadline(&self) -> Duration {
        self.accept_deadline.min(self.accept_lease / 2)
    }
}

/// How the batcher packs sends into calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchConfig {
    /// Entries per call: 1 to 10 (SQS's `SendMessageBatch` limit).
    pub max_entries: usize,
    /// How long a batch waits for more entries after its first; zero sends
    /// whatever is already waiting at once (the Lambda, which serves one
    /// request at a time, has nobody to wait for).
    pub linger: Duration,
    /// Batch calls in flight at once (at least 1).
    pub max_in_flight: usize,
    /// Sends waiting for the batcher before senders wait (at least 1).
    pub backlog: usize,
}

impl Default for BatchConfig {
    fn default() -> Self {
        Self {
            max_entries: MAX_BATCH_ENTRIES,
            linger: DEFAULT_LINGER,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            backlog: DEFAULT_BATCH_BACKLOG,
        }
    }
}

impl BatchConfig {
    pub fn check(&self) -> Result<(), ConfigError> {
        if !(1..=MAX_BATCH_ENTRIES).contains(&self.max_entries) {
            return Err(ConfigError::Setting(format!(
                "batch.max_entries is {}; SendMessageBatch takes 1 to {MAX_BATCH_ENTRIES}",
                self.max_entries
            )));
        }
        if self.max_in_flight == 0 || self.backlog == 0 {
            return Err(ConfigError::Setting("batch.max_in_flight and batch.backlog must be at least 1".into()));
        }
        Ok(())
    }
}

/// The webhook topics an ingest accepts: all of
/// [`WEBHOOK_TOPICS`](sluice_cafe24::WEBHOOK_TOPICS) by default, or a subset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicTable {
    topics: Vec<&'static WebhookTopic>,
}

impl TopicTable {
    /// Only these event numbers, each of which sluice must know.
    pub fn only(event_nos: &[u32]) -> Result<Self, ConfigError> {
        let mut topics = Vec::with_capacity(event_nos.len());
        for &n in event_nos {
            let t = topic(n).ok_or_else(|| {
                ConfigError::Setting(format!("event_no {n} is not a Cafe24 webhook topic sluice knows"))
            })?;
            if !topics.contains(&t) {
                topics.push(t);
            }
        }
        if topics.is_empty() {
            return Err(ConfigError::Setting("the topic table is empty".into()));
        }
        Ok(Self { topics })
    }

    pub fn get(&self, event_no: u32) -> Option<&'static WebhookTopic> {
        self.topics.iter().copied().find(|t| t.event_no == event_no)
    }

    /// The accepted event numbers, in table order.
    pub fn event_nos(&self) -> impl Iterator<Item = u32> + '_ {
        self.topics.iter().map(|t| t.event_no)
    }
}

impl Default for TopicTable {
    fn default() -> Self {
        Self { topics: WEBHOOK_TOPICS.iter().collect() }
    }
}

/// A setting that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("API keys: {0}")]
    ApiKey(String),
    #[error("ingest configuration: {0}")]
    Setting(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_cafe24::Secret;

    #[test]
    fn defaults_are_the_issues_numbers_and_pass_the_check() {
        let config = IngestConfig::new(ApiKeys::from_list(&Secret::new("k")).unwrap());
        assert_eq!(config.max_body_bytes, 262_144);
        assert_eq!(config.duplicate_window, Duration::from_secs(300));
        assert_eq!(config.pending_timeout, Duration::from_secs(900));
        assert_eq!(config.batch.max_entries, 10);
        assert_eq!(config.batch.linger, Duration::from_millis(2));
        assert_eq!(config.max_head_bytes, 32_768);
        assert_eq!(config.header_read_timeout, Duration::from_secs(10));
        assert_eq!(config.max_connections, 1024);
        assert_eq!(config.max_accepting, 512);
        assert_eq!(config.effective_accept_deadline(), Duration::from_secs(5));
        assert_eq!(config.check(), Ok(()));
        assert_eq!(config.topics.event_nos().count(), WEBHOOK_TOPICS.len());
    }

    #[test]
    fn impossible_settings_are_named() {
        let mut config = IngestConfig::new(ApiKeys::from_list(&Secret::new("k")).unwrap());
        config.batch.max_entries = 11;
        assert!(config.check().unwrap_err().to_string().contains("batch.max_entries is 11"));
        config.batch.max_entries = 10;
        config.pending_timeout = Duration::ZERO;
        assert!(config.check().unwrap_err().to_string().contains("pending_timeout"));
        config.pending_timeout = Duration::from_secs(1);
        config.max_connections = 0;
        assert!(config.check().unwrap_err().to_string().contains("max_connections is 0"));
        config.max_connections = 1;
        config.max_head_bytes = HEAD_READ_BUFFER_BYTES + 1;
        assert!(config.check().unwrap_err().to_string().contains("max_head_bytes"));
        config.max_head_bytes = 1;
        config.max_accepting = 0;
        assert!(config.check().unwrap_err().to_string().contains("max_accepting is 0"));
        config.max_accepting = 1;
        config.accept_deadline = Duration::ZERO;
        assert!(config.check().unwrap_err().to_string().contains("accept_deadline"));
    }

    #[test]
    fn the_deadline_in_force_is_at_most_half_the_lease() {
        let mut config = IngestConfig::new(ApiKeys::from_list(&Secret::new("k")).unwrap());
        config.accept_lease = Duration::from_millis(600);
        assert_eq!(config.effective_accept_deadline(), Duration::from_millis(300));
        config.accept_deadline = Duration::from_millis(50);
        assert_eq!(config.effective_accept_deadline(), Duration::from_millis(50));
    }

    #[test]
    fn a_topic_subset_refuses_unknown_numbers() {
        let table = TopicTable::only(&[90002, 90001, 90002]).unwrap();
        assert_eq!(table.event_nos().collect::<Vec<_>>(), [90002, 90001]);
        assert!(table.get(90003).is_none());
        assert!(TopicTable::only(&[12345]).unwrap_err().to_string().contains("12345"));
        assert!(TopicTable::only(&[]).is_err());
    }
}

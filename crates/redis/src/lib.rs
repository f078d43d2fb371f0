//! sluice's Redis primitives. Limiter, bucket, lock and gate state lives in
//! Redis (ElastiCache or Valkey in AWS) and is shared by many concurrent
//! Lambdas, so every decision is one atomic Lua script (`lua/*.lua`, each
//! with a KEYS/ARGV header) called by SHA through `redis::Script`.
//!
//! Rules every script keeps:
//! - time comes from `redis.call('TIME')`, never from a client's clock;
//! - all keys of one call share one hash tag, so scripts run on a cluster;
//! - every key written gets a TTL.
//!
//! # Key layout
//!
//! ```text
//! {prefix}{<tag>}:win:<name>     LIST    µs stamps of admitted calls   TTL: window after the newest
//! {prefix}{<tag>}:bkt:<name>     STRING  GCRA TAT in µs                 TTL: until the bucket is empty
//! {prefix}{<tag>}:lock:<name>    STRING  holder's 128-bit token (hex)   TTL: the lease
//! {prefix}{<tag>}:fence:<name>   STRING  last fencing number            TTL: 7 days after last use
//! {prefix}{<tag>}:gate:<name>    STRING  passer's id / pending owner    TTL: window or pending timeout
//!                                        ([lease:]owner for coalescing) (lease until the owner is enqueued)
//! {prefix}{ev:<id>}:gate:ingest  STRING  accepted | attempt:<n>:<end>   TTL: duplicate window (+ lease)
//! {prefix}{<tag>}:joined:<name>  LIST    ids coalesced into the owner   TTL: mark's remaining + timeout; taken by the owner
//! {prefix}{mall:m}:queued:      ZSET    a mall's messages in the queue TTL: 30 min after the latest change (flow control, see backlog)
//! {prefix}{mall:m}:dirty:       HASH    a mall's deferred resources    owner: the mall's catch-up runs; TTL: 14 days
//! {prefix}{mall:m}:dirtyq:      ZSET    their order, oldest first      owner: the mall's catch-up runs; TTL: 14 days
//! {prefix}{mall:m}:chain:drain  STRING  the next catch-up run's token     TTL: lease, then 1 h
//! {prefix}{mall:m}:hold:        HASH    a parked mall's state          owner: `sluice tokens set`, then the release (see mall_park)
//! {prefix}{mall:m}:held:        ZSET    its held events, in order      owner: the release (catch-up runs)
//! {prefix}{mall:m}:heldbody:    HASH    their items (JSON)             owner: the release
//! {prefix}{mall:m}:heldseq:     STRING  the last arrival sequence      owner: deleted with the parking
//! {prefix}{<tag>}:streak:<name>  STRING  failures in a row              TTL: 1 day after the latest failure (see episode)
//! {prefix}{<tag>}:episode:<name> STRING  an open episode of failures    TTL: 1 day after the latest failure
//! {prefix}{<tag>}:token:<name>   HASH    OAuth token pair               TTL: until the refresh token expires
//! {prefix}{<tag>}:enrolled:<name> STRING a tenant's enrolment (unix ms) owner: the operator (`sluice tokens|credentials set, enrol, withdraw`)
//! {prefix}{ev:<id>}:trace:       LIST    an event's journey (JSON)      TTL: retention (7 days) after the latest entry
//! {prefix}{store:<n>}:stream:    STREAM  snapshots, outcomes, shard n   owner: the drain worker trims what every group acked; MAXLEN ~1M
//! {prefix}{store:<n>}:seen:<k>   STRING  entry id of an idempotency key TTL: 24 h
//! {prefix}{store:<n>}:fetched:<e> HASH   a fetched snapshot for store  TTL: 15 min; store drops its body
//! {prefix}{sheet:<g>}:buffer:    LIST    a sheet's rows to append       owner: the sheet's flush
//! {prefix}{sheet:<g>}:inflight:  LIST    rows of the current append     owner: the sheet's flush
//! {prefix}{sheet:<g>}:istate:    STRING  unknown | unsent               owner: the sheet's flush
//! {prefix}{sheet:<g>}:landing:   STRING  an unanswered append may land  TTL: the apply horizon (see sheet_state)
//! {prefix}{sheet:<g>}:unanswered: STRING the latest append got no answer TTL: 1 day; deleted once answered or resent
//! {prefix}{sheet:<g>}:resent:    SET     rows sent again, to check      TTL: 1 day; deleted once checked
//! {prefix}{sheet:<g>}:resent_at: STRING  until their check is due       TTL: the apply horizon
//! {prefix}{sheet:<g>}:duplicated: STRING rows found twice, for status   TTL: 30 days after the latest
//! {prefix}{sheet:<g>}:parked:    LIST    rows waiting for a person      owner: redrive
//! {prefix}{sheet:<g>}:row:<id>   STRING  marker: row buffered or held   TTL: 24 h
//! {prefix}{sheet:<g>}:queued:    ZSET    a sheet's rows in the queue    TTL: 30 min after the latest change (flow control, see sheet_flow)
//! {prefix}{sheet:<g>}:overflow:  LIST    rows held back at ingest       owner: the buffer step and ingest move it into the buffer
//! {prefix}{gcred:<c>}:rejected:  STRING  why a credential was rejected  owner: `sluice credentials set`
//!                                        (set only while the refused token is still stored: see credential_state)
//! {prefix}{gcred:<c>}:sheets:    SET     sheets writing with it         TTL: 30 days after the latest row
//! {prefix}{groups:<n>}:pending:<g> ZSET  a group's events in the queue  TTL: 14 days after the latest change
//! {prefix}{groups:<n>}:waiting:    ZSET  shard n's groups waiting       TTL: 14 days (see group_ledger; n = hash(g) mod 16)
//! {prefix}{groups:<n>}:seen:       ZSET  shard n's groups active lately TTL: 14 days; idle groups trimmed
//! {prefix}{groups:<n>}:about:      HASH  what each group is             TTL: 14 days; trimmed with seen
//! {prefix}{groups:<n>}:done:       ZSET  events done within 5 minutes   TTL: 5 minutes
//! ```
//!
//! The prefix is `sluice:` by default (tests use one per test); the tag is
//! the scope whose keys must share a slot (a mall, a Google project).
//!
//! # Layout
//!
//! - [`connection`] / [`connect()`]: the one connection type and the one
//!   way to open it (standalone or cluster, plain or TLS with ACL).
//! - [`keyspace`]: key names and hash tags.
//! - [`limiter`]: the sliding-window log limiter.
//! - [`bucket`]: the GCRA leaky bucket with upstream feedback.
//! - [`lock`]: the fenced lock.
//! - [`gate`]: the TTL gate and the pending mark.
//! - [`backlog`]: flow control per mall: the dirty set and its catch-up chain.
//! - [`mall_park`]: a parked mall's events, held in order until its new token.
//! - [`episode`]: failures in a row, for one alert when they start and one when they end.
//! - [`coalescing`]: a resource's pending fetch, leased until enqueued, that later webhooks join.
//! - [`delivery`]: ingest's memory of each delivery: accepted, or which attempt holds it.
//! - [`deny_cache`]: the in-process "blocked until" cache.
//! - [`trace`]: every event's journey.
//! - [`snapshot_store`]: fetched snapshots, sharded streams, idempotent.
//! - [`snapshot_entry`]: a snapshot as its stream entry holds it (one JSON field), read in either format.
//! - [`snapshot_consumer`]: the streams read as a consumer group, acknowledged, trimmed.
//! - `stream_reply` (private): stream entries read out of a reply without copying it.
//! - [`token_store`]: OAuth token pairs.
//! - [`enrolment`]: which malls and credentials are tenants, for ingest to refuse the rest.
//! - [`credential_state`]: a credential's rejection and its sheets.
//! - [`sheet_buffer`]: each Google Sheet's buffer, in-flight and parked rows.
//! - [`sheet_flow`]: flow control per sheet: rows counted in the queue, the overflow held back.
//! - [`sheet_state`]: what a sheet's flush remembers: its tail row, its header, its failures.
//! - [`group_ledger`]: which FIFO groups have events waiting, and since when.
//! - [`admission`]: the answer of a limiter or bucket.
//! - `scripts`: the Lua scripts, loaded once per process.

pub mod admission;
pub mod backlog;
pub mod bucket;
pub mod coalescing;
pub mod connect;
pub mod connection;
pub mod credential_state;
pub mod delivery;
pub mod deny_cache;
pub mod enrolment;
pub mod episode;
mod error;
pub mod gate;
pub mod group_ledger;
pub mod keyspace;
pub mod limiter;
pub mod lock;
pub mod mall_park;
mod scripts;
pub mod sheet_buffer;
pub mod sheet_flow;
pub mod sheet_state;
pub mod snapshot_consumer;
pub mod snapshot_entry;
pub mod snapshot_store;
mod stream_reply;
pub mod token_store;
pub mod trace;

pub use admission::Admission;
pub use backlog::{Admit, BacklogSize, Backlogs, Chain, ChainNext, DirtyResource, FlowControl};
pub use bucket::{Bucket, BucketLevel, BucketSpec, Buckets};
pub use coalescing::{Coalescing, MarkTimes, Taken};
pub use connect::{ClusterMode, ConnectError, ConnectSettings, MAX_RECONNECT_DELAY, Refusal, connect};
pub use connection::Connection;
pub use credential_state::CredentialState;
pub use delivery::{Attempt, Begun, Deliveries, DeliveryTimes};
pub use deny_cache::DenyCache;
pub use enrolment::Enrolments;
pub use episode::{EpisodeChange, EpisodeRule, Episodes};
pub use error::{Error, StaleReason};
pub use gate::{Entry, Gates};
pub use group_ledger::{GroupLedger, LaggingGroup, SeenGroup};
pub use keyspace::{Keyspace, Tag};
pub use limiter::{Limit, LimitSet, SlidingWindowLimiter, WindowUsage};
pub use lock::{Acquire, Lease, Locks};
pub use mall_park::{HeldEvent, ParkState, ParkedMalls, Parking};
pub use sheet_buffer::{Claim, SheetBacklog, SheetBuffers};
pub use sheet_flow::{Buffered, RowAdmit, SheetFlow};
pub use sheet_state::SheetState;
pub use snapshot_consumer::{DEFAULT_GROUP, ShardLag, SnapshotConsumer};
pub use snapshot_entry::{SNAPSHOT_FIELD, SnapshotEntry};
pub use snapshot_store::{Appended, OUTCOME_FIELD, SnapshotStore, StoredEntry, StoredFetched};
pub use token_store::{StoredToken, TokenStore};
pub use trace::{TraceEntry, TraceSlot, Traces};

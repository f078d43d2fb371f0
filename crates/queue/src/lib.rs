//! sluice's embedded queue: SQS's semantics on one machine, in memory (unit
//! tests, benchmarks) or in Redis (`sluice dev`), and an SQS-compatible
//! endpoint in front of it, so the very SQS adapters and the AWS CLI that
//! talk to SQS in AWS talk to it locally. It has both kinds of SQS queue,
//! told apart by the name as SQS does ([`QueueKind::of`]): FIFO queues
//! (`*.fifo`, the work queue, [`EmbeddedQueue`]) and standard queues (any
//! other name, the delay queue, [`EmbeddedDelayQueue`]).
//!
//! # FIFO semantics (checked by `tests/conformance` against every form)
//!
//! - A deduplication id is remembered for five minutes after its send,
//!   even after the message was deleted or purged; a duplicate is accepted
//!   with the first message's id and sequence number and never delivered.
//! - Messages of one group are delivered in order; a group is blocked while
//!   any of its messages is in flight.
//! - A receive fills its batch from one group first, then the next.
//! - When a visibility timeout expires, the messages return to the head of
//!   their group in their original order.
//! - `ApproximateReceiveCount` counts receipts; with a redrive policy, a
//!   message already received `maxReceiveCount` times is moved, on its next
//!   receive, to the tail of its group in the FIFO dead-letter queue (so
//!   the DLQ keeps group order); a redrive moves messages back.
//!
//! # Standard semantics (`tests/conformance`, the delay cases)
//!
//! - A message is not received before its delay is over: its own
//!   `DelaySeconds`, or the queue's when it names none (0 to 15 minutes).
//!   A long poll wakes when the earliest delayed message comes due.
//! - No order and no deduplication: any number of messages are in flight
//!   at once.
//! - At least once: a message not deleted within its visibility timeout is
//!   received again, its receive count one higher; with a redrive policy it
//!   moves to the (standard) dead-letter queue as on a FIFO queue.
//! - A standard queue refuses FIFO sends and a FIFO queue delayed ones
//!   ([`QueueError::WrongKind`]; each entry fails as the sender's fault).
//!
//! A standard queue is the FIFO model with every message a group of its
//! own, named by its message id: receive, delete, visibility and redrive
//! serve it unchanged. Only the send differs (`lua/send_delayed.lua`,
//! `memory/fifo/standard.rs`): a delayed message's group starts *blocked*
//! until its delay ends, exactly like a group whose message is in flight,
//! so the same reaping that returns expired in-flight messages makes it
//! receivable, and a pull reports when it comes due. It is told apart from
//! an in-flight message by its receive count, still 0
//! (`ApproximateNumberOfMessagesDelayed`). The embedded FIFO queue has no
//! delays (SQS's FIFO queues have only a queue-wide one).
//!
//! # Fairness, and how it differs from SQS
//!
//! Ready groups (something to deliver, nothing in flight) form a ring. A
//! receive serves the group at the front and blocks it; a group that
//! becomes ready again (its batch deleted, or its visibility timeout over)
//! joins the back. Every ready group is therefore served once per turn of
//! the ring, and a group with 20,000 messages delays a group with 10 by at
//! most one batch per turn. SQS instead scans its backlog in arrival order
//! and serves the first groups it finds available, looking at only the
//! first 120,000 messages: a consumer that keeps a deep group's batch
//! deleted promptly is served from that group again and again, and groups
//! whose messages sit behind it wait (one noisy shop delays the rest). The
//! benchmark (`benches/queue`, `bench/queue.md`) measures both orders side
//! by side: with 20,000 messages in one group and 10 in each of 100 others,
//! the last small group's message comes at position 1,010 here and 21,000
//! in arrival order. The embedded queue is fairer than SQS; code that must
//! be fair in AWS too cannot rely on it.
//!
//! # Redis key layout
//!
//! Every key of a store shares one hash tag, the *realm* (`sqs` unless told
//! otherwise), because a receive moves messages into a dead-letter queue
//! and a redrive moves them back atomically, and a Lua script may only
//! touch keys of one slot. `{prefix}` is the keyspace's prefix (`sluice:`).
//!
//! ```text
//! {prefix}{sqs}:queues:names        SET   every queue's name         owner: CreateQueue / DeleteQueue
//! {prefix}{sqs}:q:<name>:cfg        HASH  settings, incarnation, last sequence number
//! {prefix}{sqs}:q:<name>:body       HASH  seq -> body
//! {prefix}{sqs}:q:<name>:meta       HASH  seq -> {id, group, dedup, sent, receive count, first receive, visible at, source}
//! {prefix}{sqs}:q:<name>:order      ZSET  '<group> <seq:020>': one group's messages in order by a lex range
//! {prefix}{sqs}:q:<name>:arrival    ZSET  seq by seq: arrival order, the oldest message
//! {prefix}{sqs}:q:<name>:ready      LIST  the ring of ready groups
//! {prefix}{sqs}:q:<name>:gstate     HASH  group -> 'r' (in the ring) | 'b' (blocked)
//! {prefix}{sqs}:q:<name>:blocked    ZSET  blocked group -> ms its last in-flight (or delayed) message becomes visible
//! {prefix}{sqs}:q:<name>:dedup      HASH  dedup id -> '<message id> <seq>'       TTL: 5 min after the latest send
//! {prefix}{sqs}:q:<name>:dedupx     ZSET  dedup id by expiry ms                 TTL: 5 min after the latest send
//! {prefix}{sqs}:consumer:lease      STRING the one consumer of the store's queues  TTL: 15 s, renewed by its holder
//! ```
//!
//! A standard queue uses the same keys (its groups are its message ids,
//! and `cfg` holds its `delay`) except the two dedup keys, which it never
//! writes.
//!
//! Owners: `cfg` and the message keys belong to their queue and live until
//! `DeleteQueue`; a message's fields and members are removed by its delete,
//! by `PurgeQueue`, or by a move to the dead-letter queue or a redrive;
//! ring and group entries are removed when their group empties. The two
//! dedup keys expire five minutes after the latest send, and each id in
//! them is dropped once its own five minutes are over. The consumer lease
//! belongs to its holder, which deletes it on a clean stop; a crashed
//! holder's lapses ([`redis_store::lease`]).
//!
//! # Layout
//!
//! - [`config`]: a queue's kind, settings and name rules.
//! - [`backend`]: [`QueueBackend`], what both stores implement.
//! - [`memory`]: the in-memory store.
//! - [`redis_store`]: the Redis store (scripts in `lua/*.lua`) and its consumer lease.
//! - [`embedded`]: [`EmbeddedQueue`], the domain's `WorkQueue` port over a FIFO queue, long polling.
//! - [`embedded_delay`]: [`EmbeddedDelayQueue`], the `DelayQueue` port over a standard queue.
//! - [`sqs_api`]: the SQS-compatible endpoint; [`aws_json`]: the AWS JSON 1.0 protocol it speaks
//!   (which `sluice dev`'s Step Functions endpoint speaks too).
//! - [`error`]: the queue's errors.
//! - `receipt`: receipt handles and sequence numbers.
//! - `validation`: checks shared by both stores (names, settings, kinds).

pub mod aws_json;
pub mod backend;
pub mod config;
pub mod embedded;
pub mod embedded_delay;
pub mod error;
pub mod memory;
mod receipt;
pub mod redis_store;
pub mod sqs_api;
mod validation;

pub use backend::{Pulled, QueueBackend, QueueInfo};
pub use config::{QueueConfig, QueueKind, RedrivePolicy};
pub use embedded::EmbeddedQueue;
pub use embedded_delay::EmbeddedDelayQueue;
pub use error::QueueError;
pub use memory::MemoryBackend;
pub use redis_store::RedisBackend;
pub use redis_store::lease::{ConsumerLease, LeaseError, LeaseGuard, LeaseSettings};
pub use redis_store::lease_owner::LeaseOwner;

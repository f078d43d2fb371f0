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
//! - A receive returns at most ten messages, and fills its batch from one
//!   group first, then the next.
//! - By default ([`GroupScan::SqsFifo`]) groups are served in the order of
//!   their oldest message, and only groups with a message among the first
//!   120,000 of the queue are seen at all (see *Group scans* below).
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
//! # Group scans: as SQS FIFO, or round-robin
//!
//! Which ready groups (something to deliver, nothing in flight) a receive
//! serves is a FIFO queue's [`GroupScan`], chosen at creation
//! ([`QueueConfig::group_scan`]) and fixed from then on.
//!
//! - [`GroupScan::SqsFifo`] (the default, what a `CreateQueue` through the
//!   SQS endpoint gets, and what `sluice dev` runs): as SQS documents it.
//!   "FIFO queues scan the first 120,000 messages to determine available
//!   message groups. If a large backlog builds up in a single message
//!   group, messages from other groups sent later will remain blocked until
//!   the backlog is processed" (SQS Developer Guide, *Avoid large message
//!   backlogs with the same message group ID*); a receive "attempts to
//!   return as many messages with the same message group ID as possible",
//!   up to 10, and may add other groups' messages, each group in order
//!   (*FIFO queue delivery logic*). Modelled: a receive takes the ready
//!   group with the oldest head message (what a scan in arrival order meets
//!   first), as much of it as the batch has room for, then the next oldest;
//!   it sees only the first `window` messages of the queue in arrival order
//!   (in-flight ones count, they are still in the queue), so a group whose
//!   messages all lie beyond them is not served even when nothing else is.
//!   `window` is [`SQS_FIFO_SCAN_WINDOW`] (120,000) unless a test scales
//!   it down. A consumer that deletes a deep group's batch promptly is
//!   served from that group again and again, since its head stays the
//!   oldest: one noisy shop delays every shop behind it, here as in AWS.
//!   Not modelled: SQS's separate cap of 120,000 messages in flight (with
//!   the window full of in-flight messages a receive finds nothing either
//!   way), and any randomness in how SQS picks among groups.
//! - [`GroupScan::RoundRobin`] (opt-in, e.g. `sluice dev --group-scan
//!   round-robin`): ready groups form a ring. A receive serves the group at
//!   the front and blocks it; a group that becomes ready again joins the
//!   back, so every ready group is served once per turn of the ring and a
//!   group with 20,000 messages delays a group with 10 by at most one batch
//!   per turn. Fairer than SQS: code that must be fair in AWS cannot rely
//!   on it. Queues made before the choice existed are round-robin.
//!
//! Neither scans the backlog: both stores keep the ready groups as a ring,
//! or as an index by head sequence number, and find the window's last
//! message by rank (`memory/fifo/ready.rs`, `lua/ready_group.lua`). The
//! benchmark (`benches/queue`, `bench/queue.md`) measures both side by
//! side: with 20,000 messages in one group and 10 in each of 100 others,
//! the last small group's message comes at position 1,010 round-robin and
//! 21,000 as in SQS. A standard queue (each message a group of its own) is
//! always a ring: SQS standard queues keep no order.
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
//! {prefix}{sqs}:q:<name>:cfg        HASH  settings (group scan and window too), incarnation, last sequence number
//! {prefix}{sqs}:q:<name>:body       HASH  seq -> body
//! {prefix}{sqs}:q:<name>:meta       HASH  seq -> {id, group, dedup, sent, receive count, first receive, visible at, source}
//! {prefix}{sqs}:q:<name>:order      ZSET  '<group> <seq:020>': one group's messages in order by a lex range
//! {prefix}{sqs}:q:<name>:arrival    ZSET  seq by seq: arrival order, the oldest message
//! {prefix}{sqs}:q:<name>:ready      LIST  the ring of ready groups (round-robin), or
//!                                   ZSET  ready group by its head's sequence number (SQS FIFO)
//! {prefix}{sqs}:q:<name>:gstate     HASH  group -> 'r' (in `ready`) | 'b' (blocked)
//! {prefix}{sqs}:q:<name>:blocked    ZSET  blocked group -> ms its last in-flight (or delayed) message becomes visible
//! {prefix}{sqs}:q:<name>:dedup      HASH  dedup id -> '<message id> <seq>'       TTL: 5 min after the latest send
//! {prefix}{sqs}:q:<name>:dedupx     ZSET  dedup id by expiry ms                 TTL: 5 min after the latest send
//! {prefix}{sqs}:q:<name>:rx         HASH  receive attempt id ('c:<caller's>' | 'u:<uuid>') -> '<seq> <receive count> <visible at ms>' of each message it took  TTL: 5 min after the latest receive that took any
//! {prefix}{sqs}:q:<name>:rxx        ZSET  receive attempt id by expiry ms (5 min after the receive that took; a 'u:' one, its visibility timeout if shorter)  TTL: as rx
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
//! `ready` and group entries are removed when their group empties. The two
//! dedup keys expire five minutes after the latest send, and each id in
//! them is dropped once its own five minutes are over. The receive
//! attempt keys (`rx`, `rxx`) likewise (five minutes is SQS's
//! deduplication interval for `ReceiveRequestAttemptId`,
//! [`receive_attempt`]): each attempt is dropped once its own five minutes
//! from the receive that took its messages are over (the store's own ids,
//! only asked again within seconds after a lost answer, once their
//! visibility timeout is, if that is shorter), and both keys expire that
//! long after the latest receive that took messages.
//! The consumer lease belongs to its holder, which deletes it on a clean
//! stop; a crashed holder's lapses ([`redis_store::lease`]).
//!
//! # Layout
//!
//! - [`config`]: a queue's kind, settings (its [`GroupScan`] among them) and name rules.
//! - [`backend`]: [`QueueBackend`], what both stores implement.
//! - [`memory`]: the in-memory store (its ready groups by scan in `memory/fifo/ready.rs`).
//! - [`redis_store`]: the Redis store (scripts in `lua/*.lua`, the two scans in
//!   `lua/ready_group.lua` and `lua/receive.lua`) and its consumer lease.
//! - [`embedded`]: [`EmbeddedQueue`], the domain's `WorkQueue` port over a FIFO queue, long polling.
//! - [`embedded_delay`]: [`EmbeddedDelayQueue`], the `DelayQueue` port over a standard queue.
//! - [`sqs_api`]: the SQS-compatible endpoint; [`aws_json`]: the AWS JSON 1.0 protocol it speaks
//!   (which `sluice dev`'s Step Functions endpoint speaks too).
//! - [`error`]: the queue's errors.
//! - `receipt`: receipt handles and sequence numbers.
//! - [`receive_attempt`]: `ReceiveRequestAttemptId`, its rules and what they leave open.
//! - `validation`: checks shared by both stores (names, settings, kinds).

pub mod aws_json;
pub mod backend;
pub mod config;
pub mod embedded;
pub mod embedded_delay;
pub mod error;
pub mod memory;
mod receipt;
pub mod receive_attempt;
pub mod redis_store;
pub mod sqs_api;
mod validation;

pub use backend::{Pulled, QueueBackend, QueueInfo};
pub use config::{GroupScan, QueueConfig, QueueKind, RedrivePolicy, SQS_FIFO_SCAN_WINDOW};
pub use embedded::EmbeddedQueue;
pub use embedded_delay::EmbeddedDelayQueue;
pub use error::QueueError;
pub use memory::MemoryBackend;
pub use receive_attempt::ReceiveAttemptId;
pub use redis_store::RedisBackend;
pub use redis_store::lease::{ConsumerLease, LeaseError, LeaseGuard, LeaseSettings};
pub use redis_store::lease_owner::LeaseOwner;

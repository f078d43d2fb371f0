//! The domain of sluice: what an event is, which FIFO group it belongs to,
//! which deduplication id it carries, and the error kinds the state machine
//! matches on. This crate knows no I/O; adapters (Redis, SQS, HTTP upstreams)
//! depend on it, never the other way round.
//!
//! # Layout
//!
//! - [`event`]: a shop event (one Cafe24 webhook) and a sheet row, with field validation.
//! - [`sqs_token`]: the injective encoding of an identity into an SQS group or deduplication id.
//! - [`group`]: the FIFO group key of an event.
//! - [`dedup`]: the deduplication id of an event.
//! - [`emf`]: CloudWatch Embedded Metric Format lines, and the `Counter` rows they and `/metrics` render from.
//! - [`error_kind`]: the error names Step Functions `Retry`/`Catch` match, defined once.
//! - [`queue`]: the [`WorkQueue`] and [`DelayQueue`] ports, their messages and SQS's limits.
//! - [`work_item`]: the message body: one work item, tagged by kind.
//! - [`catch_up`]: "catch up mall M", the delayed request that carries a mall's flow-control backlog.
//! - [`secret`]: [`Secret`], a string redacted in `Debug` (tokens, client secrets, keys).
//! - [`oauth_error`]: [`OAuthError`], the RFC 6749 error body both token endpoints answer.
//! - [`upstream`]: why an upstream API or its token endpoint gave no usable answer.

pub mod catch_up;
pub mod dedup;
pub mod emf;
pub mod error_kind;
pub mod event;
pub mod group;
pub mod oauth_error;
pub mod queue;
pub mod secret;
pub mod sqs_token;
pub mod upstream;
pub mod work_item;

pub use catch_up::{CatchUpRequest, CatchUpRequests, QueueCatchUpRequests};
pub use dedup::DedupId;
pub use error_kind::{ErrorKind, PREDEFINED_ERRORS, StepError, TERMINAL_ERRORS, is_known_error_name};
pub use event::{FieldError, ResourceKind, ResourceRef, SheetRow, ShopEvent, Topic, check_resource_id};
pub use group::{GroupAbout, GroupKey};
pub use oauth_error::OAuthError;
pub use queue::{DelayQueue, Queue, WorkQueue};
pub use secret::Secret;
pub use work_item::{BufferedRow, ItemKind, SheetWork, ShopWork, WorkItem, row_trace_id};

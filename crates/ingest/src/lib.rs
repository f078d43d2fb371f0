//! sluice's webhook ingest: the front door of the shop pipeline. One axum
//! [`Router`](axum::Router) serves `POST /webhooks/cafe24` both in AWS (the
//! ingest Lambda, `functions/ingest`, under `lambda_http`) and on one
//! machine (`sluice dev`, on 127.0.0.1).
//!
//! A webhook is accepted in this order, and answered `202` only once its
//! fate is settled:
//!
//! 1. **Verify**: the request head at most 32 KiB (431); `X-API-Key` against
//!    the configured keys, in constant time (401); the body at most 256 KiB
//!    (413; a sheet row's queue message at most `MAX_MESSAGE_BYTES`, so a
//!    full pipe batch fits one Step Functions execution's input).
//! 2. **Normalise**: parse the body (400 `invalid_json`), read `event_no`
//!    against the topic table (422), `resource.mall_id` and the topic's id
//!    field (400 naming the field; ids follow the domain's one rule,
//!    [`check_resource_id`](sluice_domain::check_resource_id): never 0 or
//!    negative); the delivery id is `X-Trace-ID`, or the
//!    SHA-256 of the body. Bad input touches no Redis key and no queue.
//! 3. **Tenant**: the mall must be enrolled (its tokens stored): 422
//!    `unknown_tenant` otherwise, before any key is written ([`tenants`]).
//!    Rows: the credential, likewise.
//! 4. **Deduplicate**: a redelivery of an event already accepted is answered
//!    `duplicate`; one whose earlier request is still deciding gets 503
//!    `delivery_in_progress`, for one lease at most (`accept_lease`) even
//!    when that request died.
//! 5. **Coalesce**: a webhook for a resource whose fetch is in the queue and
//!    still to come joins that fetch instead of being enqueued (`coalesced`,
//!    `into` the pending event). The fetch step clears the mark before it
//!    reads upstream, so the stored snapshot is never older than the last
//!    webhook. With flow control ([`Ingest::with_flow_control`]), a webhook
//!    that joins nothing while its mall has a backlog goes to the mall's
//!    dirty set instead (`deferred`), drained within the mall's budget by
//!    one "drain mall" request at a time (`sluice_redis::backlog`).
//! 6. **Enqueue** through the [`batcher`]: webhooks arriving together share
//!    `SendMessageBatch`-sized calls. Only then does the resource's mark
//!    (a lease until now) become joinable, and the delivery count as
//!    accepted. If the queue does not take the message, the answer is 503
//!    (or 400 when the queue calls the entry itself wrong).
//!
//! **Back-pressure**: steps 3 to 6 run for at most `max_accepting` webhooks
//! and rows at once; one more is answered 503 `overloaded` before it
//! touches Redis. A request whose Redis work before its send outlasts
//! `accept_deadline` gives up what it holds and is answered 503
//! `deadline_exceeded`. Either way nothing is kept, the answer carries
//! `Retry-After`, and the sender's retry is accepted as a first delivery.
//!
//! A sheet row (`POST /sheets/rows`) goes through flow control per sheet
//! instead of 4 and 5 (`row_acceptance`, `sluice_redis::sheet_flow`): a
//! row buffered or held before is a `duplicate`; a sheet with
//! `sheet_flow.max_queued` rows in the queue, or rows in its overflow, has
//! the row held in its overflow (`deferred`), which joins the sheet's
//! buffer behind the queued rows; otherwise the row is enqueued.
//!
//! A request killed anywhere in 3 to 6 loses no event: see [`acceptance`]
//! for the argument and `tests/crash_points.rs` for the test of every
//! crash point.
//!
//! Every step is written to the event's trace (`received`, `duplicate`,
//! `coalesced`, `deferred`, `enqueued`, `rejected`), which `sluice trace EVENT_ID` reads.
//!
//! # Layout
//!
//! - [`ingest`]: [`Ingest`]: the router, the counters, graceful shutdown.
//! - [`server`]: [`serve`] on a TCP listener (`sluice dev`), with its connection-level limits.
//! - `idle`: which connections are idle, oldest first: the one closed when a new connection needs a slot.
//! - [`config`]: [`IngestConfig`], [`BatchConfig`], [`TopicTable`] and their defaults.
//! - [`api_keys`]: [`ApiKeys`], the constant-time key check.
//! - [`key_scope`]: what each key may do (which route; for rows, which
//!   credentials and spreadsheets).
//! - [`webhook`]: from headers and body to a [`ShopWork`](sluice_domain::ShopWork), or a [`Rejection`].
//! - [`acceptance`]: the effects of a valid webhook, in order, and why a crash between them loses nothing.
//! - [`batcher`]: the task that packs concurrent sends into batch calls.
//! - [`rejection`]: [`Rejection`] and its stable [`ErrorCode`]s, the JSON error body.
//! - [`sheet_rows`], `row_acceptance`: `POST /sheets/rows`, one row bound for a Google Sheet.
//! - [`tenants`]: only enrolled malls and credentials are taken ([`TenantPolicy`]).
//! - [`counters`]: [`Counters`] and the [`CounterSnapshot`] read from them.

pub mod acceptance;
pub mod api_keys;
pub mod batcher;
pub mod config;
pub mod counters;
mod idle;
pub mod ingest;
pub mod key_scope;
pub mod rejection;
mod row_acceptance;
pub mod server;
pub mod sheet_rows;
pub mod tenants;
pub mod webhook;

pub use acceptance::{Receipt, Status};
pub use api_keys::ApiKeys;
pub use config::{BatchConfig, ConfigError, IngestConfig, TopicTable};
pub use counters::{CounterSnapshot, Counters, RejectedCounts};
pub use ingest::{HEALTH_PATH, Ingest, WEBHOOK_PATH};
pub use key_scope::{KeyScope, SheetGrant, any_route_document, first_webhook_key};
pub use rejection::{ErrorCode, Rejection};
pub use server::serve;
pub use sheet_rows::SHEET_ROWS_PATH;
pub use tenants::TenantPolicy;

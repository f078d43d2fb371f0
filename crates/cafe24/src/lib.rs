//! sluice's Cafe24 adapter: the Admin API client the token and fetch steps
//! use, and the Cafe24 facts other crates share (webhook event numbers and
//! body shape, resource paths, rate-limit headers, error bodies).
//!
//! A Cafe24 webhook only says "product 17 of mall acme changed"; the fetch
//! step then reads product 17 through the Admin API, which every mall
//! rate-limits with a leaky bucket (`X-Api-Call-Limit: used/capacity`, 429
//! when over) and a usage quota (`X-Cafe24-*-Usage` / `-Remain`). The
//! client turns each answer into a [`FetchOutcome`] the step can act on
//! directly, with the rate-limit headers parsed, and maps it to the
//! [`sluice_domain::ErrorKind`] the state machine matches.
//!
//! Secrets (tokens, the client secret) are [`Secret`]s: redacted in `Debug`,
//! never part of an error message.
//!
//! # Layout
//!
//! - [`client`]: [`Cafe24Client`], `fetch` and `refresh` over one shared `reqwest` client.
//! - [`config`]: [`Cafe24Config`], the per-mall [`BaseUrlTemplate`], the default API version.
//! - [`fetch`]: [`FetchOutcome`] and its error-kind mapping.
//! - [`token`]: the token endpoint's response, [`TokenGrant`], [`RefreshError`].
//! - [`usage`]: the rate-limit headers, [`CallUsage`].
//! - [`error_body`]: Cafe24's `{"error":{…}}` body.
//! - [`resource`]: each resource kind's endpoint, body key and id field.
//! - [`topics`]: the webhook `event_no` table.
//! - [`webhook`]: the webhook body and its headers.

pub mod client;
pub mod config;
pub mod error_body;
pub mod fetch;
pub mod resource;
pub mod token;
pub mod topics;
pub mod usage;
pub mod webhook;

pub use client::{API_VERSION_HEADER, Cafe24Client, ClientError};
pub use config::{BaseUrlTemplate, Cafe24Config, ConfigError, DEFAULT_API_VERSION, check_mall_id};
pub use error_body::Cafe24Error;
pub use fetch::{FetchOutcome, Found, Unavailable};
pub use resource::{AdminResource, SANDBOX_VERSION_FIELD, UPDATED_DATE_FIELD, admin_resource, admin_resource_by_path};
// Shared with the Sheets client: defined in the domain crate.
pub use sluice_domain::{OAuthError, Secret};
pub use token::{RefreshError, TokenGrant, TokenResponse};
pub use topics::{Change, WEBHOOK_TOPICS, WebhookTopic, topic, topic_for};
pub use usage::{CallLimit, CallUsage};
pub use webhook::WebhookBody;

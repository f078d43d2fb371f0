//! A Cafe24 stand-in: the Admin API reads sluice makes, the OAuth token
//! endpoint, per-mall leaky buckets and usage quotas, webhooks on change,
//! fault injection, and a record of every call.
//!
//! Start one with [`Cafe24Sandbox::start`]; point a
//! [`sluice_cafe24::Cafe24Client`] at [`Cafe24Sandbox::base_url_template`]
//! (`http://127.0.0.1:PORT/malls/{mall_id}`); drive it with the methods
//! here or over HTTP under `/sandbox/…` (see [`control`]); inspect it with
//! [`Cafe24Sandbox::calls`] and [`Cafe24Sandbox::counters`].

mod admin_api;
mod bucket;
mod changes;
pub mod config;
pub mod control;
mod oauth;
pub mod record;
mod state;
mod store;
pub mod webhook;

pub use changes::ChangeReport;
pub use config::{BucketConfig, QuotaConfig, SandboxConfig, WebhookTarget};
pub use record::{CallRecord, Counters, Refusal};
pub use store::SandboxResource;
pub use webhook::WebhookDelivery;

use crate::fault::FaultConfig;
use crate::server::Server;
use changes::Edit;
use serde_json::{Map, Value};
use sluice_cafe24::TokenResponse;
use sluice_domain::ResourceKind;
use state::Shared;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why a sandbox operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    #[error("no mall `{0}` in the sandbox")]
    UnknownMall(String),
    #[error("mall `{0}` already exists")]
    MallExists(String),
    #[error("no {kind} `{id}` in this mall")]
    UnknownResource { kind: ResourceKind, id: String },
    #[error("{kind} `{id}` already exists")]
    AlreadyExists { kind: ResourceKind, id: String },
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("{0}")]
    Io(String),
}

/// A running Cafe24 sandbox. Dropping it stops the server;
/// [`Cafe24Sandbox::stop`] lets answers in flight finish first.
#[derive(Debug)]
pub struct Cafe24Sandbox {
    shared: Arc<Shared>,
    server: Server,
}

impl Cafe24Sandbox {
    /// Binds `config.listen` (port 0: a free port) and serves until stopped.
    pub async fn start(config: SandboxConfig) -> Result<Self, SandboxError> {
        let shared = Arc::new(Shared::new(&config)?);
        let router =
            admin_api::router().merge(control::router()).fallback(control::not_found).with_state(shared.clone());
        let server = Server::bind(config.listen, router).await.map_err(SandboxError::Io)?;
        Ok(Self { shared, server })
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr())
    }

    /// The per-mall base URL template for the client's configuration.
    pub fn base_url_template(&self) -> String {
        format!("{}/malls/{{mall_id}}", self.base_url())
    }

    /// New capacity and leak rate for a mall's bucket; its level carries over.
    pub fn set_bucket(&self, mall_id: &str, bucket: BucketConfig) -> Result<(), SandboxError> {
        bucket.validate().map_err(SandboxError::InvalidInput)?;
        self.shared.lock().mall_mut(mall_id)?.bucket.reconfigure(bucket, Instant::now());
        Ok(())
    }

    pub fn set_quota(&self, mall_id: &str, quota: QuotaConfig) -> Result<(), SandboxError> {
        quota.validate().map_err(SandboxError::InvalidInput)?;
        self.shared.lock().mall_mut(mall_id)?.quota.reconfigure(quota, Instant::now());
        Ok(())
    }

    /// The bucket's level now (fractional: it leaks continuously).
    pub fn bucket_level(&self, mall_id: &str) -> Result<f64, SandboxError> {
        Ok(self.shared.lock().mall(mall_id)?.bucket.level(Instant::now()))
    }

    /// Issues an access and a refresh token for a mall, as installing the
    /// app would; the mall's previous refresh token stops working, and a
    /// withdrawn access ([`Self::forbid`]) ends.
    pub fn issue_tokens(&self, mall_id: &str) -> Result<TokenResponse, SandboxError> {
        let mut guard = self.shared.lock();
        let inner = &mut *guard;
        let mall = inner.malls.get_mut(mall_id).ok_or_else(|| SandboxError::UnknownMall(mall_id.to_owned()))?;
        mall.forbidden = false;
        Ok(mall.tokens.issue(mall_id, &self.shared.tokens, &mut inner.token_rng, Instant::now()))
    }

    /// Every access token of the mall stops working now (the next call
    /// gets 401).
    pub fn expire_access_tokens(&self, mall_id: &str) -> Result<(), SandboxError> {
        self.shared.lock().mall_mut(mall_id)?.tokens.expire_access();
        Ok(())
    }

    /// The mall's refresh token stops working now (the next refresh gets
    /// `invalid_grant`).
    pub fn expire_refresh_token(&self, mall_id: &str) -> Result<(), SandboxError> {
        self.shared.lock().mall_mut(mall_id)?.tokens.expire_refresh();
        Ok(())
    }

    /// Every Admin API call of the mall is answered 403 (the shop withdrew
    /// a scope or suspended the app) until tokens are issued again.
    pub fn forbid(&self, mall_id: &str) -> Result<(), SandboxError> {
        self.shared.lock().mall_mut(mall_id)?.forbidden = true;
        Ok(())
    }

    /// Successful refreshes of this mall's token so far.
    pub fn refresh_count(&self, mall_id: &str) -> Result<u64, SandboxError> {
        Ok(self.shared.lock().mall(mall_id)?.tokens.refreshes())
    }

    /// Creates a resource (its id from `fields[id field]` or generated) and
    /// sends the "created" webhook.
    pub async fn create(
        &self,
        mall_id: &str,
        kind: ResourceKind,
        fields: Map<String, Value>,
    ) -> Result<ChangeReport, SandboxError> {
        changes::apply(&self.shared, mall_id, kind, Edit::Create(fields)).await
    }

    /// Merges `fields` into a resource and sends the "updated" webhook.
    pub async fn update(
        &self,
        mall_id: &str,
        kind: ResourceKind,
        id: &str,
        fields: Map<String, Value>,
    ) -> Result<ChangeReport, SandboxError> {
        changes::apply(&self.shared, mall_id, kind, Edit::Update(id.to_owned(), fields)).await
    }

    /// Deletes a resource (the API answers 404 for it from now on) and sends
    /// the "deleted" webhook.
    pub async fn delete(&self, mall_id: &str, kind: ResourceKind, id: &str) -> Result<ChangeReport, SandboxError> {
        changes::apply(&self.shared, mall_id, kind, Edit::Delete(id.to_owned())).await
    }

    /// Posts a delivery again with the same body and `X-Trace-ID`.
    pub async fn resend(&self, delivery: &WebhookDelivery) -> Result<WebhookDelivery, SandboxError> {
        changes::resend(&self.shared, delivery).await
    }

    /// A resource as the sandbox holds it (deleted ones too), `None` if it
    /// never existed.
    pub fn resource(
        &self,
        mall_id: &str,
        kind: ResourceKind,
        id: &str,
    ) -> Result<Option<SandboxResource>, SandboxError> {
        Ok(self.shared.lock().mall(mall_id)?.store.resource(kind, id))
    }

    pub fn resources(&self, mall_id: &str, kind: ResourceKind) -> Result<Vec<SandboxResource>, SandboxError> {
        Ok(self.shared.lock().mall(mall_id)?.store.list(kind))
    }

    pub fn set_faults(&self, faults: FaultConfig) -> Result<(), SandboxError> {
        self.shared.lock().faults.set(faults).map_err(SandboxError::InvalidInput)
    }

    pub fn faults(&self) -> FaultConfig {
        *self.shared.lock().faults.config()
    }

    pub fn set_webhook_target(&self, target: Option<WebhookTarget>) {
        self.shared.lock().webhook = target;
    }

    /// Every call recorded (up to the record limit), oldest first.
    pub fn calls(&self) -> Vec<CallRecord> {
        self.shared.lock().log.since(0)
    }

    /// Calls recorded after the one numbered `seq`.
    pub fn calls_after(&self, seq: u64) -> Vec<CallRecord> {
        self.shared.lock().log.since(seq)
    }

    pub fn counters(&self) -> Counters {
        self.shared.lock().log.counters.clone()
    }

    /// Now on the sandbox's clock, the scale of [`CallRecord::at`].
    pub fn clock(&self) -> Duration {
        self.shared.since_epoch(Instant::now())
    }

    /// Stops serving, letting answers in flight finish briefly.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

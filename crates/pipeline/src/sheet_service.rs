//! [`SheetService`]: the sheet path's steps (`buffer_step`, `flush_step`,
//! `sheet_append`, `sheet_settle`, `google_token`) over the
//! [`ServiceCore`], with the parts only that path uses: the sheets'
//! buffers and state, the credentials, the Google quotas, the alerts, the
//! Google Sheets client and the flush trigger.

use crate::alerts::Alerter;
use crate::flush_trigger::FlushTrigger;
use crate::service_core::ServiceCore;
use redis::aio::ConnectionLike;
use sluice_domain::{ErrorKind, StepError};
use sluice_redis::{CredentialState, DenyCache, SheetBuffers, SheetState, SlidingWindowLimiter, Traces};
use sluice_sheets::SheetsClient;
use std::sync::Arc;

/// The sheet path's service. Its flush trigger is a constructor argument:
/// every sheet step may ask for a flush, so a service without one does not
/// exist.
#[derive(Debug, Clone)]
pub struct SheetService<C> {
    /// What both paths share (settings, locks, traces, counts), named at
    /// each use: `self.core.locks`, never `self.locks`.
    pub(crate) core: ServiceCore<C>,
    pub(crate) buffers: SheetBuffers<C>,
    pub(crate) sheet_state: SheetState<C>,
    pub(crate) credentials: CredentialState<C>,
    /// The credentials' and the project's Google quotas.
    pub(crate) limiter: SlidingWindowLimiter<C>,
    pub(crate) alerter: Alerter<C>,
    /// How flushes are asked for (the flush queue).
    pub(crate) trigger: Arc<dyn FlushTrigger>,
    /// The Google Sheets client: only the flush calls Google, so the
    /// buffer step and `sluice credentials` run without one (a deployment
    /// without `SLUICE_GOOGLE_CLIENT_ID` has the sheet path off).
    sheets: Option<SheetsClient>,
}

impl<C: ConnectionLike + Clone + Send + Sync> SheetService<C> {
    pub fn new(core: ServiceCore<C>, trigger: Arc<dyn FlushTrigger>) -> Self {
        let (conn, keyspace) = (core.conn.clone(), core.keyspace.clone());
        Self {
            buffers: SheetBuffers::new(conn.clone(), keyspace.clone()),
            sheet_state: SheetState::new(conn.clone(), keyspace.clone()),
            credentials: CredentialState::new(conn.clone(), keyspace.clone()),
            limiter: google_limiter(&core),
            alerter: Alerter::new(conn, keyspace, None, core.config.sheets.alert_window),
            trigger,
            sheets: None,
            core,
        }
    }

    /// The core this service runs on: the plan and failure steps, the
    /// settings, the counts, the traces, the group ledger.
    pub fn core(&self) -> &ServiceCore<C> {
        &self.core
    }

    /// The rows' logs (trace ids `row:<credential>:<row id>`).
    pub fn traces(&self) -> &Traces<C> {
        self.core.traces()
    }

    /// Lets the flush call Google Sheets.
    pub fn with_sheets(mut self, client: SheetsClient) -> Self {
        self.sheets = Some(client);
        self
    }

    /// Sends alerts to a Slack-compatible incoming-webhook URL.
    pub fn with_alert_url(mut self, url: Option<String>) -> Self {
        self.alerter = self.alerter.with_url(url);
        self
    }

    pub(crate) fn sheets_client(&self) -> Result<&SheetsClient, StepError> {
        self.sheets
            .as_ref()
            .ok_or_else(|| StepError::new(ErrorKind::Internal, "no Google Sheets client configured for the sheet path"))
    }
}

/// The Google quotas' limiter, with its own deny cache.
pub(crate) fn google_limiter<C: ConnectionLike + Clone + Send + Sync>(
    core: &ServiceCore<C>,
) -> SlidingWindowLimiter<C> {
    SlidingWindowLimiter::new(core.conn.clone(), core.keyspace.clone(), Arc::new(DenyCache::new()))
}

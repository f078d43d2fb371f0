//! What `sluice status` reads about a mall or a Google credential: the
//! state the steps keep in Redis, read through the same names the steps
//! use, so the command never rebuilds a key by hand. Reads only:
//! [`StatusReader`] holds the read parts of both services, built from the
//! core alone, so the command needs neither a Cafe24 client nor a flush
//! queue.

use crate::flush_step::{Spend, quota_set};
use crate::google_token::GOOGLE;
use crate::service_core::ServiceCore;
use crate::sheet_io::FlushRequest;
use crate::sheet_service::google_limiter;
use crate::shop_service::{ADMIN_API, mall_bucket, shop_buckets};
use redis::aio::ConnectionLike;
use sluice_domain::StepError;
use sluice_redis::{
    BacklogSize, Backlogs, Buckets, CredentialState, ParkState, ParkedMalls, SheetBacklog, SheetBuffers, SheetState,
    SlidingWindowLimiter, StoredToken, Tag, WindowUsage,
};
use std::time::Duration;

/// A mall's Admin API bucket and token.
#[derive(Debug, Clone, PartialEq)]
pub struct MallStatus {
    pub mall_id: String,
    /// Units in the bucket now (Cafe24 answers 429 above the capacity).
    pub bucket_units: f64,
    pub bucket_capacity: u32,
    /// How long until the bucket is empty.
    pub bucket_empty_in: Duration,
    pub token: Option<TokenTimes>,
    /// Flow control: its messages counted in the queue and its dirty
    /// resources (waiting for its catch-up runs).
    pub backlog: BacklogSize,
    /// Parked (Cafe24 refused its token) or releasing, with its events held.
    pub hold: Option<ParkState>,
}

/// When a stored token pair expires (ms since the epoch); never the tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenTimes {
    pub access_expires_ms: u64,
    pub refresh_expires_ms: u64,
}

impl From<StoredToken> for TokenTimes {
    fn from(t: StoredToken) -> Self {
        Self { access_expires_ms: t.access_expires_ms, refresh_expires_ms: t.refresh_expires_ms }
    }
}

/// A Google credential's quotas, token and sheets.
#[derive(Debug, Clone, PartialEq)]
pub struct CredentialStatus {
    pub credential_id: String,
    /// The credential's write quota, then the project's (shared by all).
    pub writes: [WindowUsage; 2],
    /// The same for reads (verifying an uncertain append, the header check).
    pub reads: [WindowUsage; 2],
    /// Why it was rejected, when it waits for a person.
    pub rejected: Option<String>,
    pub token: Option<TokenTimes>,
    pub sheets: Vec<SheetStatus>,
}

/// One sheet written with a credential, and the rows it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SheetStatus {
    pub spreadsheet_id: String,
    pub sheet_gid: u64,
    pub backlog: SheetBacklog,
    /// Rows of sluice's found in the sheet more than once lately (an
    /// append Google applied past the apply horizon: `sheet_resent`).
    pub duplicated: u64,
}

/// Reads a mall's or a credential's state (and, through [`Self::core`],
/// the group ledger and the traces).
#[derive(Debug, Clone)]
pub struct StatusReader<C> {
    core: ServiceCore<C>,
    buckets: Buckets<C>,
    limiter: SlidingWindowLimiter<C>,
    credentials: CredentialState<C>,
    buffers: SheetBuffers<C>,
    sheet_state: SheetState<C>,
}

impl<C: ConnectionLike + Clone + Send + Sync> StatusReader<C> {
    pub fn new(core: ServiceCore<C>) -> Self {
        let (conn, keyspace) = (core.conn.clone(), core.keyspace.clone());
        Self {
            buckets: shop_buckets(&core),
            limiter: google_limiter(&core),
            credentials: CredentialState::new(conn.clone(), keyspace.clone()),
            buffers: SheetBuffers::new(conn.clone(), keyspace.clone()),
            sheet_state: SheetState::new(conn, keyspace),
            core,
        }
    }

    /// The core it reads through: the group ledger, the traces.
    pub fn core(&self) -> &ServiceCore<C> {
        &self.core
    }

    pub async fn mall_status(&self, mall_id: &str) -> Result<MallStatus, StepError> {
        let core = &self.core;
        let bucket = mall_bucket(&self.buckets, &core.config, mall_id)?;
        let level = self.buckets.level(&bucket).await?;
        let token = core.tokens.get(&Tag::for_mall(mall_id), ADMIN_API).await?;
        let backlogs = Backlogs::new(core.conn.clone(), core.keyspace.clone(), core.config.catch_up.flow.clone())?;
        let backlog = backlogs.size(&Tag::for_mall(mall_id)).await?;
        let hold = ParkedMalls::new(core.conn.clone(), core.keyspace.clone()).state(&Tag::for_mall(mall_id)).await?;
        Ok(MallStatus {
            mall_id: mall_id.to_owned(),
            bucket_units: level.units,
            bucket_capacity: bucket.capacity(),
            bucket_empty_in: level.backlog,
            token: token.map(TokenTimes::from),
            backlog,
            hold,
        })
    }

    pub async fn credential_status(&self, credential_id: &str) -> Result<CredentialStatus, StepError> {
        let pair = |usage: Vec<WindowUsage>| -> Result<[WindowUsage; 2], StepError> {
            usage.try_into().map_err(|u: Vec<_>| {
                StepError::new(sluice_domain::ErrorKind::Internal, format!("{} quota readings, not 2", u.len()))
            })
        };
        let set = |spend| quota_set(&self.limiter, &self.core.config.sheets, credential_id, spend);
        let writes = pair(self.limiter.usage(&set(Spend::Write)?).await?)?;
        let reads = pair(self.limiter.usage(&set(Spend::Read)?).await?)?;
        let mut sheets = Vec::new();
        for member in self.credentials.sheets(credential_id).await? {
            let Some(request) = FlushRequest::from_member(&member) else { continue };
            let sheet = Tag::for_sheet(&request.sheet);
            let backlog = self.buffers.backlog(&sheet).await?;
            let duplicated = self.sheet_state.duplicated(&sheet).await?;
            let (spreadsheet_id, sheet_gid) = (request.spreadsheet_id, request.sheet_gid);
            sheets.push(SheetStatus { spreadsheet_id, sheet_gid, backlog, duplicated });
        }
        sheets.sort_by(|a, b| (&a.spreadsheet_id, a.sheet_gid).cmp(&(&b.spreadsheet_id, b.sheet_gid)));
        Ok(CredentialStatus {
            credential_id: credential_id.to_owned(),
            writes,
            reads,
            rejected: self.credentials.rejected(credential_id).await?,
            token: self.core.tokens.get(&Tag::for_credential(credential_id), GOOGLE).await?.map(TokenTimes::from),
            sheets,
        })
    }
}

//! A Google credential's access token: read from the token store, refreshed
//! through the OAuth2 refresh grant when it is close to expiry or Google
//! answered 401, and stored again. Google does not rotate refresh tokens,
//! so two workers refreshing at once both get good tokens: no lock needed
//! (unlike Cafe24's, see `token_step`).
//!
//! [`SheetService::set_google_credential`] is what `sluice credentials
//! set` calls: it stores a new refresh token, clears the credential's
//! rejection, puts every row parked for it back at the head of its sheet's
//! buffer and asks for those sheets' flushes: the redrive is immediate, not
//! a blind retry on a timer that may come days after the user fixed the
//! credential.
//!
//! A token comes with which stored refresh token it was had with
//! ([`GoogleToken::read`]): a refusal rejects the credential only while
//! that one is still stored (`CredentialState::reject`), so a flush whose
//! call with the old token fails just after a person set a new one does
//! not mark the new one rejected.
//!
//! For the same reason a refreshed token is stored only while the refresh
//! token it was had with is still stored (`TokenStore::put_if_refresh`):
//! a refresh answered after a person set a new credential would otherwise
//! put the old refresh token back over theirs, silently undoing the fix.
//! The flush then reads the store once more and uses what the person set.

use crate::service_core::now_ms;
use crate::sheet_io::FlushRequest;
use crate::sheet_service::SheetService;
use crate::suggested_command::command;
use redis::aio::ConnectionLike;
use sluice_cafe24::Secret;
use sluice_domain::{ErrorKind, StepError};
use sluice_redis::{StoredToken, Tag, credential_state};
use sluice_sheets::RefreshError;
use std::time::Duration;

/// The token's name under the credential's tag.
pub const GOOGLE: &str = credential_state::GOOGLE_TOKEN;

/// Google refresh tokens have no stated lifetime; the stored pair lives this
/// long after its latest refresh (a credential unused for six months is
/// revoked by Google anyway).
const REFRESH_LIFETIME: Duration = Duration::from_secs(180 * 24 * 3600);

/// Which refresh token a flush read from the token store (`None`: none
/// was stored): what a refusal of the credential is checked against.
pub(crate) type CredentialRead = Option<Secret>;

/// An access token and the stored credential it was had with.
#[derive(Debug)]
pub(crate) struct GoogleToken {
    pub access: Secret,
    pub read: CredentialRead,
    /// Just refreshed: a 401 to it is Google refusing the credential. One
    /// read from the store may be stale (or the one `sluice credentials
    /// set` stored), so a 401 to it earns a refresh first, whatever the
    /// run refreshed before: a flag for the whole run parked a credential
    /// a person had just set, on the access token stored with it.
    pub fresh: bool,
}

/// Why no access token could be had.
#[derive(Debug)]
pub(crate) enum TokenProblem {
    /// Google refused the credential (revoked, expired, unknown, or none
    /// stored): a person must update it.
    Rejected { why: String, read: CredentialRead },
    /// Google could not be asked now; try later.
    Unavailable(StepError),
}

/// How one read (and perhaps refresh) of the stored credential ended.
enum Attempt {
    Got(GoogleToken),
    /// Refreshed, but another refresh token (or none) is stored now: the
    /// refreshed token was not saved; its `read` is the one refreshed with.
    Superseded(GoogleToken),
}

impl<C: ConnectionLike + Clone + Send + Sync> SheetService<C> {
    /// A usable access token for `credential`, refreshed first when `force`
    /// (Google just answered 401 to the stored one) or close to expiry.
    pub(crate) async fn google_token(&self, credential: &str, force: bool) -> Result<GoogleToken, TokenProblem> {
        match self.read_or_refresh(credential, force).await? {
            Attempt::Got(token) => Ok(token),
            // A person set a new credential while the refresh was in the
            // air. Theirs is what they mean to be used (perhaps another
            // Google account, the one the sheet is shared with now; the old
            // grant may be revoked next), so it is read and used, not the
            // old one's fresh access token. `force` was about the old
            // stored access token: one stored with the new credential
            // deserves a try (a 401 to it earns a refresh, it is not
            // `fresh`). Only once more: should the store change again
            // under that refresh, its token is used with `read` the one it
            // was had with, so a refusal of it rejects nothing newer.
            Attempt::Superseded(_) => match self.read_or_refresh(credential, false).await? {
                Attempt::Got(token) | Attempt::Superseded(token) => Ok(token),
            },
        }
    }

    async fn read_or_refresh(&self, credential: &str, force: bool) -> Result<Attempt, TokenProblem> {
        let (tag, tokens) = (Tag::for_credential(credential), &self.core.tokens);
        let unavailable = |e: sluice_redis::Error| TokenProblem::Unavailable(e.into());
        let stored = tokens.get(&tag, GOOGLE).await.map_err(unavailable)?;
        let Some(stored) = stored else {
            let set = command(&["sluice", "credentials", "set", credential]);
            let why = format!("no Google token for credential {credential}: set it with `{set} …`");
            return Err(TokenProblem::Rejected { why, read: None });
        };
        let refresh = Secret::new(stored.refresh_token.clone());
        let margin = self.core.config.token_refresh_margin.as_millis() as u64;
        if !force && !stored.access_token.is_empty() && stored.access_expires_ms > now_ms() + margin {
            let access = Secret::new(stored.access_token);
            return Ok(Attempt::Got(GoogleToken { access, read: Some(refresh), fresh: false }));
        }
        let client = self.sheets_client().map_err(TokenProblem::Unavailable)?;
        let grant = match client.refresh(&refresh).await {
            Ok(grant) => grant,
            Err(e) if e.error_kind() == ErrorKind::CredentialRejected => {
                let why = format!("Google refused credential {credential}'s refresh: {e}");
                return Err(TokenProblem::Rejected { why, read: Some(refresh) });
            }
            Err(e) => return Err(TokenProblem::Unavailable(refresh_failure(credential, &e))),
        };
        let now = now_ms();
        let token = StoredToken {
            access_token: grant.access_token.expose().to_owned(),
            access_expires_ms: u64::try_from(grant.expires_at_unix_ms).unwrap_or(0),
            refresh_token: grant.refresh_token.as_ref().map_or(stored.refresh_token, |t| t.expose().to_owned()),
            refresh_expires_ms: now + REFRESH_LIFETIME.as_millis() as u64,
        };
        let saved = tokens.put_if_refresh(&tag, GOOGLE, &token, now, refresh.expose()).await.map_err(unavailable)?;
        if !saved {
            return Ok(Attempt::Superseded(GoogleToken {
                access: grant.access_token,
                read: Some(refresh),
                fresh: true,
            }));
        }
        // What is stored now: a grant may bring a new refresh token.
        let read = Some(Secret::new(token.refresh_token));
        Ok(Attempt::Got(GoogleToken { access: grant.access_token, read, fresh: true }))
    }

    /// Stores `refresh_token` for `credential` (with an access token if one
    /// is known), clears its rejection and redrives every row parked for
    /// it. Returns how many rows were redriven.
    pub async fn set_google_credential(
        &self,
        credential: &str,
        refresh_token: &Secret,
        access_token: Option<(&Secret, Duration)>,
    ) -> Result<u64, StepError> {
        if credential.is_empty() || refresh_token.expose().is_empty() {
            return Err(StepError::new(ErrorKind::InvalidRequest, "a credential id and a refresh token are required"));
        }
        let now = now_ms();
        let token = StoredToken {
            access_token: access_token.map_or(String::new(), |(t, _)| t.expose().to_owned()),
            access_expires_ms: access_token.map_or(0, |(_, ttl)| now + ttl.as_millis() as u64),
            refresh_token: refresh_token.expose().to_owned(),
            refresh_expires_ms: now + REFRESH_LIFETIME.as_millis() as u64,
        };
        self.core.tokens.put(&Tag::for_credential(credential), GOOGLE, &token, now).await?;
        self.redrive_credential(credential).await
    }

    /// Clears `credential`'s rejection and puts every row parked for its
    /// sheets back at the head of their buffers, asking for their flushes
    /// (after a person fixed a sheet, or the credential). Returns how many
    /// rows moved.
    pub async fn redrive_credential(&self, credential: &str) -> Result<u64, StepError> {
        self.credentials.accept(credential).await?;
        let mut redriven = 0;
        for member in self.credentials.sheets(credential).await? {
            match FlushRequest::from_member(&member) {
                Some(request) => redriven += self.redrive_sheet(&request).await?,
                None => tracing::warn!(credential, "unreadable sheet entry skipped"),
            }
        }
        Ok(redriven)
    }
}

fn refresh_failure(credential: &str, e: &RefreshError) -> StepError {
    StepError::new(e.error_kind(), format!("refreshing Google credential {credential}'s token: {e}"))
}

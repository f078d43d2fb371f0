//! OAuth as Google's token endpoint does it for an installed app: clients
//! (one per project), a refresh token per user grant, access tokens with a
//! lifetime.
//!
//! - A refresh grant (`grant_type=refresh_token`) returns a new access
//!   token and no new refresh token: Google's refresh tokens do not rotate,
//!   and a user may hold several, each valid until revoked.
//! - An access token works until its lifetime ends or it is expired on
//!   demand. Expired tokens are remembered for an hour so a late call is
//!   told `ACCESS_TOKEN_EXPIRED` rather than that the token is unknown.
//! - Revoking a user's refresh tokens also ends the access tokens issued
//!   under them, as revoking a grant does at Google.
//!
//! Only SHA-256 digests of secrets and tokens are kept. A presented client
//! secret is compared with `subtle`'s constant-time equality, and tokens
//! are looked up by digest, so timing says nothing about how much of a
//! secret was right; and neither `Debug` nor the control plane can show a
//! token after it was handed out.

use rand::distr::{Alphanumeric, SampleString};
use rand::rngs::StdRng;
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// The scope every sandbox access token carries.
pub(crate) const SCOPE: &str = "https://www.googleapis.com/auth/spreadsheets";

/// How long an expired access token is still recognised as one.
const REMEMBER_EXPIRED: Duration = Duration::from_secs(3600);

/// Random characters after a token's prefix.
const TOKEN_CHARS: usize = 40;

type Digest = [u8; 32];

fn digest(text: &str) -> Digest {
    Sha256::digest(text.as_bytes()).into()
}

/// Who an access token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    pub(crate) client_id: String,
    pub(crate) user: String,
}

/// Why a Bearer token was refused: the `reason` of the 401's `ErrorInfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthFailure {
    Missing,
    Unknown,
    Expired,
}

/// A token endpoint refusal in RFC 6749's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OAuthRefusal {
    pub(crate) status: u16,
    pub(crate) error: &'static str,
    pub(crate) description: String,
}

impl OAuthRefusal {
    pub(crate) fn new(status: u16, error: &'static str, description: impl Into<String>) -> Self {
        Self { status, error, description: description.into() }
    }
}

/// A successful refresh: the access token and its lifetime.
#[derive(Debug)]
pub(crate) struct Issued {
    pub(crate) caller: Caller,
    pub(crate) access_token: String,
    pub(crate) expires_in: Duration,
}

/// What the token endpoint was sent.
#[derive(Debug, Default)]
pub(crate) struct TokenRequest<'a> {
    pub(crate) grant_type: Option<&'a str>,
    pub(crate) client_id: Option<&'a str>,
    pub(crate) client_secret: Option<&'a str>,
    pub(crate) refresh_token: Option<&'a str>,
}

#[derive(Debug)]
struct RefreshGrant {
    caller: Caller,
    revoked: bool,
}

#[derive(Debug)]
struct AccessGrant {
    caller: Caller,
    expires: Instant,
}

/// Every client, grant and access token.
#[derive(Debug)]
pub(crate) struct OAuthBook {
    /// Client id → digest of its secret.
    clients: HashMap<String, Digest>,
    refresh: HashMap<Digest, RefreshGrant>,
    access: HashMap<Digest, AccessGrant>,
    ttl: Duration,
    rng: StdRng,
}

impl OAuthBook {
    pub(crate) fn new(ttl: Duration) -> Self {
        // Tokens come from OS entropy: a sandbox served on a port should
        // not hand out guessable tokens.
        Self { clients: HashMap::new(), refresh: HashMap::new(), access: HashMap::new(), ttl, rng: rand::make_rng() }
    }

    /// Adds a client, or gives an existing one a new secret.
    pub(crate) fn add_client(&mut self, client_id: &str, client_secret: &str) {
        self.clients.insert(client_id.to_owned(), digest(client_secret));
    }

    /// A new refresh token for `user`'s grant to `client_id`. Refreshing
    /// it needs that client's credentials: until a client with that id is
    /// added, it is refused as `invalid_client`.
    pub(crate) fn issue_refresh(&mut self, client_id: &str, user: &str) -> String {
        let token = format!("1//{}", Alphanumeric.sample_string(&mut self.rng, TOKEN_CHARS));
        let caller = Caller { client_id: client_id.to_owned(), user: user.to_owned() };
        self.refresh.insert(digest(&token), RefreshGrant { caller, revoked: false });
        token
    }

    /// The caller a `Bearer` token speaks for.
    pub(crate) fn authenticate(&self, bearer: Option<&str>, now: Instant) -> Result<Caller, AuthFailure> {
        let token = bearer.ok_or(AuthFailure::Missing)?;
        let grant = self.access.get(&digest(token)).ok_or(AuthFailure::Unknown)?;
        if grant.expires > now { Ok(grant.caller.clone()) } else { Err(AuthFailure::Expired) }
    }

    /// The refresh grant, checked in Google's order: the client's
    /// credentials, the grant type, then the refresh token.
    pub(crate) fn refresh(&mut self, request: &TokenRequest<'_>, now: Instant) -> Result<Issued, OAuthRefusal> {
        let client_id = request.client_id.unwrap_or_default();
        let client_ok = match (self.clients.get(client_id), request.client_secret) {
            (Some(secret), Some(presented)) => bool::from(secret.ct_eq(&digest(presented))),
            _ => false,
        };
        if !client_ok {
            return Err(OAuthRefusal::new(401, "invalid_client", "Unauthorized"));
        }
        match request.grant_type {
            Some("refresh_token") => {}
            None => return Err(OAuthRefusal::new(400, "invalid_request", "Missing required parameter: grant_type")),
            Some(other) => {
                return Err(OAuthRefusal::new(400, "unsupported_grant_type", format!("Invalid grant_type: {other}")));
            }
        }
        let Some(token) = request.refresh_token.filter(|t| !t.is_empty()) else {
            return Err(OAuthRefusal::new(400, "invalid_request", "Missing required parameter: refresh_token"));
        };
        let grant =
            self.refresh.get(&digest(token)).ok_or_else(|| OAuthRefusal::new(400, "invalid_grant", "Bad Request"))?;
        if grant.revoked {
            return Err(OAuthRefusal::new(400, "invalid_grant", "Token has been expired or revoked."));
        }
        if grant.caller.client_id != client_id {
            return Err(OAuthRefusal::new(401, "unauthorized_client", "Unauthorized"));
        }
        let caller = grant.caller.clone();
        self.access.retain(|_, g| g.expires + REMEMBER_EXPIRED > now);
        let access_token = format!("ya29.{}", Alphanumeric.sample_string(&mut self.rng, TOKEN_CHARS));
        self.access.insert(digest(&access_token), AccessGrant { caller: caller.clone(), expires: now + self.ttl });
        Ok(Issued { caller, access_token, expires_in: self.ttl })
    }

    /// Every access token of `user` stops working now.
    pub(crate) fn expire_access(&mut self, user: &str, now: Instant) {
        for grant in self.access.values_mut().filter(|g| g.caller.user == user) {
            grant.expires = grant.expires.min(now);
        }
    }

    /// Every refresh token of `user` stops working now, and with them the
    /// access tokens issued under them.
    pub(crate) fn revoke_refresh(&mut self, user: &str, now: Instant) {
        for grant in self.refresh.values_mut().filter(|g| g.caller.user == user) {
            grant.revoked = true;
        }
        self.expire_access(user, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(secret: &'a str, token: &'a str) -> TokenRequest<'a> {
        TokenRequest {
            grant_type: Some("refresh_token"),
            client_id: Some("app"),
            client_secret: Some(secret),
            refresh_token: Some(token),
        }
    }

    #[test]
    fn refresh_checks_the_client_then_the_token() {
        let (mut book, t0) = (OAuthBook::new(Duration::from_secs(60)), Instant::now());
        book.add_client("app", "s3cret");
        let token = book.issue_refresh("app", "ann");
        assert_eq!(book.refresh(&request("wrong", &token), t0).unwrap_err().error, "invalid_client");
        assert_eq!(book.refresh(&request("s3cret", "1//nope"), t0).unwrap_err().error, "invalid_grant");
        let issued = book.refresh(&request("s3cret", &token), t0).unwrap();
        let caller = book.authenticate(Some(&issued.access_token), t0).unwrap();
        assert_eq!(caller, Caller { client_id: "app".into(), user: "ann".into() });
        // The refresh token does not rotate.
        assert!(book.refresh(&request("s3cret", &token), t0).is_ok());
        let later = t0 + Duration::from_secs(60);
        assert_eq!(book.authenticate(Some(&issued.access_token), later), Err(AuthFailure::Expired));
        assert_eq!(book.authenticate(Some("ya29.unknown"), t0), Err(AuthFailure::Unknown));
        assert_eq!(book.authenticate(None, t0), Err(AuthFailure::Missing));
    }

    #[test]
    fn revoking_ends_the_grant_and_its_access_tokens() {
        let (mut book, t0) = (OAuthBook::new(Duration::from_secs(60)), Instant::now());
        book.add_client("app", "s3cret");
        let (ann, bob) = (book.issue_refresh("app", "ann"), book.issue_refresh("app", "bob"));
        let access = book.refresh(&request("s3cret", &ann), t0).unwrap().access_token;
        book.revoke_refresh("ann", t0);
        let refused = book.refresh(&request("s3cret", &ann), t0).unwrap_err();
        assert_eq!(
            (refused.error, refused.description.as_str()),
            ("invalid_grant", "Token has been expired or revoked.")
        );
        assert_eq!(book.authenticate(Some(&access), t0), Err(AuthFailure::Expired));
        assert!(book.refresh(&request("s3cret", &bob), t0).is_ok());
        let fresh = book.issue_refresh("app", "ann");
        assert!(book.refresh(&request("s3cret", &fresh), t0).is_ok());
    }
}

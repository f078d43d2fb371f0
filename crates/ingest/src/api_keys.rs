//! The `X-API-Key` check. Cafe24 sends the key the app registered with each
//! webhook; the receiver compares it with its own.
//!
//! Only the SHA-256 digests of the configured keys are kept, and a presented
//! key is hashed and compared with every digest using `subtle`'s
//! constant-time equality, without stopping at the first match. The time
//! taken therefore says nothing about how much of a key was right, nor
//! (since digests have one length) about the keys' lengths, nor which key
//! matched. Several keys may be configured at once so that a key can be
//! rotated without a window of 401s. Each key carries what it may do
//! ([`KeyScope`]): the route it may post to, and for rows the credentials
//! and spreadsheets it may write to.
//!
//! The keys themselves are never stored, so neither `Debug` nor a log line
//! can show them.

use crate::config::ConfigError;
use crate::key_scope::{self, KeyScope};
use sha2::{Digest, Sha256};
use sluice_cafe24::Secret;
use std::fmt;
use subtle::{ConditionallySelectable, ConstantTimeEq};

/// The accepted API keys, kept as digests, each with its scope.
#[derive(Clone)]
pub struct ApiKeys {
    keys: Vec<([u8; 32], KeyScope)>,
}

impl ApiKeys {
    /// Webhook keys: at least one; none may be empty or carry surrounding
    /// whitespace (an HTTP header value cannot, so such a key could never
    /// match).
    pub fn new(keys: impl IntoIterator<Item = Secret>) -> Result<Self, ConfigError> {
        let webhooks = KeyScope { webhooks: true, sheets: None };
        Self::scoped(keys.into_iter().map(|key| (key, webhooks.clone())))
    }

    /// Keys with their scopes.
    pub fn scoped(keys: impl IntoIterator<Item = (Secret, KeyScope)>) -> Result<Self, ConfigError> {
        let mut digests = Vec::new();
        for (i, (key, scope)) in keys.into_iter().enumerate() {
            let text = key.expose();
            if text.is_empty() {
                return Err(ConfigError::ApiKey(format!("key {} is empty", i + 1)));
            }
            if text.trim() != text || text.bytes().any(|b| !(0x20..0x7f).contains(&b)) {
                return Err(ConfigError::ApiKey(format!(
                    "key {} must be visible ASCII without surrounding spaces (it is sent as an HTTP header)",
                    i + 1
                )));
            }
            digests.push((digest(text.as_bytes()), scope));
        }
        if digests.is_empty() {
            return Err(ConfigError::ApiKey("no API key configured".into()));
        }
        Ok(Self { keys: digests })
    }

    /// Keys from the keys secret (`SLUICE_API_KEYS`): a comma-separated
    /// list of webhook keys, or the JSON form that scopes each key
    /// ([`crate::key_scope`]).
    pub fn from_list(list: &Secret) -> Result<Self, ConfigError> {
        let keys = key_scope::parse(list.expose())?;
        Self::scoped(keys.into_iter().map(|(key, scope)| (Secret::new(key), scope)))
    }

    /// The scope of the key `presented` is, or `None` when it is none of
    /// them (or there is no header). Every digest is compared, and the
    /// match chosen without a branch on any comparison.
    pub fn verify(&self, presented: Option<&[u8]>) -> Option<&KeyScope> {
        let presented = digest(presented?);
        let mut found = 0u32;
        for (i, (key, _)) in self.keys.iter().enumerate() {
            found = u32::conditional_select(&found, &(i as u32 + 1), key.ct_eq(&presented));
        }
        found.checked_sub(1).map(|i| &self.keys[i as usize].1)
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKeys({} × ***)", self.keys.len())
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_any_configured_key_and_nothing_else() {
        let keys = ApiKeys::from_list(&Secret::new("old-key-123, new-key-456")).unwrap();
        assert_eq!(keys.len(), 2);
        assert!(keys.verify(Some(b"old-key-123")).is_some());
        assert!(keys.verify(Some(b"new-key-456")).is_some());
        assert!(keys.verify(Some(b"new-key-45")).is_none());
        assert!(keys.verify(Some(b"new-key-4567")).is_none());
        assert!(keys.verify(Some(b"")).is_none());
        assert!(keys.verify(None).is_none());
    }

    #[test]
    fn each_key_answers_with_its_own_scope() {
        let keys = ApiKeys::from_list(&Secret::new(
            r#"{"webhooks": ["hook-key"], "sheets": [{"key": "form-key", "credentials": ["cred-1"]}]}"#,
        ))
        .unwrap();
        let hook = keys.verify(Some(b"hook-key")).unwrap();
        assert!(hook.webhooks && hook.sheets.is_none());
        let form = keys.verify(Some(b"form-key")).unwrap();
        assert!(!form.webhooks);
        assert_eq!(form.sheets.as_ref().unwrap().allows("cred-1", "any"), Ok(()));
    }

    #[test]
    fn refuses_keys_that_could_never_match() {
        assert!(ApiKeys::from_list(&Secret::new(" , ")).unwrap_err().to_string().contains("no API key"));
        let err = ApiKeys::new([Secret::new("ok"), Secret::new("tab\there")]).unwrap_err();
        assert!(err.to_string().contains("key 2"), "{err}");
        assert!(ApiKeys::new([Secret::new("")]).is_err());
    }

    #[test]
    fn debug_shows_no_key() {
        let keys = ApiKeys::from_list(&Secret::new("hunter2-secret")).unwrap();
        let shown = format!("{keys:?}");
        assert_eq!(shown, "ApiKeys(1 × ***)");
    }
}

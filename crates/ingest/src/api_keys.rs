//! The `X-API-Key` check. Cafe24 sends the key the app registered with each
//! webhook; the receiver compares it with its own.
//!
//! Only the SHA-256 digests of the configured keys are kept, and a presented
//! key is hashed and compared with every digest using `subtle`'s
//! constant-time equality, without stopping at the first match. The time
//! taken therefore says nothing about how much of a key was right, nor
//! (since digests have one length) about the keys' lengths, nor which key
//! matched. Several keys may be configured at once so that a key can be
//! rotated without a window of 401s.
//!
//! The keys themselves are never stored, so neither `Debug` nor a log line
//! can show them.

use crate::config::ConfigError;
use sha2::{Digest, Sha256};
use sluice_cafe24::Secret;
use std::fmt;
use subtle::{Choice, ConstantTimeEq};

/// The accepted API keys, kept as digests.
#[derive(Clone)]
pub struct ApiKeys {
    digests: Vec<[u8; 32]>,
}

impl ApiKeys {
    /// At least one key; none may be empty or carry surrounding whitespace
    /// (an HTTP header value cannot, so such a key could never match).
    pub fn new(keys: impl IntoIterator<Item = Secret>) -> Result<Self, ConfigError> {
        let mut digests = Vec::new();
        for (i, key) in keys.into_iter().enumerate() {
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
            digests.push(digest(text.as_bytes()));
        }
        if digests.is_empty() {
            return Err(ConfigError::ApiKey("no API key configured".into()));
        }
        Ok(Self { digests })
    }

    /// Keys from a comma-separated list (`SLUICE_API_KEYS`); spaces around
    /// each key are dropped.
    pub fn from_list(list: &Secret) -> Result<Self, ConfigError> {
        Self::new(list.expose().split(',').map(|k| Secret::new(k.trim())).filter(|k| !k.is_empty()))
    }

    /// Whether `presented` is one of the keys. `None` (no header) is never.
    pub fn verify(&self, presented: Option<&[u8]>) -> bool {
        let Some(presented) = presented else { return false };
        let presented = digest(presented);
        let mut matched = Choice::from(0);
        for key in &self.digests {
            matched |= key.ct_eq(&presented);
        }
        matched.into()
    }

    pub fn len(&self) -> usize {
        self.digests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }
}

impl fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKeys({} × ***)", self.digests.len())
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
        assert!(keys.verify(Some(b"old-key-123")));
        assert!(keys.verify(Some(b"new-key-456")));
        assert!(!keys.verify(Some(b"new-key-45")));
        assert!(!keys.verify(Some(b"new-key-4567")));
        assert!(!keys.verify(Some(b"")));
        assert!(!keys.verify(None));
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

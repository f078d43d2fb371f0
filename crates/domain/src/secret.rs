//! A secret string (an access token, a refresh token, a client secret) that
//! never shows itself by accident.
//!
//! `Debug` prints `***` and there is deliberately no `Display`: the only way
//! to the text is [`Secret::expose`], which is easy to grep for. It still
//! (de)serialises as a plain string, because tokens must be stored (Redis)
//! and sent (HTTP); serialising is a deliberate act, logging is not.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A string that is redacted in `Debug` output and has no `Display`.
#[derive(Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that must send or store it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let secret = Secret::new("hunter2-token");
        assert_eq!(format!("{secret:?}"), "***");
        assert_eq!(format!("{:?}", Some(secret.clone())), "Some(***)");
        assert_eq!(secret.expose(), "hunter2-token");
    }

    #[test]
    fn serialises_as_a_plain_string() {
        let secret = Secret::new("abc");
        assert_eq!(serde_json::to_string(&secret).unwrap(), "\"abc\"");
        assert_eq!(serde_json::from_str::<Secret>("\"abc\"").unwrap(), secret);
    }
}

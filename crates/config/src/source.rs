//! [`EnvSource`]: the `SLUICE_*` variables as a figment provider, and
//! [`EnvSource::extract`], which reads one part of the configuration from
//! them and names the variable in any error.
//!
//! Values stay text. figment's own `Env` provider parses each value as
//! TOML-like data, so a client id `0123` would arrive as the number 123 and
//! `[x]` as an array: lossy for ids and secrets. Here every value is a
//! string, and figment's lossy extraction reads a number (or a flag) from
//! that text only where the field is one, so ids and secrets stay as
//! given.

use crate::ConfigError;
use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;

/// The prefix of every variable sluice reads.
pub const PREFIX: &str = "SLUICE_";

/// Variables renamed since a release, as (earlier name, name now) without
/// the prefix: the earlier name is read when the new one is not set, so a
/// shell, script or stack that still sets it keeps working (docs/deploy.md,
/// "Renamed words").
pub(crate) const RENAMED: &[(&str, &str)] = &[
    ("mall_drain_queue_url", "catch_up_queue_url"),
    ("mall_drain_dlq_url", "catch_up_dlq_url"),
    ("bucket_drain_per_sec", "bucket_leak_per_sec"),
];

/// The `SLUICE_*` variables, by their lower-case name without the prefix
/// (`SLUICE_BUCKET_CAPACITY` is `bucket_capacity`, a field name). A value
/// that is empty or blank counts as unset; values are trimmed.
#[derive(Clone, Default)]
pub struct EnvSource {
    vars: BTreeMap<String, String>,
}

impl std::fmt::Debug for EnvSource {
    /// Names only: values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.vars.keys().map(|k| variable(k))).finish()
    }
}

impl EnvSource {
    /// The process environment's `SLUICE_*` variables.
    pub fn from_process() -> Self {
        let env = figment::providers::Env::prefixed(PREFIX);
        Self::collect(env.iter().map(|(key, value)| (key.as_str().to_owned(), value)))
    }

    /// `pairs` of full variable names and values (tests, and the Lambda
    /// runtime stand-in that passes a function its template environment).
    /// Names without the prefix are ignored.
    pub fn from_pairs<K: AsRef<str>, V: Into<String>>(pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        Self::collect(pairs.into_iter().filter_map(|(name, value)| {
            let key = name.as_ref().strip_prefix(PREFIX)?.to_ascii_lowercase();
            Some((key, value.into()))
        }))
    }

    fn collect(pairs: impl Iterator<Item = (String, String)>) -> Self {
        let mut vars: BTreeMap<String, String> =
            pairs.map(|(k, v)| (k, v.trim().to_owned())).filter(|(_, v)| !v.is_empty()).collect();
        for (earlier, now) in RENAMED {
            if let Some(value) = vars.remove(*earlier) {
                vars.entry((*now).to_owned()).or_insert(value);
            }
        }
        Self { vars }
    }

    /// This source with `field` set to `value` when it is given: how a
    /// command-line flag overrides its variable.
    pub fn with(mut self, field: &str, value: Option<String>) -> Self {
        if let Some(value) = value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) {
            self.vars.insert(field.to_owned(), value);
        }
        self
    }

    /// The value of `SLUICE_<key>`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(String::as_str)
    }

    /// One part of the configuration (a struct whose fields are variable
    /// names without the prefix, defaulted with `#[serde(default)]`).
    pub fn extract<T: DeserializeOwned>(&self) -> Result<T, ConfigError> {
        Figment::from(self).extract_lossy().map_err(|e| named(&e))
    }
}

impl Provider for EnvSource {
    fn metadata(&self) -> Metadata {
        Metadata::named("environment variable")
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        let dict = self.vars.iter().map(|(k, v)| (k.clone(), Value::from(v.clone()))).collect();
        Ok(Profile::Default.collect(dict))
    }
}

/// The variable a field is read from: `bucket_capacity` → `SLUICE_BUCKET_CAPACITY`.
pub fn variable(field: &str) -> String {
    format!("{PREFIX}{}", field.to_ascii_uppercase())
}

/// figment's error, as the variable it concerns and what is wrong with it.
/// The value itself is never part of the message unless the field's own
/// parser put it there (numbers, never secrets).
fn named(error: &figment::Error) -> ConfigError {
    use figment::error::Kind;
    match &error.kind {
        Kind::MissingField(field) => ConfigError::missing(field),
        kind => {
            let field = error.path.last().map_or("?", String::as_str);
            let problem = match kind {
                Kind::Message(message) => message.clone(),
                other => other.to_string(),
            };
            ConfigError::Invalid { name: variable(field), problem }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(default)]
    struct Part {
        count: u32,
        id: Option<String>,
    }

    impl Default for Part {
        fn default() -> Self {
            Self { count: 7, id: None }
        }
    }

    #[test]
    fn values_stay_text_and_numbers_parse_from_it() {
        let source = EnvSource::from_pairs([("SLUICE_COUNT", " 12 "), ("SLUICE_ID", "0123"), ("OTHER_ID", "x")]);
        assert_eq!(source.extract::<Part>().unwrap(), Part { count: 12, id: Some("0123".into()) });
        // Blank is unset: the default holds.
        let source = EnvSource::from_pairs([("SLUICE_COUNT", "  "), ("SLUICE_ID", "[a, b]")]);
        assert_eq!(source.extract::<Part>().unwrap(), Part { count: 7, id: Some("[a, b]".into()) });
    }

    #[test]
    fn a_bad_number_is_named_by_its_variable() {
        let err = EnvSource::from_pairs([("SLUICE_COUNT", "15m")]).extract::<Part>().unwrap_err();
        assert_eq!(err.name(), "SLUICE_COUNT");
        assert_eq!(err.to_string(), "SLUICE_COUNT is invalid: invalid type: found string \"15m\", expected u32");
    }

    #[test]
    fn debug_shows_names_not_values() {
        let shown = format!("{:?}", EnvSource::from_pairs([("SLUICE_API_KEYS", "hunter2")]));
        assert_eq!(shown, r#"{"SLUICE_API_KEYS"}"#);
    }

    #[test]
    fn an_earlier_name_is_read_when_the_new_one_is_not_set() {
        let earlier = EnvSource::from_pairs([("SLUICE_MALL_DRAIN_QUEUE_URL", "https://q/old")]);
        assert_eq!(
            (earlier.get("catch_up_queue_url"), earlier.get("mall_drain_queue_url")),
            (Some("https://q/old"), None)
        );
        let both = EnvSource::from_pairs([
            ("SLUICE_MALL_DRAIN_QUEUE_URL", "https://q/old"),
            ("SLUICE_CATCH_UP_QUEUE_URL", "https://q/new"),
        ]);
        assert_eq!(both.get("catch_up_queue_url"), Some("https://q/new"));
        let bucket = EnvSource::from_pairs([("SLUICE_BUCKET_DRAIN_PER_SEC", "0.5")]);
        assert_eq!(bucket.get("bucket_leak_per_sec"), Some("0.5"));
    }
}

//! What one API key may do: post webhooks (`/webhooks/cafe24`), post rows
//! (`/sheets/rows`) for the Google credentials, and optionally the
//! spreadsheets, it was given, or both. A key Cafe24 sends with every
//! webhook, read by anyone who sees one delivery, must not let its holder
//! write rows into a stored credential's sheets, so a key is given each
//! route on purpose.
//!
//! The keys secret (`SLUICE_API_KEYS`, the `ApiKeys` secret in AWS) is
//! either a comma-separated list, each key for webhooks only (what it
//! always held for Cafe24), or a JSON object:
//!
//! ```json
//! {"webhooks": ["key-for-cafe24"],
//!  "sheets": [{"key": "key-for-forms", "credentials": ["cred-1"], "spreadsheets": ["1AbC"]}]}
//! ```
//!
//! A sheet key lists the credentials it may write with (`"*"`: any, for a
//! sender trusted with every credential) and, optionally, the spreadsheets
//! (every one when left out). A key may appear in both parts.

use crate::config::ConfigError;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// What a key may do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyScope {
    /// May post webhooks.
    pub webhooks: bool,
    /// May post rows, within this grant.
    pub sheets: Option<SheetGrant>,
}

/// The credentials and spreadsheets a sheet key may write to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SheetGrant {
    credentials: Allowed,
    spreadsheets: Allowed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Allowed {
    Any,
    Only(BTreeSet<String>),
}

impl Allowed {
    fn allows(&self, id: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Only(ids) => ids.contains(id),
        }
    }
}

impl SheetGrant {
    /// Any credential, any spreadsheet.
    pub fn any() -> Self {
        Self { credentials: Allowed::Any, spreadsheets: Allowed::Any }
    }

    /// `Err(field)`: the body field naming what the key may not write to.
    pub fn allows(&self, credential_id: &str, spreadsheet_id: &str) -> Result<(), &'static str> {
        if !self.credentials.allows(credential_id) {
            return Err("credential_id");
        }
        if !self.spreadsheets.allows(spreadsheet_id) {
            return Err("spreadsheet_id");
        }
        Ok(())
    }
}

impl KeyScope {
    /// Both routes, any credential and spreadsheet: for one sender trusted
    /// with everything (a local stack, a single-tenant test).
    pub fn any_route() -> Self {
        Self { webhooks: true, sheets: Some(SheetGrant::any()) }
    }
}

/// The keys secret giving `key` both routes, any credential and
/// spreadsheet ([`KeyScope::any_route`]), in the JSON form.
pub fn any_route_document(key: &str) -> String {
    serde_json::json!({"webhooks": [key], "sheets": [{"key": key, "credentials": "*"}]}).to_string()
}

/// The first key of the keys secret `text` allowed to post webhooks: what a
/// local sandbox sends its webhooks with.
pub fn first_webhook_key(text: &str) -> Option<String> {
    parse(text).ok()?.into_iter().find(|(_, scope)| scope.webhooks).map(|(key, _)| key)
}

/// The JSON form of the keys secret.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    #[serde(default)]
    webhooks: Vec<String>,
    #[serde(default)]
    sheets: Vec<SheetKey>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SheetKey {
    key: String,
    credentials: IdList,
    #[serde(default)]
    spreadsheets: Option<IdList>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum IdList {
    Any(String),
    Only(Vec<String>),
}

impl IdList {
    fn allowed(self, what: &str, key: usize) -> Result<Allowed, ConfigError> {
        match self {
            Self::Any(star) if star == "*" => Ok(Allowed::Any),
            Self::Any(other) => Err(ConfigError::ApiKey(format!(
                "sheet key {key}: {what} must be a list of ids or \"*\", not {other:?}"
            ))),
            Self::Only(ids) if ids.is_empty() || ids.iter().any(|id| id.trim().is_empty()) => Err(ConfigError::ApiKey(
                format!("sheet key {key}: {what} must name at least one id, none of them empty"),
            )),
            Self::Only(ids) => Ok(Allowed::Only(ids.into_iter().collect())),
        }
    }
}

/// Each key of the secret's `text` with its scope, in the order first
/// given; a key in both parts has both. A key given two sheet grants is
/// refused: which one was meant cannot be told.
pub(crate) fn parse(text: &str) -> Result<Vec<(String, KeyScope)>, ConfigError> {
    let text = text.trim();
    let mut scopes: BTreeMap<String, (usize, KeyScope)> = BTreeMap::new();
    let mut add = |key: String, scope: KeyScope| {
        let next = scopes.len();
        let entry = scopes.entry(key).or_insert((next, KeyScope::default()));
        entry.1.webhooks |= scope.webhooks;
        if scope.sheets.is_some() && entry.1.sheets.is_some() {
            return Err(ConfigError::ApiKey(format!("sheet key {}: given two sheet grants", entry.0 + 1)));
        }
        if scope.sheets.is_some() {
            entry.1.sheets = scope.sheets;
        }
        Ok(())
    };
    if !text.starts_with('{') {
        for key in text.split(',').map(str::trim).filter(|k| !k.is_empty()) {
            add(key.to_owned(), KeyScope { webhooks: true, sheets: None })?;
        }
    } else {
        let document: Document = serde_json::from_str(text).map_err(|e| {
            ConfigError::ApiKey(format!(
                "the keys secret is JSON but not {{\"webhooks\": [keys], \"sheets\": [{{\"key\", \"credentials\", \
                 \"spreadsheets\"?}}]}}: {e}"
            ))
        })?;
        for key in document.webhooks {
            add(key, KeyScope { webhooks: true, sheets: None })?;
        }
        for (i, sheet) in document.sheets.into_iter().enumerate() {
            let credentials = sheet.credentials.allowed("credentials", i + 1)?;
            let spreadsheets = sheet.spreadsheets.map_or(Ok(Allowed::Any), |s| s.allowed("spreadsheets", i + 1))?;
            add(sheet.key, KeyScope { webhooks: false, sheets: Some(SheetGrant { credentials, spreadsheets }) })?;
        }
    }
    let mut keys: Vec<(usize, String, KeyScope)> = scopes.into_iter().map(|(k, (n, s))| (n, k, s)).collect();
    keys.sort_by_key(|(n, _, _)| *n);
    Ok(keys.into_iter().map(|(_, key, scope)| (key, scope)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_list_gives_webhooks_only() {
        let keys = parse("a-key, b-key").unwrap();
        assert_eq!(keys.len(), 2);
        assert!(keys.iter().all(|(_, s)| s.webhooks && s.sheets.is_none()));
    }

    #[test]
    fn the_json_form_scopes_each_key() {
        let keys = parse(
            r#"{"webhooks": ["w"], "sheets": [
                {"key": "s", "credentials": ["cred-1"], "spreadsheets": ["sheet-a"]},
                {"key": "w", "credentials": "*"}]}"#,
        )
        .unwrap();
        let scope = |name: &str| keys.iter().find(|(k, _)| k == name).unwrap().1.clone();
        let forms = scope("s").sheets.unwrap();
        assert!(!scope("s").webhooks);
        assert_eq!(forms.allows("cred-1", "sheet-a"), Ok(()));
        assert_eq!(forms.allows("cred-2", "sheet-a"), Err("credential_id"));
        assert_eq!(forms.allows("cred-1", "sheet-b"), Err("spreadsheet_id"));
        let both = scope("w");
        assert!(both.webhooks);
        assert_eq!(both.sheets.unwrap().allows("any", "any"), Ok(()));
    }

    #[test]
    fn the_any_route_document_reads_back_as_any_route() {
        let keys = parse(&any_route_document("k\"ey")).unwrap();
        assert_eq!(keys, vec![("k\"ey".to_owned(), KeyScope::any_route())]);
        let scoped = r#"{"sheets": [{"key": "s", "credentials": "*"}], "webhooks": ["w"]}"#;
        assert_eq!(first_webhook_key(scoped).as_deref(), Some("w"));
        assert_eq!(first_webhook_key("a, b").as_deref(), Some("a"));
    }

    #[test]
    fn a_bad_document_is_refused_naming_the_problem() {
        for (text, says) in [
            (r#"{"sheets": [{"key": "s"}]}"#, "credentials"),
            (r#"{"sheets": [{"key": "s", "credentials": []}]}"#, "at least one id"),
            (r#"{"sheets": [{"key": "s", "credentials": "all"}]}"#, "\"*\""),
            (r#"{"hooks": ["w"]}"#, "unknown field"),
            (
                r#"{"sheets": [{"key": "s", "credentials": "*"}, {"key": "s", "credentials": ["c"]}]}"#,
                "two sheet grants",
            ),
        ] {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
    }
}

//! The two kinds of work sluice carries.
//!
//! A [`ShopEvent`] is one Cafe24 webhook: it only says "resource X of mall A
//! changed", and the pipeline fetches X from the rate-limited Admin API. A
//! [`SheetRow`] is one form-submission row bound for a Google Sheet.
//!
//! Construction validates every field and names the one that is wrong, so an
//! HTTP front end can answer 400 with that name and enqueue nothing.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest identifier accepted in any id field. Generous for real ids
/// (Cafe24 mall ids, Google spreadsheet ids, UUIDs), small enough that a
/// hostile sender cannot inflate keys and messages.
pub const MAX_ID_LEN: usize = 256;

/// Cafe24's webhook event number (`event_no`, e.g. 90001), the topic of a
/// shop event. Which numbers are accepted is configuration, not domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Topic(pub u32);

impl fmt::Display for Topic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The kinds of Cafe24 resources a webhook can point at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResourceKind {
    Product,
    Order,
    Customer,
}

impl ResourceKind {
    pub const ALL: [ResourceKind; 3] = [Self::Product, Self::Order, Self::Customer];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Product => "product",
            Self::Order => "order",
            Self::Customer => "customer",
        }
    }
}

impl fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One upstream resource: its kind and its id within the mall. The id
/// follows [`check_resource_id`] whatever the kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResourceRef {
    pub kind: ResourceKind,
    pub id: String,
}

/// One Cafe24 webhook delivery.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ShopEvent {
    pub mall_id: String,
    pub topic: Topic,
    pub resource: ResourceRef,
    /// Identifies this delivery: the sender's `X-Trace-ID` when present,
    /// otherwise a digest of the body. A redelivery carries the same value.
    pub delivery_id: String,
}

impl ShopEvent {
    pub fn new(
        mall_id: impl Into<String>,
        topic: Topic,
        resource: ResourceRef,
        delivery_id: impl Into<String>,
    ) -> Result<Self, FieldError> {
        let event = Self { mall_id: mall_id.into(), topic, resource, delivery_id: delivery_id.into() };
        event.validate()?;
        Ok(event)
    }

    /// Checks every field; the error names the first one that is wrong.
    pub fn validate(&self) -> Result<(), FieldError> {
        check_id("mall_id", &self.mall_id)?;
        check_resource_id(self.resource.kind, "resource.id", &self.resource.id)?;
        check_id("delivery_id", &self.delivery_id)
    }
}

/// One row bound for a Google Sheet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SheetRow {
    pub credential_id: String,
    pub spreadsheet_id: String,
    /// The sheet's numeric id (`gid`), stable across renames.
    pub sheet_gid: u64,
    pub submission_id: String,
    pub row_id: String,
    /// Cell values in column order: strings, numbers, booleans or null.
    pub values: Vec<serde_json::Value>,
    /// Column titles, written as the sheet's first row when the sheet is
    /// empty. Content, not identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Vec<String>>,
}

/// The most cells a row may carry (Google Sheets allows 18,278 columns).
pub const MAX_CELLS: usize = 1_000;
/// The most bytes of text a cell may hold (Google Sheets: 50,000 characters).
pub const MAX_CELL_BYTES: usize = 50_000;

impl SheetRow {
    /// Checks every field; the error names the first one that is wrong.
    pub fn validate(&self) -> Result<(), FieldError> {
        check_id("credential_id", &self.credential_id)?;
        check_id("spreadsheet_id", &self.spreadsheet_id)?;
        check_id("submission_id", &self.submission_id)?;
        check_id("row_id", &self.row_id)?;
        if self.values.is_empty() {
            return Err(FieldError::new("values", "must hold at least one cell"));
        }
        if self.values.len() > MAX_CELLS {
            return Err(FieldError::new("values", format!("has more than {MAX_CELLS} cells")));
        }
        if let Some(i) = self.values.iter().position(|v| v.is_array() || v.is_object()) {
            return Err(FieldError::new("values", format!("cell {i} is not a string, number, boolean or null")));
        }
        if let Some(i) = self.values.iter().position(|v| v.as_str().is_some_and(|s| s.len() > MAX_CELL_BYTES)) {
            return Err(FieldError::new("values", format!("cell {i} is longer than {MAX_CELL_BYTES} bytes")));
        }
        if let Some(header) = &self.header {
            if header.is_empty() || header.len() > MAX_CELLS {
                return Err(FieldError::new("header", format!("must hold 1 to {MAX_CELLS} titles")));
            }
            if let Some(i) = header.iter().position(|t| t.len() > MAX_CELL_BYTES) {
                return Err(FieldError::new("header", format!("title {i} is longer than {MAX_CELL_BYTES} bytes")));
            }
        }
        Ok(())
    }
}

/// A field that failed validation, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}` {problem}")]
pub struct FieldError {
    pub field: &'static str,
    pub problem: String,
}

impl FieldError {
    pub fn new(field: &'static str, problem: impl Into<String>) -> Self {
        Self { field, problem: problem.into() }
    }
}

fn check_id(field: &'static str, value: &str) -> Result<(), FieldError> {
    if value.trim().is_empty() {
        return Err(FieldError::new(field, "must not be empty"));
    }
    if value.len() > MAX_ID_LEN {
        return Err(FieldError::new(field, format!("is longer than {MAX_ID_LEN} bytes")));
    }
    if value.chars().any(char::is_control) {
        return Err(FieldError::new(field, "must not contain control characters"));
    }
    // Ids reach alerts (Slack reads `<…|…>` as a link, a backtick ends a
    // code span) and suggested commands: none of these belongs in an id.
    if let Some(c) = value.chars().find(|c| MARKUP.contains(c)) {
        return Err(FieldError::new(field, format!("must not contain {c:?} (none of {MARKUP:?} belongs in an id)")));
    }
    Ok(())
}

/// Characters an id may not hold: chat markup and shell quoting.
const MARKUP: &[char] = &['`', '<', '>', '|', '"', '\\'];

/// The rule for a resource id: an id like any other (not empty, at most
/// [`MAX_ID_LEN`] bytes, no control characters); never `.` or `..`, which
/// a URL path takes as "this" and "the parent" (the `url` crate drops such
/// a segment, so the fetch of resource `..` would read the collection, a
/// bulk list for customers); and, when written as a whole number, a
/// positive one without a sign. Product numbers are whole numbers from 1
/// up, so a product id must be one; order and member ids are text, which
/// may be all digits (`"20250101"`, a member called `"1234"`). No kind has
/// a resource 0 or -1, so `0`, `000`, `-1` and `+1` are refused for every
/// kind rather than enqueued for a fetch that can only fail.
pub fn check_resource_id(kind: ResourceKind, field: &'static str, value: &str) -> Result<(), FieldError> {
    check_id(field, value)?;
    if value == "." || value == ".." {
        return Err(FieldError::new(field, "must not be . or .. (a URL path would read them as a directory)"));
    }
    let digits = value.strip_prefix(['-', '+']).unwrap_or(value);
    let whole_number = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    if whole_number && (digits.len() != value.len() || digits.bytes().all(|b| b == b'0')) {
        return Err(FieldError::new(field, "must be a positive whole number (1 or more) when it is a number"));
    }
    if kind == ResourceKind::Product && !whole_number {
        return Err(FieldError::new(field, "must be a product number (a whole number, 1 or more)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn product(id: &str) -> ResourceRef {
        ResourceRef { kind: ResourceKind::Product, id: id.into() }
    }

    #[test]
    fn shop_event_names_the_bad_field() {
        let err = ShopEvent::new("", Topic(90001), product("1"), "t").unwrap_err();
        assert_eq!(err.field, "mall_id");
        let err = ShopEvent::new("acme", Topic(90001), product(" "), "t").unwrap_err();
        assert_eq!(err.field, "resource.id");
        let err = ShopEvent::new("acme", Topic(90001), product("1"), "a\nb").unwrap_err();
        assert_eq!(err.field, "delivery_id");
        let err = ShopEvent::new("acme", Topic(90001), product("1"), "x".repeat(257)).unwrap_err();
        assert_eq!(err.to_string(), "field `delivery_id` is longer than 256 bytes");
        assert!(ShopEvent::new("acme", Topic(90001), product("1"), "trace-1").is_ok());
    }

    #[test]
    fn resource_ids_are_positive_for_every_kind() {
        for kind in ResourceKind::ALL {
            for bad in ["0", "000", "-1", "-0", "+1", " ", ".", ".."] {
                let resource = ResourceRef { kind, id: bad.into() };
                let err = ShopEvent::new("acme", Topic(90001), resource, "t").unwrap_err();
                assert_eq!(err.field, "resource.id", "{kind} {bad:?}");
            }
            for good in ["1", "17", "0123"] {
                let resource = ResourceRef { kind, id: good.into() };
                assert!(ShopEvent::new("acme", Topic(90001), resource, "t").is_ok(), "{kind} {good:?}");
            }
        }
    }

    #[test]
    fn product_ids_are_numbers_and_order_and_member_ids_text() {
        for text in ["20250101-0000001", "alice", "-", "a-1", "...", "a.b"] {
            for kind in [ResourceKind::Order, ResourceKind::Customer] {
                assert!(ShopEvent::new("acme", Topic(90001), ResourceRef { kind, id: text.into() }, "t").is_ok());
            }
            let product = ShopEvent::new("acme", Topic(90001), product(text), "t").unwrap_err();
            assert!(product.problem.contains("product number"), "{text:?}: {product}");
        }
    }

    #[test]
    fn ids_hold_no_markup() {
        for bad in ["a`b", "<https://evil|Sign in>", "a|b", "say \"hi\"", "a\\b"] {
            let err = ShopEvent::new("acme", Topic(90001), product("1"), bad).unwrap_err();
            assert_eq!(err.field, "delivery_id", "{bad:?}");
        }
        assert!(ShopEvent::new("acme", Topic(90001), product("1"), "a{b}:c/d e%7D").is_ok());
    }

    #[test]
    fn sheet_row_rejects_nested_cells_and_empty_rows() {
        let mut row = SheetRow {
            credential_id: "cred".into(),
            spreadsheet_id: "sheet".into(),
            sheet_gid: 0,
            submission_id: "sub".into(),
            row_id: "row".into(),
            values: vec![json!("a"), json!(1), json!(true), json!(null)],
            header: None,
        };
        assert_eq!(row.validate(), Ok(()));
        row.values.push(json!({"nested": 1}));
        assert_eq!(row.validate().unwrap_err().problem, "cell 4 is not a string, number, boolean or null");
        row.values.clear();
        assert_eq!(row.validate().unwrap_err().field, "values");
    }

    #[test]
    fn events_round_trip_through_json() {
        let event = ShopEvent::new("acme", Topic(90001), product("42"), "trace").unwrap();
        let text = serde_json::to_string(&event).unwrap();
        assert_eq!(
            text,
            r#"{"mall_id":"acme","topic":90001,"resource":{"kind":"product","id":"42"},"delivery_id":"trace"}"#
        );
        assert_eq!(serde_json::from_str::<ShopEvent>(&text).unwrap(), event);
    }
}

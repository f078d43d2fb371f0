//! Typed access to the fields of one JSON object of a definition, recording
//! a [`Problem`] (state + field) for anything missing, mistyped, unknown or
//! unsupported instead of stopping at the first.

use crate::load_error::Problem;
use crate::path::Path;
use crate::payload_template::PayloadTemplate;
use crate::reference_path::ResultPath;
use serde_json::{Map, Value};
use std::cell::RefCell;

/// Problems found so far while loading one definition.
#[derive(Debug, Default)]
pub(crate) struct Problems(RefCell<Vec<Problem>>);

impl Problems {
    pub(crate) fn add(&self, state: Option<&str>, field: Option<String>, message: impl Into<String>) {
        self.0.borrow_mut().push(Problem { state: state.map(str::to_owned), field, message: message.into() });
    }

    pub(crate) fn into_vec(self) -> Vec<Problem> {
        self.0.into_inner()
    }
}

/// Fields that are valid ASL but that this interpreter does not implement:
/// refused by name, with the reason, never silently ignored.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("HeartbeatSeconds", "task heartbeats (activities and callbacks) are not implemented"),
    ("HeartbeatSecondsPath", "task heartbeats (activities and callbacks) are not implemented"),
    ("Credentials", "cross-account task credentials are not implemented"),
    ("Arguments", "a JSONata field; only the JSONPath query language is implemented"),
    ("Output", "a JSONata field; only the JSONPath query language is implemented"),
    ("Items", "a JSONata field; only the JSONPath query language is implemented"),
    ("Condition", "a JSONata field; only the JSONPath query language is implemented"),
    ("Assign", "workflow variables (Assign) are not implemented"),
    ("ItemReader", "a Distributed Map field; only inline Map is implemented"),
    ("ItemBatcher", "a Distributed Map field; only inline Map is implemented"),
    ("ResultWriter", "a Distributed Map field; only inline Map is implemented"),
    ("ToleratedFailureCount", "a Distributed Map field; only inline Map is implemented"),
    ("ToleratedFailureCountPath", "a Distributed Map field; only inline Map is implemented"),
    ("ToleratedFailurePercentage", "a Distributed Map field; only inline Map is implemented"),
    ("ToleratedFailurePercentagePath", "a Distributed Map field; only inline Map is implemented"),
    ("Label", "a Distributed Map field; only inline Map is implemented"),
    ("TimeoutSecondsPath", "give TimeoutSeconds as a number"),
];

/// One JSON object of the definition (a state, a retrier, a choice rule…)
/// and where it sits, for problem reports.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields<'a> {
    pub(crate) object: &'a Map<String, Value>,
    /// The state's display path, `None` at the top level.
    pub(crate) state: Option<&'a str>,
    /// Prefix of field names inside the state, e.g. `Retry[0].`.
    pub(crate) prefix: &'a str,
    pub(crate) problems: &'a Problems,
}

impl<'a> Fields<'a> {
    pub(crate) fn field_name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    pub(crate) fn problem(&self, key: &str, message: impl Into<String>) {
        self.problems.add(self.state, Some(self.field_name(key)), message);
    }

    pub(crate) fn has(&self, key: &str) -> bool {
        self.object.contains_key(key)
    }

    /// Refuses every field not in `allowed`; `what` names the object in the
    /// message ("a Task state", "a retrier").
    pub(crate) fn check_known(&self, allowed: &[&str], what: &str) {
        for key in self.object.keys() {
            if allowed.contains(&key.as_str()) {
                continue;
            }
            match UNSUPPORTED.iter().find(|(name, _)| name == key) {
                Some((_, reason)) => self.problem(key, format!("not supported: {reason}")),
                None => self.problem(key, format!("unknown field for {what}")),
            }
        }
    }

    pub(crate) fn value(&self, key: &str) -> Option<&'a Value> {
        self.object.get(key)
    }

    /// The field when present, if `get` reads it; a problem naming `what`
    /// it must be otherwise.
    fn typed<T>(&self, key: &str, what: &str, get: impl FnOnce(&'a Value) -> Option<T>) -> Option<T> {
        let value = self.object.get(key)?;
        let typed = get(value);
        if typed.is_none() {
            self.problem(key, format!("must be {what}, found {}", type_name(value)));
        }
        typed
    }

    pub(crate) fn string(&self, key: &str) -> Option<&'a str> {
        self.typed(key, "a string", Value::as_str)
    }

    /// A field that must be given, read by `read`.
    pub(crate) fn required<T>(&self, key: &str, read: impl FnOnce(&Self, &str) -> Option<T>) -> Option<T> {
        if !self.has(key) {
            self.problem(key, "is required");
        }
        read(self, key)
    }

    pub(crate) fn required_string(&self, key: &str) -> Option<&'a str> {
        self.required(key, Self::string)
    }

    /// The required array `key` of objects, each read by `item` (with its
    /// index) as nested fields `key[i].`; every item is read, even after one
    /// fails. `empty` is the problem with an empty array.
    pub(crate) fn objects<T>(
        &self,
        key: &str,
        empty: &str,
        mut item: impl FnMut(usize, Fields<'_>) -> Option<T>,
    ) -> Option<Vec<T>> {
        let items = self.required(key, Self::array)?;
        if items.is_empty() {
            self.problem(key, empty);
        }
        let parsed: Vec<Option<T>> = items
            .iter()
            .enumerate()
            .map(|(i, value)| {
                let Value::Object(object) = value else {
                    self.problem(&format!("{key}[{i}]"), format!("must be an object, found {}", type_name(value)));
                    return None;
                };
                item(i, self.nested(object, &format!("{key}[{i}].")))
            })
            .collect();
        parsed.into_iter().collect()
    }

    pub(crate) fn boolean(&self, key: &str) -> Option<bool> {
        self.typed(key, "a boolean", Value::as_bool)
    }

    /// A non-negative integer no larger than `max`.
    pub(crate) fn unsigned(&self, key: &str, max: u64) -> Option<u64> {
        let value = self.object.get(key)?;
        match value.as_u64() {
            Some(n) if n <= max => Some(n),
            _ => {
                self.problem(key, format!("must be an integer from 0 to {max}, found {value}"));
                None
            }
        }
    }

    pub(crate) fn number(&self, key: &str) -> Option<f64> {
        self.typed(key, "a number", Value::as_f64)
    }

    pub(crate) fn array(&self, key: &str) -> Option<&'a Vec<Value>> {
        self.typed(key, "an array", Value::as_array)
    }

    pub(crate) fn object(&self, key: &str) -> Option<&'a Map<String, Value>> {
        self.typed(key, "an object", Value::as_object)
    }

    /// A Path field (InputPath, ItemsPath, SecondsPath…), when present.
    pub(crate) fn path(&self, key: &str) -> Option<Path> {
        let text = self.string(key)?;
        Path::parse(text).map_err(|e| self.problem(key, e)).ok()
    }

    /// `InputPath`/`OutputPath`: absent means `$`, `null` means `{}`.
    pub(crate) fn io_path(&self, key: &str) -> IoPath {
        match self.object.get(key) {
            None => IoPath::Whole,
            Some(Value::Null) => IoPath::Empty,
            Some(_) => self.path(key).map_or(IoPath::Whole, IoPath::Path),
        }
    }

    /// `ResultPath`: absent means `$`, `null` discards the result.
    pub(crate) fn result_path(&self, key: &str) -> ResultPath {
        match self.object.get(key) {
            None => ResultPath::Root,
            Some(Value::Null) => ResultPath::Discard,
            Some(_) => self
                .string(key)
                .and_then(|text| ResultPath::parse(text).map_err(|e| self.problem(key, e)).ok())
                .unwrap_or(ResultPath::Root),
        }
    }

    /// A payload template (Parameters, ItemSelector, ResultSelector).
    pub(crate) fn template(&self, key: &str) -> Option<PayloadTemplate> {
        let value = self.typed(key, "an object", |value| value.is_object().then_some(value))?;
        PayloadTemplate::parse(value).map_err(|(field, e)| self.problem(&format!("{key}{field}"), e)).ok()
    }

    /// The same object, with field names prefixed (`Retry[0].`).
    pub(crate) fn nested(&self, object: &'a Map<String, Value>, prefix: &'a str) -> Fields<'a> {
        Fields { object, state: self.state, prefix, problems: self.problems }
    }
}

/// `InputPath` or `OutputPath` as written.
#[derive(Debug, Clone)]
pub(crate) enum IoPath {
    /// Absent: the whole value (`$`).
    Whole,
    /// `null`: an empty object.
    Empty,
    Path(Path),
}

pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

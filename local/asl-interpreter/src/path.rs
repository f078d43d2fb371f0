//! Paths: the JSONPath expressions that read from a state's input (`$…`) or
//! from the context object (`$$…`) in InputPath, OutputPath, ItemsPath,
//! `.$` payload fields, Choice `Variable`s, intrinsic arguments and the
//! other `…Path` fields.
//!
//! As in Step Functions (Jayway JsonPath), a definite path selects one
//! value and fails when it matches nothing, while an indefinite path
//! (filter, wildcard, slice, deep scan, union) selects an array of every
//! match, possibly empty. Definite paths are walked directly; indefinite
//! ones are evaluated by `serde_json_path` (RFC 9535).
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/amazon-states-language-paths.html>.

use crate::context_object::ContextObject;
use crate::path_syntax::{Token, to_rfc9535, tokenize};
use serde_json::Value;
use serde_json_path::JsonPath;

/// A parsed Path.
#[derive(Debug, Clone)]
pub(crate) struct Path {
    text: String,
    reads_context: bool,
    selector: Selector,
}

#[derive(Debug, Clone)]
enum Selector {
    /// `$` or `$$`.
    Whole,
    Definite(Vec<Step>),
    Indefinite(JsonPath),
}

/// One step of a definite path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Name(String),
    Index(i64),
}

impl Path {
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let (reads_context, rest) = match text.strip_prefix("$$") {
            Some(rest) => (true, rest),
            None => match text.strip_prefix('$') {
                Some(rest) => (false, rest),
                None => return Err(format!("{text:?} is not a JSONPath: it must start with '$'")),
            },
        };
        let tokens = tokenize(rest).map_err(|e| format!("{text:?} is not a valid JSONPath: {e}"))?;
        let selector = if tokens.is_empty() {
            Selector::Whole
        } else if let Some(steps) = definite_steps(&tokens) {
            Selector::Definite(steps)
        } else {
            let rfc = to_rfc9535(&tokens);
            let query = JsonPath::parse(&rfc).map_err(|e| format!("{text:?} is not a valid JSONPath: {e}"))?;
            Selector::Indefinite(query)
        };
        Ok(Self { text: text.to_owned(), reads_context, selector })
    }

    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn reads_context(&self) -> bool {
        self.reads_context
    }

    /// The definite steps, if this path is `$` followed only by names and
    /// indexes.
    pub(crate) fn steps(&self) -> Option<&[Step]> {
        match &self.selector {
            Selector::Whole => Some(&[]),
            Selector::Definite(steps) => Some(steps),
            Selector::Indefinite(_) => None,
        }
    }

    /// The selected value, or `None` when a definite path matches nothing.
    pub(crate) fn select(&self, input: &Value, context: &ContextObject<'_>) -> Option<Value> {
        let root = if self.reads_context { context.value() } else { input };
        self.select_in(root)
    }

    /// Like [`Path::select`] on a document that is not a state input.
    pub(crate) fn select_in(&self, root: &Value) -> Option<Value> {
        match &self.selector {
            Selector::Whole => Some(root.clone()),
            Selector::Definite(steps) => walk(root, steps).cloned(),
            Selector::Indefinite(query) => Some(Value::Array(query.query(root).all().into_iter().cloned().collect())),
        }
    }
}

fn definite_steps(tokens: &[Token]) -> Option<Vec<Step>> {
    tokens
        .iter()
        .map(|t| match t {
            Token::Name(name) => Some(Step::Name(name.clone())),
            Token::Index(n) => Some(Step::Index(*n)),
            Token::Other(_) => None,
        })
        .collect()
}

pub(crate) fn walk<'v>(mut value: &'v Value, steps: &[Step]) -> Option<&'v Value> {
    for step in steps {
        value = match (step, value) {
            (Step::Name(name), Value::Object(map)) => map.get(name)?,
            (Step::Index(i), Value::Array(items)) => items.get(resolve_index(*i, items.len())?)?,
            _ => return None,
        };
    }
    Some(value)
}

/// A non-negative index, or a negative one counted from the end.
pub(crate) fn resolve_index(index: i64, len: usize) -> Option<usize> {
    if index >= 0 { usize::try_from(index).ok() } else { len.checked_sub(usize::try_from(index.unsigned_abs()).ok()?) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn select(path: &str, input: &Value) -> Option<Value> {
        Path::parse(path).unwrap().select_in(input)
    }

    /// The examples of the AWS "Reference Paths" section.
    #[test]
    fn aws_paths_examples() {
        let input = json!({
            "foo": 123, "bar": ["a", "b", "c"], "car": {"cdr": true},
            "jar": [{"a": 1}, {"a": 5}, {"a": 2}, {"a": 7}, {"a": 3}]
        });
        assert_eq!(select("$.foo", &input), Some(json!(123)));
        assert_eq!(select("$.bar", &input), Some(json!(["a", "b", "c"])));
        assert_eq!(select("$.car.cdr", &input), Some(json!(true)));
        assert_eq!(select("$.jar[?(@.a >= 5)]", &input), Some(json!([{"a": 5}, {"a": 7}])));
    }

    #[test]
    fn definite_misses_are_none_indefinite_misses_are_empty() {
        let input = json!({"a": [1, 2, 3, 4], "b": {"c": 1}});
        assert_eq!(select("$.missing", &input), None);
        assert_eq!(select("$.a[9]", &input), None);
        assert_eq!(select("$.a[-1]", &input), Some(json!(4)));
        assert_eq!(select("$.a[0:2]", &input), Some(json!([1, 2])));
        assert_eq!(select("$.b.*", &input), Some(json!([1])), "one match of an indefinite path is still an array");
        assert_eq!(select("$..nothing", &input), Some(json!([])));
    }

    #[test]
    fn context_paths_are_recognised() {
        assert!(Path::parse("$$.Execution.Id").unwrap().reads_context());
        assert!(!Path::parse("$.x").unwrap().reads_context());
        assert!(Path::parse("x").unwrap_err().contains("must start with '$'"));
        assert!(Path::parse("$.a[?(@.b ==]").is_err());
    }
}

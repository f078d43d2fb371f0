//! `ResultPath`: a Reference Path (only `$`, `.name`, `['name']` and `[n]`)
//! saying where a state's result goes in its input, or `null` to discard
//! the result. Missing objects on the way are created; anything else in
//! the way is a `States.ResultPathMatchFailure`.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultpath.html>.

use crate::error_name;
use crate::failure::{Failure, abbreviated};
use crate::path::{Path, Step, resolve_index};
use serde_json::{Map, Value};

#[derive(Debug, Clone)]
pub(crate) enum ResultPath {
    /// `null`: the output is the input, the result is dropped.
    Discard,
    /// `$` (the default): the output is the result.
    Root,
    Steps {
        text: String,
        steps: Vec<Step>,
    },
}

impl ResultPath {
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        if text.starts_with("$$") {
            return Err(format!("{text:?}: a ResultPath cannot write to the context object"));
        }
        let path = Path::parse(text)?;
        match path.steps() {
            Some([]) => Ok(Self::Root),
            Some(steps) => Ok(Self::Steps { text: text.to_owned(), steps: steps.to_vec() }),
            None => Err(format!(
                "{text:?} is not a Reference Path: only '.name', \"['name']\" and '[index]' steps are allowed"
            )),
        }
    }

    /// Combines the state's (raw) input and its result.
    pub(crate) fn apply(&self, input: Value, result: Value) -> Result<Value, Failure> {
        match self {
            Self::Discard => Ok(input),
            Self::Root => Ok(result),
            Self::Steps { text, steps } => {
                if !fits(&input, steps) {
                    return Err(Failure::new(
                        error_name::RESULT_PATH_MATCH_FAILURE,
                        format!("Unable to apply ResultPath \"{text}\" to input {}", abbreviated(&input)),
                    ));
                }
                let mut output = input;
                write(&mut output, steps, result);
                Ok(output)
            }
        }
    }
}

/// Whether writing along `steps` only creates missing object fields and
/// never has to go through a value of the wrong type.
fn fits(mut value: &Value, steps: &[Step]) -> bool {
    for (at, step) in steps.iter().enumerate() {
        match (step, value) {
            (Step::Name(name), Value::Object(map)) => match map.get(name) {
                Some(next) => value = next,
                // Missing from here on: created as objects, so only names
                // may follow.
                None => return steps[at + 1..].iter().all(|s| matches!(s, Step::Name(_))),
            },
            (Step::Index(i), Value::Array(items)) => match resolve_index(*i, items.len()).and_then(|i| items.get(i)) {
                Some(next) => value = next,
                None => return false,
            },
            _ => return false,
        }
    }
    true
}

fn write(value: &mut Value, steps: &[Step], result: Value) {
    let Some((first, rest)) = steps.split_first() else {
        *value = result;
        return;
    };
    let next = match (first, value) {
        (Step::Name(name), Value::Object(map)) => map.entry(name.clone()).or_insert_with(|| Value::Object(Map::new())),
        (Step::Index(i), Value::Array(items)) => {
            let len = items.len();
            match resolve_index(*i, len).and_then(|i| items.get_mut(i)) {
                Some(next) => next,
                None => return,
            }
        }
        _ => return,
    };
    write(next, rest, result);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(path: &str, input: Value, result: Value) -> Result<Value, Failure> {
        ResultPath::parse(path).unwrap().apply(input, result)
    }

    #[test]
    fn writes_and_creates_objects() {
        let input = json!({"comment": "x", "data": {"val1": 23}});
        assert_eq!(
            apply("$.data.lambdaresult", input.clone(), json!("Hello")).unwrap(),
            json!({"comment": "x", "data": {"val1": 23, "lambdaresult": "Hello"}})
        );
        assert_eq!(apply("$.a.b", json!({}), json!(1)).unwrap(), json!({"a": {"b": 1}}));
        assert_eq!(apply("$['odd key']", json!({}), json!(1)).unwrap(), json!({"odd key": 1}));
        assert_eq!(apply("$.list[1]", json!({"list": [0, 0]}), json!(1)).unwrap(), json!({"list": [0, 1]}));
        assert_eq!(apply("$", input.clone(), json!(7)).unwrap(), json!(7));
        assert_eq!(ResultPath::Discard.apply(input.clone(), json!(7)).unwrap(), input);
    }

    #[test]
    fn a_value_in_the_way_is_a_match_failure() {
        let err = apply("$.a.b", json!({"a": "text"}), json!(1)).unwrap_err();
        assert_eq!(err.error, "States.ResultPathMatchFailure");
        assert!(apply("$.x", json!("not an object"), json!(1)).is_err());
        assert!(apply("$.list[5]", json!({"list": []}), json!(1)).is_err());
        assert!(apply("$.missing[0]", json!({}), json!(1)).is_err());
    }

    #[test]
    fn only_reference_paths_are_accepted() {
        assert!(ResultPath::parse("$.a[*]").unwrap_err().contains("not a Reference Path"));
        assert!(ResultPath::parse("$..a").is_err());
        assert!(ResultPath::parse("$$.Execution").is_err());
    }
}

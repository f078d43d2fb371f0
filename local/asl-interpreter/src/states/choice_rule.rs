//! Choice Rules: a comparison of a `Variable` (String…, Numeric…,
//! Boolean…, Timestamp… operators, each with a `…Path` variant, plus
//! StringMatches and the Is… tests), or `And`/`Or`/`Not` of rules.
//! A value of the wrong type never matches; a `Variable` that matches
//! nothing fails the execution (`States.Runtime`), except for IsPresent.
//! Strings compare as Java's `String.compareTo` does (UTF-16 code units).
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/state-choice.html>.

use crate::context_object::ContextObject;
use crate::definition::reader::{Fields, type_name};
use crate::failure::Failure;
use crate::path::Path;
use crate::timestamp;
use serde_json::Value;
use std::cmp::Ordering;

#[derive(Debug)]
pub(super) enum Rule {
    And(Vec<Rule>),
    Or(Vec<Rule>),
    Not(Box<Rule>),
    Test { variable: Path, test: Test },
}

#[derive(Debug)]
pub(super) enum Test {
    Compare { kind: Kind, operator: Operator, operand: Operand },
    StringMatches(Vec<Piece>),
    Is { check: Check, expected: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    String,
    Numeric,
    Boolean,
    Timestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operator {
    Equals,
    LessThan,
    GreaterThan,
    LessThanEquals,
    GreaterThanEquals,
}

#[derive(Debug)]
pub(super) enum Operand {
    Literal(Value),
    Path(Path),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Check {
    Present,
    Null,
    Numeric,
    String,
    Boolean,
    Timestamp,
}

/// A StringMatches pattern: literal text and `*` wildcards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece {
    Text(String),
    Star,
}

const KINDS: [(&str, Kind); 4] =
    [("String", Kind::String), ("Numeric", Kind::Numeric), ("Boolean", Kind::Boolean), ("Timestamp", Kind::Timestamp)];
// Longest first, so "LessThanEquals" is not read as "LessThan".
const OPERATORS: [(&str, Operator); 5] = [
    ("GreaterThanEquals", Operator::GreaterThanEquals),
    ("LessThanEquals", Operator::LessThanEquals),
    ("GreaterThan", Operator::GreaterThan),
    ("LessThan", Operator::LessThan),
    ("Equals", Operator::Equals),
];
const CHECKS: [(&str, Check); 6] = [
    ("IsPresent", Check::Present),
    ("IsNull", Check::Null),
    ("IsNumeric", Check::Numeric),
    ("IsString", Check::String),
    ("IsBoolean", Check::Boolean),
    ("IsTimestamp", Check::Timestamp),
];

impl Rule {
    /// Parses a rule; `top_level` rules carry `Next` (read by the caller),
    /// nested ones must not.
    pub(super) fn parse(fields: &Fields<'_>, top_level: bool) -> Option<Self> {
        let mut operators: Vec<&str> = Vec::new();
        for key in fields.object.keys() {
            match key.as_str() {
                "Variable" | "Comment" => {}
                "Next" if top_level => {}
                "Next" => fields.problem(key, "a rule inside And, Or or Not cannot have Next"),
                other if is_operator(other) => operators.push(other),
                other => fields.problem(other, "unknown field for a Choice Rule"),
            }
        }
        let [operator] = operators[..] else {
            let message = format!("a Choice Rule needs exactly one comparison operator, found {}", operators.len());
            fields.problem(operators.get(1).copied().unwrap_or("Variable"), message);
            return None;
        };
        fields.string("Comment");
        match operator {
            "And" | "Or" => {
                reject_variable(fields, operator);
                let items = fields.array(operator)?;
                if items.is_empty() {
                    fields.problem(operator, "must be a non-empty array of Choice Rules");
                    return None;
                }
                let rules: Option<Vec<Rule>> = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| nested_rule(fields, &format!("{operator}[{i}]"), item))
                    .collect::<Vec<_>>()
                    .into_iter()
                    .collect();
                Some(if operator == "And" { Self::And(rules?) } else { Self::Or(rules?) })
            }
            "Not" => {
                reject_variable(fields, operator);
                nested_rule(fields, "Not", fields.value("Not")?).map(|rule| Self::Not(Box::new(rule)))
            }
            _ => {
                if !fields.has("Variable") {
                    fields.problem("Variable", "is required with a comparison operator");
                }
                let variable = fields.path("Variable");
                let test = parse_test(fields, operator);
                Some(Self::Test { variable: variable?, test: test? })
            }
        }
    }

    pub(super) fn matches(&self, input: &Value, context: &ContextObject<'_>) -> Result<bool, Failure> {
        match self {
            // The first rule that decides (or fails) ends the evaluation.
            Self::And(rules) | Self::Or(rules) => {
                let all = matches!(self, Self::And(_));
                rules.iter().map(|rule| rule.matches(input, context)).find(|m| *m != Ok(all)).unwrap_or(Ok(all))
            }
            Self::Not(rule) => rule.matches(input, context).map(|m| !m),
            Self::Test { variable, test } => {
                let value = variable.select(input, context);
                let present = value.as_ref().is_some_and(|v| variable.steps().is_some() || v != &Value::Array(vec![]));
                if let Test::Is { check: Check::Present, expected } = test {
                    return Ok(present == *expected);
                }
                test.matches(&value.ok_or_else(|| invalid_path(variable))?, input, context)
            }
        }
    }
}

fn is_operator(key: &str) -> bool {
    matches!(key, "And" | "Or" | "Not" | "StringMatches")
        || CHECKS.iter().any(|(name, _)| *name == key)
        || comparison(key).is_some()
}

/// `StringLessThanEqualsPath` → (String, LessThanEquals, true).
fn comparison(key: &str) -> Option<(Kind, Operator, bool)> {
    let (kind, rest) = KINDS.iter().find_map(|(name, kind)| key.strip_prefix(name).map(|rest| (*kind, rest)))?;
    let (rest, is_path) = rest.strip_suffix("Path").map_or((rest, false), |r| (r, true));
    let operator = OPERATORS.iter().find(|(name, _)| *name == rest).map(|(_, op)| *op)?;
    (kind != Kind::Boolean || operator == Operator::Equals).then_some((kind, operator, is_path))
}

fn reject_variable(fields: &Fields<'_>, operator: &str) {
    if fields.has("Variable") {
        fields.problem("Variable", format!("a rule with {operator} cannot have a Variable"));
    }
}

fn nested_rule(fields: &Fields<'_>, at: &str, value: &Value) -> Option<Rule> {
    let Value::Object(object) = value else {
        fields.problem(at, format!("must be a Choice Rule object, found {}", type_name(value)));
        return None;
    };
    let prefix = format!("{}{at}.", fields.prefix);
    Rule::parse(&Fields { object, prefix: &prefix, ..*fields }, false)
}

fn parse_test(fields: &Fields<'_>, operator: &str) -> Option<Test> {
    let value = fields.value(operator)?;
    if let Some((_, check)) = CHECKS.iter().find(|(name, _)| *name == operator) {
        return fields.boolean(operator).map(|expected| Test::Is { check: *check, expected });
    }
    if operator == "StringMatches" {
        return fields.string(operator).map(|pattern| Test::StringMatches(parse_pattern(pattern)));
    }
    let (kind, op, is_path) = comparison(operator)?;
    let operand = if is_path {
        Operand::Path(fields.path(operator)?)
    } else {
        let (fits, wanted) = match kind {
            Kind::String => (value.is_string(), "a string"),
            Kind::Numeric => (value.is_number(), "a number"),
            Kind::Boolean => (value.is_boolean(), "a boolean"),
            Kind::Timestamp => (value.as_str().and_then(timestamp::parse).is_some(), "an RFC 3339 timestamp"),
        };
        if !fits {
            fields.problem(operator, format!("must be {wanted}, found {value}"));
            return None;
        }
        Operand::Literal(value.clone())
    };
    Some(Test::Compare { kind, operator: op, operand })
}

fn parse_pattern(pattern: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped) => text.push(escaped),
                None => text.push('\\'),
            },
            '*' => {
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(Piece::Star);
            }
            c => text.push(c),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    pieces
}

impl Test {
    fn matches(&self, value: &Value, input: &Value, context: &ContextObject<'_>) -> Result<bool, Failure> {
        match self {
            Self::Is { check, expected } => {
                let is = match check {
                    Check::Present => true,
                    Check::Null => value.is_null(),
                    Check::Numeric => value.is_number(),
                    Check::String => value.is_string(),
                    Check::Boolean => value.is_boolean(),
                    Check::Timestamp => value.as_str().and_then(timestamp::parse).is_some(),
                };
                Ok(is == *expected)
            }
            Self::StringMatches(pieces) => Ok(value.as_str().is_some_and(|text| glob_matches(pieces, text))),
            Self::Compare { kind, operator, operand } => {
                let other = match operand {
                    Operand::Literal(literal) => literal.clone(),
                    Operand::Path(path) => path.select(input, context).ok_or_else(|| invalid_path(path))?,
                };
                Ok(order(*kind, value, &other).is_some_and(|ordering| operator.accepts(ordering)))
            }
        }
    }
}

/// A `Variable` or `…Path` operand that matches nothing.
fn invalid_path(path: &Path) -> Failure {
    Failure::runtime(format!(
        "Invalid path '{}': The choice state's condition path references an invalid value.",
        path.text()
    ))
}

impl Operator {
    fn accepts(self, ordering: Ordering) -> bool {
        match self {
            Self::Equals => ordering == Ordering::Equal,
            Self::LessThan => ordering == Ordering::Less,
            Self::GreaterThan => ordering == Ordering::Greater,
            Self::LessThanEquals => ordering != Ordering::Greater,
            Self::GreaterThanEquals => ordering != Ordering::Less,
        }
    }
}

/// How `value` compares with `other` as `kind`; `None` when either is not
/// of that kind.
fn order(kind: Kind, value: &Value, other: &Value) -> Option<Ordering> {
    match kind {
        Kind::String => Some(value.as_str()?.encode_utf16().cmp(other.as_str()?.encode_utf16())),
        Kind::Numeric => value.as_f64()?.partial_cmp(&other.as_f64()?),
        Kind::Boolean => (value.as_bool()? == other.as_bool()?).then_some(Ordering::Equal).or(Some(Ordering::Less)),
        Kind::Timestamp => Some(timestamp::parse(value.as_str()?)?.cmp(&timestamp::parse(other.as_str()?)?)),
    }
}

fn glob_matches(pieces: &[Piece], text: &str) -> bool {
    match pieces.split_first() {
        None => text.is_empty(),
        Some((Piece::Text(literal), rest)) => {
            text.strip_prefix(literal.as_str()).is_some_and(|t| glob_matches(rest, t))
        }
        Some((Piece::Star, rest)) => {
            text.char_indices().map(|(i, _)| i).chain([text.len()]).any(|i| glob_matches(rest, &text[i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_like_step_functions() {
        let matches = |pattern: &str, text: &str| glob_matches(&parse_pattern(pattern), text);
        assert!(matches("log-*.txt", "log-2024-05.txt"));
        assert!(!matches("log-*.txt", "log-2024-05.csv"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "aXbYc"));
        assert!(!matches(r"a\*", "abc"));
        assert!(matches(r"a\*", "a*"));
    }

    #[test]
    fn operator_names() {
        assert_eq!(comparison("StringLessThanEqualsPath"), Some((Kind::String, Operator::LessThanEquals, true)));
        assert_eq!(comparison("NumericGreaterThan"), Some((Kind::Numeric, Operator::GreaterThan, false)));
        assert_eq!(comparison("BooleanEqualsPath"), Some((Kind::Boolean, Operator::Equals, true)));
        assert_eq!(comparison("BooleanLessThan"), None);
        assert_eq!(comparison("NumericEqual"), None);
    }

    #[test]
    fn strings_compare_by_utf16_code_units() {
        // U+FF5E sorts after U+1F600 in UTF-16 (0xFF5E > 0xD83D), unlike in
        // code points.
        let (high, emoji) = (Value::from("\u{FF5E}"), Value::from("\u{1F600}"));
        assert_eq!(order(Kind::String, &high, &emoji), Some(Ordering::Greater));
    }
}

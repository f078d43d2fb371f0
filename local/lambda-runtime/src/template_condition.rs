//! The template's `Conditions`, evaluated as CloudFormation would with the
//! local stack's values, so that a function with a `Condition` runs locally
//! exactly when it would be deployed (the drain function only with a
//! database). The forms read are the ones a one-line condition takes:
//! `!Equals [a, b]`, `!Not [c]`, `!And [c, …]`, `!Or [c, …]` and
//! `!Condition Name`, whose operands are `!Ref Name` or a literal. Anything
//! else is an error naming the condition, never a guess.

use std::collections::BTreeMap;

/// A condition this reader cannot evaluate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("condition {name}: {problem}")]
pub struct ConditionError {
    pub name: String,
    pub problem: String,
}

/// Whether the condition `name` of `conditions` (name → its text) holds,
/// each `!Ref` answered by `lookup`.
pub fn holds(
    conditions: &BTreeMap<String, String>,
    name: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<bool, ConditionError> {
    evaluate(conditions, name, lookup, 0)
}

/// Conditions may name conditions; a cycle would never end, and a
/// template's nesting is far shallower than this.
const MAX_DEPTH: usize = 16;

fn evaluate(
    conditions: &BTreeMap<String, String>,
    name: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    depth: usize,
) -> Result<bool, ConditionError> {
    let error = |problem: String| ConditionError { name: name.to_owned(), problem };
    if depth > MAX_DEPTH {
        return Err(error("conditions nest too deep (a cycle?)".into()));
    }
    let text = conditions.get(name).ok_or_else(|| error("no such condition in Conditions".into()))?;
    let tokens = tokens(text);
    let mut parser = Parser { tokens: &tokens, at: 0 };
    let expression = parser.expression().map_err(error)?;
    if parser.at != tokens.len() {
        return Err(error(format!("unexpected text after the expression in {text:?}")));
    }
    expression.value(&|inner| evaluate(conditions, inner, lookup, depth + 1), lookup).map_err(error)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Open,
    Close,
    Comma,
    /// A tag (`!Not`) or a word, or a quoted string unquoted.
    Word(String),
}

fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '[' => out.push(Token::Open),
            ']' => out.push(Token::Close),
            ',' => out.push(Token::Comma),
            '"' | '\'' => out.push(Token::Word(chars.by_ref().take_while(|q| *q != c).collect())),
            c if c.is_whitespace() => {}
            c => {
                let mut word = c.to_string();
                while let Some(&next) = chars.peek().filter(|n| !matches!(n, '[' | ']' | ',') && !n.is_whitespace()) {
                    word.push(next);
                    chars.next();
                }
                out.push(Token::Word(word));
            }
        }
    }
    out
}

#[derive(Debug)]
enum Expression {
    Equals(Operand, Operand),
    Not(Box<Expression>),
    And(Vec<Expression>),
    Or(Vec<Expression>),
    Condition(String),
}

#[derive(Debug)]
enum Operand {
    Ref(String),
    Literal(String),
}

impl Expression {
    fn value(
        &self,
        condition: &dyn Fn(&str) -> Result<bool, ConditionError>,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<bool, String> {
        let operand = |o: &Operand| match o {
            Operand::Literal(text) => Ok(text.clone()),
            Operand::Ref(name) => {
                lookup(name).ok_or_else(|| format!("!Ref {name}, which the local stack does not provide"))
            }
        };
        Ok(match self {
            Self::Equals(a, b) => operand(a)? == operand(b)?,
            Self::Not(inner) => !inner.value(condition, lookup)?,
            // Every operand is evaluated, so a bad one fails whatever the others say.
            Self::And(items) | Self::Or(items) => {
                let values = items.iter().map(|e| e.value(condition, lookup)).collect::<Result<Vec<_>, _>>()?;
                if matches!(self, Self::And(_)) { values.iter().all(|v| *v) } else { values.iter().any(|v| *v) }
            }
            Self::Condition(name) => condition(name).map_err(|e| e.to_string())?,
        })
    }
}

struct Parser<'t> {
    tokens: &'t [Token],
    at: usize,
}

impl Parser<'_> {
    fn next(&mut self) -> Option<&Token> {
        let token = self.tokens.get(self.at);
        self.at += 1;
        token
    }

    fn expect(&mut self, expected: Token) -> Result<(), String> {
        match self.next() {
            Some(token) if *token == expected => Ok(()),
            other => Err(format!("expected {expected:?}, found {other:?}")),
        }
    }

    fn word(&mut self) -> Result<String, String> {
        match self.next() {
            Some(Token::Word(word)) => Ok(word.clone()),
            other => Err(format!("expected a name or a value, found {other:?}")),
        }
    }

    fn expression(&mut self) -> Result<Expression, String> {
        let tag = self.word()?;
        if tag == "!Condition" {
            return Ok(Expression::Condition(self.word()?));
        }
        self.expect(Token::Open)?;
        let expression = match tag.as_str() {
            "!Equals" => {
                let a = self.operand()?;
                self.expect(Token::Comma)?;
                Expression::Equals(a, self.operand()?)
            }
            "!Not" => Expression::Not(Box::new(self.expression()?)),
            "!And" | "!Or" => {
                let mut all = vec![self.expression()?];
                while self.tokens.get(self.at) == Some(&Token::Comma) {
                    self.at += 1;
                    all.push(self.expression()?);
                }
                if tag == "!And" { Expression::And(all) } else { Expression::Or(all) }
            }
            other => return Err(format!("{other} is not a condition function this reader evaluates")),
        };
        self.expect(Token::Close)?;
        Ok(expression)
    }

    fn operand(&mut self) -> Result<Operand, String> {
        let word = self.word()?;
        if word == "!Ref" {
            return Ok(Operand::Ref(self.word()?));
        }
        if word.starts_with('!') {
            return Err(format!("{word} is not an operand this reader evaluates"));
        }
        Ok(Operand::Literal(word))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conditions() -> BTreeMap<String, String> {
        [
            ("HasDatabase", r#"!Not [!Equals [!Ref DatabaseUrlSecretArn, ""]]"#),
            ("MakeNetwork", r#"!Equals [!Ref CreateNetwork, "true"]"#),
            ("HasPipe2", r#"!Not [!Equals [!Ref PipeCount, "1"]]"#),
            ("HasPipe3", r#"!And [!Condition HasPipe2, !Not [!Equals [!Ref PipeCount, "2"]]]"#),
            ("Either", "!Or [!Condition MakeNetwork, !Condition HasDatabase]"),
            ("Loop", "!Condition Loop"),
            ("If", "!If [A, B, C]"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    fn with(values: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let values: Vec<(String, String)> = values.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| values.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_templates_forms_evaluate_as_cloudformation_would() {
        let c = conditions();
        let empty = with(&[("DatabaseUrlSecretArn", ""), ("CreateNetwork", "true"), ("PipeCount", "2")]);
        assert_eq!(holds(&c, "HasDatabase", &empty), Ok(false));
        assert_eq!(holds(&c, "MakeNetwork", &empty), Ok(true));
        assert_eq!((holds(&c, "HasPipe2", &empty), holds(&c, "HasPipe3", &empty)), (Ok(true), Ok(false)));
        assert_eq!(holds(&c, "Either", &empty), Ok(true));
        let given = with(&[("DatabaseUrlSecretArn", "arn:aws:secretsmanager:x"), ("CreateNetwork", "false")]);
        assert_eq!(holds(&c, "HasDatabase", &given), Ok(true));
        assert_eq!(holds(&c, "Either", &given), Ok(true));
    }

    #[test]
    fn what_cannot_be_evaluated_is_an_error_naming_the_condition() {
        let c = conditions();
        let none = with(&[]);
        let unbound = holds(&c, "HasDatabase", &none).unwrap_err();
        assert!(unbound.to_string().starts_with("condition HasDatabase: !Ref DatabaseUrlSecretArn"), "{unbound}");
        assert!(holds(&c, "Loop", &none).unwrap_err().problem.contains("too deep"));
        assert!(holds(&c, "If", &none).unwrap_err().problem.contains("!If is not a condition function"));
        assert!(holds(&c, "Missing", &none).unwrap_err().problem.contains("no such condition"));
    }
}

//! The call syntax: `States.Name(arg, …)` where an argument is a quoted
//! string (`\'`, `\{`, `\}` and `\\` are its escapes), a number, `true`,
//! `false`, `null`, a Path, or another call. Up to 10 calls may nest.

use super::{Arg, Function, Intrinsic};
use crate::path::Path;
use serde_json::Value;

const MAX_NESTING: usize = 10;

pub(super) fn parse(text: &str) -> Result<Intrinsic, String> {
    let mut parser = Parser { chars: text.chars().collect(), pos: 0 };
    let call = parser.call(1)?;
    parser.skip_spaces();
    if parser.pos != parser.chars.len() {
        return Err(format!("unexpected text after the call at offset {}", parser.pos + 1));
    }
    Ok(call)
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn call(&mut self, depth: usize) -> Result<Intrinsic, String> {
        if depth > MAX_NESTING {
            return Err(format!("more than {MAX_NESTING} nested intrinsic functions"));
        }
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '.') {
            self.pos += 1;
        }
        let name: String = self.chars[start..self.pos].iter().collect();
        let function = Function::from_name(&name).ok_or_else(|| format!("unknown intrinsic function {name:?}"))?;
        self.skip_spaces();
        if self.peek() != Some('(') {
            return Err(format!("expected '(' after {name}"));
        }
        self.pos += 1;
        let mut args = Vec::new();
        self.skip_spaces();
        if self.peek() == Some(')') {
            self.pos += 1;
        } else {
            loop {
                args.push(self.arg(depth)?);
                self.skip_spaces();
                match self.peek() {
                    Some(',') => self.pos += 1,
                    Some(')') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(format!("expected ',' or ')' in {name} at offset {}", self.pos + 1)),
                }
            }
        }
        check_arguments(function, &args)?;
        Ok(Intrinsic { function, args })
    }

    fn arg(&mut self, depth: usize) -> Result<Arg, String> {
        self.skip_spaces();
        match self.peek() {
            Some('\'') => self.text(),
            Some('$') => self.path(),
            Some(c) if c == '-' || c.is_ascii_digit() => self.number(),
            Some(c) if c.is_ascii_alphabetic() => {
                let rest: String = self.chars[self.pos..].iter().collect();
                for (word, value) in [("true", Value::Bool(true)), ("false", Value::Bool(false)), ("null", Value::Null)]
                {
                    let after = rest.chars().nth(word.len());
                    if rest.starts_with(word) && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.') {
                        self.pos += word.len();
                        return Ok(Arg::Literal(value));
                    }
                }
                self.call(depth + 1).map(|call| Arg::Call(Box::new(call)))
            }
            Some(c) => Err(format!("unexpected {c:?} at offset {}", self.pos + 1)),
            None => Err("unexpected end of the call".to_owned()),
        }
    }

    fn text(&mut self) -> Result<Arg, String> {
        self.pos += 1;
        let mut value = String::new();
        let mut placeholders = Vec::new();
        loop {
            match self.peek() {
                None => return Err("unclosed string literal".to_owned()),
                Some('\'') => {
                    self.pos += 1;
                    return Ok(Arg::Text { value, placeholders });
                }
                Some('\\') => {
                    match self.chars.get(self.pos + 1) {
                        Some(c @ ('\'' | '{' | '}' | '\\')) => value.push(*c),
                        _ => return Err(format!("open escape '\\' at offset {}", self.pos + 1)),
                    }
                    self.pos += 2;
                }
                Some('{') if self.chars.get(self.pos + 1) == Some(&'}') => {
                    placeholders.push(value.len());
                    value.push_str("{}");
                    self.pos += 2;
                }
                Some(c) => {
                    value.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// A path runs to the next ',' or ')' outside brackets and quotes.
    fn path(&mut self) -> Result<Arg, String> {
        let start = self.pos;
        let mut depth = 0usize;
        let mut quote: Option<char> = None;
        while let Some(c) = self.peek() {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None => match c {
                    '\'' | '"' => quote = Some(c),
                    '[' | '(' => depth += 1,
                    ']' => depth = depth.saturating_sub(1),
                    ')' if depth > 0 => depth -= 1,
                    ',' | ')' if depth == 0 => break,
                    _ => {}
                },
            }
            self.pos += 1;
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        Path::parse(text.trim()).map(Arg::Path)
    }

    fn number(&mut self) -> Result<Arg, String> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')) {
            self.pos += 1;
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        serde_json::from_str::<serde_json::Number>(&text)
            .map(|n| Arg::Literal(Value::Number(n)))
            .map_err(|_| format!("{text:?} is not a number"))
    }
}

/// What can be known to be wrong before any input is seen.
fn check_arguments(function: Function, args: &[Arg]) -> Result<(), String> {
    let (min, max) = function.arity();
    let name = function.name();
    if args.len() < min || args.len() > max {
        let expected = match (min, max) {
            (min, usize::MAX) => format!("at least {min}"),
            (min, max) if min == max => format!("{min}"),
            (min, max) => format!("{min} to {max}"),
        };
        return Err(format!("{name} takes {expected} argument(s), got {}", args.len()));
    }
    match (function, args) {
        (Function::JsonToString, [arg]) if !matches!(arg, Arg::Path(_)) => {
            Err(format!("the argument of {name} must be a Path"))
        }
        (Function::Format, [Arg::Text { placeholders, .. }, rest @ ..]) if placeholders.len() != rest.len() => {
            Err(format!(
                "the template has {} '{{}}' placeholder(s) but {} value(s) follow it",
                placeholders.len(),
                rest.len()
            ))
        }
        (Function::Format, [Arg::Literal(value), ..]) => Err(format!("the template must be a string, found {value}")),
        (Function::Hash, [_, Arg::Text { value, .. }]) if !super::encoding::is_hash_algorithm(value) => {
            Err(format!("{value:?} is not a hash algorithm (MD5, SHA-1, SHA-256, SHA-384, SHA-512)"))
        }
        (Function::JsonMerge, [_, _, Arg::Literal(value)]) if value != &Value::Bool(false) => {
            Err("the third argument must be false: only shallow merging is supported".to_owned())
        }
        _ => Ok(()),
    }
}

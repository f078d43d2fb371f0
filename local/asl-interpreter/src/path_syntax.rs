//! The syntax of JSONPath as Step Functions reads it (Jayway JsonPath):
//! splits a path into name and index steps, and says whether it is
//! *definite* (it can select at most one node).
//!
//! Jayway is more lenient than RFC 9535 in dot notation (`$.error-info` is
//! a valid Jayway path, not an RFC one), so dot names are rewritten to
//! bracket notation before an indefinite path is handed to
//! `serde_json_path`. A path is definite when it has no deep scan (`..`),
//! wildcard (`*`), filter (`?`), slice (`:`) or union (`,`): Jayway returns
//! a single value for such a path and a list for any other, even when the
//! list has one item.

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    /// `.name`, `['name']` or `["name"]`.
    Name(String),
    /// `[n]`; a negative index counts from the end.
    Index(i64),
    /// Any other step, already in RFC 9535 syntax (`.*`, `..['a']`,
    /// `[?(@.a > 1)]`, `[0:2]`).
    Other(String),
}

/// Splits what follows the root `$` (or `$$`) into steps.
pub(crate) fn tokenize(rest: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = rest.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' if chars.get(i + 1) == Some(&'.') => {
                i += 2;
                match chars.get(i) {
                    Some('*') => {
                        tokens.push(Token::Other("..*".to_owned()));
                        i += 1;
                    }
                    Some('[') => {
                        let (inner, next) = bracket(&chars, i)?;
                        tokens.push(Token::Other(format!("..[{inner}]")));
                        i = next;
                    }
                    _ => {
                        let (name, next) = dot_name(&chars, i)?;
                        tokens.push(Token::Other(format!("..[{}]", quote(&name))));
                        i = next;
                    }
                }
            }
            '.' if chars.get(i + 1) == Some(&'*') => {
                tokens.push(Token::Other(".*".to_owned()));
                i += 2;
            }
            '.' => {
                let (name, next) = dot_name(&chars, i + 1)?;
                tokens.push(Token::Name(name));
                i = next;
            }
            '[' => {
                let (inner, next) = bracket(&chars, i)?;
                tokens.push(classify_bracket(&inner));
                i = next;
            }
            c => return Err(format!("unexpected {c:?} at offset {}", i + 1)),
        }
    }
    Ok(tokens)
}

/// The path in RFC 9535 syntax, for `serde_json_path`.
pub(crate) fn to_rfc9535(tokens: &[Token]) -> String {
    let mut out = String::from("$");
    for token in tokens {
        match token {
            Token::Name(name) => {
                out.push('[');
                out.push_str(&quote(name));
                out.push(']');
            }
            Token::Index(n) => out.push_str(&format!("[{n}]")),
            Token::Other(text) => out.push_str(text),
        }
    }
    out
}

fn dot_name(chars: &[char], start: usize) -> Result<(String, usize), String> {
    let mut end = start;
    while end < chars.len() && !matches!(chars[end], '.' | '[') {
        let c = chars[end];
        if matches!(c, '(' | ')') {
            return Err("JSONPath functions such as length() are not supported".to_owned());
        }
        if matches!(c, ']' | '\'' | '"' | ' ' | '*' | ',' | '?' | '@') {
            return Err(format!("unexpected {c:?} in the name at offset {}", end + 1));
        }
        end += 1;
    }
    if end == start {
        return Err(format!("expected a name after '.' at offset {start}"));
    }
    Ok((chars[start..end].iter().collect(), end))
}

/// Reads `[ … ]` starting at `start` (the `[`), honouring quotes and nested
/// brackets (filters); returns the inner text and the offset after `]`.
fn bracket(chars: &[char], start: usize) -> Result<(String, usize), String> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut i = start;
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Some(q) => {
                if c == '\\' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => quote = Some(c),
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok((chars[start + 1..i].iter().collect(), i + 1));
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    Err(format!("unclosed '[' at offset {}", start + 1))
}

fn classify_bracket(inner: &str) -> Token {
    let trimmed = inner.trim();
    if let Ok(n) = trimmed.parse::<i64>() {
        return Token::Index(n);
    }
    if let Some(name) = single_quoted_name(trimmed) {
        return Token::Name(name);
    }
    Token::Other(format!("[{inner}]"))
}

/// `'name'` or `"name"` as one whole name (not a union such as `'a','b'`).
fn single_quoted_name(text: &str) -> Option<String> {
    let mut chars = text.chars();
    let q = chars.next().filter(|c| *c == '\'' || *c == '"')?;
    let mut name = String::new();
    let mut escaped = false;
    let mut closed = false;
    for c in chars {
        if closed {
            return None;
        }
        if escaped {
            name.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == q {
            closed = true;
        } else {
            name.push(c);
        }
    }
    closed.then_some(name)
}

fn quote(name: &str) -> String {
    format!("'{}'", name.replace('\\', "\\\\").replace('\'', "\\'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definite_steps() {
        assert_eq!(
            tokenize(".data.error-info[2]['odd name']").unwrap(),
            vec![
                Token::Name("data".into()),
                Token::Name("error-info".into()),
                Token::Index(2),
                Token::Name("odd name".into())
            ]
        );
    }

    #[test]
    fn indefinite_steps_become_rfc9535() {
        let tokens = tokenize(".jar[?(@.a >= 5)]..x.*[0:2]").unwrap();
        assert!(tokens.iter().any(|t| matches!(t, Token::Other(_))));
        assert_eq!(to_rfc9535(&tokens), "$['jar'][?(@.a >= 5)]..['x'].*[0:2]");
    }

    #[test]
    fn bad_paths_are_refused() {
        assert!(tokenize(".a.length()").unwrap_err().contains("functions"));
        assert!(tokenize(".a[0").unwrap_err().contains("unclosed"));
        assert!(tokenize("a").is_err());
        assert!(tokenize(".").is_err());
    }
}

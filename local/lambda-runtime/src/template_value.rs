//! One value of the template as CloudFormation reads it: a literal, a
//! `!Ref`, a `!GetAtt` or a `!Sub`, and its text once every reference in it
//! is replaced by what a lookup gives (the local stack's endpoints, the
//! parameters' values). Any other intrinsic function is refused by name:
//! a value this reader cannot compute is an error, never a guess.

/// A value as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateValue {
    Literal(String),
    /// `!Ref Name`: a parameter, a resource or a pseudo parameter (`AWS::Region`).
    Ref(String),
    /// `!GetAtt Resource.Attribute`, kept as `Resource.Attribute`.
    GetAtt(String),
    /// `!Sub "text ${Name} ${Resource.Attribute}"`.
    Sub(String),
    /// Any other tag (`!If`, `!Join`, …), with its text.
    Unsupported(String),
}

/// Why a value has no text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("{0} refers to {1}, which the local stack does not provide")]
    Unbound(String, String),
    #[error("{0} uses {1}, which this reader does not evaluate")]
    Unsupported(String, String),
    #[error("{0} has an unclosed ${{ in {1:?}")]
    Unclosed(String, String),
}

impl TemplateValue {
    /// Reads the text after `Key:`.
    pub fn parse(text: &str) -> Self {
        let text = text.trim();
        if let Some(name) = text.strip_prefix("!Ref ") {
            return Self::Ref(name.trim().to_owned());
        }
        if let Some(name) = text.strip_prefix("!GetAtt ") {
            return Self::GetAtt(name.trim().to_owned());
        }
        if let Some(body) = text.strip_prefix("!Sub ") {
            return Self::Sub(unquote(body.trim()).to_owned());
        }
        if text.starts_with('!') {
            return Self::Unsupported(text.to_owned());
        }
        Self::Literal(unquote(text).to_owned())
    }

    /// The value's text, each reference replaced by `lookup`'s answer.
    /// `what` names the value in errors (`IngestFunction's SLUICE_QUEUE_URL`).
    pub fn resolve(&self, what: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, ValueError> {
        let bound = |name: &str| lookup(name).ok_or_else(|| ValueError::Unbound(what.to_owned(), name.to_owned()));
        match self {
            Self::Literal(text) => Ok(text.clone()),
            Self::Ref(name) | Self::GetAtt(name) => bound(name),
            Self::Unsupported(text) => Err(ValueError::Unsupported(what.to_owned(), text.clone())),
            Self::Sub(text) => {
                let mut out = String::new();
                let mut rest = text.as_str();
                while let Some(open) = rest.find("${") {
                    out.push_str(&rest[..open]);
                    let after = &rest[open + 2..];
                    let close = after.find('}').ok_or_else(|| ValueError::Unclosed(what.to_owned(), text.clone()))?;
                    let name = &after[..close];
                    // `${!Literal}` is Sub's escape for a literal `${Literal}`.
                    match name.strip_prefix('!') {
                        Some(literal) => out.push_str(&format!("${{{literal}}}")),
                        None => out.push_str(&bound(name)?),
                    }
                    rest = &after[close + 1..];
                }
                out.push_str(rest);
                Ok(out)
            }
        }
    }
}

/// `"x"` or `'x'` without its quotes; anything else as it is.
fn unquote(text: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = text.strip_prefix(quote).and_then(|t| t.strip_suffix(quote)) {
            return inner;
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(name: &str) -> Option<String> {
        match name {
            "Stage" => Some("local".into()),
            "Cache.Endpoint.Port" => Some("6379".into()),
            _ => None,
        }
    }

    #[test]
    fn each_form_reads_and_resolves() {
        assert_eq!(TemplateValue::parse("\"sluice:\"").resolve("v", lookup), Ok("sluice:".into()));
        assert_eq!(TemplateValue::parse("90").resolve("v", lookup), Ok("90".into()));
        assert_eq!(TemplateValue::parse("!Ref Stage").resolve("v", lookup), Ok("local".into()));
        assert_eq!(TemplateValue::parse("!GetAtt Cache.Endpoint.Port").resolve("v", lookup), Ok("6379".into()));
        let sub = TemplateValue::parse("!Sub \"sluice-${Stage}-fetch:${Cache.Endpoint.Port} ${!Kept}\"");
        assert_eq!(sub.resolve("v", lookup), Ok("sluice-local-fetch:6379 ${Kept}".into()));
    }

    #[test]
    fn what_cannot_be_computed_is_named() {
        let err = TemplateValue::parse("!Ref EventsQueue").resolve("F's SLUICE_QUEUE_URL", lookup).unwrap_err();
        assert_eq!(
            err.to_string(),
            "F's SLUICE_QUEUE_URL refers to EventsQueue, which the local stack does not provide"
        );
        let err = TemplateValue::parse("!If [A, b, c]").resolve("v", lookup).unwrap_err();
        assert!(matches!(err, ValueError::Unsupported(..)), "{err}");
        let err = TemplateValue::parse("!Sub \"a-${Stage\"").resolve("v", lookup).unwrap_err();
        assert!(matches!(err, ValueError::Unclosed(..)), "{err}");
    }
}

//! `${Name}` placeholders, replaced the way SAM's `DefinitionSubstitutions`
//! (CloudFormation's `AWS::StepFunctions::StateMachine`
//! `DefinitionSubstitutions`) does: in the definition text, before it is
//! parsed. A placeholder with no value is left as written, as
//! CloudFormation leaves it.

use std::collections::BTreeMap;

/// Values for `${Name}` placeholders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Substitutions(BTreeMap<String, String>);

impl Substitutions {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.0.insert(name.into(), value.into());
        self
    }

    pub fn with(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.insert(name, value);
        self
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// The text with every `${Name}` that has a value replaced by it.
    pub fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            match after.find('}') {
                Some(end) if self.0.contains_key(&after[..end]) => {
                    out.push_str(&self.0[&after[..end]]);
                    rest = &after[end + 1..];
                }
                _ => {
                    out.push_str("${");
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// Placeholders in `text` that have no value here.
    pub fn unresolved(&self, text: &str) -> Vec<String> {
        let mut names = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else { break };
            let name = &after[..end];
            if !self.0.contains_key(name) && !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
            rest = &after[end + 1..];
        }
        names
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Substitutions {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(iter.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_known_placeholders_and_keeps_the_rest() {
        let subs = Substitutions::new().with("FetchArn", "arn:aws:lambda:eu-west-1:1:function:fetch");
        let text = r#"{"Resource": "${FetchArn}", "Other": "${Unknown}", "Twice": "${FetchArn}/${FetchArn}"}"#;
        assert_eq!(
            subs.apply(text),
            r#"{"Resource": "arn:aws:lambda:eu-west-1:1:function:fetch", "Other": "${Unknown}", "Twice": "arn:aws:lambda:eu-west-1:1:function:fetch/arn:aws:lambda:eu-west-1:1:function:fetch"}"#
        );
        assert_eq!(subs.unresolved(text), vec!["Unknown".to_owned()]);
    }

    #[test]
    fn an_unclosed_placeholder_is_left_alone() {
        assert_eq!(Substitutions::new().with("A", "1").apply("x ${A"), "x ${A");
    }
}

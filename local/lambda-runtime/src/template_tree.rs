//! The SAM template as a tree of indented lines: each line a node, the
//! lines indented deeper below it its children. That is all of YAML the
//! template's block mappings need, and it keeps CloudFormation's tags
//! (`!Ref`, `!GetAtt`, `!Sub`), which plain YAML readers refuse or drop,
//! as the text they are. Flow collections (`[a, b]`, `{K: v}`) and block
//! scalars (`|`) stay text too; nothing here reads inside them.

/// One line of the template and the lines under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The line without its indentation.
    pub text: String,
    pub children: Vec<Node>,
}

impl Node {
    /// The whole text as a root node whose children are the top-level lines.
    /// Blank lines and comment lines are skipped.
    pub fn parse(text: &str) -> Node {
        let lines: Vec<(usize, &str)> = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|l| (l.len() - l.trim_start().len(), l.trim()))
            .collect();
        let mut position = 0;
        Node { text: String::new(), children: children(&lines, &mut position, None) }
    }

    /// The mapping key of this line (`Timeout` of `Timeout: 30`), if it has one.
    pub fn key(&self) -> Option<&str> {
        let (key, _) = self.text.split_once(':')?;
        let key = key.trim();
        (!key.is_empty() && !key.contains(' ') && !key.starts_with(['-', '"', '{', '['])).then_some(key)
    }

    /// The text after `key:`, trimmed (empty for a key whose value is the block below it).
    pub fn value(&self) -> Option<&str> {
        self.key()?;
        self.text.split_once(':').map(|(_, value)| value.trim())
    }

    /// The child line whose key is `key`.
    pub fn child(&self, key: &str) -> Option<&Node> {
        self.children.iter().find(|c| c.key() == Some(key))
    }

    /// The node at a path of keys.
    pub fn at(&self, path: &[&str]) -> Option<&Node> {
        path.iter().try_fold(self, |node, key| node.child(key))
    }

    /// The value of the child `key`, if it has one on its own line.
    pub fn scalar(&self, key: &str) -> Option<&str> {
        self.child(key).and_then(Node::value).filter(|v| !v.is_empty())
    }

    /// `(key, value)` of every child with a key.
    pub fn entries(&self) -> Vec<(&str, &str)> {
        self.children.iter().filter_map(|c| Some((c.key()?, c.value()?))).collect()
    }
}

/// The nodes from `position` on that are indented deeper than `parent`.
fn children(lines: &[(usize, &str)], position: &mut usize, parent: Option<usize>) -> Vec<Node> {
    let mut nodes = Vec::new();
    while let Some(&(indent, text)) = lines.get(*position) {
        if parent.is_some_and(|p| indent <= p) {
            break;
        }
        *position += 1;
        nodes.push(Node { text: text.to_owned(), children: children(lines, position, Some(indent)) });
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Globals:\n  Function:\n    Timeout: 30\n    # a comment\n\n    Environment:\n      Variables:\n        A: !Ref B\n        C: \"x:y\"\nResources:\n  F:\n    Type: X\n    Properties:\n      Body: |\n        {\"a\": 1}\n      Timeout: 90\n";

    #[test]
    fn lines_nest_by_indentation() {
        let root = Node::parse(SAMPLE);
        assert_eq!(root.at(&["Globals", "Function"]).and_then(|f| f.scalar("Timeout")), Some("30"));
        let vars = root.at(&["Globals", "Function", "Environment", "Variables"]).unwrap();
        assert_eq!(vars.entries(), vec![("A", "!Ref B"), ("C", "\"x:y\"")]);
        let f = root.at(&["Resources", "F", "Properties"]).unwrap();
        assert_eq!(f.scalar("Timeout"), Some("90"));
        assert_eq!(f.scalar("Body"), Some("|"));
        assert_eq!(root.at(&["Resources", "G"]), None);
    }

    #[test]
    fn list_items_and_flow_text_have_no_key() {
        let root = Node::parse("P:\n  - Item: 1\n  {\"a\": 1}\n");
        let p = root.child("P").unwrap();
        assert_eq!(p.children.iter().filter_map(Node::key).count(), 0);
    }
}

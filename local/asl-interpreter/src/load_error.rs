//! Why a definition was refused at load: every problem found, each naming
//! the state (with its path inside Map and Parallel states) and the field.

use std::fmt;

/// One thing wrong with a definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The state, as a path from the top level: `Process / ItemProcessor /
    /// Fetch`, `Verify / Branches[1] / Address`. `None` for top-level fields.
    pub state: Option<String>,
    /// The field, e.g. `ResultPath` or `Retry[0].ErrorEquals`. `None` when
    /// the problem is the document itself.
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.state, &self.field) {
            (Some(state), Some(field)) => write!(f, "state {state:?}, field {field:?}: {}", self.message),
            (Some(state), None) => write!(f, "state {state:?}: {}", self.message),
            (None, Some(field)) => write!(f, "field {field:?}: {}", self.message),
            (None, None) => f.write_str(&self.message),
        }
    }
}

/// A definition that cannot be run, with every problem found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct LoadError {
    pub problems: Vec<Problem>,
}

impl LoadError {
    pub(crate) fn document(message: impl Into<String>) -> Self {
        Self { problems: vec![Problem { state: None, field: None, message: message.into() }] }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

//! A loaded state machine: the definition parsed into states whose
//! transitions are resolved to indexes, every Path and template parsed,
//! and every problem found reported at once.
//!
//! - [`reader`]: typed field access that records problems.
//! - `scope`: a `StartAt` + `States` object (the top level, a Parallel
//!   branch, a Map's ItemProcessor) and the graph checks on it.
//! - `state`: the fields every state shares, and dispatch to the state
//!   types in [`crate::states`].

pub(crate) mod reader;
mod scope;
pub(crate) mod state;

pub(crate) use scope::{Scope, ScopeParser};
pub(crate) use state::{State, StateKind, Transition};

use crate::lambda;
use crate::load_error::LoadError;
use crate::states::task::Resource;
use crate::substitution::Substitutions;
use reader::{Fields, Problems};
use serde_json::Value;
use std::time::Duration;

/// A definition ready to run.
#[derive(Debug)]
pub struct StateMachine {
    pub(crate) root: Scope,
    pub(crate) timeout: Option<Duration>,
}

/// A task target the definition names: a resource, or for
/// `arn:aws:states:::lambda:invoke` the function (from a literal
/// `FunctionName`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskTarget {
    /// The state, as a path from the top level.
    pub state: String,
    /// The Task's `Resource`.
    pub resource: String,
    /// For `lambda:invoke`, the `FunctionName` parameter when it is
    /// written in the definition (not read from a Path).
    pub function_name: Option<String>,
}

impl TaskTarget {
    /// What a handler must be registered under: the function name for
    /// Lambda targets, the resource otherwise.
    pub fn handler_key(&self) -> &str {
        self.function_name.as_deref().unwrap_or(&self.resource)
    }
}

const TOP_LEVEL_FIELDS: &[&str] = &["Comment", "StartAt", "States", "Version", "TimeoutSeconds", "QueryLanguage"];

/// Step Functions' largest TimeoutSeconds (about a year).
pub(crate) const MAX_TIMEOUT_SECONDS: u64 = 99_999_999;

impl StateMachine {
    /// Substitutes `${Name}` placeholders (as SAM's DefinitionSubstitutions
    /// does), then parses and validates the definition.
    pub fn load(text: &str, substitutions: &Substitutions) -> Result<Self, LoadError> {
        let text = substitutions.apply(text);
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| LoadError::document(format!("the definition is not valid JSON: {e}")))?;
        Self::from_value(&value)
    }

    /// Parses and validates an already-parsed definition.
    pub fn from_value(definition: &Value) -> Result<Self, LoadError> {
        let Value::Object(object) = definition else {
            return Err(LoadError::document("the definition must be a JSON object"));
        };
        let problems = Problems::default();
        let fields = Fields { object, state: None, prefix: "", problems: &problems };
        fields.check_known(TOP_LEVEL_FIELDS, "a state machine");
        fields.string("Comment");
        fields.string("Version");
        check_query_language(&fields);
        let timeout = fields.unsigned("TimeoutSeconds", MAX_TIMEOUT_SECONDS).map(Duration::from_secs);
        let root = ScopeParser::new(&problems).parse(&fields, "");
        let problems = problems.into_vec();
        match root {
            Some(root) if problems.is_empty() => Ok(Self { root, timeout }),
            _ => Err(LoadError { problems }),
        }
    }

    /// Every task target of the definition, nested ones included.
    pub fn task_targets(&self) -> Vec<TaskTarget> {
        let mut targets = Vec::new();
        self.root.visit(&mut |state| {
            if let StateKind::Task(task) = &state.kind {
                let function_name = match &task.resource {
                    Resource::LambdaInvoke => task.literal_function_name().map(str::to_owned),
                    Resource::LambdaFunction(arn) => lambda::function_name(arn).map(str::to_owned),
                    Resource::Other(_) => None,
                };
                targets.push(TaskTarget {
                    state: state.display.clone(),
                    resource: task.resource.to_string(),
                    function_name,
                });
            }
        });
        targets
    }
}

/// `QueryLanguage` may only say JSONPath (the default).
pub(crate) fn check_query_language(fields: &Fields<'_>) {
    match fields.string("QueryLanguage") {
        None | Some("JSONPath") => {}
        Some("JSONata") => {
            fields.problem("QueryLanguage", "not supported: JSONata; only the JSONPath query language is implemented")
        }
        Some(other) => {
            fields.problem("QueryLanguage", format!("{other:?} is not a query language (JSONPath or JSONata)"))
        }
    }
}

//! A scope: `StartAt` and `States` (the top level, a Parallel branch, a
//! Map's ItemProcessor). `Next` targets resolve only within their scope;
//! every state must be reachable from `StartAt`.

use super::reader::{Fields, Problems, type_name};
use super::state::{State, StateKind};
use std::collections::HashMap;

#[derive(Debug)]
pub(crate) struct Scope {
    pub(crate) start: usize,
    pub(crate) states: Vec<State>,
}

impl Scope {
    /// Calls `f` on every state, nested ones included.
    pub(crate) fn visit(&self, f: &mut dyn FnMut(&State)) {
        for state in &self.states {
            f(state);
            match &state.kind {
                StateKind::Map(map) => map.processor.visit(f),
                StateKind::Parallel(parallel) => parallel.branches.iter().for_each(|b| b.visit(f)),
                _ => {}
            }
        }
    }
}

/// Parses scopes, recording problems.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScopeParser<'p> {
    pub(crate) problems: &'p Problems,
}

/// The state names of one scope, to resolve `Next`, `Default` and a
/// catcher's `Next`.
#[derive(Debug)]
pub(crate) struct Names<'a> {
    indexes: HashMap<&'a str, usize>,
}

impl Names<'_> {
    /// Resolves the state named by the string field `key`, recording a
    /// problem when it is missing or names no state of this scope.
    pub(crate) fn resolve(&self, fields: &Fields<'_>, key: &str) -> Option<usize> {
        let target = fields.required_string(key)?;
        let index = self.indexes.get(target).copied();
        if index.is_none() {
            fields.problem(key, format!("there is no state named {target:?} here to go to"));
        }
        index
    }
}

impl<'p> ScopeParser<'p> {
    pub(crate) fn new(problems: &'p Problems) -> Self {
        Self { problems }
    }

    /// Parses the `StartAt`/`States` of `fields`; nested states are named
    /// `{display_prefix}{name}`.
    pub(crate) fn parse(&self, fields: &Fields<'_>, display_prefix: &str) -> Option<Scope> {
        let start_name = fields.required_string("StartAt");
        let states_object = fields.required("States", Fields::object)?;
        if states_object.is_empty() {
            fields.problem("States", "must name at least one state");
            return None;
        }
        let names = Names { indexes: states_object.keys().enumerate().map(|(i, name)| (name.as_str(), i)).collect() };
        let parsed: Vec<Option<State>> = states_object
            .iter()
            .map(|(name, value)| {
                let display = format!("{display_prefix}{name}");
                let serde_json::Value::Object(object) = value else {
                    self.problems.add(
                        Some(&display),
                        None,
                        format!("a state must be an object, found {}", type_name(value)),
                    );
                    return None;
                };
                State::parse(name, &display, object, &names, *self)
            })
            .collect();
        let start = start_name.and_then(|name| {
            let index = names.indexes.get(name).copied();
            if index.is_none() {
                fields.problem("StartAt", format!("there is no state named {name:?}"));
            }
            index
        });
        let states: Vec<State> = parsed.into_iter().collect::<Option<_>>()?;
        let start = start?;
        check_reachable(&states, start, self.problems);
        Some(Scope { start, states })
    }
}

/// A state no transition leads to is an error in Step Functions.
fn check_reachable(states: &[State], start: usize, problems: &Problems) {
    let mut reached = vec![false; states.len()];
    let mut pending = vec![start];
    while let Some(index) = pending.pop() {
        if std::mem::replace(&mut reached[index], true) {
            continue;
        }
        pending.extend(states[index].successors());
    }
    for (state, reached) in states.iter().zip(reached) {
        if !reached {
            problems.add(Some(&state.display), None, format!("is not reachable from StartAt {:?}", states[start].name));
        }
    }
}

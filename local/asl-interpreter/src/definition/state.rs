//! The fields every state shares (`Type`, `Next`/`End`, `InputPath`,
//! `OutputPath`, `Comment`, `QueryLanguage`), and dispatch to the state
//! types. Each type lists the fields it accepts; any other is refused by
//! name.

use super::check_query_language;
use super::reader::{Fields, IoPath};
use super::scope::{Names, ScopeParser};
use crate::history::EventType;
use crate::states::choice::ChoiceState;
use crate::states::fail::FailState;
use crate::states::map::MapState;
use crate::states::parallel::ParallelState;
use crate::states::pass::PassState;
use crate::states::task::TaskState;
use crate::states::wait::WaitState;
use serde_json::{Map, Value};

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) name: String,
    /// The name with its path from the top level (`Process / ItemProcessor
    /// / Fetch`), for messages.
    pub(crate) display: String,
    pub(crate) input_path: IoPath,
    pub(crate) output_path: IoPath,
    /// Where to go after the state succeeds (Choice and Fail decide for
    /// themselves; theirs is `End`).
    pub(crate) transition: Transition,
    pub(crate) kind: StateKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transition {
    Next(usize),
    End,
}

#[derive(Debug)]
pub(crate) enum StateKind {
    Pass(PassState),
    Task(Box<TaskState>),
    Choice(ChoiceState),
    Wait(WaitState),
    Succeed,
    Fail(FailState),
    Parallel(ParallelState),
    Map(Box<MapState>),
}

/// What a state type's parser gets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StateParse<'a> {
    pub(crate) fields: Fields<'a>,
    pub(crate) names: &'a Names<'a>,
    pub(crate) scopes: ScopeParser<'a>,
    pub(crate) display: &'a str,
}

const COMMON: &[&str] = &["Type", "Comment", "QueryLanguage"];
const FLOW: &[&str] = &["Next", "End", "InputPath", "OutputPath"];

fn allowed_fields(type_name: &str) -> Option<Vec<&'static str>> {
    let own: &[&str] = match type_name {
        "Pass" => &["ResultPath", "Parameters", "Result"],
        "Task" => &["ResultPath", "Parameters", "ResultSelector", "Resource", "TimeoutSeconds", "Retry", "Catch"],
        "Choice" => &["Next", "End", "InputPath", "OutputPath", "Choices", "Default"],
        "Wait" => &["Seconds", "SecondsPath", "Timestamp", "TimestampPath"],
        "Succeed" => &["Next", "End", "InputPath", "OutputPath"],
        "Fail" => &["Next", "End", "Error", "Cause", "ErrorPath", "CausePath"],
        "Parallel" => &["ResultPath", "Parameters", "ResultSelector", "Branches", "Retry", "Catch"],
        "Map" => &[
            "ResultPath",
            "Parameters",
            "ResultSelector",
            "ItemsPath",
            "ItemSelector",
            "ItemProcessor",
            "Iterator",
            "MaxConcurrency",
            "MaxConcurrencyPath",
            "Retry",
            "Catch",
        ],
        _ => return None,
    };
    let flows = !matches!(type_name, "Choice" | "Succeed" | "Fail");
    Some(COMMON.iter().chain(if flows { FLOW } else { &[] }).chain(own).copied().collect())
}

impl State {
    pub(crate) fn parse(
        name: &str,
        display: &str,
        object: &Map<String, Value>,
        names: &Names<'_>,
        scopes: ScopeParser<'_>,
    ) -> Option<Self> {
        let fields = Fields { object, state: Some(display), prefix: "", problems: scopes.problems };
        let type_name = fields.required_string("Type")?;
        let Some(allowed) = allowed_fields(type_name) else {
            fields.problem(
                "Type",
                format!("{type_name:?} is not a state type (Pass, Task, Choice, Wait, Succeed, Fail, Parallel, Map)"),
            );
            return None;
        };
        fields.check_known(&allowed, &format!("a {type_name} state"));
        fields.string("Comment");
        check_query_language(&fields);
        let transition = parse_transition(&fields, names, type_name);
        let (input_path, output_path) = match type_name {
            "Fail" => (IoPath::Whole, IoPath::Whole),
            _ => (fields.io_path("InputPath"), fields.io_path("OutputPath")),
        };
        let parse = StateParse { fields, names, scopes, display };
        let kind = match type_name {
            "Pass" => PassState::parse(&parse).map(StateKind::Pass),
            "Task" => TaskState::parse(&parse).map(|t| StateKind::Task(Box::new(t))),
            "Choice" => ChoiceState::parse(&parse).map(StateKind::Choice),
            "Wait" => WaitState::parse(&parse).map(StateKind::Wait),
            "Succeed" => Some(StateKind::Succeed),
            "Fail" => FailState::parse(&parse).map(StateKind::Fail),
            "Parallel" => ParallelState::parse(&parse).map(StateKind::Parallel),
            _ => MapState::parse(&parse).map(|m| StateKind::Map(Box::new(m))),
        };
        Some(Self {
            name: name.to_owned(),
            display: display.to_owned(),
            input_path,
            output_path,
            transition: transition?,
            kind: kind?,
        })
    }

    /// The states this one can go to next.
    pub(crate) fn successors(&self) -> Vec<usize> {
        let mut next = Vec::new();
        if let Transition::Next(index) = self.transition {
            next.push(index);
        }
        match &self.kind {
            StateKind::Choice(choice) => next.extend(choice.targets()),
            StateKind::Task(task) => next.extend(task.recovery.catch_targets()),
            StateKind::Map(map) => next.extend(map.recovery.catch_targets()),
            StateKind::Parallel(parallel) => next.extend(parallel.recovery.catch_targets()),
            _ => {}
        }
        next
    }
}

fn parse_transition(fields: &Fields<'_>, names: &Names<'_>, type_name: &str) -> Option<Transition> {
    let end = fields.boolean("End");
    if matches!(type_name, "Choice" | "Succeed" | "Fail") {
        for key in ["Next", "End"] {
            if fields.has(key) {
                fields.problem(key, format!("a {type_name} state cannot have Next or End"));
            }
        }
        return Some(Transition::End);
    }
    match (fields.has("Next"), end) {
        (true, Some(true)) => {
            fields.problem("End", "Next and End cannot both be given");
            None
        }
        (true, _) => names.resolve(fields, "Next").map(Transition::Next),
        (false, Some(true)) => Some(Transition::End),
        (false, _) => {
            fields.problem("Next", format!("a {type_name} state must have Next or \"End\": true"));
            None
        }
    }
}

impl StateKind {
    /// The history events for entering and leaving a state of this type.
    pub(crate) fn events(&self) -> (EventType, Option<EventType>) {
        match self {
            Self::Pass(_) => (EventType::PassStateEntered, Some(EventType::PassStateExited)),
            Self::Task(_) => (EventType::TaskStateEntered, Some(EventType::TaskStateExited)),
            Self::Choice(_) => (EventType::ChoiceStateEntered, Some(EventType::ChoiceStateExited)),
            Self::Wait(_) => (EventType::WaitStateEntered, Some(EventType::WaitStateExited)),
            Self::Succeed => (EventType::SucceedStateEntered, Some(EventType::SucceedStateExited)),
            Self::Fail(_) => (EventType::FailStateEntered, None),
            Self::Parallel(_) => (EventType::ParallelStateEntered, Some(EventType::ParallelStateExited)),
            Self::Map(_) => (EventType::MapStateEntered, Some(EventType::MapStateExited)),
        }
    }
}

//! The execution's event history, with Step Functions' event type names
//! (<https://docs.aws.amazon.com/step-functions/latest/apireference/API_HistoryEvent.html>).
//! Each event has an id, the id of the event before it on the same line of
//! work (a Map iteration or Parallel branch has its own line, starting from
//! the event that started it), and a timestamp from the execution's clock.

use crate::timestamp;
use serde::Serialize;
use serde_json::Value;
use std::sync::Mutex;
use std::time::SystemTime;

macro_rules! event_types {
    ($($name:ident),* $(,)?) => {
        /// A history event type, named as in Step Functions.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        pub enum EventType { $($name),* }

        impl EventType {
            pub const fn name(self) -> &'static str {
                match self { $(Self::$name => stringify!($name)),* }
            }
        }
    };
}

event_types!(
    ExecutionStarted,
    ExecutionSucceeded,
    ExecutionFailed,
    ExecutionTimedOut,
    PassStateEntered,
    PassStateExited,
    TaskStateEntered,
    TaskStateExited,
    TaskScheduled,
    TaskStarted,
    TaskSucceeded,
    TaskFailed,
    TaskTimedOut,
    LambdaFunctionScheduled,
    LambdaFunctionStarted,
    LambdaFunctionSucceeded,
    LambdaFunctionFailed,
    LambdaFunctionTimedOut,
    ChoiceStateEntered,
    ChoiceStateExited,
    WaitStateEntered,
    WaitStateExited,
    SucceedStateEntered,
    SucceedStateExited,
    FailStateEntered,
    ParallelStateEntered,
    ParallelStateStarted,
    ParallelStateSucceeded,
    ParallelStateFailed,
    ParallelStateExited,
    MapStateEntered,
    MapStateStarted,
    MapIterationStarted,
    MapIterationSucceeded,
    MapIterationFailed,
    MapStateSucceeded,
    MapStateFailed,
    MapStateExited,
);

/// One event of an execution's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEvent {
    pub id: u64,
    /// 0 for the first event.
    pub previous_event_id: u64,
    #[serde(serialize_with = "serialize_timestamp")]
    pub timestamp: SystemTime,
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub details: EventDetails,
}

impl HistoryEvent {
    /// The timestamp as Step Functions prints it (`2024-05-01T12:00:00.123Z`).
    pub fn timestamp_text(&self) -> String {
        timestamp::format(self.timestamp)
    }
}

/// What an event carries; absent parts are not serialized.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventDetails {
    /// The state, for state events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// A Map iteration's index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// A Map state's item count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

impl EventDetails {
    pub(crate) fn state(name: &str) -> Self {
        Self { name: Some(name.to_owned()), ..Self::default() }
    }

    pub(crate) fn input(mut self, input: &Value) -> Self {
        self.input = Some(input.clone());
        self
    }

    pub(crate) fn output(mut self, output: &Value) -> Self {
        self.output = Some(output.clone());
        self
    }

    pub(crate) fn failure(mut self, error: &str, cause: Option<&str>) -> Self {
        self.error = Some(error.to_owned());
        self.cause = cause.map(str::to_owned);
        self
    }
}

fn serialize_timestamp<S: serde::Serializer>(time: &SystemTime, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&timestamp::format(*time))
}

/// The history being recorded; shared by concurrent branches.
#[derive(Debug, Default)]
pub(crate) struct History {
    events: Mutex<Vec<HistoryEvent>>,
}

/// The last event on one line of work (0 before any).
pub(crate) type Line = u64;

impl History {
    /// Records an event after `line`'s last one and moves `line` on to it.
    pub(crate) fn record(&self, line: &mut Line, time: SystemTime, event_type: EventType, details: EventDetails) {
        let mut events = self.events.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let id = events.len() as u64 + 1;
        events.push(HistoryEvent { id, previous_event_id: *line, timestamp: time, event_type, details });
        *line = id;
    }

    /// The id of the newest event on any line (where a line of work
    /// continues after the branches it waited for).
    pub(crate) fn latest(&self) -> Line {
        self.events.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len() as u64
    }

    pub(crate) fn into_events(self) -> Vec<HistoryEvent> {
        self.events.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

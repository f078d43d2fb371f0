//! The context object (`$$`): what a path can read about the execution and
//! the current state. Built only when a `$$` path is evaluated, since most
//! states never read it.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/input-output-contextobject.html>.

use crate::timestamp;
use serde_json::{Map, Value, json};
use std::sync::OnceLock;
use std::time::SystemTime;

/// What is fixed for one execution.
#[derive(Debug)]
pub(crate) struct ExecutionInfo {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) input: Value,
    pub(crate) start_time: SystemTime,
    pub(crate) state_machine_id: String,
    pub(crate) state_machine_name: String,
}

/// The context object as seen by one state.
#[derive(Debug)]
pub(crate) struct ContextObject<'a> {
    execution: &'a ExecutionInfo,
    state_name: &'a str,
    entered_time: SystemTime,
    retry_count: u32,
    /// `$$.Map.Item`: only while a Map state builds an iteration's input.
    map_item: Option<(usize, &'a Value)>,
    value: OnceLock<Value>,
}

impl<'a> ContextObject<'a> {
    pub(crate) fn new(execution: &'a ExecutionInfo, state_name: &'a str, entered_time: SystemTime) -> Self {
        Self { execution, state_name, entered_time, retry_count: 0, map_item: None, value: OnceLock::new() }
    }

    pub(crate) fn with_retry_count(mut self, retry_count: u32) -> Self {
        self.retry_count = retry_count;
        self
    }

    pub(crate) fn with_map_item(mut self, index: usize, value: &'a Value) -> Self {
        self.map_item = Some((index, value));
        self
    }

    pub(crate) fn value(&self) -> &Value {
        self.value.get_or_init(|| {
            let e = self.execution;
            let mut context = Map::new();
            context.insert(
                "Execution".to_owned(),
                json!({
                    "Id": e.id,
                    "Input": e.input,
                    "Name": e.name,
                    "StartTime": timestamp::format(e.start_time),
                    "RedriveCount": 0,
                }),
            );
            context.insert(
                "State".to_owned(),
                json!({
                    "EnteredTime": timestamp::format(self.entered_time),
                    "Name": self.state_name,
                    "RetryCount": self.retry_count,
                }),
            );
            context.insert("StateMachine".to_owned(), json!({"Id": e.state_machine_id, "Name": e.state_machine_name}));
            if let Some((index, value)) = self.map_item {
                context.insert("Map".to_owned(), json!({"Item": {"Index": index, "Value": value}}));
            }
            Value::Object(context)
        })
    }
}

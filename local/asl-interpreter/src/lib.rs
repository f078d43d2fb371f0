//! An Amazon States Language interpreter: runs the `statemachine/*.asl.json`
//! that sluice deploys to Step Functions, locally, with Step Functions'
//! semantics, for tests and for `sluice dev`.
//!
//! ```
//! use serde_json::json;
//! use sluice_asl::{Executor, ExecutionOptions, StateMachine, Substitutions, SystemClock, TaskError, TaskRegistry};
//!
//! # tokio_test_runtime(async {
//! let definition = r#"{
//!   "StartAt": "Greet",
//!   "States": {
//!     "Greet": {
//!       "Type": "Task",
//!       "Resource": "arn:aws:states:::lambda:invoke",
//!       "Parameters": { "FunctionName": "${Greeter}", "Payload.$": "$" },
//!       "OutputPath": "$.Payload",
//!       "End": true
//!     }
//!   }
//! }"#;
//! let machine = StateMachine::load(definition, &Substitutions::new().with("Greeter", "greet")).unwrap();
//! let registry = TaskRegistry::new().with("greet", |input: serde_json::Value| async move {
//!     Ok::<_, TaskError>(json!({ "greeting": format!("Hello, {}!", input["who"].as_str().unwrap_or("you")) }))
//! });
//! let execution = Executor::new(machine, registry, SystemClock).run(json!({"who": "sluice"}), ExecutionOptions::default()).await;
//! assert_eq!(execution.output(), Some(&json!({"greeting": "Hello, sluice!"})));
//! # });
//! # fn tokio_test_runtime(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
//! # }
//! ```
//!
//! Only the JSONPath query language is supported. Anything this
//! interpreter does not implement (JSONata, Distributed Map, heartbeats,
//! callbacks, variables…) is refused at load with a [`LoadError`] naming
//! the state and the field, never silently ignored.
//!
//! # Layout
//!
//! - [`substitution`]: `${Name}` placeholders, as SAM's DefinitionSubstitutions.
//! - `definition/`: loading and checking a definition; [`load_error`]: what it found wrong.
//! - `states/`: one file per state type, each parsing its fields and running itself.
//! - `path_syntax`, `path`: Paths (`$…`, `$$…`) as Step Functions' Jayway JsonPath reads them.
//! - `reference_path`: `ResultPath` writes.
//! - `payload_template`: `.$` fields of Parameters, ItemSelector, ResultSelector.
//! - `intrinsics/`: the `States.*` functions and their parser.
//! - `retry`, `catch`, `recovery`: Retry and Catch; [`error_name`]: the names and how they match.
//! - [`task_registry`]: the handlers tasks call; `lambda`: `lambda:invoke`'s result and error shapes.
//! - [`clock`]: real and virtual time.
//! - [`executor`]: runs executions; [`history`]: their events.
//! - [`data_limit`]: the 256 KiB quota on inputs and outputs (`States.DataLimitExceeded`).
//! - [`arn`]: the execution's and the state machine's ARNs.
//! - `context_object`: `$$`; `failure`: runtime errors; `timestamp`: Step Functions' RFC 3339.

pub mod arn;
mod catch;
pub mod clock;
mod context_object;
pub mod data_limit;
mod definition;
pub mod error_name;
pub mod executor;
mod failure;
pub mod history;
mod intrinsics;
mod lambda;
pub mod load_error;
mod path;
mod path_syntax;
mod payload_template;
mod recovery;
mod reference_path;
mod retry;
mod states;
pub mod substitution;
pub mod task_registry;
mod timestamp;

pub use clock::{Clock, SystemClock, VirtualClock};
pub use data_limit::MAX_PAYLOAD_BYTES;
pub use definition::{StateMachine, TaskTarget};
pub use executor::{Execution, ExecutionOptions, Executor, Outcome};
pub use failure::Failure;
pub use history::{EventDetails, EventType, HistoryEvent};
pub use lambda::LAMBDA_INVOKE;
pub use load_error::{LoadError, Problem};
pub use substitution::Substitutions;
pub use task_registry::{TaskError, TaskFuture, TaskHandler, TaskRegistry};

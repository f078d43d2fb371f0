//! Runs a [`StateMachine`]: an execution walks its states from `StartAt`,
//! calling task handlers, waiting on the [`Clock`], and recording the
//! history.

use crate::clock::Clock;
use crate::context_object::{ContextObject, ExecutionInfo};
use crate::definition::reader::IoPath;
use crate::definition::{Scope, State, StateKind, StateMachine, TaskTarget, Transition};
use crate::error_name::TIMEOUT;
use crate::failure::{Failure, abbreviated};
use crate::history::{EventDetails, EventType, History, HistoryEvent, Line};
use crate::recovery;
use crate::task_registry::TaskRegistry;
use futures::FutureExt;
use futures::future::BoxFuture;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Runs executions of one state machine with one set of handlers. Cheap to
/// clone; executions may run concurrently.
#[derive(Debug, Clone)]
pub struct Executor {
    machine: Arc<StateMachine>,
    registry: Arc<TaskRegistry>,
    clock: Arc<dyn Clock>,
}

/// Per-execution choices.
#[derive(Debug, Clone, Default)]
pub struct ExecutionOptions {
    /// The execution's name (`$$.Execution.Name`); a UUID when `None`.
    pub name: Option<String>,
    /// The state machine's name (`$$.StateMachine.Name`).
    pub state_machine_name: Option<String>,
    /// The region of the execution's and the state machine's ARNs
    /// ([`crate::arn::DEFAULT_REGION`] when `None`).
    pub region: Option<String>,
    /// Seeds the random numbers of `JitterStrategy: FULL`, for tests that
    /// want the same waits every run.
    pub jitter_seed: Option<u64>,
}

/// A finished execution.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    pub outcome: Outcome,
    pub history: Vec<HistoryEvent>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Succeeded(Value),
    Failed { error: String, cause: Option<String> },
}

impl Execution {
    pub fn output(&self) -> Option<&Value> {
        match &self.outcome {
            Outcome::Succeeded(output) => Some(output),
            Outcome::Failed { .. } => None,
        }
    }

    /// How many states were entered (Step Functions' state transitions).
    pub fn state_transitions(&self) -> usize {
        self.history.iter().filter(|e| e.event_type.name().ends_with("StateEntered")).count()
    }
}

impl Executor {
    pub fn new(machine: StateMachine, registry: TaskRegistry, clock: impl Clock + 'static) -> Self {
        Self { machine: Arc::new(machine), registry: Arc::new(registry), clock: Arc::new(clock) }
    }

    pub fn from_shared(machine: Arc<StateMachine>, registry: Arc<TaskRegistry>, clock: Arc<dyn Clock>) -> Self {
        Self { machine, registry, clock }
    }

    pub fn machine(&self) -> &StateMachine {
        &self.machine
    }

    /// Task targets of the definition that no registered handler serves.
    pub fn missing_handlers(&self) -> Vec<TaskTarget> {
        self.machine.task_targets().into_iter().filter(|t| !self.registry.handles(t.handler_key())).collect()
    }

    pub async fn run(&self, input: Value, options: ExecutionOptions) -> Execution {
        let start_time = self.clock.now();
        let machine_name = options.state_machine_name.unwrap_or_else(|| "StateMachine".to_owned());
        let name = options.name.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let region = options.region.as_deref().unwrap_or(crate::arn::DEFAULT_REGION);
        let run = Run {
            registry: &self.registry,
            clock: &*self.clock,
            execution: ExecutionInfo {
                id: crate::arn::execution_arn(region, &machine_name, &name),
                name,
                input: input.clone(),
                start_time,
                state_machine_id: crate::arn::state_machine_arn(region, &machine_name),
                state_machine_name: machine_name,
            },
            history: History::default(),
            jitter: Mutex::new(
                options.jitter_seed.map_or_else(|| StdRng::from_rng(&mut rand::rng()), StdRng::seed_from_u64),
            ),
        };
        let mut line: Line = 0;
        run.history.record(&mut line, start_time, EventType::ExecutionStarted, EventDetails::default().input(&input));
        // StartExecution refuses an input over the quota; here the
        // execution fails at once, with the name the states would raise.
        let walk = async {
            crate::data_limit::check(&input, || {
                "The execution input has a size exceeding the maximum number of bytes service limit.".to_owned()
            })?;
            run_scope(&run, &self.machine.root, input, &mut line).await
        }
        .boxed();
        let result = crate::clock::within(&*self.clock, self.machine.timeout, walk).await;
        let mut line = run.history.latest();
        let (event_type, details, outcome) = match result {
            Some(Ok(output)) => {
                (EventType::ExecutionSucceeded, EventDetails::default().output(&output), Outcome::Succeeded(output))
            }
            Some(Err(Failure { error, cause })) => {
                let details = EventDetails::default().failure(&error, cause.as_deref());
                (EventType::ExecutionFailed, details, Outcome::Failed { error, cause })
            }
            None => {
                let details = EventDetails::default().failure(TIMEOUT, None);
                (EventType::ExecutionTimedOut, details, Outcome::Failed { error: TIMEOUT.to_owned(), cause: None })
            }
        };
        run.history.record(&mut line, self.clock.now(), event_type, details);
        Execution { outcome, history: run.history.into_events() }
    }
}

/// One execution in progress.
pub(crate) struct Run<'e> {
    pub(crate) registry: &'e TaskRegistry,
    pub(crate) clock: &'e dyn Clock,
    pub(crate) execution: ExecutionInfo,
    pub(crate) history: History,
    pub(crate) jitter: Mutex<StdRng>,
}

/// What a state's run ends with.
#[derive(Debug)]
pub(crate) enum Step {
    /// Follow the state's own `Next` or `End`.
    Continue(Value),
    /// Go to this state instead (Choice, or a catcher's `Next`).
    Goto(usize, Value),
}

/// Runs one scope (the top level, a Parallel branch or a Map iteration)
/// from its StartAt to an end.
pub(crate) fn run_scope<'a>(
    run: &'a Run<'a>,
    scope: &'a Scope,
    input: Value,
    line: &'a mut Line,
) -> BoxFuture<'a, Result<Value, Failure>> {
    async move {
        let mut index = scope.start;
        let mut input = input;
        loop {
            let state = &scope.states[index];
            let entered = run.clock.now();
            let (entered_event, exited_event) = state.kind.events();
            run.history.record(line, entered, entered_event, EventDetails::state(&state.name).input(&input));
            let visit = Visit { run, state, entered };
            let step = visit.run(input, line).await?;
            let (transition, output) = match step {
                Step::Continue(output) => (state.transition, output),
                Step::Goto(next, output) => (Transition::Next(next), output),
            };
            // A state's output over the quota fails the state before it
            // exits (Step Functions records no StateExited for it), and no
            // Catch of its own or of an enclosing state handles it.
            crate::data_limit::check(&output, || crate::data_limit::result_cause(&state.name))?;
            if let Some(exited) = exited_event {
                visit.record(line, exited, EventDetails::state(&state.name).output(&output));
            }
            match transition {
                Transition::Next(next) => {
                    index = next;
                    input = output;
                }
                Transition::End => return Ok(output),
            }
        }
    }
    .boxed()
}

/// One visit of one state.
#[derive(Clone, Copy)]
pub(crate) struct Visit<'a> {
    pub(crate) run: &'a Run<'a>,
    pub(crate) state: &'a State,
    pub(crate) entered: SystemTime,
}

impl<'a> Visit<'a> {
    async fn run(self, input: Value, line: &mut Line) -> Result<Step, Failure> {
        match &self.state.kind {
            StateKind::Pass(pass) => pass.run(self, input),
            StateKind::Task(task) => recovery::run(task.as_ref(), self, input, line).await,
            StateKind::Choice(choice) => choice.run(self, input),
            StateKind::Wait(wait) => wait.run(self, input).await,
            StateKind::Succeed => {
                let effective = self.input(&input)?;
                self.output(effective).map(Step::Continue)
            }
            StateKind::Fail(fail) => Err(fail.failure(self, &input)),
            StateKind::Parallel(parallel) => recovery::run(parallel, self, input, line).await,
            StateKind::Map(map) => recovery::run(map.as_ref(), self, input, line).await,
        }
    }

    pub(crate) fn context(&self) -> ContextObject<'a> {
        ContextObject::new(&self.run.execution, &self.state.name, self.entered)
    }

    pub(crate) fn record(&self, line: &mut Line, event_type: EventType, details: EventDetails) {
        self.run.history.record(line, self.run.clock.now(), event_type, details);
    }

    /// Records how a Parallel or Map state ended (`succeeded` or `failed`),
    /// after its branches or iterations: on the line that continues after them.
    pub(crate) fn record_end(&self, line: &mut Line, outcome: &Result<Value, Failure>, events: [EventType; 2]) {
        *line = self.run.history.latest();
        self.record_outcome(line, outcome, events, EventDetails::state(&self.state.name));
    }

    /// Records `succeeded` with `details`, or `failed` with the failure too.
    pub(crate) fn record_outcome<T>(
        &self,
        line: &mut Line,
        outcome: &Result<T, Failure>,
        [succeeded, failed]: [EventType; 2],
        details: EventDetails,
    ) {
        match outcome {
            Ok(_) => self.record(line, succeeded, details),
            Err(failure) => self.record(line, failed, details.failure(&failure.error, failure.cause.as_deref())),
        }
    }

    /// Applies `InputPath` to the state's raw input.
    pub(crate) fn input(&self, raw: &Value) -> Result<Value, Failure> {
        self.select(&self.state.input_path, "InputPath", raw)
    }

    /// Applies `OutputPath` to what the state produced.
    pub(crate) fn output(&self, value: Value) -> Result<Value, Failure> {
        match &self.state.output_path {
            IoPath::Whole => Ok(value),
            io_path => self.select(io_path, "OutputPath", &value),
        }
    }

    fn select(&self, io_path: &IoPath, field: &str, value: &Value) -> Result<Value, Failure> {
        match io_path {
            IoPath::Whole => Ok(value.clone()),
            IoPath::Empty => Ok(Value::Object(Map::new())),
            IoPath::Path(path) => path.select(value, &self.context()).ok_or_else(|| {
                Failure::runtime(format!(
                    "Invalid path '{}' in {field} of state '{}': it matches nothing in '{}'",
                    path.text(),
                    self.state.name,
                    abbreviated(value)
                ))
            }),
        }
    }
}

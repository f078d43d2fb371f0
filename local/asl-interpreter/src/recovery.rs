//! `Retry` and `Catch` of a Task, Parallel or Map state: after a failed
//! attempt, retry (after a wait) if a retrier allows it, else go to the
//! first matching catcher's state, else fail. `States.Runtime` and
//! `States.DataLimitExceeded` are never retried or caught.

use crate::catch::Catcher;
use crate::definition::reader::Fields;
use crate::definition::state::StateParse;
use crate::executor::{Step, Visit};
use crate::failure::Failure;
use crate::history::Line;
use crate::retry::{Retrier, RetryCounts};
use rand::rngs::StdRng;
use serde_json::Value;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, Default)]
pub(crate) struct Recovery {
    pub(crate) retry: Vec<Retrier>,
    pub(crate) catch: Vec<Catcher>,
}

/// What to do after a failed attempt.
#[derive(Debug)]
enum Decision<'c> {
    RetryAfter(Duration),
    Catch(&'c Catcher),
    Fail,
}

/// Task, Parallel and Map: the states that Retry and Catch apply to. Each
/// defines one attempt; [`run`] repeats it as the retriers allow and hands
/// a final failure to the catchers.
pub(crate) trait Attempted {
    fn recovery(&self) -> &Recovery;

    /// One attempt: InputPath to OutputPath, from the state's `raw` input;
    /// `retry_count` is `$$.State.RetryCount`. InputPath gives the same
    /// input every attempt, and its failure (`States.Runtime`) is never
    /// retried, so applying it in each attempt changes nothing.
    async fn attempt(&self, visit: Visit<'_>, raw: &Value, retry_count: u32, line: &mut Line)
    -> Result<Value, Failure>;
}

/// Runs one visit to `state`: attempts until one succeeds, or a failure is
/// caught or final.
pub(crate) async fn run(
    state: &impl Attempted,
    visit: Visit<'_>,
    raw: Value,
    line: &mut Line,
) -> Result<Step, Failure> {
    let recovery = state.recovery();
    let mut attempts = Attempts { recovery, counts: RetryCounts::new(&recovery.retry), retry_count: 0 };
    loop {
        let failure = match state.attempt(visit, &raw, attempts.retry_count, line).await {
            Ok(output) => return Ok(Step::Continue(output)),
            Err(failure) => failure,
        };
        if let Some(end) = attempts.recover(visit, &raw, failure).await {
            return end;
        }
    }
}

impl Recovery {
    pub(crate) fn parse(parse: &StateParse<'_>) -> Option<Self> {
        let fields = &parse.fields;
        let retry = objects(fields, "Retry").into_iter().enumerate().map(|(i, (object, count))| {
            let prefix = format!("Retry[{i}].");
            Retrier::parse(&fields.nested(object, &prefix), i + 1 == count)
        });
        let retry: Option<Vec<_>> = retry.collect::<Vec<_>>().into_iter().collect();
        let catch = objects(fields, "Catch").into_iter().enumerate().map(|(i, (object, count))| {
            let prefix = format!("Catch[{i}].");
            let nested = fields.nested(object, &prefix);
            let next = parse.names.resolve(&nested, "Next");
            Catcher::parse(&nested, i + 1 == count, next)
        });
        let catch: Option<Vec<_>> = catch.collect::<Vec<_>>().into_iter().collect();
        Some(Self { retry: retry?, catch: catch? })
    }

    pub(crate) fn catch_targets(&self) -> impl Iterator<Item = usize> + '_ {
        self.catch.iter().map(|c| c.next)
    }

    fn decide(&self, failure: &Failure, counts: &mut RetryCounts, rng: &Mutex<StdRng>) -> Decision<'_> {
        let delay = {
            let mut rng = rng.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            counts.next_delay(&self.retry, &failure.error, &mut rng)
        };
        match delay {
            Some(delay) => Decision::RetryAfter(delay),
            None => Catcher::find(&self.catch, failure).map_or(Decision::Fail, Decision::Catch),
        }
    }
}

/// The attempts of one visit: how often each retrier has fired, and
/// `$$.State.RetryCount`.
#[derive(Debug)]
struct Attempts<'r> {
    recovery: &'r Recovery,
    counts: RetryCounts,
    retry_count: u32,
}

impl Attempts<'_> {
    /// After a failed attempt: `None` to attempt again (the retrier's wait
    /// has passed on the execution's clock), or how the state ends: at a
    /// catcher's state, or failed. `raw` is the state's input, for catchers.
    async fn recover(&mut self, visit: Visit<'_>, raw: &Value, failure: Failure) -> Option<Result<Step, Failure>> {
        match self.recovery.decide(&failure, &mut self.counts, &visit.run.jitter) {
            Decision::RetryAfter(delay) => {
                visit.run.clock.sleep(delay).await;
                self.retry_count += 1;
                None
            }
            Decision::Catch(catcher) => {
                Some(catcher.output(raw.clone(), &failure).map(|output| Step::Goto(catcher.next, output)))
            }
            Decision::Fail => Some(Err(failure)),
        }
    }
}

/// The objects of an array field, each with the array's length; problems
/// for a non-array or a non-object item.
fn objects<'a>(fields: &Fields<'a>, key: &str) -> Vec<(&'a serde_json::Map<String, serde_json::Value>, usize)> {
    let Some(items) = fields.array(key) else { return Vec::new() };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match item {
            serde_json::Value::Object(object) => Some((object, items.len())),
            _ => {
                fields.problem(&format!("{key}[{i}]"), "must be an object");
                None
            }
        })
        .collect()
}

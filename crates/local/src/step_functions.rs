//! The pipeline's steps as the local interpreter's task handlers, under the
//! names `statemachine/pipeline.asl.json` calls them by. In AWS the same
//! `${…Function}` placeholders become Lambda ARNs (DefinitionSubstitutions);
//! here they become these local names.

use redis::aio::ConnectionLike;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sluice_asl::{Substitutions, TaskError, TaskHandler, TaskRegistry};
use sluice_domain::StepError;
use sluice_pipeline::Steps;
use std::future::Future;

/// The definition every local run executes: the deployed one.
pub const PIPELINE_DEFINITION: &str = include_str!("../../../statemachine/pipeline.asl.json");

/// (placeholder, local function name) for each step.
pub const FUNCTIONS: [(&str, &str); 6] = [
    ("PlanBatchFunction", "PlanBatch"),
    ("EnsureTokenFunction", "EnsureToken"),
    ("FetchFunction", "Fetch"),
    ("StoreFunction", "Store"),
    ("RecordFailureFunction", "RecordFailure"),
    ("BufferRowFunction", "BufferRow"),
];

/// The definition's placeholders filled with the local function names.
pub fn substitutions() -> Substitutions {
    FUNCTIONS.iter().fold(Substitutions::new(), |subs, (placeholder, name)| subs.with(*placeholder, *name))
}

/// Every step, registered under its local function name.
pub fn registry<C>(steps: Steps<C>) -> TaskRegistry
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let s = steps.clone();
    let plan = step(move |input| {
        let s = s.clone();
        async move { s.plan_batch(input).await }
    });
    let s = steps.clone();
    let token = step(move |input| {
        let s = s.clone();
        async move { s.ensure_token(input).await }
    });
    let s = steps.clone();
    let fetch = step(move |input| {
        let s = s.clone();
        async move { s.fetch(input).await }
    });
    let s = steps.clone();
    let store = step(move |input| {
        let s = s.clone();
        async move { s.store(input).await }
    });
    let s = steps.clone();
    let failure = step(move |input| {
        let s = s.clone();
        async move { s.record_failure(input).await }
    });
    let s = steps;
    let buffer = step(move |input| {
        let s = s.clone();
        async move { s.buffer_row(input).await }
    });
    TaskRegistry::new()
        .with("PlanBatch", plan)
        .with("EnsureToken", token)
        .with("Fetch", fetch)
        .with("Store", store)
        .with("RecordFailure", failure)
        .with("BufferRow", buffer)
}

/// A typed step as a JSON task handler, wrapped exactly as the Lambda
/// functions wrap it ([`sluice_pipeline::call_json`]): input that does not
/// parse is `Sluice.InvalidRequest`; a step error keeps its kind as the
/// error name.
fn step<I, O, F, Fut>(f: F) -> impl TaskHandler
where
    I: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(I) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<O, StepError>> + Send + 'static,
{
    move |input: Value| {
        let f = f.clone();
        async move { sluice_pipeline::call_json(input, f).await.map_err(TaskError::from) }
    }
}

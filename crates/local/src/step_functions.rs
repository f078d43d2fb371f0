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
use sluice_pipeline::{ServiceCore, SheetService, ShopService};
use std::future::Future;

/// The definition every local run executes: the deployed one.
pub const PIPELINE_DEFINITION: &str = include_str!("../../../statemachine/pipeline.asl.json");

/// The state machine's name locally: `sluice-${Stage}-pipeline` in
/// `infra/template.yaml`, with stage `dev`.
pub const PIPELINE_NAME: &str = "sluice-dev-pipeline";

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

/// `$service.$method` as a task handler; each call runs on its own clone
/// of the service (a clone shares the connection and the counts).
macro_rules! task {
    ($service:expr, $method:ident) => {{
        let service = $service.clone();
        step(move |input| {
            let service = service.clone();
            async move { service.$method(input).await }
        })
    }};
}

/// Every step, registered under its local function name: the plan and
/// the failure step on the shared core, the others on their path's service.
pub fn registry<C>(shop: ShopService<C>, sheet: SheetService<C>) -> TaskRegistry
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let core = ServiceCore::clone(&shop);
    TaskRegistry::new()
        .with("PlanBatch", task!(core, plan_batch))
        .with("EnsureToken", task!(shop, ensure_token))
        .with("Fetch", task!(shop, fetch))
        .with("Store", task!(shop, store))
        .with("RecordFailure", task!(core, record_failure))
        .with("BufferRow", task!(sheet, buffer_row))
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

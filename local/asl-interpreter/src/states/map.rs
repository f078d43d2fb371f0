//! Map (inline): runs its ItemProcessor (or legacy Iterator) once per item
//! of the array at ItemsPath, at most MaxConcurrency at once (0: no limit
//! of its own; Step Functions runs at most 40 iterations of an inline Map
//! at once either way), or MaxConcurrencyPath read from the state's input;
//! the result is the array of the iterations'
//! outputs, in item order. ItemSelector (or legacy Parameters) builds each
//! iteration's input and may read `$$.Map.Item.Index` and
//! `$$.Map.Item.Value`. The first iteration to fail fails the state, and
//! the others are stopped. Distributed mode is refused at load.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/state-map-inline.html>.

use super::result_processing::ResultProcessing;
use crate::context_object::ContextObject;
use crate::data_limit;
use crate::definition::Scope;
use crate::definition::reader::Fields;
use crate::definition::state::StateParse;
use crate::executor::{Visit, run_scope};
use crate::failure::{Failure, abbreviated};
use crate::history::{EventDetails, EventType, Line};
use crate::path::Path;
use crate::payload_template::PayloadTemplate;
use crate::recovery::{Attempted, Recovery};
use futures::{StreamExt, TryStreamExt, stream};
use serde_json::Value;

/// Inline Map runs at most this many iterations at once.
const INLINE_MAX_CONCURRENCY: usize = 40;

#[derive(Debug)]
pub(crate) struct MapState {
    items_path: Option<Path>,
    item_selector: Option<PayloadTemplate>,
    pub(crate) processor: Scope,
    max_concurrency: MaxConcurrency,
    result: ResultProcessing,
    pub(crate) recovery: Recovery,
}

const PROCESSOR_FIELDS: &[&str] = &["StartAt", "States", "Comment", "ProcessorConfig", "QueryLanguage"];

impl MapState {
    pub(crate) fn parse(parse: &StateParse<'_>) -> Option<Self> {
        let fields = &parse.fields;
        let processor = parse_processor(parse);
        let item_selector = match (fields.has("ItemSelector"), fields.has("Parameters")) {
            (true, true) => {
                fields.problem("Parameters", "ItemSelector and (legacy) Parameters cannot both be given");
                None
            }
            (true, false) => fields.template("ItemSelector"),
            (false, _) => fields.template("Parameters"),
        };
        let max_concurrency = match (fields.has("MaxConcurrency"), fields.has("MaxConcurrencyPath")) {
            (true, true) => {
                fields.problem("MaxConcurrencyPath", "MaxConcurrency and MaxConcurrencyPath cannot both be given");
                None
            }
            (false, true) => fields.path("MaxConcurrencyPath").map(MaxConcurrency::Path),
            (_, false) => {
                let n = fields.unsigned("MaxConcurrency", u64::from(u32::MAX)).unwrap_or(0);
                Some(MaxConcurrency::Fixed(usize::try_from(n).unwrap_or(usize::MAX)))
            }
        };
        let recovery = Recovery::parse(parse);
        Some(Self {
            items_path: fields.path("ItemsPath"),
            item_selector,
            processor: processor?,
            max_concurrency: max_concurrency?,
            result: ResultProcessing::parse(fields),
            recovery: recovery?,
        })
    }
}

impl Attempted for MapState {
    fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    async fn attempt(&self, visit: Visit<'_>, raw: &Value, _: u32, line: &mut Line) -> Result<Value, Failure> {
        let effective = &visit.input(raw)?;
        let context = visit.context();
        let items = match &self.items_path {
            None => effective.clone(),
            Some(path) => path.select(effective, &context).ok_or_else(|| {
                Failure::runtime(format!("ItemsPath '{}' matches nothing in '{}'", path.text(), abbreviated(effective)))
            })?,
        };
        let Value::Array(items) = items else {
            return Err(Failure::runtime(format!("The Map's items must be an array, found {}", abbreviated(&items))));
        };
        let name = &visit.state.name;
        let details = EventDetails { length: Some(items.len()), ..EventDetails::state(name) };
        visit.record(line, EventType::MapStateStarted, details);
        let started = *line;
        let limit = match self.max_concurrency.resolve(effective, &context)? {
            0 => INLINE_MAX_CONCURRENCY,
            n => n.min(INLINE_MAX_CONCURRENCY),
        };
        let count = items.len();
        let iterations = stream::iter(items.into_iter().enumerate())
            .map(|(index, item)| self.iteration(visit, effective, index, item, started))
            .buffer_unordered(limit);
        let mut outputs: Vec<Value> = vec![Value::Null; count];
        let outcome = iterations.try_for_each(|(index, output)| {
            outputs[index] = output;
            futures::future::ready(Ok(()))
        });
        // The iterations' outputs together: each may be small while the
        // array is over the quota, which fails the Map as a whole.
        let outcome = outcome.await.and_then(|()| {
            let result = Value::Array(outputs);
            data_limit::check(&result, || data_limit::result_cause(name)).map(|()| result)
        });
        visit.record_end(line, &outcome, [EventType::MapStateSucceeded, EventType::MapStateFailed]);
        self.result.output(visit, raw, outcome?, &context)
    }
}

impl MapState {
    async fn iteration(
        &self,
        visit: Visit<'_>,
        effective: &Value,
        index: usize,
        item: Value,
        started: Line,
    ) -> Result<(usize, Value), Failure> {
        let mut line = started;
        let details = || EventDetails { index: Some(index), ..EventDetails::state(&visit.state.name) };
        visit.record(&mut line, EventType::MapIterationStarted, details());
        let input = match &self.item_selector {
            Some(selector) => selector.evaluate(effective, &visit.context().with_map_item(index, &item)),
            None => Ok(item),
        };
        // An iteration's input is its first state's input after the Map's
        // ItemSelector: over the quota, it fails the iteration.
        let input = input
            .and_then(|input| data_limit::check(&input, || data_limit::input_cause(&visit.state.name)).map(|()| input));
        let outcome = match input {
            Ok(input) => run_scope(visit.run, &self.processor, input, &mut line).await,
            Err(failure) => Err(failure),
        };
        let events = [EventType::MapIterationSucceeded, EventType::MapIterationFailed];
        visit.record_outcome(&mut line, &outcome, events, details());
        outcome.map(|output| (index, output))
    }
}

/// How many iterations may run at once (0: no limit of the state's own).
#[derive(Debug)]
enum MaxConcurrency {
    Fixed(usize),
    /// Read from the state's input; it must be a non-negative integer.
    Path(Path),
}

impl MaxConcurrency {
    fn resolve(&self, effective: &Value, context: &ContextObject<'_>) -> Result<usize, Failure> {
        let path = match self {
            Self::Fixed(n) => return Ok(*n),
            Self::Path(path) => path,
        };
        let value = path.select(effective, context);
        match value.as_ref().and_then(Value::as_u64) {
            Some(n) => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
            None => Err(Failure::runtime(format!(
                "MaxConcurrencyPath '{}' must select a non-negative integer, found {}",
                path.text(),
                value.as_ref().map_or_else(|| "nothing".to_owned(), abbreviated)
            ))),
        }
    }
}

/// `ItemProcessor` (or legacy `Iterator`): exactly one, inline mode only.
fn parse_processor(parse: &StateParse<'_>) -> Option<Scope> {
    let fields = &parse.fields;
    let key = match (fields.has("ItemProcessor"), fields.has("Iterator")) {
        (true, true) => {
            fields.problem("Iterator", "ItemProcessor and (legacy) Iterator cannot both be given");
            return None;
        }
        (true, false) => "ItemProcessor",
        (false, true) => "Iterator",
        (false, false) => {
            fields.problem("ItemProcessor", "is required");
            return None;
        }
    };
    let object = fields.object(key)?;
    let prefix = format!("{key}.");
    let processor = fields.nested(object, &prefix);
    processor.check_known(PROCESSOR_FIELDS, "an ItemProcessor");
    crate::definition::check_query_language(&processor);
    check_processor_config(&processor);
    parse.scopes.parse(&processor, &format!("{} / {key} / ", parse.display))
}

fn check_processor_config(processor: &Fields<'_>) {
    let Some(config) = processor.object("ProcessorConfig") else { return };
    let prefix = format!("{}ProcessorConfig.", processor.prefix);
    let config = processor.nested(config, &prefix);
    config.check_known(&["Mode", "ExecutionType"], "a ProcessorConfig");
    match config.string("Mode") {
        None | Some("INLINE") => {}
        Some("DISTRIBUTED") => config.problem("Mode", "not supported: Distributed Map; only inline Map is implemented"),
        Some(other) => config.problem("Mode", format!("{other:?} is not INLINE or DISTRIBUTED")),
    }
    if config.has("ExecutionType") && config.string("Mode") != Some("DISTRIBUTED") {
        config.problem("ExecutionType", "applies to Distributed Map only");
    }
}

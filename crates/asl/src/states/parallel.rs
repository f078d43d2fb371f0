//! Parallel: runs every branch on the same input at once; the result is
//! the array of the branches' outputs, in branch order. The first branch
//! to fail fails the state, and the other branches are stopped.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/state-parallel.html>.

use crate::definition::Scope;
use crate::definition::reader::type_name;
use crate::definition::state::StateParse;
use crate::executor::{Step, Visit, run_scope};
use crate::failure::Failure;
use crate::history::{EventDetails, EventType, Line};
use crate::payload_template::PayloadTemplate;
use crate::recovery::Recovery;
use crate::reference_path::ResultPath;
use futures::future::try_join_all;
use serde_json::Value;

#[derive(Debug)]
pub(crate) struct ParallelState {
    pub(crate) branches: Vec<Scope>,
    parameters: Option<PayloadTemplate>,
    result_selector: Option<PayloadTemplate>,
    result_path: ResultPath,
    pub(crate) recovery: Recovery,
}

const BRANCH_FIELDS: &[&str] = &["StartAt", "States", "Comment", "QueryLanguage"];

impl ParallelState {
    pub(crate) fn parse(parse: &StateParse<'_>) -> Option<Self> {
        let fields = &parse.fields;
        if !fields.has("Branches") {
            fields.problem("Branches", "is required");
        }
        let items = fields.array("Branches")?;
        if items.is_empty() {
            fields.problem("Branches", "must be a non-empty array of branches");
        }
        let branches: Vec<Option<Scope>> = items
            .iter()
            .enumerate()
            .map(|(i, item): (usize, &Value)| {
                let Value::Object(object) = item else {
                    fields.problem(&format!("Branches[{i}]"), format!("must be an object, found {}", type_name(item)));
                    return None;
                };
                let prefix = format!("Branches[{i}].");
                let branch = fields.nested(object, &prefix);
                branch.check_known(BRANCH_FIELDS, "a branch");
                crate::definition::check_query_language(&branch);
                parse.scopes.parse(&branch, &format!("{} / Branches[{i}] / ", parse.display))
            })
            .collect();
        let recovery = Recovery::parse(parse);
        let branches: Option<Vec<Scope>> = branches.into_iter().collect();
        Some(Self {
            branches: branches?,
            parameters: fields.template("Parameters"),
            result_selector: fields.template("ResultSelector"),
            result_path: fields.result_path("ResultPath"),
            recovery: recovery?,
        })
    }

    pub(crate) async fn run(&self, visit: Visit<'_>, raw: Value, line: &mut Line) -> Result<Step, Failure> {
        let effective = visit.input(&raw)?;
        let mut attempts = self.recovery.attempts();
        loop {
            let failure = match self.attempt(visit, &raw, &effective, line).await {
                Ok(output) => return Ok(Step::Continue(output)),
                Err(failure) => failure,
            };
            if let Some(end) = attempts.recover(visit, &raw, failure).await {
                return end;
            }
        }
    }

    async fn attempt(
        &self,
        visit: Visit<'_>,
        raw: &Value,
        effective: &Value,
        line: &mut Line,
    ) -> Result<Value, Failure> {
        let context = visit.context();
        let input = match &self.parameters {
            Some(template) => template.evaluate(effective, &context)?,
            None => effective.clone(),
        };
        let name = &visit.state.name;
        visit.record(line, EventType::ParallelStateStarted, EventDetails::state(name));
        let started = *line;
        let branches = self.branches.iter().map(|branch| {
            let input = input.clone();
            async move {
                let mut branch_line = started;
                run_scope(visit.run, branch, input, &mut branch_line).await
            }
        });
        // The branches' outputs together may be over the quota, which
        // fails the Parallel as a whole.
        let outcome = try_join_all(branches).await.and_then(|outputs| {
            let result = Value::Array(outputs);
            crate::data_limit::check(&result, || crate::data_limit::result_cause(name)).map(|()| result)
        });
        *line = visit.run.history.latest();
        let result = match outcome {
            Ok(result) => {
                visit.record(line, EventType::ParallelStateSucceeded, EventDetails::state(name));
                result
            }
            Err(failure) => {
                let details = EventDetails::state(name).failure(&failure.error, failure.cause.as_deref());
                visit.record(line, EventType::ParallelStateFailed, details);
                return Err(failure);
            }
        };
        let result = match &self.result_selector {
            Some(template) => template.evaluate(&result, &context)?,
            None => result,
        };
        let output = self.result_path.apply(raw.clone(), result)?;
        visit.output(output)
    }
}

//! Parallel: runs every branch on the same input at once; the result is
//! the array of the branches' outputs, in branch order. The first branch
//! to fail fails the state, and the other branches are stopped.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/state-parallel.html>.

use super::result_processing::ResultProcessing;
use crate::definition::Scope;
use crate::definition::state::StateParse;
use crate::executor::{Visit, run_scope};
use crate::failure::Failure;
use crate::history::{EventDetails, EventType, Line};
use crate::payload_template::{self, PayloadTemplate};
use crate::recovery::{Attempted, Recovery};
use futures::future::try_join_all;
use serde_json::Value;

#[derive(Debug)]
pub(crate) struct ParallelState {
    pub(crate) branches: Vec<Scope>,
    parameters: Option<PayloadTemplate>,
    result: ResultProcessing,
    pub(crate) recovery: Recovery,
}

const BRANCH_FIELDS: &[&str] = &["StartAt", "States", "Comment", "QueryLanguage"];

impl ParallelState {
    pub(crate) fn parse(parse: &StateParse<'_>) -> Option<Self> {
        let fields = &parse.fields;
        let branches = fields.objects("Branches", "must be a non-empty array of branches", |i, branch| {
            branch.check_known(BRANCH_FIELDS, "a branch");
            crate::definition::check_query_language(&branch);
            parse.scopes.parse(&branch, &format!("{} / Branches[{i}] / ", parse.display))
        });
        let recovery = Recovery::parse(parse);
        Some(Self {
            branches: branches?,
            parameters: fields.template("Parameters"),
            result: ResultProcessing::parse(fields),
            recovery: recovery?,
        })
    }
}

impl Attempted for ParallelState {
    fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    async fn attempt(&self, visit: Visit<'_>, raw: &Value, _: u32, line: &mut Line) -> Result<Value, Failure> {
        let context = visit.context();
        let input = payload_template::apply(&self.parameters, visit.input(raw)?, &context)?;
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
        visit.record_end(line, &outcome, [EventType::ParallelStateSucceeded, EventType::ParallelStateFailed]);
        let result = outcome?;
        self.result.output(visit, raw, result, &context)
    }
}

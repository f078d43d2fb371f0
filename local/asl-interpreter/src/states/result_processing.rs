//! What Task, Parallel and Map do with the result they produced:
//! ResultSelector, then ResultPath onto the state's raw input, then
//! OutputPath. Pass has no ResultSelector and keeps its own.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/input-output-inputpath-params.html>.

use crate::context_object::ContextObject;
use crate::definition::reader::Fields;
use crate::executor::Visit;
use crate::failure::Failure;
use crate::payload_template::{self, PayloadTemplate};
use crate::reference_path::ResultPath;
use serde_json::Value;

#[derive(Debug)]
pub(crate) struct ResultProcessing {
    selector: Option<PayloadTemplate>,
    path: ResultPath,
}

impl ResultProcessing {
    pub(crate) fn parse(fields: &Fields<'_>) -> Self {
        Self { selector: fields.template("ResultSelector"), path: fields.result_path("ResultPath") }
    }

    /// The state's output from its `result` and its `raw` input;
    /// ResultSelector reads `context`.
    pub(crate) fn output(
        &self,
        visit: Visit<'_>,
        raw: &Value,
        result: Value,
        context: &ContextObject<'_>,
    ) -> Result<Value, Failure> {
        let result = payload_template::apply(&self.selector, result, context)?;
        let output = self.path.apply(raw.clone(), result)?;
        visit.output(output)
    }
}

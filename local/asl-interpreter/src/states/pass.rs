//! Pass: passes its input on, or `Result`, or its `Parameters`, through
//! `ResultPath`.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/state-pass.html>.

use crate::definition::state::StateParse;
use crate::executor::{Step, Visit};
use crate::failure::Failure;
use crate::payload_template::{self, PayloadTemplate};
use crate::reference_path::ResultPath;
use serde_json::Value;

#[derive(Debug)]
pub(crate) struct PassState {
    parameters: Option<PayloadTemplate>,
    result: Option<Value>,
    result_path: ResultPath,
}

impl PassState {
    pub(crate) fn parse(parse: &StateParse<'_>) -> Option<Self> {
        let fields = &parse.fields;
        Some(Self {
            parameters: fields.template("Parameters"),
            result: fields.value("Result").cloned(),
            result_path: fields.result_path("ResultPath"),
        })
    }

    pub(crate) fn run(&self, visit: Visit<'_>, raw: Value) -> Result<Step, Failure> {
        let effective = visit.input(&raw)?;
        let result = match &self.result {
            Some(result) => result.clone(),
            None => payload_template::apply(&self.parameters, effective, &visit.context())?,
        };
        let output = self.result_path.apply(raw, result)?;
        visit.output(output).map(Step::Continue)
    }
}

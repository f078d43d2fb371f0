//! Choice: goes to the `Next` of the first rule that matches, else to
//! `Default`, else fails with `States.NoChoiceMatched`.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/state-choice.html>.

use super::choice_rule::Rule;
use crate::definition::state::StateParse;
use crate::error_name;
use crate::executor::{Step, Visit};
use crate::failure::Failure;
use serde_json::Value;

#[derive(Debug)]
pub(crate) struct ChoiceState {
    choices: Vec<(Rule, usize)>,
    default: Option<usize>,
}

impl ChoiceState {
    pub(crate) fn parse(parse: &StateParse<'_>) -> Option<Self> {
        let fields = &parse.fields;
        let choices = fields.objects("Choices", "must be a non-empty array of Choice Rules", |_, rule_fields| {
            let next = parse.names.resolve(&rule_fields, "Next");
            let rule = Rule::parse(&rule_fields, true);
            Some((rule?, next?))
        });
        let default = fields.has("Default").then(|| parse.names.resolve(fields, "Default"));
        Some(Self { choices: choices?, default: default.map_or(Some(None), |d| d.map(Some))? })
    }

    pub(crate) fn targets(&self) -> impl Iterator<Item = usize> + '_ {
        self.choices.iter().map(|(_, next)| *next).chain(self.default)
    }

    pub(crate) fn run(&self, visit: Visit<'_>, raw: Value) -> Result<Step, Failure> {
        let effective = visit.input(&raw)?;
        let context = visit.context();
        let mut next = self.default;
        for (rule, target) in &self.choices {
            if rule.matches(&effective, &context)? {
                next = Some(*target);
                break;
            }
        }
        let Some(next) = next else {
            return Err(Failure::new(
                error_name::NO_CHOICE_MATCHED,
                format!("No Choice Rule of state '{}' matched and it has no Default", visit.state.name),
            ));
        };
        visit.output(effective).map(|output| Step::Goto(next, output))
    }
}

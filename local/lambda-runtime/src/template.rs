//! What the SAM template says about the functions, read from its text
//! ([`crate::template_tree`]): each `AWS::Serverless::Function` with its
//! binary, name, memory, timeout, reserved concurrency, log format,
//! environment (the `Globals` first, then its own), event sources and
//! `Condition`, the parameters' defaults, the `Conditions`, and the state
//! machine's `DefinitionSubstitutions`.
//! Values stay as written ([`TemplateValue`]) until the local stack's
//! bindings resolve them ([`crate::function_spec`]).

use crate::template_tree::Node;
use crate::template_value::TemplateValue;
use std::collections::BTreeMap;

/// `infra/template.yaml`, as this build was made with it.
pub const TEMPLATE: &str = include_str!("../../../infra/template.yaml");

/// A template the reader cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("infra/template.yaml: {0}")]
pub struct TemplateError(pub String);

/// The parts of the template the local Lambda service runs.
#[derive(Debug, Clone)]
pub struct Template {
    /// Each parameter's `Default`, if it has one.
    pub parameters: BTreeMap<String, Option<String>>,
    /// Each condition's text (`!Not [!Equals [!Ref P, ""]]`), evaluated by
    /// [`crate::template_condition`].
    pub conditions: BTreeMap<String, String>,
    /// `Globals.Function`: what every function gets unless it sets its own.
    pub globals: FunctionProperties,
    pub functions: Vec<TemplateFunction>,
    /// The state machine's `DefinitionSubstitutions`, placeholder → value.
    pub substitutions: Vec<(String, TemplateValue)>,
}

/// Properties a function sets, or `Globals` sets for all.
#[derive(Debug, Clone, Default)]
pub struct FunctionProperties {
    pub memory_size: Option<TemplateValue>,
    pub timeout: Option<TemplateValue>,
    /// `Environment.Variables`, in template order.
    pub environment: Vec<(String, TemplateValue)>,
}

/// One `AWS::Serverless::Function`.
#[derive(Debug, Clone)]
pub struct TemplateFunction {
    pub logical_id: String,
    /// `Metadata.BuildProperties.Binary`: the package (and binary) in `functions/`.
    pub binary: String,
    pub function_name: Option<TemplateValue>,
    pub reserved_concurrency: Option<TemplateValue>,
    /// `LoggingConfig.LogFormat` (`JSON` or `Text`).
    pub log_format: Option<String>,
    /// The condition the function exists under, if any.
    pub condition: Option<String>,
    pub properties: FunctionProperties,
    pub events: Vec<EventSource>,
}

/// One entry of a function's `Events`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventSource {
    /// An HTTP API route, `POST /webhooks/cafe24`.
    HttpApi { method: String, path: String },
    /// An SQS event source mapping.
    Sqs { queue: TemplateValue, batch_size: u32, report_batch_item_failures: bool },
}

impl Template {
    /// The template this build carries.
    pub fn bundled() -> Result<Self, TemplateError> {
        Self::parse(TEMPLATE)
    }

    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let root = Node::parse(text);
        let missing = |what: &str| TemplateError(format!("no {what}"));
        let parameters = root
            .child("Parameters")
            .map(|p| {
                p.children
                    .iter()
                    .filter_map(|param| {
                        let default = param.scalar("Default").map(unquoted);
                        Some((param.key()?.to_owned(), default))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let conditions = root
            .child("Conditions")
            .map(|c| c.entries().into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect())
            .unwrap_or_default();
        let globals = root.at(&["Globals", "Function"]).map(properties).unwrap_or_default();
        let resources = root.child("Resources").ok_or_else(|| missing("Resources"))?;
        let mut functions = Vec::new();
        let mut substitutions = Vec::new();
        for resource in &resources.children {
            let Some(id) = resource.key() else { continue };
            match resource.scalar("Type") {
                Some("AWS::Serverless::Function") => functions.push(function(id, resource)?),
                Some("AWS::Serverless::StateMachine") => {
                    if let Some(subs) = resource.at(&["Properties", "DefinitionSubstitutions"]) {
                        substitutions =
                            subs.entries().into_iter().map(|(k, v)| (k.to_owned(), TemplateValue::parse(v))).collect();
                    }
                }
                _ => {}
            }
        }
        if functions.is_empty() {
            return Err(missing("AWS::Serverless::Function"));
        }
        Ok(Self { parameters, conditions, globals, functions, substitutions })
    }

    /// Every function's binary (`sluice-fn-fetch`, …), in template order.
    pub fn binaries(&self) -> Vec<&str> {
        self.functions.iter().map(|f| f.binary.as_str()).collect()
    }
}

fn properties(node: &Node) -> FunctionProperties {
    FunctionProperties {
        memory_size: node.scalar("MemorySize").map(TemplateValue::parse),
        timeout: node.scalar("Timeout").map(TemplateValue::parse),
        environment: node
            .at(&["Environment", "Variables"])
            .map(|vars| vars.entries().into_iter().map(|(k, v)| (k.to_owned(), TemplateValue::parse(v))).collect())
            .unwrap_or_default(),
    }
}

fn function(id: &str, resource: &Node) -> Result<TemplateFunction, TemplateError> {
    let binary = resource
        .at(&["Metadata", "BuildProperties"])
        .and_then(|b| b.scalar("Binary"))
        .ok_or_else(|| TemplateError(format!("{id} has no Metadata.BuildProperties.Binary")))?;
    let props = resource.child("Properties").ok_or_else(|| TemplateError(format!("{id} has no Properties")))?;
    let mut events = Vec::new();
    for event in props.child("Events").map(|e| e.children.as_slice()).unwrap_or_default() {
        let Some(p) = event.child("Properties") else { continue };
        match event.scalar("Type") {
            Some("HttpApi") => events.push(EventSource::HttpApi {
                method: p.scalar("Method").unwrap_or("ANY").to_ascii_uppercase(),
                path: p.scalar("Path").unwrap_or("/").to_owned(),
            }),
            Some("SQS") => {
                let queue = p.scalar("Queue").ok_or_else(|| TemplateError(format!("{id}'s SQS event has no Queue")))?;
                // SAM's default batch size for SQS.
                let batch_size = p.scalar("BatchSize").map_or(Ok(10), str::parse).map_err(|e| {
                    TemplateError(format!("{id}'s SQS event has a BatchSize that is not a number: {e}"))
                })?;
                let report = p.scalar("FunctionResponseTypes").is_some_and(|t| t.contains("ReportBatchItemFailures"));
                events.push(EventSource::Sqs {
                    queue: TemplateValue::parse(queue),
                    batch_size,
                    report_batch_item_failures: report,
                });
            }
            other => {
                return Err(TemplateError(format!(
                    "{id} has an event source of type {other:?}, which runs nowhere locally"
                )));
            }
        }
    }
    Ok(TemplateFunction {
        logical_id: id.to_owned(),
        binary: binary.to_owned(),
        function_name: props.scalar("FunctionName").map(TemplateValue::parse),
        reserved_concurrency: props.scalar("ReservedConcurrentExecutions").map(TemplateValue::parse),
        log_format: props.at(&["LoggingConfig"]).and_then(|l| l.scalar("LogFormat")).map(str::to_owned),
        condition: resource.scalar("Condition").map(str::to_owned),
        properties: properties(props),
        events,
    })
}

fn unquoted(text: &str) -> String {
    match TemplateValue::parse(text) {
        TemplateValue::Literal(literal) => literal,
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Template {
        /// The function whose binary is `binary` (`sluice-fn-fetch`).
        fn function_by_binary(&self, binary: &str) -> Option<&TemplateFunction> {
            self.functions.iter().find(|f| f.binary == binary)
        }
    }

    #[test]
    fn the_bundled_template_has_every_function_with_what_it_needs() {
        let template = Template::bundled().unwrap();
        assert_eq!(template.functions.len(), 10);
        let drain = template.function_by_binary("sluice-fn-drain").unwrap();
        assert_eq!((drain.condition.as_deref(), drain.events.len()), (Some("HasDatabase"), 0));
        assert!(template.conditions["HasDatabase"].contains("DatabaseUrlSecretArn"));
        assert_eq!(template.function_by_binary("sluice-fn-fetch").unwrap().condition, None);
        let flush = template.function_by_binary("sluice-fn-flush-sheet").unwrap();
        assert_eq!(flush.logical_id, "FlushSheetFunction");
        assert_eq!(flush.properties.timeout, Some(TemplateValue::Literal("90".into())));
        assert_eq!(flush.log_format.as_deref(), Some("JSON"));
        assert!(matches!(
            &flush.events[..],
            [EventSource::Sqs { queue: TemplateValue::GetAtt(q), batch_size: 1, report_batch_item_failures: true }]
                if q == "FlushQueue.Arn"
        ));
        let catch_up = template.function_by_binary("sluice-fn-catch-up").unwrap();
        assert!(matches!(
            &catch_up.events[..],
            [EventSource::Sqs { queue: TemplateValue::GetAtt(q), batch_size: 1, report_batch_item_failures: true }]
                if q == "MallDrainQueue.Arn"
        ));
        let ingest = template.function_by_binary("sluice-fn-ingest").unwrap();
        assert!(
            ingest.events.contains(&EventSource::HttpApi { method: "POST".into(), path: "/webhooks/cafe24".into() })
        );
        let own = |name: &str| ingest.properties.environment.iter().find(|(k, _)| k == name).map(|(_, v)| v);
        assert_eq!(own("SLUICE_QUEUE_URL"), Some(&TemplateValue::Ref("EventsQueue".into())));
        // Its own cache user, in place of the Globals' shared one.
        assert_eq!(own("SLUICE_REDIS_PASSWORD_SECRET_ARN"), Some(&TemplateValue::Ref("CacheIngestPassword".into())));
        assert!(template.globals.environment.iter().any(|(k, _)| k == "SLUICE_REDIS_URL"));
        assert_eq!(template.globals.memory_size, Some(TemplateValue::Literal("256".into())));
        assert_eq!(template.parameters.get("Stage"), Some(&Some("prod".to_owned())));
        assert_eq!(template.parameters.get("Cafe24ClientId"), Some(&None));
        // Six functions and the events queue's MaxReceiveCount.
        assert_eq!(template.substitutions.len(), 7);
        let max = template.substitutions.iter().find(|(name, _)| name == "MaxReceiveCount").map(|(_, value)| value);
        assert_eq!(max, Some(&TemplateValue::Ref("MaxReceiveCount".into())));
    }

    #[test]
    fn a_function_without_its_binary_or_with_an_unknown_event_is_refused() {
        let no_binary = "Resources:\n  F:\n    Type: AWS::Serverless::Function\n    Properties:\n      Timeout: 3\n";
        assert!(Template::parse(no_binary).unwrap_err().0.contains("F has no Metadata.BuildProperties.Binary"));
        let kinesis = "Resources:\n  F:\n    Type: AWS::Serverless::Function\n    Metadata:\n      BuildProperties:\n        Binary: b\n    Properties:\n      Events:\n        E:\n          Type: Kinesis\n          Properties:\n            Stream: s\n";
        assert!(Template::parse(kinesis).unwrap_err().0.contains("\"Kinesis\""));
    }
}

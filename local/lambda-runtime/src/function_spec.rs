//! Each function of the template that exists with the local stack's values
//! (its `Condition` holds, [`crate::template_condition`]) made concrete: its
//! name and ARN, memory, timeout, reserved concurrency, event sources, and
//! its environment: exactly the variables the template sets for it (the
//! `Globals` and its own), each resolved through the [`Bindings`], plus the
//! local endpoint of each service it uses that the template leaves at the
//! AWS default. A variable no configuration of the code reads
//! (`sluice_config`), a reference the local stack cannot resolve, or a
//! replacement for a variable the template does not set fails here, before
//! any process starts.
//!
//! What Lambda itself sets in every execution environment is added when
//! one starts ([`lambda_variables`]).

use crate::bindings::Bindings;
use crate::template::{EventSource, Template, TemplateFunction};
use crate::template_condition::{ConditionError, holds};
use crate::template_value::{TemplateValue, ValueError};
use std::collections::BTreeSet;
use std::time::Duration;

/// A template that cannot run locally as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error(transparent)]
    Value(#[from] ValueError),
    #[error("{function} gets {variable}, which no configuration of the code reads")]
    UnknownVariable { function: String, variable: String },
    #[error("the local stack replaces {0}, which the template sets for no function")]
    NotInTemplate(String),
    #[error("{function}'s {property} is {value:?}, not a whole number")]
    NotANumber { function: String, property: &'static str, value: String },
    #[error(transparent)]
    Condition(#[from] ConditionError),
}

/// One function, ready to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSpec {
    /// The template resource (`FetchFunction`).
    pub logical_id: String,
    /// The package and binary in `functions/` (`sluice-fn-fetch`).
    pub binary: String,
    /// The function's name (`sluice-local-fetch`), by which it is invoked.
    pub name: String,
    pub arn: String,
    pub memory_mb: u32,
    pub timeout: Duration,
    pub reserved_concurrency: Option<u32>,
    pub log_format: Option<String>,
    /// What the template sets, resolved, then the local endpoints it needs.
    pub variables: Vec<(String, String)>,
    pub http_routes: Vec<(String, String)>,
    pub sqs_sources: Vec<SqsSource>,
}

/// An SQS event source mapping of a function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqsSource {
    pub queue_arn: String,
    pub batch_size: u32,
    pub report_batch_item_failures: bool,
}

/// Lambda's defaults when neither the function nor `Globals` says.
const DEFAULT_MEMORY_MB: u32 = 128;
const DEFAULT_TIMEOUT_S: u64 = 3;

/// The functions of `template` that exist with `bindings`' values: those
/// without a condition, and those whose condition holds.
pub fn deployed<'t>(template: &'t Template, bindings: &Bindings) -> Result<Vec<&'t TemplateFunction>, SpecError> {
    let lookup = |name: &str| lookup(template, bindings, &[], name);
    let mut out = Vec::new();
    for function in &template.functions {
        match &function.condition {
            Some(condition) if !holds(&template.conditions, condition, &lookup)? => {}
            _ => out.push(function),
        }
    }
    Ok(out)
}

/// Every function of `template` that exists with `bindings`' values
/// ([`deployed`]), resolved through `bindings`.
pub fn specs(template: &Template, bindings: &Bindings) -> Result<Vec<FunctionSpec>, SpecError> {
    let deployed = deployed(template, bindings)?;
    let names: Vec<(String, String)> = deployed
        .iter()
        .map(|f| {
            let what = format!("{}'s FunctionName", f.logical_id);
            let name = match &f.function_name {
                Some(value) => value.resolve(&what, |n| lookup(template, bindings, &[], n))?,
                None => format!("sluice-local-{}", f.logical_id),
            };
            Ok((f.logical_id.clone(), name))
        })
        .collect::<Result<_, ValueError>>()?;
    // `!Ref F` of a function is its name, `!GetAtt F.Arn` its ARN.
    let functions: Vec<(String, String)> = names
        .iter()
        .flat_map(|(id, name)| [(id.clone(), name.clone()), (format!("{id}.Arn"), bindings.function_arn(name))])
        .collect();
    let set: BTreeSet<&str> = template
        .globals
        .environment
        .iter()
        .chain(template.functions.iter().flat_map(|f| &f.properties.environment))
        .map(|(k, _)| k.as_str())
        .collect();
    if let Some(name) = bindings.replaced().keys().find(|k| !set.contains(k.as_str())) {
        return Err(SpecError::NotInTemplate(name.clone()));
    }
    deployed.iter().zip(&names).map(|(f, (_, name))| spec(template, bindings, &functions, f, name)).collect()
}

/// The placeholders of the state machine's definition, resolved (each
/// `!GetAtt XFunction.Arn` becomes the local function's ARN).
pub fn substitutions(template: &Template, bindings: &Bindings) -> Result<Vec<(String, String)>, SpecError> {
    let functions: Vec<(String, String)> = specs(template, bindings)?
        .into_iter()
        .flat_map(|s| [(s.logical_id.clone(), s.name.clone()), (format!("{}.Arn", s.logical_id), s.arn)])
        .collect();
    template
        .substitutions
        .iter()
        .map(|(placeholder, value)| {
            let what = format!("DefinitionSubstitutions {placeholder}");
            Ok((placeholder.clone(), value.resolve(&what, |n| lookup(template, bindings, &functions, n))?))
        })
        .collect()
}

fn spec(
    template: &Template,
    bindings: &Bindings,
    functions: &[(String, String)],
    f: &TemplateFunction,
    name: &str,
) -> Result<FunctionSpec, SpecError> {
    let id = &f.logical_id;
    let resolve = |what: &str, value: &TemplateValue| value.resolve(what, |n| lookup(template, bindings, functions, n));
    let mut variables: Vec<(String, String)> = Vec::new();
    for (key, value) in template.globals.environment.iter().chain(&f.properties.environment) {
        if !sluice_config::is_variable(key) {
            return Err(SpecError::UnknownVariable { function: id.clone(), variable: key.clone() });
        }
        let resolved = match bindings.replaced().get(key) {
            Some(replacement) => replacement.clone(),
            None => resolve(&format!("{id}'s {key}"), value)?,
        };
        // A function's own value wins over the Globals', as in SAM.
        variables.retain(|(k, _)| k != key);
        variables.push((key.clone(), resolved));
    }
    variables.extend(endpoints_for(&variables, bindings));
    let number = |property: &'static str, value: Option<&TemplateValue>| -> Result<Option<u64>, SpecError> {
        let Some(value) = value else { return Ok(None) };
        let text = resolve(&format!("{id}'s {property}"), value)?;
        let parsed = text.parse().map_err(|_| SpecError::NotANumber { function: id.clone(), property, value: text })?;
        Ok(Some(parsed))
    };
    let own_or_global = |own: &Option<TemplateValue>, global: &Option<TemplateValue>| own.clone().or(global.clone());
    let memory =
        number("MemorySize", own_or_global(&f.properties.memory_size, &template.globals.memory_size).as_ref())?;
    let timeout = number("Timeout", own_or_global(&f.properties.timeout, &template.globals.timeout).as_ref())?;
    let reserved = number("ReservedConcurrentExecutions", f.reserved_concurrency.as_ref())?;
    let mut http_routes = Vec::new();
    let mut sqs_sources = Vec::new();
    for event in &f.events {
        match event {
            EventSource::HttpApi { method, path } => http_routes.push((method.clone(), path.clone())),
            EventSource::Sqs { queue, batch_size, report_batch_item_failures } => sqs_sources.push(SqsSource {
                queue_arn: resolve(&format!("{id}'s SQS event source"), queue)?,
                batch_size: *batch_size,
                report_batch_item_failures: *report_batch_item_failures,
            }),
        }
    }
    Ok(FunctionSpec {
        logical_id: id.clone(),
        binary: f.binary.clone(),
        name: name.to_owned(),
        arn: bindings.function_arn(name),
        memory_mb: memory.map_or(DEFAULT_MEMORY_MB, |m| m as u32),
        timeout: Duration::from_secs(timeout.unwrap_or(DEFAULT_TIMEOUT_S)),
        reserved_concurrency: reserved.map(|r| r as u32),
        log_format: f.log_format.clone(),
        variables,
        http_routes,
        sqs_sources,
    })
}

/// The value of a reference: a pseudo parameter, a function, a bound
/// resource, then a parameter (bound, else its default).
fn lookup(template: &Template, bindings: &Bindings, functions: &[(String, String)], name: &str) -> Option<String> {
    bindings
        .pseudo(name)
        .or_else(|| functions.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()))
        .or_else(|| bindings.resources.get(name).cloned())
        .or_else(|| bindings.parameters.get(name).cloned())
        .or_else(|| template.parameters.get(name).cloned().flatten())
}

/// The local endpoints a function with these variables needs: each service
/// goes with the variable that makes the function use it.
fn endpoints_for(variables: &[(String, String)], bindings: &Bindings) -> Vec<(String, String)> {
    let has = |name: &str| variables.iter().any(|(k, _)| k == name);
    let e = &bindings.endpoints;
    let mut out = Vec::new();
    let mut add = |when: bool, name: &str, value: &Option<String>| {
        if let (true, Some(value)) = (when, value) {
            out.push((name.to_owned(), value.clone()));
        }
    };
    add(has("SLUICE_QUEUE_URL") || has("SLUICE_FLUSH_QUEUE_URL"), "SLUICE_SQS_ENDPOINT", &e.sqs);
    add(has("SLUICE_CAFE24_CLIENT_ID"), "SLUICE_CAFE24_BASE_URL", &e.cafe24_base_url);
    add(has("SLUICE_GOOGLE_CLIENT_ID"), "SLUICE_SHEETS_API_URL", &e.sheets_api_url);
    add(has("SLUICE_GOOGLE_CLIENT_ID"), "SLUICE_GOOGLE_TOKEN_URL", &e.google_token_url);
    add(has("SLUICE_REDIS_URL"), "SLUICE_REDIS_CA_FILE", &e.redis_ca_file);
    let secrets = variables.iter().any(|(k, _)| k.ends_with("_SECRET_ARN"));
    add(secrets, "AWS_ENDPOINT_URL_SECRETS_MANAGER", &e.secrets_manager);
    out
}

/// What Lambda sets in every execution environment of `spec`, whose
/// Runtime API is at `runtime_api` (`127.0.0.1:port`). Credentials are
/// placeholders: the local endpoints accept any signature.
pub fn lambda_variables(spec: &FunctionSpec, runtime_api: &str, region: &str, stream: &str) -> Vec<(String, String)> {
    let mut vars: Vec<(&str, String)> = vec![
        ("AWS_LAMBDA_RUNTIME_API", runtime_api.to_owned()),
        ("AWS_LAMBDA_FUNCTION_NAME", spec.name.clone()),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", spec.memory_mb.to_string()),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".to_owned()),
        ("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{}", spec.name)),
        ("AWS_LAMBDA_LOG_STREAM_NAME", stream.to_owned()),
        ("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand".to_owned()),
        ("AWS_REGION", region.to_owned()),
        ("AWS_DEFAULT_REGION", region.to_owned()),
        ("AWS_ACCESS_KEY_ID", "sluice-local".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "sluice-local".to_owned()),
        ("AWS_SESSION_TOKEN", "sluice-local".to_owned()),
        ("_HANDLER", "bootstrap".to_owned()),
        ("TZ", ":UTC".to_owned()),
        ("LANG", "en_US.UTF-8".to_owned()),
        ("PATH", "/usr/local/bin:/usr/bin:/bin".to_owned()),
    ];
    if let Some(format) = &spec.log_format {
        vars.push(("AWS_LAMBDA_LOG_FORMAT", format.clone()));
    }
    vars.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::Endpoints;
    use sluice_domain::Secret;

    fn bindings() -> Bindings {
        Bindings::new()
            .parameter("Stage", "local")
            .parameter("Cafe24ClientId", "app")
            .resource("EventsQueue", "http://127.0.0.1:9324/000000000000/sluice-events.fifo")
            .resource("FlushQueue", "http://127.0.0.1:9324/000000000000/sluice-flush")
            .resource("FlushQueue.Arn", "arn:aws:sqs:us-east-1:000000000000:sluice-flush")
            .resource("MallDrainQueue", "http://127.0.0.1:9324/000000000000/sluice-mall-drain")
            .resource("MallDrainQueue.Arn", "arn:aws:sqs:us-east-1:000000000000:sluice-mall-drain")
            .secret("ApiKeys", Secret::new("k"))
            .secret("CachePassword", Secret::new("{}"))
            .secret("CacheIngestPassword", Secret::new("{}"))
            .secret("Cafe24ClientSecret", Secret::new("s"))
            .secret("GoogleClientSecret", Secret::new("g"))
            .secret("AlertWebhookUrl", Secret::new(" "))
            .replace("SLUICE_REDIS_URL", "redis://default@127.0.0.1:6379")
            .with_endpoints(Endpoints {
                sqs: Some("http://127.0.0.1:9324".into()),
                cafe24_base_url: Some("http://127.0.0.1:1/{mall_id}".into()),
                secrets_manager: Some("http://127.0.0.1:2".into()),
                ..Endpoints::default()
            })
    }

    #[test]
    fn every_function_gets_the_templates_variables_resolved_and_the_endpoints_it_uses() {
        let specs = specs(&Template::bundled().unwrap(), &bindings()).unwrap();
        let fetch = specs.iter().find(|s| s.binary == "sluice-fn-fetch").unwrap();
        assert_eq!(fetch.name, "sluice-local-fetch");
        assert_eq!(fetch.arn, "arn:aws:lambda:us-east-1:000000000000:function:sluice-local-fetch");
        assert_eq!(
            (fetch.memory_mb, fetch.timeout, fetch.reserved_concurrency),
            (256, Duration::from_secs(30), Some(40))
        );
        let vars: std::collections::HashMap<&str, &str> =
            fetch.variables.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(vars["SLUICE_REDIS_URL"], "redis://default@127.0.0.1:6379");
        assert_eq!(vars["SLUICE_STAGE"], "local");
        assert_eq!(vars["SLUICE_KEY_PREFIX"], "sluice:");
        assert_eq!(vars["SLUICE_SECRET_TTL_SECS"], "300");
        assert_eq!(vars["SLUICE_CAFE24_CLIENT_ID"], "app");
        assert!(vars["SLUICE_CAFE24_CLIENT_SECRET_ARN"].ends_with(":secret:sluice-local/Cafe24ClientSecret-Local0"));
        assert_eq!(vars["SLUICE_CAFE24_BASE_URL"], "http://127.0.0.1:1/{mall_id}");
        assert!(!vars.contains_key("SLUICE_SQS_ENDPOINT"), "fetch uses no queue");
        let flush = specs.iter().find(|s| s.binary == "sluice-fn-flush-sheet").unwrap();
        assert_eq!(flush.timeout, Duration::from_secs(90));
        assert_eq!(flush.sqs_sources[0].queue_arn, "arn:aws:sqs:us-east-1:000000000000:sluice-flush");
        assert!(flush.variables.iter().any(|(k, v)| k == "SLUICE_SQS_ENDPOINT" && v == "http://127.0.0.1:9324"));
        let subs = substitutions(&Template::bundled().unwrap(), &bindings()).unwrap();
        assert!(subs.contains(&(
            "FetchFunction".to_owned(),
            "arn:aws:lambda:us-east-1:000000000000:function:sluice-local-fetch".to_owned()
        )));
    }

    /// The template gives ingest its own cache user; the local Redis has
    /// one, which [`Bindings::redis`] gives ingest too.
    #[test]
    fn ingest_reaches_the_local_redis_as_every_function_does() {
        let bindings = bindings().redis("redis://sluice:pw@127.0.0.1:7000");
        let specs = specs(&Template::bundled().unwrap(), &bindings).unwrap();
        let ingest = specs.iter().find(|s| s.binary == "sluice-fn-ingest").unwrap();
        let vars: std::collections::HashMap<&str, &str> =
            ingest.variables.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(vars["SLUICE_REDIS_URL"], "redis://sluice@127.0.0.1:7000");
        let secret = bindings.secrets().iter().find(|s| s.arn == vars["SLUICE_REDIS_PASSWORD_SECRET_ARN"]).unwrap();
        assert_eq!(secret.logical_id, "CacheIngestPassword");
        assert!(secret.value.expose().contains(r#""password":"pw""#), "the local user's password");
    }

    #[test]
    fn the_drain_runs_only_when_the_stack_is_given_a_database() {
        let template = Template::bundled().unwrap();
        let without = specs(&template, &bindings()).unwrap();
        assert!(!without.iter().any(|s| s.binary == "sluice-fn-drain"), "no database: no drain");
        assert_eq!(without.len(), template.functions.len() - 1);
        let with = bindings().secret("DatabaseUrlSecretArn", Secret::new("postgres://u:p@127.0.0.1:5432/db"));
        let specs = specs(&template, &with).unwrap();
        let drain = specs.iter().find(|s| s.binary == "sluice-fn-drain").expect("the drain, with a database");
        assert_eq!((drain.timeout, drain.reserved_concurrency), (Duration::from_secs(60), Some(1)));
        let arn = drain.variables.iter().find(|(k, _)| k == "SLUICE_DATABASE_URL_SECRET_ARN").unwrap();
        assert!(arn.1.ends_with(":secret:sluice-local/DatabaseUrlSecretArn-Local0"), "{arn:?}");
        assert!(
            drain.variables.iter().any(|(k, v)| k == "AWS_ENDPOINT_URL_SECRETS_MANAGER" && v == "http://127.0.0.1:2")
        );
    }

    #[test]
    fn a_variable_the_code_does_not_read_fails() {
        let template = Template::bundled().unwrap();
        let text = crate::template::TEMPLATE.replace("SLUICE_MAP_MAX_CONCURRENCY:", "SLUICE_MAP_MAX_CONCURENCY:");
        let typo = Template::parse(&text).unwrap();
        let err = specs(&typo, &bindings()).unwrap_err();
        assert_eq!(
            err,
            SpecError::UnknownVariable {
                function: "PlanBatchFunction".into(),
                variable: "SLUICE_MAP_MAX_CONCURENCY".into()
            }
        );
        assert!(specs(&template, &bindings()).is_ok());
    }

    #[test]
    fn an_unbound_reference_or_a_stray_replacement_fails() {
        let template = Template::bundled().unwrap();
        let err = specs(&template, &Bindings::new()).unwrap_err().to_string();
        assert!(err.contains("refers to") && err.contains("which the local stack does not provide"), "{err}");
        let err = specs(&template, &bindings().replace("SLUICE_NOT_SET", "x")).unwrap_err();
        assert_eq!(err, SpecError::NotInTemplate("SLUICE_NOT_SET".into()));
    }
}

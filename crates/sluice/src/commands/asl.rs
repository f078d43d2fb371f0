//! `sluice asl validate FILE` and `sluice asl run FILE`: load an Amazon
//! States Language definition with `${Name}` substitutions, report every
//! problem, or run it locally with stand-in tasks and print its output (or
//! its error and cause) and, on request, its event history.
//!
//! Exit codes: 0 success; 1 the execution failed; 2 bad arguments or an
//! invalid definition.

use anyhow::bail;
use serde_json::{Value, json};
use sluice_asl::{
    ExecutionOptions, Executor, HistoryEvent, Outcome, StateMachine, Substitutions, SystemClock, TaskError,
    TaskRegistry,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const INVALID: u8 = 2;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum AslCommand {
    /// Load a definition and report every problem in it.
    Validate {
        /// The definition, e.g. statemachine/shop.asl.json.
        file: PathBuf,
        /// A value for a `${Name}` placeholder, as SAM's DefinitionSubstitutions.
        #[arg(long = "sub", value_name = "NAME=VALUE", value_parser = parse_substitution)]
        subs: Vec<(String, String)>,
    },
    /// Run a definition locally with stand-in tasks, on the real clock.
    Run(RunArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The definition, e.g. statemachine/shop.asl.json.
    file: PathBuf,
    /// The execution input, as JSON.
    #[arg(long, default_value = "{}")]
    input: String,
    /// A value for a `${Name}` placeholder, as SAM's DefinitionSubstitutions.
    #[arg(long = "sub", value_name = "NAME=VALUE", value_parser = parse_substitution)]
    subs: Vec<(String, String)>,
    /// What a task does: RESOURCE (or the FunctionName of a lambda:invoke
    /// task) =echo returns its input, =fail:ErrorName fails with that error.
    #[arg(long = "task", value_name = "RESOURCE=echo|fail:ErrorName", value_parser = parse_task)]
    tasks: Vec<(String, StandIn)>,
    /// Print the execution's event history before its output.
    #[arg(long)]
    history: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum StandIn {
    Echo,
    Fail(String),
}

fn parse_substitution(text: &str) -> anyhow::Result<(String, String)> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => bail!("{text:?} is not NAME=VALUE"),
    }
}

fn parse_task(text: &str) -> anyhow::Result<(String, StandIn)> {
    let Some((resource, behaviour)) = text.rsplit_once('=').filter(|(r, _)| !r.is_empty()) else {
        bail!("{text:?} is not RESOURCE=echo or RESOURCE=fail:ErrorName");
    };
    let stand_in = match behaviour.split_once(':') {
        None if behaviour == "echo" => StandIn::Echo,
        Some(("fail", error)) if !error.is_empty() => StandIn::Fail(error.to_owned()),
        _ => bail!("{behaviour:?} is not echo or fail:ErrorName"),
    };
    Ok((resource.to_owned(), stand_in))
}

pub(crate) async fn run(command: AslCommand) -> anyhow::Result<ExitCode> {
    match command {
        AslCommand::Validate { file, subs } => Ok(validate(&file, subs).unwrap_or_else(|code| code)),
        AslCommand::Run(args) => Ok(run_definition(args).await.unwrap_or_else(|code| code)),
    }
}

fn invalid(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("sluice: {message}");
    ExitCode::from(INVALID)
}

/// Reads and loads the definition, or says why not.
fn load(file: &Path, subs: Vec<(String, String)>) -> Result<StateMachine, ExitCode> {
    let text = std::fs::read_to_string(file).map_err(|e| invalid(format!("cannot read {}: {e}", file.display())))?;
    let substitutions: Substitutions = subs.into_iter().collect();
    let unresolved = substitutions.unresolved(&text);
    if !unresolved.is_empty() {
        let names: Vec<String> = unresolved.iter().map(|n| format!("--sub {n}=…")).collect();
        return Err(invalid(format!("{} has placeholders with no value: give {}", file.display(), names.join(" "))));
    }
    StateMachine::load(&text, &substitutions).map_err(|e| {
        eprintln!("sluice: {} is not a valid state machine:", file.display());
        for problem in &e.problems {
            eprintln!("  {problem}");
        }
        ExitCode::from(INVALID)
    })
}

/// The exit code: `Err` when the definition cannot be used.
fn validate(file: &Path, subs: Vec<(String, String)>) -> Result<ExitCode, ExitCode> {
    let machine = load(file, subs)?;
    let mut targets: Vec<String> = machine.task_targets().iter().map(|t| t.handler_key().to_owned()).collect();
    targets.sort();
    targets.dedup();
    println!("{}: valid", file.display());
    if !targets.is_empty() {
        println!("task targets: {}", targets.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

/// The exit code: `Err` when the run cannot start.
async fn run_definition(args: RunArgs) -> Result<ExitCode, ExitCode> {
    let input: Value = serde_json::from_str(&args.input).map_err(|e| invalid(format!("--input is not JSON: {e}")))?;
    let machine = load(&args.file, args.subs)?;
    let mut registry = TaskRegistry::new();
    for (resource, stand_in) in args.tasks {
        match stand_in {
            StandIn::Echo => registry.register(resource, |input: Value| async move { Ok::<_, TaskError>(input) }),
            StandIn::Fail(error) => {
                let cause = format!("--task {resource}=fail:{error}");
                registry.register(resource, move |_input: Value| {
                    let failure = TaskError::new(error.clone(), cause.clone());
                    async move { Err::<Value, _>(failure) }
                })
            }
        };
    }
    let executor = Executor::new(machine, registry, SystemClock);
    if let Some(missing) = executor.missing_handlers().first() {
        let key = missing.handler_key();
        return Err(invalid(format!(
            "state {:?} calls {key:?}, which no --task gives: add --task '{key}=echo' or --task '{key}=fail:ErrorName'",
            missing.state
        )));
    }
    let name =
        args.file.file_name().and_then(|n| n.to_str()).map(|n| n.trim_end_matches(".json").trim_end_matches(".asl"));
    let options = ExecutionOptions { state_machine_name: name.map(str::to_owned), ..ExecutionOptions::default() };
    let execution = executor.run(input, options).await;
    if args.history {
        print_history(&execution.history);
    }
    Ok(match execution.outcome {
        Outcome::Succeeded(output) => {
            println!("{}", pretty(&output));
            ExitCode::SUCCESS
        }
        Outcome::Failed { error, cause } => {
            println!("{}", pretty(&json!({"Error": error, "Cause": cause})));
            eprintln!("sluice: the execution failed with {error:?}");
            ExitCode::FAILURE
        }
    })
}

fn print_history(history: &[HistoryEvent]) {
    println!("{:>4} {:>4}  {:<24}  {:<24}  details", "id", "prev", "timestamp", "type");
    for event in history {
        let details = serde_json::to_value(&event.details).unwrap_or(Value::Null);
        println!(
            "{:>4} {:>4}  {:<24}  {:<24}  {}",
            event.id,
            event.previous_event_id,
            event.timestamp_text(),
            event.event_type.name(),
            details
        );
    }
    println!();
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_arguments() {
        assert_eq!(parse_task("fetch=echo").unwrap(), ("fetch".to_owned(), StandIn::Echo));
        assert_eq!(
            parse_task("arn:aws:lambda:eu-west-1:1:function:f=fail:Sluice.LockBusy").unwrap(),
            ("arn:aws:lambda:eu-west-1:1:function:f".to_owned(), StandIn::Fail("Sluice.LockBusy".to_owned()))
        );
        assert!(parse_task("fetch=sleep").is_err());
        assert!(parse_task("=echo").is_err());
        assert!(parse_task("fetch=fail:").is_err());
        assert_eq!(parse_substitution("A=b=c").unwrap(), ("A".to_owned(), "b=c".to_owned()));
        assert!(parse_substitution("novalue").is_err());
    }
}

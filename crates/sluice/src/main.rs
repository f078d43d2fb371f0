//! The `sluice` command line.
//!
//! # Layout
//!
//! - `main.rs`: argument parsing, dispatch, and how an error is printed.
//! - [`commands`]: one module per subcommand (`sluice asl`, `dev`, `redrive`, `status`, …).
//! - [`demo`]: `sluice demo primitives|shops|sheets` and the reports they check.
//! - [`functions_args`]: `--functions in-process|processes` of `dev` and the demos.
//! - [`redis_target`]: the Redis a command uses (`SLUICE_REDIS_URL`, a private one, or `sluice dev`'s).
//! - [`database_target`]: the PostgreSQL an operator command reads, if one is configured.
//! - [`dev_state`]: what a running `sluice dev` tells the other commands.
//! - [`stop_signal`]: Ctrl-C or SIGTERM, for the long-running commands.
//! - [`closed_stdout`]: a closed stdout (`sluice status | head`) ends any command quietly, with status 0.

mod closed_stdout;
mod commands;
mod database_target;
mod demo;
mod dev_state;
mod functions_args;
mod redis_target;
mod stop_signal;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

#[derive(Debug, Parser)]
#[command(name = "sluice", version, about = "Ordered, rate-limited, lossless webhook work against rate-limited APIs")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Live demonstrations against a real Redis.
    Demo {
        #[command(subcommand)]
        demo: demo::Demo,
    },
    /// Amazon States Language: validate or run a state machine definition locally.
    Asl {
        #[command(subcommand)]
        command: commands::asl::AslCommand,
    },
    /// Run both paths locally, until Ctrl-C: ingest, the queues in Redis
    /// behind an SQS-compatible endpoint, the state machine and the flush worker.
    Dev(commands::dev::Args),
    /// A mall's Cafe24 OAuth tokens: seed them, or see when they expire.
    Tokens {
        #[command(subcommand)]
        command: commands::tokens::TokensCommand,
    },
    /// A Google credential's OAuth tokens: set them (redriving the rows held
    /// for it), or see whether it is usable.
    Credentials {
        #[command(subcommand)]
        command: commands::credentials::CredentialsCommand,
    },
    /// The dead-letter queues: count, peek, redrive (local `sluice dev` or AWS).
    Dlq {
        #[command(subcommand)]
        command: commands::dlq::DlqCommand,
    },
    /// Run one FIFO group's dead-lettered messages through the state machine, in
    /// order, deleting each once its execution succeeded (local `sluice dev` or AWS).
    Redrive(commands::redrive::Args),
    /// How far behind sluice is: queue depths, the groups waiting longest,
    /// each mall's bucket and each Google credential's quotas.
    Status(commands::status::Args),
    /// Where an event (or a sheet row, by row id) is, and everything that happened to it.
    Trace(commands::trace::Args),
    /// sluice's tables in PostgreSQL (the drain's sink).
    Db {
        #[command(subcommand)]
        command: commands::db::DbCommand,
    },
    /// Stand-ins for the upstream APIs (Cafe24, Google Sheets), until Ctrl-C.
    Sandbox {
        #[command(subcommand)]
        command: commands::sandbox::SandboxCommand,
    },
}

fn main() -> ExitCode {
    closed_stdout::exit_quietly_on_closed_stdout();
    let cli = Cli::parse();
    if let Err(usage) = log_to_stderr(&cli.command) {
        eprintln!("{usage}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("sluice: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Demo { demo } => demo::run(demo).await,
            Command::Asl { command } => commands::asl::run(command).await,
            Command::Dev(args) => commands::dev::run(args).await,
            Command::Tokens { command } => commands::tokens::run(command).await,
            Command::Credentials { command } => commands::credentials::run(command).await,
            Command::Dlq { command } => commands::dlq::run(command).await,
            Command::Redrive(args) => commands::redrive::run(args).await,
            Command::Status(args) => commands::status::run(args).await,
            Command::Trace(args) => commands::trace::run(args).await,
            Command::Db { command } => commands::db::run(command).await,
            Command::Sandbox { command } => commands::sandbox::run(command).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => match e.downcast_ref::<Usage>() {
            Some(usage) => {
                eprintln!("{usage}");
                ExitCode::from(2)
            }
            None => {
                eprintln!("sluice: {}", one_line(&e));
                ExitCode::FAILURE
            }
        },
    }
}

/// Logs go to stderr, as `RUST_LOG` asks (`warn`, `sluice_sink=debug`, …);
/// without it, warnings and errors from `sluice dev`, which runs for hours
/// and whose warnings (a flush put off, a drain failing) are the only
/// account of them, and nothing from the other commands, whose output is
/// their report (a demo's deliberate faults would fill it with warnings).
fn log_to_stderr(command: &Command) -> Result<(), Usage> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) => EnvFilter::try_new(&directives).map_err(|e| Usage {
            who: "sluice",
            message: format!("RUST_LOG is invalid ({e}): give directives such as `warn` or `sluice_sink=debug`"),
        })?,
        Err(_) if matches!(command, Command::Dev(_)) => EnvFilter::new("warn"),
        Err(_) => EnvFilter::new("off"),
    };
    let stderr_is_terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let subscriber = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // Another subscriber already set is not an error worth stopping for.
    let _ = subscriber.with_ansi(stderr_is_terminal).try_init();
    Ok(())
}

/// A usage error: bad arguments or input, or nothing to act on. `main`
/// prints it as one line, after the command it concerns, and exits 2 (any
/// other error exits 1).
#[derive(Debug, thiserror::Error)]
#[error("{who}: {message}")]
pub(crate) struct Usage {
    pub(crate) who: &'static str,
    pub(crate) message: String,
}

/// A step's failure as the commands print it: its cause, without its kind.
pub(crate) fn cause(e: sluice_domain::StepError) -> anyhow::Error {
    anyhow::Error::msg(e.cause)
}

/// The queue URLs the operator commands fall back to, from `SLUICE_*`
/// (`sluice_config::OperatorQueues`); a malformed one is a usage error of `who`.
pub(crate) fn operator_queues(who: &'static str) -> anyhow::Result<sluice_config::OperatorQueues> {
    let source = sluice_config::EnvSource::from_process();
    sluice_config::OperatorQueues::from_source(&source).map_err(|e| usage(who, e))
}

pub(crate) fn usage(who: &'static str, message: impl std::fmt::Display) -> anyhow::Error {
    Usage { who, message: format!("{message:#}") }.into()
}

/// An error and its causes on one line. Most of this workspace's errors
/// already end with their source's text (`redis: {0}`), so a cause the line
/// ends with is not repeated.
fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain().map(ToString::to_string) {
        if !line.ends_with(&cause) {
            line = if line.is_empty() { cause } else { format!("{line}: {cause}") };
        }
    }
    line
}

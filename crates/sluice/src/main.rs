//! The `sluice` command line.
//!
//! # Layout
//!
//! - `main.rs`: argument parsing, dispatch, and how an error is printed.
//! - [`redis_target`]: connect to `SLUICE_REDIS_URL`, or start a private
//!   `redis-server` when it is unset.
//! - [`demo_primitives`]: `sluice demo primitives`, a live run of the Redis
//!   primitives under contention.
//! - [`asl_command`]: `sluice asl validate|run`, the Amazon States Language
//!   interpreter on one definition.
//! - [`dev_command`]: `sluice dev`, both paths on one machine.
//! - [`sandbox_command`]: `sluice sandbox cafe24|sheets`, the Cafe24 and
//!   Google Sheets stand-ins.
//! - [`tokens_command`]: `sluice tokens set|show`, a mall's OAuth tokens.
//! - [`credentials_command`]: `sluice credentials set|show`, a Google
//!   credential's tokens, and the redrive of the rows held for it.
//! - [`trace_command`]: `sluice trace EVENT_ID`, an event's journey.
//! - [`demo_shops`], [`shop_report`]: `sluice demo shops`, the shop
//!   pipeline end to end with its invariants checked (`make run`).
//! - [`demo_sheets`], [`sheet_report`]: `sluice demo sheets`, the sheet
//!   path end to end, exactly once within Google's quotas (`make run`).
//! - [`dlq_command`]: `sluice dlq list|show|redrive`, the dead-letter
//!   queues over the SQS API.
//! - [`status_command`]: `sluice status`, queue depths, the lagging groups,
//!   and each mall's bucket and each credential's quotas.
//! - [`dev_state`]: what a running `sluice dev` tells the other commands.
//! - [`stop_signal`]: Ctrl-C or SIGTERM, for the long-running commands.
//! - [`closed_stdout`]: every command exits quietly, with status 0, when
//!   its stdout is closed early (`sluice status | head`).

mod asl_command;
mod closed_stdout;
mod credentials_command;
mod demo_primitives;
mod demo_sheets;
mod demo_shops;
mod dev_command;
mod dev_state;
mod dlq_command;
mod redis_target;
mod sandbox_command;
mod sheet_report;
mod shop_report;
mod status_command;
mod stop_signal;
mod tokens_command;
mod trace_command;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

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
        demo: Demo,
    },
    /// Amazon States Language: validate or run a state machine definition locally.
    Asl {
        #[command(subcommand)]
        command: asl_command::AslCommand,
    },
    /// Run both paths locally, until Ctrl-C: ingest, the queues in Redis
    /// behind an SQS-compatible endpoint, the state machine and the flush worker.
    Dev(dev_command::Args),
    /// A mall's Cafe24 OAuth tokens: seed them, or see when they expire.
    Tokens {
        #[command(subcommand)]
        command: tokens_command::TokensCommand,
    },
    /// A Google credential's OAuth tokens: set them (redriving the rows held
    /// for it), or see whether it is usable.
    Credentials {
        #[command(subcommand)]
        command: credentials_command::CredentialsCommand,
    },
    /// The dead-letter queues: count, peek, redrive (local `sluice dev` or AWS).
    Dlq {
        #[command(subcommand)]
        command: dlq_command::DlqCommand,
    },
    /// How far behind sluice is: queue depths, the groups waiting longest,
    /// each mall's bucket and each Google credential's quotas.
    Status(status_command::Args),
    /// Where an event (or a sheet row, by row id) is, and everything that happened to it.
    Trace(trace_command::Args),
    /// Stand-ins for the upstream APIs (Cafe24, Google Sheets), until Ctrl-C.
    Sandbox {
        #[command(subcommand)]
        command: sandbox_command::SandboxCommand,
    },
}

#[derive(Debug, Subcommand)]
enum Demo {
    /// Many concurrent callers share one sliding-window limit, one lock and
    /// one gate; prints what each got and checks the limit held exactly.
    Primitives(demo_primitives::Args),
    /// The shop pipeline end to end: 20 sandbox malls, 2,000 webhooks from
    /// 100 clients, then a report that checks every invariant.
    Shops(demo_shops::Args),
    /// The sheet path end to end: 1,000 submissions from 100 clients to one
    /// sandbox Google Sheet, 1,000 more over five sheets; checks every row
    /// landed exactly once within Google's quotas.
    Sheets(demo_sheets::Args),
}

fn main() -> ExitCode {
    closed_stdout::exit_quietly_on_closed_stdout();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("sluice: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Demo { demo: Demo::Primitives(args) } => demo_primitives::run(args).await,
            Command::Demo { demo: Demo::Shops(args) } => demo_shops::run(args).await,
            Command::Demo { demo: Demo::Sheets(args) } => demo_sheets::run(args).await,
            Command::Asl { command } => asl_command::run(command).await,
            Command::Dev(args) => dev_command::run(args).await,
            Command::Tokens { command } => tokens_command::run(command).await,
            Command::Credentials { command } => credentials_command::run(command).await,
            Command::Dlq { command } => dlq_command::run(command).await,
            Command::Status(args) => status_command::run(args).await,
            Command::Trace(args) => trace_command::run(args).await,
            Command::Sandbox { command } => sandbox_command::run(command).await,
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

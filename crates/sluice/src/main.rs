//! The `sluice` command line.
//!
//! # Layout
//!
//! - `main.rs`: argument parsing and dispatch, nothing else.
//! - [`redis_target`]: connect to `SLUICE_REDIS_URL`, or start a private
//!   `redis-server` when it is unset.
//! - [`demo_primitives`]: `sluice demo primitives`, a live run of the Redis
//!   primitives under contention.

mod demo_primitives;
mod redis_target;

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
}

#[derive(Debug, Subcommand)]
enum Demo {
    /// Many concurrent callers share one sliding-window limit, one lock and
    /// one gate; prints what each got and checks the limit held exactly.
    Primitives(demo_primitives::Args),
}

fn main() -> ExitCode {
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
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sluice: {e}");
            ExitCode::FAILURE
        }
    }
}

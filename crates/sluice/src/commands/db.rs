//! `sluice db migrate`: creates or updates sluice's tables (schema
//! `sluice`) in the PostgreSQL the drain writes to. `sluice dev` and the
//! drain function apply the same migrations when they start; this is for
//! a database whose owner wants to apply them first, with its own role.

use crate::usage;
use anyhow::Context;
use clap::Subcommand;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub(crate) enum DbCommand {
    /// Apply the migrations the database lacks (each once, under a lock).
    Migrate {
        /// `postgres://user:password@host:port/database`; default
        /// `SLUICE_DATABASE_URL` (better: it keeps the password out of
        /// the process list).
        #[arg(long)]
        database_url: Option<String>,
    },
}

pub(crate) async fn run(command: DbCommand) -> anyhow::Result<ExitCode> {
    let DbCommand::Migrate { database_url: flag } = command;
    let Some(url) = crate::database_target::configured_url("sluice db migrate", flag)? else {
        return Err(usage("sluice db migrate", "no database: give --database-url or SLUICE_DATABASE_URL"));
    };
    let pool = crate::database_target::DrainDatabase::open("sluice db migrate", &url).await?.pool;
    sluice_sink::migrate(&pool).await.context("applying the migrations")?;
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM sluice._sqlx_migrations WHERE success")
        .fetch_one(&pool)
        .await
        .context("reading the applied migrations")?;
    println!("schema sluice is up to date: {applied} migration(s) applied");
    Ok(ExitCode::SUCCESS)
}

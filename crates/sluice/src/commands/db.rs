//! `sluice db migrate`: creates or updates sluice's tables (schema
//! `sluice`) in the PostgreSQL the drain writes to. `sluice dev` and the
//! drain function apply the same migrations when they start; this is for
//! a database whose owner wants to apply them first, with its own role.

use crate::usage;
use anyhow::Context;
use clap::Subcommand;
use sluice_config::{EnvSource, SecretSetting, database_url};
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
    let url = match flag {
        Some(url) => url,
        None => match database_url(&EnvSource::from_process()).map_err(|e| usage("sluice db migrate", e))? {
            Some(SecretSetting::Value(url)) => url.expose().to_owned(),
            Some(SecretSetting::Arn(_)) => {
                return Err(usage(
                    "sluice db migrate",
                    "SLUICE_DATABASE_URL_SECRET_ARN is read by the drain function; give the URL itself here \
                     (--database-url or SLUICE_DATABASE_URL)",
                ));
            }
            None => return Err(usage("sluice db migrate", "no database: give --database-url or SLUICE_DATABASE_URL")),
        },
    };
    let pool = sluice_sink::connect(&url).await.map_err(|e| match e {
        sluice_sink::SinkError::Url(_) => usage("sluice db migrate", e),
        other => other.into(),
    })?;
    sluice_sink::migrate(&pool).await.context("applying the migrations")?;
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM sluice._sqlx_migrations WHERE success")
        .fetch_one(&pool)
        .await
        .context("reading the applied migrations")?;
    println!("schema sluice is up to date: {applied} migration(s) applied");
    Ok(ExitCode::SUCCESS)
}

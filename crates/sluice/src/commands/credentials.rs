//! `sluice credentials set CREDENTIAL --token-json FILE` stores a Google
//! credential's OAuth tokens, exactly as Google's token endpoint returned
//! them (the JSON of the authorisation-code exchange, with its
//! `refresh_token`); `-` reads standard input, so no token shows in `ps` or
//! the shell history. Storing clears the credential's rejection and
//! redrives at once every row held for it, asking for its sheets' flushes
//! on the flush queue (`--flush-queue-url`, or the running `sluice dev`'s).
//! `sluice credentials redrive CREDENTIAL` does the redrive alone (after a
//! person fixed a sheet that was gone). `sluice credentials show
//! CREDENTIAL` says whether it is usable, never the tokens.

use super::enrolment;
use super::tokens::{read_source, when};
use crate::dev_state::DevState;
use crate::redis_target::StateRedis;
use crate::usage;
use sluice_aws::{SqsDelayQueue, SqsEndpoint, sqs_client};
use sluice_pipeline::flush_trigger::QueueFlushTrigger;
use sluice_pipeline::google_token::GOOGLE;
use sluice_pipeline::{PipelineConfig, ServiceCore, SheetService};
use sluice_redis::{CredentialState, Tag, TokenStore};
use sluice_sheets::token::TokenResponse;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum CredentialsCommand {
    /// Store a Google credential's tokens and redrive the rows held for it.
    Set {
        /// The credential id rows name in `credential_id`.
        credential: String,
        /// File holding Google's token response JSON (with `refresh_token`); `-` reads standard input.
        #[arg(long, value_name = "FILE")]
        token_json: String,
        /// The flush queue (SQS standard queue URL) to ask for flushes on;
        /// defaults to the `sluice dev` running in this directory.
        #[arg(long)]
        flush_queue_url: Option<String>,
    },
    /// Redrive the rows held for a credential's sheets (after fixing a sheet
    /// that was gone or unreadable), without new tokens.
    Redrive {
        credential: String,
        /// The flush queue; defaults to the `sluice dev` running in this directory.
        #[arg(long)]
        flush_queue_url: Option<String>,
    },
    /// Show whether a credential is usable and when its access token expires.
    Show { credential: String },
    /// Let ingest take a credential's rows again, or for the first time when
    /// it was stored before enrolment existed (`set` enrols).
    Enrol { credential: String },
    /// Make ingest refuse rows naming a credential (its tokens stay).
    Withdraw { credential: String },
}

pub(crate) async fn run(command: CredentialsCommand) -> anyhow::Result<ExitCode> {
    match command {
        CredentialsCommand::Set { credential, token_json, flush_queue_url } => {
            set(&credential, &token_json, flush_queue_url).await
        }
        CredentialsCommand::Redrive { credential, flush_queue_url } => redrive(&credential, flush_queue_url).await,
        CredentialsCommand::Show { credential } => show(&credential).await,
        CredentialsCommand::Enrol { credential } => enrolment::enrol(WHO, &tenant(&credential)).await,
        CredentialsCommand::Withdraw { credential } => enrolment::withdraw(&tenant(&credential)).await,
    }
}

fn tenant(credential: &str) -> enrolment::Tenant<'static> {
    let set = sluice_pipeline::suggested_command::command(&["sluice", "credentials", "set", credential]);
    enrolment::Tenant {
        name: format!("credential {credential}"),
        tag: Tag::for_credential(credential),
        token: GOOGLE,
        set: format!("{set} --token-json FILE"),
    }
}

const WHO: &str = "sluice credentials";

async fn set(credential: &str, source: &str, flush_queue_url: Option<String>) -> anyhow::Result<ExitCode> {
    if credential.is_empty() || credential.len() > 256 {
        return Err(usage(WHO, "the credential id must be 1 to 256 characters"));
    }
    let text = read_source(source).map_err(|e| usage(WHO, e))?;
    let response: TokenResponse =
        serde_json::from_str(&text).map_err(|e| usage(WHO, format!("not a Google token response: {e}")))?;
    let Some(refresh_token) = response.refresh_token.clone() else {
        return Err(usage(WHO, "the token response has no refresh_token (exchange the code with access_type=offline)"));
    };
    let sheet = sheet_service(flush_queue_url).await?;
    let access = Some((&response.access_token, Duration::from_secs(response.expires_in)));
    let redriven = sheet.set_google_credential(credential, &refresh_token, access).await.map_err(crate::cause)?;
    println!("Stored credential {credential}'s tokens; {redriven} held rows redriven, its sheets' flushes asked for.");
    Ok(ExitCode::SUCCESS)
}

async fn redrive(credential: &str, flush_queue_url: Option<String>) -> anyhow::Result<ExitCode> {
    let sheet = sheet_service(flush_queue_url).await?;
    let redriven = sheet.redrive_credential(credential).await.map_err(crate::cause)?;
    println!("{redriven} held rows of credential {credential}'s sheets redriven, their flushes asked for.");
    Ok(ExitCode::SUCCESS)
}

/// The sheet service over the state Redis, asking for flushes on the flush
/// queue; no flush queue or Redis to be found is a usage error.
async fn sheet_service(flag: Option<String>) -> anyhow::Result<SheetService<sluice_redis::Connection>> {
    let (endpoint, queue_url) = flush_queue(flag)?;
    let redis = StateRedis::locate(WHO)?;
    let conn = redis.connection().await?;
    let queue = SqsDelayQueue::new(sqs_client(&endpoint).await, queue_url);
    let core = ServiceCore::new(conn, redis.keyspace.clone(), PipelineConfig::default());
    Ok(SheetService::new(core, Arc::new(QueueFlushTrigger::new(queue))))
}

/// The flush queue's endpoint and URL: the flag, or the running `sluice dev`'s.
fn flush_queue(flag: Option<String>) -> anyhow::Result<(SqsEndpoint, String)> {
    let env = crate::operator_queues(WHO)?;
    if let Some(url) = flag.filter(|u| !u.is_empty()).or(env.flush_queue_url) {
        return Ok((env.sqs_endpoint.map_or(SqsEndpoint::Aws, SqsEndpoint::Local), url));
    }
    let state = DevState::read(&DevState::path()).ok_or_else(|| {
        usage(
            WHO,
            "no flush queue: pass --flush-queue-url (SLUICE_FLUSH_QUEUE_URL), or run `sluice dev` in this directory",
        )
    })?;
    match (state.url("SQS endpoint"), state.url("Flush queue")) {
        (Some(endpoint), Some(queue)) => Ok((SqsEndpoint::Local(endpoint), queue)),
        _ => Err(usage(WHO, "the running `sluice dev` has no flush queue; restart it, or pass --flush-queue-url")),
    }
}

async fn show(credential: &str) -> anyhow::Result<ExitCode> {
    let redis = StateRedis::locate("sluice")?;
    let conn = redis.connection().await?;
    let tokens = TokenStore::new(conn.clone(), redis.keyspace.clone());
    let state = CredentialState::new(conn, redis.keyspace.clone());
    let tenant = tenant(credential);
    let token = tokens.get(&tenant.tag, GOOGLE).await?;
    let rejected = state.rejected(credential).await?;
    let sheets = state.sheets(credential).await?.len();
    println!("{}", enrolment::describe(&redis, &tenant).await?);
    match (token, rejected) {
        (None, _) => {
            println!("credential {credential}: no tokens (`{}`)", tenant.set);
            Ok(ExitCode::FAILURE)
        }
        (Some(_), Some(why)) => {
            println!(
                "credential {credential}: REJECTED ({why}); rows for its {sheets} sheets are held until it is set again"
            );
            Ok(ExitCode::FAILURE)
        }
        (Some(token), None) => {
            println!(
                "credential {credential}: usable; access token expires {}; {sheets} sheets",
                when(token.access_expires_ms)
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

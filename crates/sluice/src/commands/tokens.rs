//! `sluice tokens set MALL --token-json FILE` seeds a mall's Cafe24 OAuth
//! tokens, exactly as Cafe24's token endpoint returned them (the JSON of
//! the authorisation-code exchange); `-` reads it from standard input, so
//! no token shows in `ps` or the shell history. A parked mall (Cafe24
//! refused its refresh token) is released by it: its held events resume,
//! in order, through a catch-up run asked for on the catch-up queue
//! (`--catch-up-queue-url`, `SLUICE_CATCH_UP_QUEUE_URL`, or the
//! running `sluice dev`'s) — `CatchUpService::set_token`, the code path
//! the tests drive. `sluice tokens show MALL` prints when they expire and
//! whether the mall is parked and enrolled, never the tokens. `enrol` and
//! `withdraw` say whether ingest takes the mall's webhooks (`enrolment`).

use super::enrolment;
use crate::dev_state::DevState;
use crate::redis_target::StateRedis;
use crate::usage;
use anyhow::Context;
use sluice_aws::{SqsDelayQueue, SqsEndpoint, sqs_client};
use sluice_cafe24::{Cafe24Client, Cafe24Config, Secret, TokenGrant, TokenResponse, check_mall_id};
use sluice_domain::QueueCatchUpRequests;
use sluice_pipeline::shop_service::ADMIN_API;
use sluice_pipeline::{CatchUpService, PipelineConfig, ServiceCore, ShopService, stored_token};
use sluice_redis::{ParkedMalls, Tag, TokenStore};
use std::io::Read;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum TokensCommand {
    /// Store a mall's tokens from Cafe24's token response JSON.
    Set {
        /// The mall id (Cafe24's `mall_id`).
        mall: String,
        /// File holding the token response JSON; `-` reads standard input.
        #[arg(long, value_name = "FILE")]
        token_json: String,
        /// The catch-up queue (SQS standard queue URL) a parked mall's
        /// release is asked for on; defaults to the `sluice dev` running in
        /// this directory. Needed only when the mall is parked.
        #[arg(long, alias = "mall-drain-queue-url")]
        catch_up_queue_url: Option<String>,
    },
    /// Show when a mall's tokens expire, and whether ingest takes its webhooks.
    Show { mall: String },
    /// Let ingest take a mall's webhooks again, or for the first time when
    /// its tokens were stored before enrolment existed (`set` enrols).
    Enrol { mall: String },
    /// Make ingest refuse a mall's webhooks (its tokens stay).
    Withdraw { mall: String },
}

pub(crate) async fn run(command: TokensCommand) -> anyhow::Result<ExitCode> {
    match command {
        TokensCommand::Set { mall, token_json, catch_up_queue_url } => {
            set(&mall, &token_json, catch_up_queue_url).await
        }
        TokensCommand::Show { mall } => show(&mall).await,
        TokensCommand::Enrol { mall } => enrolment::enrol(WHO, &tenant(&mall)?).await,
        TokensCommand::Withdraw { mall } => enrolment::withdraw(&tenant(&mall)?).await,
    }
}

/// `mall` as a tenant, once it is a mall id.
fn tenant(mall: &str) -> anyhow::Result<enrolment::Tenant<'static>> {
    check_mall_id(mall).map_err(|e| usage(WHO, e))?;
    let set = sluice_pipeline::suggested_command::command(&["sluice", "tokens", "set", mall]);
    Ok(enrolment::Tenant {
        name: format!("mall {mall}"),
        tag: Tag::for_mall(mall),
        token: ADMIN_API,
        set: format!("{set} --token-json FILE"),
    })
}

const WHO: &str = "sluice tokens";

async fn set(mall: &str, source: &str, queue_flag: Option<String>) -> anyhow::Result<ExitCode> {
    check_mall_id(mall).map_err(|e| usage(WHO, e))?;
    let text = read_source(source).map_err(|e| usage(WHO, e))?;
    let response: TokenResponse =
        serde_json::from_str(&text).map_err(|e| usage(WHO, format!("not a Cafe24 token response: {e}")))?;
    if response.mall_id.as_deref().is_some_and(|m| m != mall) {
        let other = response.mall_id.unwrap_or_default();
        return Err(usage(WHO, format!("the token response is for mall {other:?}, not {mall}")));
    }
    let grant = TokenGrant::from_response(response).map_err(|e| usage(WHO, e))?;
    let redis = StateRedis::locate("sluice")?;
    let conn = redis.connection().await?;
    let now = now_ms();
    let token = stored_token(&grant, now);
    let tag = Tag::for_mall(mall);
    let held = ParkedMalls::new(conn.clone(), redis.keyspace.clone()).state(&tag).await?;
    // A mall that is not parked needs no queue: the token is all there is
    // to set. A parked one must have its release asked for, so without a
    // queue nothing is stored (its events would stay held, unasked for).
    let queue = match (catch_up_queue(queue_flag), &held) {
        (Ok(queue), _) => Some(queue),
        (Err(e), Some(_)) => return Err(e),
        (Err(_), None) => None,
    };
    let released = match queue {
        Some((endpoint, url)) => {
            let requests = QueueCatchUpRequests::new(SqsDelayQueue::new(sqs_client(&endpoint).await, url));
            let core = ServiceCore::new(conn, redis.keyspace.clone(), PipelineConfig::default());
            // Storing and releasing never call Cafe24: its client holds no credentials.
            let unused = Cafe24Client::new(Cafe24Config::new("", Secret::new(String::new())))?;
            let shop = ShopService::new(core, unused).map_err(crate::cause)?;
            CatchUpService::new(shop, Arc::new(requests)).set_token(mall, &token).await.map_err(crate::cause)?
        }
        None => {
            let store = TokenStore::new(conn, redis.keyspace.clone());
            store.put(&tag, ADMIN_API, &token, now).await.map_err(|e| usage(WHO, e))?;
            false
        }
    };
    println!(
        "Stored mall {mall}'s tokens: access token expires {}, refresh token {}.",
        when(token.access_expires_ms),
        when(token.refresh_expires_ms)
    );
    if let (true, Some(held)) = (released, held) {
        println!("Mall {mall} was parked ({}); its {} held events resume now, in order.", held.reason, held.held);
    }
    Ok(ExitCode::SUCCESS)
}

/// The catch-up queue's endpoint and URL: the flag, the environment, or
/// the running `sluice dev`'s.
fn catch_up_queue(flag: Option<String>) -> anyhow::Result<(SqsEndpoint, String)> {
    let env = crate::operator_queues(WHO)?;
    if let Some(url) = flag.filter(|u| !u.is_empty()).or(env.catch_up_queue_url) {
        return Ok((env.sqs_endpoint.map_or(SqsEndpoint::Aws, SqsEndpoint::Local), url));
    }
    let missing = "the mall is parked and its release needs the catch-up queue: pass --catch-up-queue-url \
                   (SLUICE_CATCH_UP_QUEUE_URL), or run `sluice dev` in this directory";
    let state = DevState::read(&DevState::path()).ok_or_else(|| usage(WHO, missing))?;
    match (state.url("SQS endpoint"), state.url("Catch-up queue")) {
        (Some(endpoint), Some(queue)) => Ok((SqsEndpoint::Local(endpoint), queue)),
        _ => Err(usage(WHO, missing)),
    }
}

async fn show(mall: &str) -> anyhow::Result<ExitCode> {
    let redis = StateRedis::locate("sluice")?;
    let conn = redis.connection().await?;
    let store = TokenStore::new(conn.clone(), redis.keyspace.clone());
    let tenant = tenant(mall)?;
    println!("{}", enrolment::describe(&redis, &tenant).await?);
    if let Some(held) = ParkedMalls::new(conn, redis.keyspace.clone()).state(&tenant.tag).await? {
        let what = if held.parked { "PARKED" } else { "being released" };
        println!(
            "mall {mall}: {what} ({}) since {}; {} events held, in order",
            held.reason,
            when(held.since_ms),
            held.held
        );
    }
    match store.get(&tenant.tag, ADMIN_API).await? {
        Some(token) => {
            println!(
                "mall {mall}: access token expires {}, refresh token {}",
                when(token.access_expires_ms),
                when(token.refresh_expires_ms)
            );
            Ok(ExitCode::SUCCESS)
        }
        None => {
            println!("mall {mall}: no tokens (store them with `{}`)", tenant.set);
            Ok(ExitCode::FAILURE)
        }
    }
}

/// A file's text, or standard input's for `-` (so no secret need be an
/// argument, visible in `ps` and the shell history).
pub(crate) fn read_source(source: &str) -> anyhow::Result<String> {
    if source == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("cannot read standard input")?;
        return Ok(text);
    }
    std::fs::read_to_string(source).with_context(|| format!("cannot read {source}"))
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A time as RFC 3339 UTC with how far away it is.
pub(crate) fn when(ms: u64) -> String {
    let time = chrono::DateTime::from_timestamp_millis(ms as i64).map_or_else(|| "?".into(), |t| t.to_rfc3339());
    let now = now_ms();
    if ms >= now {
        format!("{time} (in {})", human((ms - now) / 1000))
    } else {
        format!("{time} ({} ago)", human((now - ms) / 1000))
    }
}

fn human(seconds: u64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

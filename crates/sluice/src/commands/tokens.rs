//! `sluice tokens set MALL --token-json FILE` seeds a mall's Cafe24 OAuth
//! tokens, exactly as Cafe24's token endpoint returned them (the JSON of
//! the authorisation-code exchange); `-` reads it from standard input, so
//! no token shows in `ps` or the shell history. `sluice tokens show MALL`
//! prints when they expire, never the tokens.

use crate::redis_target::StateRedis;
use crate::usage;
use anyhow::Context;
use sluice_cafe24::{TokenGrant, TokenResponse, check_mall_id};
use sluice_pipeline::shop_service::ADMIN_API;
use sluice_pipeline::stored_token;
use sluice_redis::{Tag, TokenStore};
use std::io::Read;
use std::process::ExitCode;
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
    },
    /// Show when a mall's tokens expire.
    Show { mall: String },
}

pub(crate) async fn run(command: TokensCommand) -> anyhow::Result<ExitCode> {
    match command {
        TokensCommand::Set { mall, token_json } => set(&mall, &token_json).await,
        TokensCommand::Show { mall } => show(&mall).await,
    }
}

const WHO: &str = "sluice tokens";

async fn set(mall: &str, source: &str) -> anyhow::Result<ExitCode> {
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
    let store = TokenStore::new(redis.connection().await?, redis.keyspace.clone());
    let now = now_ms();
    let token = stored_token(&grant, now);
    store.put(&Tag::for_mall(mall), ADMIN_API, &token, now).await.map_err(|e| usage(WHO, e))?;
    println!(
        "Stored mall {mall}'s tokens: access token expires {}, refresh token {}.",
        when(token.access_expires_ms),
        when(token.refresh_expires_ms)
    );
    Ok(ExitCode::SUCCESS)
}

async fn show(mall: &str) -> anyhow::Result<ExitCode> {
    let redis = StateRedis::locate("sluice")?;
    let store = TokenStore::new(redis.connection().await?, redis.keyspace.clone());
    match store.get(&Tag::for_mall(mall), ADMIN_API).await? {
        Some(token) => {
            println!(
                "mall {mall}: access token expires {}, refresh token {}",
                when(token.access_expires_ms),
                when(token.refresh_expires_ms)
            );
            Ok(ExitCode::SUCCESS)
        }
        None => {
            println!("mall {mall}: no tokens (store them with `sluice tokens set {mall} --token-json FILE`)");
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

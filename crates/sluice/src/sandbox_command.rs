//! `sluice sandbox cafe24`: a Cafe24 stand-in on 127.0.0.1 until Ctrl-C.
//!
//! It serves the Admin API reads and the token endpoint for each mall under
//! `/malls/{mall}`, enforces each mall's leaky bucket, injects the faults
//! asked for, and posts webhooks to `--webhook-target` when its data is
//! changed through the control plane under `/sandbox/…` (see
//! `sluice_sandbox::cafe24::control`). Settings that are out of range are
//! refused with exit code 2, before anything listens.

use sluice_sandbox::cafe24::{BucketConfig, SandboxConfig, WebhookTarget};
use sluice_sandbox::{Cafe24Sandbox, FaultConfig, TimeoutMode};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

/// The sandbox's default port ("24" for Cafe24); `--port 0` picks a free one.
const DEFAULT_PORT: u16 = 9024;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum SandboxCommand {
    /// A Cafe24 stand-in: Admin API, OAuth tokens, per-mall leaky buckets,
    /// webhooks on change, fault injection. Runs until Ctrl-C.
    Cafe24(Cafe24Args),
}

#[derive(Debug, clap::Args)]
pub(crate) struct Cafe24Args {
    /// Port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Malls to serve (repeat the flag or separate with commas).
    #[arg(long = "mall", value_delimiter = ',', default_value = "demo")]
    malls: Vec<String>,
    /// Bucket capacity of every mall (Cafe24: 40).
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u32).range(1..))]
    bucket_capacity: u32,
    /// Bucket drain of every mall, in calls per second (Cafe24: 2).
    #[arg(long, default_value_t = 2.0, value_parser = positive)]
    bucket_drain: f64,
    /// Share of Admin API calls answered 500, from 0 to 1.
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    error_rate: f64,
    /// Share of Admin API calls that time out, from 0 to 1.
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    timeout_rate: f64,
    /// How long a timed-out call is held before its 504, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    timeout_hold_ms: u64,
    /// Time out by dropping the connection mid-response instead of holding.
    #[arg(long)]
    drop_connections: bool,
    /// Latency added to every answered call, in milliseconds.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// A random extra of up to this many milliseconds on top of the latency.
    #[arg(long, default_value_t = 0)]
    latency_jitter_ms: u64,
    /// Seed of the fault injection (the same seed repeats the same faults).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// URL to POST webhooks to when data changes (e.g. sluice dev's ingest).
    #[arg(long)]
    webhook_target: Option<String>,
    /// The X-API-Key sent with each webhook (required with --webhook-target).
    #[arg(long)]
    api_key: Option<String>,
    /// OAuth client id the token endpoint accepts.
    #[arg(long, default_value = "sandbox-client")]
    client_id: String,
    /// OAuth client secret the token endpoint accepts.
    #[arg(long, default_value = "sandbox-secret")]
    client_secret: String,
    /// Access token lifetime in seconds (Cafe24: 7200).
    #[arg(long, default_value_t = 7200, value_parser = clap::value_parser!(u64).range(1..))]
    access_token_lifetime_secs: u64,
}

pub(crate) async fn run(command: SandboxCommand) -> Result<ExitCode, String> {
    match command {
        SandboxCommand::Cafe24(args) => run_cafe24(args).await,
    }
}

async fn run_cafe24(args: Cafe24Args) -> Result<ExitCode, String> {
    let config = match config(&args) {
        Ok(config) => config,
        Err(problem) => {
            eprintln!("sluice sandbox cafe24: {problem}");
            return Ok(ExitCode::from(2));
        }
    };
    let sandbox = Cafe24Sandbox::start(config).await.map_err(|e| format!("{e} (choose another with --port)"))?;
    println!("Cafe24 sandbox: {}", sandbox.base_url());
    for mall in sandbox.mall_ids() {
        println!("Mall {mall}: {}", sandbox.mall_base_url(&mall));
    }
    println!("Base URL template: {}", sandbox.base_url_template());
    println!("Control plane: {}/sandbox (tokens: POST /sandbox/malls/{{mall}}/tokens)", sandbox.base_url());
    match &args.webhook_target {
        Some(url) => println!("Webhooks: POST {url}"),
        None => println!("Webhooks: off (--webhook-target URL --api-key KEY)"),
    }
    println!("Ready. Ctrl-C stops.");
    crate::stop_signal::stop_signal().await;
    let c = sandbox.counters();
    sandbox.stop().await;
    println!(
        "Cafe24 sandbox stopped: {} calls, {} ok, {} refused by the bucket, {} by the quota, {} unauthorized, \
         {} token refreshes, {} webhooks ({} failed).",
        c.calls,
        c.ok,
        c.refused_bucket,
        c.refused_quota,
        c.unauthorized,
        c.token_refreshes,
        c.webhooks_sent,
        c.webhooks_failed
    );
    Ok(ExitCode::SUCCESS)
}

/// The sandbox configuration, or the first problem with the flags.
fn config(args: &Cafe24Args) -> Result<SandboxConfig, String> {
    let timeout_mode = if args.drop_connections {
        TimeoutMode::Drop
    } else {
        TimeoutMode::Hold(Duration::from_millis(args.timeout_hold_ms))
    };
    if args.error_rate + args.timeout_rate > 1.0 {
        return Err("--error-rate and --timeout-rate together must not exceed 1".into());
    }
    let faults = FaultConfig {
        server_error_rate: args.error_rate,
        timeout_rate: args.timeout_rate,
        timeout_mode,
        latency: Duration::from_millis(args.latency_ms),
        latency_jitter: Duration::from_millis(args.latency_jitter_ms),
        seed: args.seed,
    };
    let webhook = match (&args.webhook_target, &args.api_key) {
        (None, _) => None,
        (Some(_), None) => return Err("--webhook-target needs --api-key (the receiver checks X-API-Key)".into()),
        (Some(url), Some(key)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("--webhook-target `{url}` must be an http:// or https:// URL"));
            }
            Some(WebhookTarget { url: url.clone(), api_key: key.as_str().into() })
        }
    };
    let mut malls = args.malls.clone();
    malls.sort();
    malls.dedup();
    let config = SandboxConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], args.port)),
        malls,
        bucket: BucketConfig::new(args.bucket_capacity, args.bucket_drain),
        client_id: args.client_id.clone(),
        client_secret: args.client_secret.as_str().into(),
        access_token_lifetime: Duration::from_secs(args.access_token_lifetime_secs),
        faults,
        webhook,
        ..SandboxConfig::default()
    };
    config.validate()?;
    Ok(config)
}

/// A share between 0 and 1.
fn rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err("must be a number from 0 to 1".into()),
    }
}

fn positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err("must be a positive number".into()),
    }
}

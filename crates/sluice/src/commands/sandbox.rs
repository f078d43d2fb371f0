//! `sluice sandbox cafe24|sheets`: an upstream stand-in until Ctrl-C.
//!
//! - `cafe24` serves the Admin API reads and the token endpoint for each
//!   mall under `/malls/{mall}`, enforces each mall's leaky bucket, injects
//!   the faults asked for, and posts webhooks to `--webhook-target` when
//!   its data is changed through the control plane under `/sandbox/…` (see
//!   `sluice_sandbox::cafe24::control`).
//! - `sheets` serves the Google Sheets API v4 calls sluice makes at
//!   Google's paths and Google's token endpoint, enforces the per-user and
//!   per-project read/write quotas over a sliding window, injects faults,
//!   and prints each user's refresh token; its control plane is under
//!   `/sandbox/sheets/…` (see `sluice_sandbox::sheets::control`).
//!
//! Settings that are out of range are refused with exit code 2, before
//! anything listens.

use crate::usage;
use anyhow::{anyhow, bail};
use sluice_sandbox::cafe24::{BucketConfig, SandboxConfig, WebhookTarget};
use sluice_sandbox::{Cafe24Sandbox, FaultConfig, SheetsSandbox, SheetsSandboxConfig, TimeoutMode};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

/// The Cafe24 sandbox's default port ("24" for Cafe24); `--port 0` picks a
/// free one.
const DEFAULT_PORT: u16 = 9024;
/// The Sheets sandbox's default port ("4" for the API's v4).
const SHEETS_PORT: u16 = 9004;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum SandboxCommand {
    /// A Cafe24 stand-in: Admin API, OAuth tokens, per-mall leaky buckets,
    /// webhooks on change, fault injection. Runs until Ctrl-C.
    Cafe24(Cafe24Args),
    /// A Google Sheets stand-in: Sheets API v4 values and spreadsheets
    /// calls, the OAuth token endpoint, per-user and per-project quotas,
    /// fault injection. Runs until Ctrl-C.
    Sheets(SheetsArgs),
}

/// Probabilistic faults, the same for every sandbox.
#[derive(Debug, clap::Args)]
pub(crate) struct FaultArgs {
    /// Share of API calls answered 500, from 0 to 1.
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    error_rate: f64,
    /// Share of API calls that time out, from 0 to 1.
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    timeout_rate: f64,
    /// How long a timed-out call is held before its 504, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    timeout_hold_ms: u64,
    /// Time out by dropping the connection mid-response instead of holding.
    #[arg(long)]
    drop_connections: bool,
    /// Time out by closing the connection before any answer instead of holding.
    #[arg(long, conflicts_with = "drop_connections")]
    close_connections: bool,
    /// Latency added to every answered call, in milliseconds.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// A random extra of up to this many milliseconds on top of the latency.
    #[arg(long, default_value_t = 0)]
    latency_jitter_ms: u64,
    /// Seed of the fault injection (the same seed repeats the same faults).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl FaultArgs {
    fn config(&self) -> anyhow::Result<FaultConfig> {
        if self.error_rate + self.timeout_rate > 1.0 {
            bail!("--error-rate and --timeout-rate together must not exceed 1");
        }
        let timeout_mode = if self.drop_connections {
            TimeoutMode::Drop
        } else if self.close_connections {
            TimeoutMode::Close
        } else {
            TimeoutMode::Hold(Duration::from_millis(self.timeout_hold_ms))
        };
        Ok(FaultConfig {
            server_error_rate: self.error_rate,
            timeout_rate: self.timeout_rate,
            timeout_mode,
            latency: Duration::from_millis(self.latency_ms),
            latency_jitter: Duration::from_millis(self.latency_jitter_ms),
            seed: self.seed,
        })
    }
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
    /// Bucket leak rate of every mall, in calls per second (Cafe24: 2).
    #[arg(long, default_value_t = 2.0, value_parser = positive, alias = "bucket-drain")]
    bucket_leak: f64,
    #[command(flatten)]
    faults: FaultArgs,
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

pub(crate) async fn run(command: SandboxCommand) -> anyhow::Result<ExitCode> {
    match command {
        SandboxCommand::Cafe24(args) => run_cafe24(args).await,
        SandboxCommand::Sheets(args) => run_sheets(args).await,
    }
}

async fn run_cafe24(args: Cafe24Args) -> anyhow::Result<ExitCode> {
    let config = config(&args).map_err(|e| usage("sluice sandbox cafe24", e))?;
    let malls = config.malls.clone();
    let sandbox = Cafe24Sandbox::start(config).await.map_err(|e| anyhow!("{e} (choose another with --port)"))?;
    println!("Cafe24 sandbox: {}", sandbox.base_url());
    for mall in malls {
        println!("Mall {mall}: {}", sandbox.base_url_template().replace("{mall_id}", &mall));
    }
    println!("Base URL template: {}", sandbox.base_url_template());
    println!("Control plane: {}/sandbox (tokens: POST /sandbox/malls/{{mall}}/tokens)", sandbox.base_url());
    match &args.webhook_target {
        Some(url) => println!("Webhooks: POST {url}"),
        None => println!("Webhooks: off (--webhook-target URL --api-key KEY)"),
    }
    let stop = crate::stop_signal::install();
    println!("Ready. Ctrl-C stops.");
    stop.wait().await;
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
fn config(args: &Cafe24Args) -> anyhow::Result<SandboxConfig> {
    let faults = args.faults.config()?;
    let webhook = match (&args.webhook_target, &args.api_key) {
        (None, _) => None,
        (Some(_), None) => bail!("--webhook-target needs --api-key (the receiver checks X-API-Key)"),
        (Some(url), Some(key)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                bail!("--webhook-target `{url}` must be an http:// or https:// URL");
            }
            Some(WebhookTarget { url: url.clone(), api_key: key.as_str().into() })
        }
    };
    let config = SandboxConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], args.port)),
        malls: args.malls.iter().collect::<BTreeSet<_>>().into_iter().cloned().collect(),
        bucket: BucketConfig::new(args.bucket_capacity, args.bucket_leak),
        client_id: args.client_id.clone(),
        client_secret: args.client_secret.as_str().into(),
        access_token_lifetime: Duration::from_secs(args.access_token_lifetime_secs),
        faults,
        webhook,
        ..SandboxConfig::default()
    };
    config.validate().map_err(anyhow::Error::msg)?;
    Ok(config)
}

#[derive(Debug, clap::Args)]
pub(crate) struct SheetsArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Port; 0 picks a free one.
    #[arg(long, default_value_t = SHEETS_PORT)]
    port: u16,
    /// Write requests accepted per user per project in any quota window (Google: 60).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..))]
    write_per_user: u32,
    /// Write requests accepted per project in any quota window (Google: 300).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..))]
    write_per_project: u32,
    /// Read requests accepted per user per project in any quota window (Google: 60).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..))]
    read_per_user: u32,
    /// Read requests accepted per project in any quota window (Google: 300).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..))]
    read_per_project: u32,
    /// The sliding window the quotas hold over, in seconds (Google: 60).
    #[arg(long, default_value_t = 60.0, value_parser = positive)]
    quota_window_secs: f64,
    /// Access token lifetime in seconds (Google: 3600).
    #[arg(long, default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..))]
    access_token_ttl_secs: u64,
    /// The Cloud project number the 429 bodies name.
    #[arg(long, default_value_t = 123_456_789_012)]
    project_number: u64,
    /// OAuth client id the token endpoint accepts (the project).
    #[arg(long, default_value = "sandbox-client")]
    client_id: String,
    /// OAuth client secret the token endpoint accepts.
    #[arg(long, default_value = "sandbox-secret")]
    client_secret: String,
    /// A sheet to serve, as SPREADSHEET_ID:GID:TITLE (repeat the flag;
    /// sheets with the same id are tabs of one spreadsheet, in flag order).
    #[arg(long = "spreadsheet", value_name = "ID:GID:TITLE", value_parser = sheet_spec,
          default_value = "sandbox-spreadsheet:0:Sheet1")]
    spreadsheets: Vec<(String, u64, String)>,
    /// A user of the client to issue a refresh token for (repeat the flag).
    #[arg(long = "user", value_name = "NAME", default_value = "sandbox-user")]
    users: Vec<String>,
    #[command(flatten)]
    faults: FaultArgs,
}

/// One `--spreadsheet ID:GID:TITLE` (the title may itself hold colons).
fn sheet_spec(text: &str) -> anyhow::Result<(String, u64, String)> {
    let mut parts = text.splitn(3, ':');
    let (Some(id), Some(gid), Some(title)) = (parts.next(), parts.next(), parts.next()) else {
        bail!("must be SPREADSHEET_ID:GID:TITLE, e.g. sandbox-spreadsheet:0:Sheet1");
    };
    if id.is_empty() || id.contains('/') || title.is_empty() {
        bail!("the spreadsheet id (without `/`) and the title must not be empty");
    }
    let gid = gid.parse().map_err(|_| anyhow!("the gid `{gid}` must be a whole number"))?;
    Ok((id.to_owned(), gid, title.to_owned()))
}

async fn run_sheets(args: SheetsArgs) -> anyhow::Result<ExitCode> {
    let (config, spreadsheets) = sheets_config(&args).map_err(|e| usage("sluice sandbox sheets", e))?;
    let sandbox = SheetsSandbox::start(config).await.map_err(|e| anyhow!("{e} (choose another with --port)"))?;
    sandbox.add_client(&args.client_id, &args.client_secret);
    println!("Google Sheets sandbox: {} (API paths /v4/spreadsheets/…)", sandbox.base_url());
    println!("Token URL: {}", sandbox.token_url());
    println!("OAuth client: {} (secret as given by --client-secret)", args.client_id);
    for (id, sheets) in &spreadsheets {
        let tabs: Vec<(u64, &str)> = sheets.iter().map(|(gid, title)| (*gid, title.as_str())).collect();
        sandbox.create_spreadsheet(id, &tabs);
        let listed: Vec<String> = sheets.iter().map(|(gid, title)| format!("{gid} \"{title}\"")).collect();
        println!("Spreadsheet {id}: sheets {}", listed.join(", "));
    }
    for user in args.users.iter().collect::<BTreeSet<_>>() {
        // Printing a refresh token is the point here: a sandbox token is
        // only good against this process.
        println!("User {user}: refresh token {}", sandbox.add_user(&args.client_id, user));
    }
    println!(
        "Quotas per {} s: {} writes and {} reads per user, {} and {} per project (project {}).",
        args.quota_window_secs,
        args.write_per_user,
        args.read_per_user,
        args.write_per_project,
        args.read_per_project,
        args.project_number
    );
    println!("Control plane: {}/sandbox/sheets (calls, users, spreadsheets, faults)", sandbox.base_url());
    let stop = crate::stop_signal::install();
    println!("Ready. Ctrl-C stops.");
    stop.wait().await;
    let calls = sandbox.calls();
    sandbox.stop().await;
    let count = |f: &dyn Fn(&sluice_sandbox::SheetsCall) -> bool| calls.iter().filter(|c| f(c)).count();
    println!(
        "Google Sheets sandbox stopped: {} calls, {} ok, {} refused by a quota, {} unauthorized, {} faults, \
         {} rows written.",
        calls.len(),
        count(&|c| (200..300).contains(&c.status)),
        count(&|c| c.status == 429 && !c.counted),
        count(&|c| c.status == 401),
        count(&|c| c.fault.is_some()),
        calls.iter().filter(|c| c.op.is_write() && c.applied).map(|c| c.rows).sum::<usize>()
    );
    Ok(ExitCode::SUCCESS)
}

/// A spreadsheet's tabs, `(gid, title)` in flag order.
type Spreadsheets = BTreeMap<String, Vec<(u64, String)>>;

/// The sandbox configuration and spreadsheets, or the first problem with
/// the flags.
fn sheets_config(args: &SheetsArgs) -> anyhow::Result<(SheetsSandboxConfig, Spreadsheets)> {
    let mut spreadsheets = Spreadsheets::new();
    for (id, gid, title) in &args.spreadsheets {
        let sheets = spreadsheets.entry(id.clone()).or_default();
        if sheets.iter().any(|(g, t)| g == gid || t == title) {
            bail!("--spreadsheet {id}: gid {gid} or title `{title}` is already a sheet of it");
        }
        sheets.push((*gid, title.clone()));
    }
    if args.client_id.is_empty() || args.client_secret.is_empty() || args.users.iter().any(String::is_empty) {
        bail!("--client-id, --client-secret and --user must not be empty");
    }
    let config = SheetsSandboxConfig {
        addr: SocketAddr::new(args.host, args.port),
        write_per_user: args.write_per_user,
        write_per_project: args.write_per_project,
        read_per_user: args.read_per_user,
        read_per_project: args.read_per_project,
        quota_window: Duration::try_from_secs_f64(args.quota_window_secs)
            .map_err(|_| anyhow!("--quota-window-secs is too large"))?,
        access_token_ttl: Duration::from_secs(args.access_token_ttl_secs),
        project_number: args.project_number,
        faults: args.faults.config()?,
    };
    config.validate().map_err(anyhow::Error::msg)?;
    Ok((config, spreadsheets))
}

/// A share between 0 and 1.
fn rate(text: &str) -> Result<f64, &'static str> {
    match text.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err("must be a number from 0 to 1"),
    }
}

fn positive(text: &str) -> Result<f64, &'static str> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err("must be a positive number"),
    }
}

//! `sluice dev`: both paths on one machine. Ingest on 127.0.0.1 takes
//! Cafe24 webhooks and sheet rows, the embedded FIFO queue (in Redis)
//! holds them behind its SQS endpoint, the pipe starts the deployed
//! `statemachine/pipeline.asl.json` on each batch through the local Step
//! Functions endpoint, which runs it with the real steps against Cafe24
//! (or, with `--sandbox-mall`, an embedded sandbox Cafe24 whose changes
//! send their webhooks here), and the flush worker appends the buffered
//! rows to Google Sheets (`--sheets-api-url`). Each URL served is printed
//! on its own line.
//!
//! The queue lives in Redis (`SLUICE_REDIS_URL`, or a private
//! `redis-server` keeping an append-only file in `--redis-dir`), so a
//! `sluice dev` that is killed loses nothing it acknowledged: the next run
//! finds every message where it was. A private server never outlives
//! `sluice dev`, even when it is killed. Ctrl-C (or SIGTERM) stops it in
//! order: no new webhooks, the held ones sent, the batches in hand finished.
//!
//! The drain moves the stored snapshots from Redis into PostgreSQL
//! (`sluice_dev_stack::drain_task`): `--database-url`, else the database
//! `sluice` of a PostgreSQL on 127.0.0.1:5432 (or `PGHOST`/`PGPORT`) that lets user `postgres` in;
//! with neither, or `--no-drain`, it is off, said in one line, and the
//! snapshots stay in Redis. Migrations are applied at start; a drain that
//! fails longer than `--drain-alert-after` raises an alert.
//!
//! One `sluice dev` consumes the queues of a Redis and key prefix at a
//! time (the consumer lease, `sluice_sqs_emulator::redis_store::lease`). Started
//! after a run that was killed, it takes over at once when that run's pid
//! is gone from this host (otherwise when its lease lapses, 15 s), and
//! returns what the dead run held in flight before serving, so nothing
//! waits out the 330 s visibility timeout. Started while another run of
//! the same Redis and prefix lives, it exits with code 2 and one line.

mod status_line;
mod upstream_config;

use super::tokens::now_ms;
use crate::database_target::DatabaseTarget;
use crate::dev_state::DevState;
use crate::functions_args::FunctionsArgs;
use crate::redis_target::RedisTarget;
use anyhow::{Context, anyhow, bail};
use sluice_cafe24::{Secret, TokenGrant};
use sluice_dev_stack::{DevConfig, DevStack, DrainSetup, PipeConcurrency, PipeConfig, take_consumer_lease};
use sluice_ingest::{ApiKeys, IngestConfig, any_route_document, first_webhook_key};
use sluice_pipeline::{CatchUpConfig, PipelineConfig, stored_token};
use sluice_redis::{BucketSpec, FlowControl, Keyspace, SheetFlow};
use sluice_sandbox::cafe24::{BucketConfig, WebhookTarget};
use sluice_sandbox::{Cafe24Sandbox, Cafe24SandboxConfig};
use sluice_sink::DrainConfig;
use sluice_sqs_emulator::{GroupScan, LeaseError, SQS_FIFO_SCAN_WINDOW};
use status_line::status_line;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;
use upstream_config::{cafe24_config, settings, sheets_config};

/// The SQS endpoint's default port: the one local SQS stand-ins
/// (ElasticMQ) made customary, so existing `--endpoint-url`s work.
pub(crate) const DEFAULT_SQS_PORT: u16 = 9324;
/// The Step Functions endpoint's default port: the one Step Functions
/// Local uses, so existing `--endpoint-url`s work.
pub(crate) const DEFAULT_SFN_PORT: u16 = 8083;
/// Ingest's default port.
pub(crate) const DEFAULT_INGEST_PORT: u16 = 9080;
/// The API key `sluice dev` accepts when `SLUICE_API_KEYS` is unset.
pub(crate) const DEV_API_KEY: &str = "sluice-dev";

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Port of the SQS endpoint on 127.0.0.1; 0 picks a free port.
    #[arg(long, default_value_t = DEFAULT_SQS_PORT)]
    sqs_port: u16,
    /// Port of the Step Functions endpoint on 127.0.0.1; 0 picks a free port.
    #[arg(long, default_value_t = DEFAULT_SFN_PORT)]
    sfn_port: u16,
    /// Port of ingest (POST /webhooks/cafe24) on 127.0.0.1; 0 picks a free port.
    #[arg(long, default_value_t = DEFAULT_INGEST_PORT)]
    ingest_port: u16,
    /// Port of `GET /metrics` (Prometheus text) on 127.0.0.1; 0 picks a free port.
    #[arg(long, default_value_t = 9091)]
    metrics_port: u16,
    /// Receives of a message before it moves to sluice-events-dlq.fifo.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    max_receive_count: u32,
    /// Visibility timeout of sluice-events.fifo, in seconds: above the state
    /// machine's 300 s, so a batch is never handed out twice at once.
    #[arg(long, default_value_t = 330, value_parser = clap::value_parser!(u64).range(0..=43_200))]
    visibility_timeout: u64,
    /// How sluice-events.fifo (and its dead-letter queue) chooses among
    /// message groups: `sqs-fifo`, as SQS FIFO does (groups in the order of
    /// their oldest message, only the first --scan-window messages looked
    /// at: a deep group delays the groups behind it, as in AWS), or
    /// `round-robin` (every ready group served once per turn: fairer than
    /// AWS). Fixed when the queue is created.
    #[arg(long, value_enum, default_value_t = ScanArg::SqsFifo)]
    group_scan: ScanArg,
    /// Messages the sqs-fifo scan looks through for available groups
    /// (SQS: 120,000).
    #[arg(long, default_value_t = SQS_FIFO_SCAN_WINDOW, value_parser = clap::value_parser!(u32).range(1..))]
    scan_window: u32,
    /// Flow control per mall: once a mall has this many messages in the
    /// queue, its webhooks go to its dirty set instead, drained within its
    /// bucket by one "catch up mall M" request at a time (docs/shop-path.md: "One flooding
    /// mall"). With --functions processes, the catch-up binary drains.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    flow_max_queued: u32,
    /// Flow control per sheet: once a sheet has this many rows in the
    /// queue, its rows are held in its overflow instead, which joins its
    /// buffer behind them (docs/sheet-path.md: "One flooding sheet").
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    sheet_max_queued: u32,
    /// Back-pressure: webhooks and rows ingest accepts at once; one more is
    /// answered 503 `overloaded` with Retry-After before it touches Redis
    /// (docs/reliability.md: "Back-pressure").
    #[arg(long, default_value_t = sluice_ingest::config::DEFAULT_MAX_ACCEPTING as u32,
          value_parser = clap::value_parser!(u32).range(1..=sluice_ingest::config::MAX_ACCEPTING_LIMIT as i64))]
    max_accepting: u32,
    /// Back-pressure: milliseconds a webhook's or row's Redis work may take
    /// before its send; past it the answer is 503 `deadline_exceeded` with
    /// Retry-After, nothing kept (at most half the 10 s accept lease).
    #[arg(long, default_value_t = sluice_ingest::config::DEFAULT_ACCEPT_DEADLINE.as_millis() as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    accept_deadline_ms: u64,
    /// Every webhook becomes a message, however deep its mall's backlog
    /// (refused with --functions processes, as --max-accepting and
    /// --accept-deadline-ms are: the ingest function reads the template's
    /// settings).
    #[arg(long)]
    no_flow_control: bool,
    /// Where the private redis-server keeps its data between runs (unused
    /// when SLUICE_REDIS_URL is set).
    #[arg(long, default_value = ".sluice/redis")]
    redis_dir: std::path::PathBuf,
    /// Prefix of every Redis key sluice writes (no '{' or '}').
    #[arg(long, default_value = "sluice:")]
    key_prefix: String,
    /// Cafe24 base URL template; `{mall_id}` is replaced by the mall.
    #[arg(long, default_value = "https://{mall_id}.cafe24api.com")]
    cafe24_base_url: String,
    /// Cafe24 app client id (default: SLUICE_CAFE24_CLIENT_ID; the secret
    /// comes from SLUICE_CAFE24_CLIENT_SECRET).
    #[arg(long)]
    cafe24_client_id: Option<String>,
    /// Run an embedded sandbox Cafe24 with these malls instead of Cafe24
    /// (repeat or separate with commas); its changes send webhooks here.
    #[arg(long = "sandbox-mall", value_delimiter = ',')]
    sandbox_malls: Vec<String>,
    /// Each mall's Admin API bucket capacity (Cafe24: 40).
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u32).range(1..))]
    bucket_capacity: u32,
    /// Each mall's bucket leak rate, calls per second (Cafe24: 2).
    #[arg(long, default_value_t = 2.0, alias = "bucket-drain")]
    bucket_leak: f64,
    /// Pipe workers polling the queue at once (the template's PipeCount).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    workers: u32,
    /// How many batches the pipe runs at once: `one-per-worker` (each
    /// worker waits for its execution) or `scale-out:N` (workers receive on
    /// while executions run, up to N batches in flight), the two ways a
    /// pipe in AWS may behave (docs/deploy.md).
    #[arg(long, default_value = "one-per-worker", value_parser = PipeConcurrency::parse)]
    pipe_concurrency: PipeConcurrency,
    /// Each step function refuses invocations past this many at once with
    /// TooManyRequestsException, as Lambda does past its reserved
    /// concurrency (the template's StepConcurrency).
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    step_concurrency: u32,
    /// FIFO groups of one batch processed at once.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=40))]
    map_concurrency: u32,
    /// Google OAuth client id for the sheet path (default:
    /// SLUICE_GOOGLE_CLIENT_ID; the secret comes from SLUICE_GOOGLE_CLIENT_SECRET).
    #[arg(long)]
    google_client_id: Option<String>,
    /// The Google Sheets API base URL, a `sluice sandbox sheets` URL for
    /// local work (default: SLUICE_SHEETS_API_URL, else Google's).
    #[arg(long)]
    sheets_api_url: Option<String>,
    /// The Google OAuth token endpoint (default: SLUICE_GOOGLE_TOKEN_URL, else Google's).
    #[arg(long)]
    google_token_url: Option<String>,
    /// The Google Cloud project whose 300 writes/min all credentials share
    /// (default: SLUICE_GOOGLE_PROJECT, else `default`).
    #[arg(long)]
    google_project: Option<String>,
    /// A Slack-compatible incoming-webhook URL for alerts, a rejected
    /// credential, a sheet that is gone, a failing drain (default: SLUICE_ALERT_URL).
    #[arg(long)]
    alert_url: Option<String>,
    /// The PostgreSQL the snapshots are drained into,
    /// `postgres://user:password@host:port/database` (default:
    /// SLUICE_DATABASE_URL, else the database `sluice` of the PostgreSQL on
    /// 127.0.0.1:5432, or PGHOST/PGPORT, when it lets user postgres in,
    /// created if missing).
    #[arg(long)]
    database_url: Option<String>,
    /// No drain: the snapshots stay in Redis.
    #[arg(long, conflicts_with = "database_url")]
    no_drain: bool,
    /// Alert (--alert-url) once the drain has failed for this many seconds.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    drain_alert_after: u64,
    #[command(flatten)]
    functions: FunctionsArgs,
}

/// `--group-scan`: the queue's [`GroupScan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ScanArg {
    SqsFifo,
    RoundRobin,
}

impl Args {
    fn group_scan(&self) -> GroupScan {
        match self.group_scan {
            ScanArg::SqsFifo => GroupScan::SqsFifo { window: self.scan_window },
            ScanArg::RoundRobin => GroupScan::RoundRobin,
        }
    }
}

/// An ingest flag given with --functions processes, where the ingest
/// function would run with the template's value instead: refused rather
/// than ignored.
fn ingest_flag_a_function_would_ignore(args: &Args) -> Option<&'static str> {
    if args.functions.in_process() {
        return None;
    }
    use sluice_ingest::config::{DEFAULT_ACCEPT_DEADLINE, DEFAULT_MAX_ACCEPTING};
    if args.max_accepting as usize != DEFAULT_MAX_ACCEPTING {
        Some("--max-accepting")
    } else if args.accept_deadline_ms != DEFAULT_ACCEPT_DEADLINE.as_millis() as u64 {
        Some("--accept-deadline-ms")
    } else if args.no_flow_control {
        Some("--no-flow-control")
    } else {
        None
    }
}

pub(crate) async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(flag) = ingest_flag_a_function_would_ignore(&args) {
        let message = format!(
            "{flag} sets the in-process ingest; with --functions processes the ingest function reads \
             infra/template.yaml's settings, as in AWS: leave {flag} out"
        );
        return Err(crate::usage("sluice dev", message));
    }
    let redis = RedisTarget::from_env_or_private(Some(args.redis_dir.clone()))?;
    let conn = redis.connect().await?;
    let keyspace = Keyspace::new(args.key_prefix.clone())?;
    let lease = match take_consumer_lease(&conn, &keyspace).await {
        Ok(lease) => lease,
        Err(LeaseError::HeldByLiveConsumer { holder, .. } | LeaseError::StillHeld { holder, .. }) => {
            let message = format!(
                "another sluice dev ({holder}) is consuming the queues under key prefix {:?} in {}; stop it, or \
                 start this one with another --key-prefix",
                args.key_prefix, redis.description
            );
            return Err(crate::usage("sluice", message));
        }
        Err(e) => return Err(e).with_context(|| format!("cannot take the consumer lease in {}", redis.description)),
    };
    let env = settings(&args);
    // Unset, the one local key posts webhooks and rows for any credential:
    // this stack listens on 127.0.0.1 only.
    let api_keys_list = env.get("api_keys").map_or_else(|| any_route_document(DEV_API_KEY), str::to_owned);
    let api_keys = ApiKeys::from_list(&Secret::new(api_keys_list.clone())).context("SLUICE_API_KEYS")?;
    let sandbox = if args.sandbox_malls.is_empty() {
        None
    } else {
        let bucket = BucketConfig::new(args.bucket_capacity, args.bucket_leak);
        let config =
            Cafe24SandboxConfig { malls: args.sandbox_malls.clone(), bucket, ..Cafe24SandboxConfig::default() };
        Some(Cafe24Sandbox::start(config).await.context("Cafe24 sandbox")?)
    };
    let cafe24 = cafe24_config(&env, sandbox.as_ref())?;
    let pipeline = sluice_config::pipeline_config(&env)?;
    let database = crate::database_target::for_dev(args.database_url.clone(), args.no_drain).await?;
    let drain = database.found().map(|database| DrainSetup {
        pool: database.pool.clone(),
        endpoint: database.endpoint.clone(),
        config: DrainConfig::default(),
        alert_after: Duration::from_secs(args.drain_alert_after),
    });
    let ingest = IngestConfig {
        keyspace: keyspace.clone(),
        sheet_flow: SheetFlow { max_queued: args.sheet_max_queued, ..SheetFlow::default() },
        max_accepting: args.max_accepting as usize,
        accept_deadline: Duration::from_millis(args.accept_deadline_ms),
        ..IngestConfig::new(api_keys)
    };
    let sheets = sheets_config(&env)?;
    let config = DevConfig {
        sqs_port: args.sqs_port,
        sfn_port: args.sfn_port,
        ingest_port: args.ingest_port,
        metrics_port: args.metrics_port,
        max_receive_count: args.max_receive_count,
        visibility_timeout: Duration::from_secs(args.visibility_timeout),
        group_scan: args.group_scan(),
        pipeline: PipelineConfig {
            bucket: BucketSpec::new(args.bucket_capacity, args.bucket_leak),
            max_receive_count: args.max_receive_count,
            map_max_concurrency: args.map_concurrency,
            catch_up: CatchUpConfig {
                flow: FlowControl { max_queued: args.flow_max_queued, ..pipeline.catch_up.flow.clone() },
                ..pipeline.catch_up.clone()
            },
            ..pipeline
        },
        step_concurrency: Some(args.step_concurrency as usize),
        pipe: PipeConfig {
            workers: args.workers as usize,
            concurrency: args.pipe_concurrency,
            visibility_timeout: Duration::from_secs(args.visibility_timeout),
            ..PipeConfig::default()
        },
        flow_control: !args.no_flow_control,
        alert_url: env.get("alert_url").map(str::to_owned),
        functions: args.functions.mode(&redis, &api_keys_list)?,
        drain,
        ..DevConfig::on_free_ports(ingest, cafe24, sheets)
    };
    let functions = crate::functions_args::describe(&config.functions);
    let stack = DevStack::start_with_lease(conn, config, lease).await?;
    if stack.released > 0 {
        println!("Returned {} messages held in flight by the previous run to their queues.", stack.released);
    }
    let mut urls: Vec<(String, String)> = vec![("Redis".into(), redis.description.clone())];
    urls.extend(stack.urls.iter().map(|(what, url)| (what.to_string(), url.clone())));
    if let Some(sandbox) = &sandbox {
        urls.push(("Cafe24 sandbox".into(), sandbox.base_url()));
        // Each sandbox mall's tokens stored and the sandbox's webhooks
        // pointed at our ingest, so changing sandbox data runs the whole pipeline.
        store_tokens(sandbox, &stack, &args.sandbox_malls).await?;
        let ingest = stack.urls.iter().find(|(what, _)| *what == "Ingest").map(|(_, url)| url.clone());
        let key = first_webhook_key(&api_keys_list).unwrap_or_else(|| DEV_API_KEY.to_owned());
        let target = WebhookTarget { url: ingest.unwrap_or_default(), api_key: Secret::new(key) };
        sandbox.set_webhook_target(Some(target));
    }
    // Written before anything printed says the stack serves: a script that
    // waits for the URLs and then runs `sluice tokens set` finds the file.
    let state = DevState {
        redis_url: redis.url.clone(),
        redis_ca_file: redis.ca_file(),
        key_prefix: args.key_prefix.clone(),
        urls,
    };
    let state_path = DevState::path();
    state.write(&state_path)?;
    for (what, url) in &state.urls {
        println!("{what}: {url}");
    }
    println!("Functions: {functions}");
    if let DatabaseTarget::Absent(why) = &database {
        println!(
            "Drain to PostgreSQL: off ({why}); snapshots stay in Redis. Turn it on with --database-url \
             postgres://user:password@host:port/database (or SLUICE_DATABASE_URL)."
        );
    }
    let stop = crate::stop_signal::install();
    println!(
        "Ready. Webhooks and rows need X-API-Key (SLUICE_API_KEYS, or {DEV_API_KEY:?} for both by default; \
         docs/security.md). Ctrl-C stops."
    );
    let mut lease_lost = false;
    tokio::select! {
        () = stop.wait() => {}
        () = status_line(&stack) => {}
        () = stack.lease_lost() => lease_lost = true,
    }
    if std::io::stdout().is_terminal() {
        println!();
    }
    let outcome = stack.stop().await;
    if let Some(sandbox) = sandbox {
        sandbox.stop().await;
    }
    let _ = std::fs::remove_file(&state_path);
    outcome?;
    if lease_lost {
        bail!(
            "stopped: another sluice dev took over the consumer lease of the queues (while this one could not \
             renew it)"
        );
    }
    println!("sluice dev stopped.");
    Ok(ExitCode::SUCCESS)
}

/// Stores the tokens the sandbox issues for each of `malls`, as
/// `sluice tokens set` would store Cafe24's.
pub(crate) async fn store_tokens(sandbox: &Cafe24Sandbox, stack: &DevStack, malls: &[String]) -> anyhow::Result<()> {
    let now = now_ms();
    for mall in malls {
        let grant =
            TokenGrant::from_response(sandbox.issue_tokens(mall)?).map_err(|e| anyhow!("sandbox token: {e}"))?;
        stack.shop.set_token(mall, &stored_token(&grant, now)).await.map_err(crate::cause)?;
    }
    Ok(())
}

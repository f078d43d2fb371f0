//! `sluice demo shops` (what `make run` runs): bursts of webhooks against
//! buckets too small for them, live. A sandbox Cafe24 with 20 malls whose
//! buckets are small enough that most malls must wait for budget; 2,000 product edits (many of the same
//! products) whose webhooks 100 concurrent clients send over real HTTP to
//! the ingest of a full local stack; then, once everything has drained, a
//! report that checks every invariant and exits non-zero if one fails.
//!
//! The stack drains the stored snapshots into PostgreSQL, and the report
//! checks there what was stored: a private PostgreSQL started for the run
//! when PostgreSQL is installed (so the demo never writes into a user's
//! database unasked), or `--database-url`; without either it says so in
//! one line and reads the Redis streams instead.

use super::shop_report::{Report, Sent, StoredView};
use crate::commands::dev::store_tokens;
use crate::database_target::{self, DatabaseTarget, DrainDatabase};
use crate::functions_args::{FunctionsArgs, describe};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value};
use sluice_cafe24::{BaseUrlTemplate, Cafe24Config, Secret};
use sluice_dev_stack::{DevConfig, DevStack, DrainSetup, DrainTask, FunctionsMode};
use sluice_domain::ResourceKind;
use sluice_ingest::{ApiKeys, IngestConfig};
use sluice_pipeline::PipelineConfig;
use sluice_redis::{BucketSpec, Keyspace};
use sluice_sandbox::cafe24::{BucketConfig, WebhookTarget};
use sluice_sandbox::{Cafe24Sandbox, Cafe24SandboxConfig};
use sluice_sink::DrainConfig;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Malls in the sandbox.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=500))]
    malls: u32,
    /// Products per mall.
    #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    products: u32,
    /// Product edits, each sending one webhook.
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    webhooks: u32,
    /// Concurrent clients sending them.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    clients: u32,
    /// Each mall's bucket capacity (sandbox and pipeline alike).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    bucket_capacity: u32,
    /// Each mall's bucket leak rate, calls per second.
    #[arg(long, default_value_t = 3.0, alias = "bucket-drain")]
    bucket_leak: f64,
    /// Seed of the edit sequence (the same seed repeats the same run).
    #[arg(long, default_value_t = 3)]
    seed: u64,
    /// Give up waiting for the pipeline to drain after this many seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
    /// A PostgreSQL to drain into and check, `postgres://user:password@host:port/database`
    /// (default: a private one started for the run when PostgreSQL is
    /// installed, else SLUICE_DATABASE_URL).
    #[arg(long)]
    database_url: Option<String>,
    #[command(flatten)]
    functions: FunctionsArgs,
}

pub(crate) async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !(args.bucket_leak.is_finite() && args.bucket_leak > 0.0) {
        return Err(crate::usage("sluice demo shops", "--bucket-leak must be a positive number"));
    }
    // The private PostgreSQL (a few seconds of initdb) starts while the rest does.
    let database = tokio::spawn(demo_database(args.database_url.clone()));
    let redis = args.functions.redis_target()?;
    let conn = redis.connect().await?;
    let malls: Vec<String> = (1..=args.malls).map(|m| format!("mall-{m:02}")).collect();
    let bucket = BucketConfig::new(args.bucket_capacity, args.bucket_leak);
    let sandbox = Arc::new(
        Cafe24Sandbox::start(Cafe24SandboxConfig { malls: malls.clone(), bucket, ..Cafe24SandboxConfig::default() })
            .await
            .context("Cafe24 sandbox")?,
    );
    let api_key = format!("demo-{:032x}", rand::random::<u128>());
    let functions = args.functions.mode(&redis, &api_key)?;
    let described = describe(&functions);
    let database = database.await.context("starting the database")??;
    let stack = start_stack(conn, &sandbox, &args, &api_key, functions, database.found()).await?;
    println!("Redis: {}", redis.description);
    println!(
        "Cafe24 sandbox: {} ({} malls, buckets of {} leaking {}/s)",
        sandbox.base_url(),
        malls.len(),
        args.bucket_capacity,
        args.bucket_leak
    );
    for (what, url) in &stack.urls {
        println!("{what}: {url}");
    }
    println!("Functions: {described}");
    if let DatabaseTarget::Absent(why) = &database {
        println!(
            "PostgreSQL: none ({why}); the report reads Redis instead. For the drain and its checks: \
             sudo apt-get install -y postgresql, or --database-url postgres://user:password@host:port/database"
        );
    }

    // Products exist before the demo: created without webhooks.
    let mut products = Vec::new();
    for mall in &malls {
        for p in 0..args.products {
            let report = sandbox.create(mall, ResourceKind::Product, fields(&format!("product {p}"), 1000 + p)).await?;
            products.push((mall.clone(), report.id));
        }
    }
    store_tokens(&sandbox, &stack, &malls).await?;
    let ingest = stack.urls.iter().find(|(w, _)| *w == "Ingest").map(|(_, u)| u.clone()).unwrap_or_default();
    sandbox.set_webhook_target(Some(WebhookTarget { url: ingest, api_key: Secret::new(api_key) }));

    let mut rng = StdRng::seed_from_u64(args.seed);
    let edits: Vec<usize> = (0..args.webhooks).map(|_| rng.random_range(0..products.len())).collect();
    println!(
        "\n{} clients send {} webhooks ({} product edits over {} products)...",
        args.clients,
        args.webhooks,
        args.webhooks,
        products.len()
    );
    let started = Instant::now();
    let sent = send_all(&sandbox, &products, edits, args.clients as usize).await;
    let sending = started.elapsed();
    println!("Sent in {:.1} s; waiting for the pipeline to drain...", sending.as_secs_f64());
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    let drained = wait_drained(&stack, deadline).await;
    let elapsed = started.elapsed();
    let view = match (&stack.drain, &database) {
        (Some(drain), DatabaseTarget::Found(database)) => {
            let behind = wait_written(drain, deadline).await;
            StoredView::from_postgres(&database.pool, behind).await?
        }
        _ => StoredView::from_redis(&stack).await?,
    };
    let report = Report::gather(&stack, &sandbox, &sent, elapsed, sending, drained, view).await?;
    let ok = report.print(args.bucket_capacity, args.bucket_leak);
    stack.stop().await?;
    if let Ok(sandbox) = Arc::try_unwrap(sandbox) {
        sandbox.stop().await;
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

async fn start_stack(
    conn: sluice_redis::Connection,
    sandbox: &Cafe24Sandbox,
    args: &Args,
    api_key: &str,
    functions: FunctionsMode,
    database: Option<&DrainDatabase>,
) -> anyhow::Result<DevStack> {
    let defaults = Cafe24SandboxConfig::default();
    let template = BaseUrlTemplate::new(sandbox.base_url_template())?;
    let keyspace = Keyspace::new("sluice:demo:")?;
    let api_keys = ApiKeys::from_list(&Secret::new(api_key.to_owned()))?;
    let cafe24 = Cafe24Config::new(defaults.client_id, defaults.client_secret).with_base_url(template);
    let ingest = IngestConfig { keyspace, ..IngestConfig::new(api_keys) };
    let config = DevConfig {
        pipeline: PipelineConfig {
            bucket: BucketSpec::new(args.bucket_capacity, args.bucket_leak),
            ..PipelineConfig::default()
        },
        functions,
        drain: database.map(|database| DrainSetup {
            pool: database.pool.clone(),
            endpoint: database.endpoint.clone(),
            config: DrainConfig { idle_poll: Duration::from_millis(100), ..DrainConfig::default() },
            // No alert URL here: a failing drain shows in the report.
            alert_after: Duration::from_secs(300),
        }),
        ..DevConfig::on_free_ports(ingest, cafe24, sluice_sheets::SheetsConfig::new("", ""))
    };
    DevStack::start(conn, config).await
}

fn fields(name: &str, price: u32) -> Map<String, Value> {
    Map::from_iter([("product_name".into(), name.into()), ("price".into(), price.to_string().into())])
}

/// Each client takes the next edit, applies it in the sandbox (which sends
/// the webhook and waits for ingest's answer), until none are left.
async fn send_all(
    sandbox: &Arc<Cafe24Sandbox>,
    products: &[(String, String)],
    edits: Vec<usize>,
    clients: usize,
) -> Vec<Sent> {
    let bar = ProgressBar::new(edits.len() as u64).with_style(
        ProgressStyle::with_template("  webhooks {bar:40} {pos}/{len} {per_sec}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let edits = Arc::new(edits);
    let products = Arc::new(products.to_vec());
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (sandbox, edits, products, next, bar) =
            (sandbox.clone(), edits.clone(), products.clone(), next.clone(), bar.clone());
        tasks.spawn(async move {
            let mut sent = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&p) = edits.get(i) else { break };
                let (mall, id) = &products[p];
                let price = 1000 + (i as u32 % 97);
                match sandbox.update(mall, ResourceKind::Product, id, fields(&format!("edit {i}"), price)).await {
                    Ok(report) => sent.push(Sent::from_report(report)),
                    Err(e) => sent.push(Sent::failed(mall, id, e.to_string())),
                }
                bar.inc(1);
            }
            sent
        });
    }
    let mut all = Vec::new();
    while let Some(done) = tasks.join_next().await {
        all.extend(done.unwrap_or_default());
    }
    bar.finish_and_clear();
    all
}

/// The database the demo drains into: `--database-url` when given, else a
/// private server when PostgreSQL is installed (never a user's database
/// unasked), else `SLUICE_DATABASE_URL`; or why none, in a few words.
async fn demo_database(flag: Option<String>) -> anyhow::Result<DatabaseTarget> {
    const WHO: &str = "sluice demo shops";
    if let Some(url) = flag {
        return Ok(DatabaseTarget::Found(DrainDatabase::open(WHO, &url).await?));
    }
    let private = database_target::private().await;
    if let Err(why) = &private
        && let Some(url) = database_target::configured_url(WHO, None)?
    {
        println!("No private PostgreSQL ({why}); using SLUICE_DATABASE_URL.");
        return Ok(DatabaseTarget::Found(DrainDatabase::open(WHO, &url).await?));
    }
    Ok(private.into())
}

/// Waits until the drain has written every stored snapshot; how many it
/// had not at `deadline`.
async fn wait_written(drain: &DrainTask, deadline: Instant) -> u64 {
    let bar = ProgressBar::new_spinner().with_message("writing to PostgreSQL");
    let mut behind = u64::MAX;
    while Instant::now() < deadline {
        if let Ok(n) = drain.behind().await {
            behind = n;
            if n == 0 {
                break;
            }
            bar.set_message(format!("writing to PostgreSQL: {n} snapshots to go"));
        }
        bar.tick();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bar.finish_and_clear();
    behind
}

/// Waits until the queue is empty with nothing in flight, and no mall's
/// dirty set has a catch-up request pending (flow control hands fetches its
/// bucket cannot serve at once over to it), twice in a row (a batch
/// between receive and delete is in flight). False at `deadline`.
async fn wait_drained(stack: &DevStack, deadline: Instant) -> bool {
    let bar = ProgressBar::new_spinner().with_message("draining");
    let mut quiet = 0;
    while quiet < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let drains = stack.catch_up_queue().await.map(|q| q.visible + q.in_flight + q.delayed);
        match (stack.queues().await, drains) {
            (Ok((events, _)), Ok(0)) if events.visible == 0 && events.in_flight == 0 => quiet += 1,
            (Ok((events, _)), Ok(drains)) => {
                quiet = 0;
                bar.set_message(format!(
                    "draining: {} queued, {} in flight, {drains} malls' dirty sets",
                    events.visible, events.in_flight
                ));
            }
            _ => quiet = 0,
        }
        bar.tick();
    }
    bar.finish_and_clear();
    quiet >= 2
}

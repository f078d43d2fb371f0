//! `sluice status`: how far behind sluice is, and why. The queues' depths
//! (through the SQS API: a deployed stack or the running `sluice dev`),
//! the FIFO groups whose oldest event has waited longest (the group
//! ledger in Redis: SQS cannot tell), and each mall's Admin API bucket and
//! each Google credential's quotas, token and sheet backlogs.
//!
//! Malls and credentials are the ones named with `--mall`/`--credential`,
//! else those of the groups active lately. Limits are read from the same
//! `SLUICE_*` variables the functions read (defaults otherwise), so the
//! numbers mean what the steps see.

use super::tokens::{now_ms, when};
use crate::dev_state::queue_urls;
use crate::redis_target::StateRedis;
use anyhow::Context;
use sluice_aws::{SqsQueue, sqs_client};
use sluice_config::EnvSource;
use sluice_domain::{GroupAbout, Queue};
use sluice_pipeline::status_report::{CredentialStatus, MallStatus};
use sluice_pipeline::{ServiceCore, StatusReader};
use sluice_redis::{DEFAULT_GROUP, LaggingGroup, SnapshotStore, WindowUsage};
use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// How many lagging groups to show.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    top: u64,
    /// Show this mall (repeatable); default: the malls active lately.
    #[arg(long = "mall")]
    malls: Vec<String>,
    /// Show this Google credential (repeatable); default: those active lately.
    #[arg(long = "credential")]
    credentials: Vec<String>,
    /// The events queue (default: the running `sluice dev`'s).
    #[arg(long)]
    queue_url: Option<String>,
    #[arg(long)]
    events_dlq_url: Option<String>,
    #[arg(long)]
    flush_queue_url: Option<String>,
    #[arg(long)]
    flush_dlq_url: Option<String>,
    /// The catch-up queue (default: SLUICE_CATCH_UP_QUEUE_URL, or the
    /// running `sluice dev`'s).
    #[arg(long, alias = "mall-drain-queue-url")]
    catch_up_queue_url: Option<String>,
    #[arg(long, alias = "mall-drain-dlq-url")]
    catch_up_dlq_url: Option<String>,
    /// A local SQS endpoint instead of AWS (default: the running `sluice dev`'s).
    #[arg(long)]
    sqs_endpoint: Option<String>,
}

/// At most this many malls and credentials are found from the ledger.
const MAX_DISCOVERED: usize = 20;

pub(crate) async fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Limits as the functions read them; a variable they would refuse is
    // refused here too.
    let config =
        sluice_config::pipeline_config(&EnvSource::from_process()).map_err(|e| crate::usage("sluice status", e))?;
    let redis = StateRedis::locate("sluice")?;
    let conn = redis.connection().await?;
    let shards = config.snapshot_shards;
    let status = StatusReader::new(ServiceCore::new(conn, redis.keyspace.clone(), config));

    print_queues(&args).await?;

    let ledger = status.core().group_ledger();
    let top = usize::try_from(args.top).unwrap_or(usize::MAX);
    let (lagging, waiting) = ledger.lagging(top).await?;
    print_lagging(&lagging, waiting);
    print_drain(SnapshotStore::new(redis.connection().await?, redis.keyspace.clone(), shards)?).await?;

    let (mut malls, mut credentials) = (BTreeSet::new(), BTreeSet::new());
    if args.malls.is_empty() && args.credentials.is_empty() {
        for group in ledger.seen(1000).await? {
            match group.about.as_deref().and_then(|a| serde_json::from_str::<GroupAbout>(a).ok()) {
                Some(GroupAbout::Shop { mall_id, .. }) if malls.len() < MAX_DISCOVERED => malls.insert(mall_id),
                Some(GroupAbout::Sheet { credential_id, .. }) if credentials.len() < MAX_DISCOVERED => {
                    credentials.insert(credential_id)
                }
                _ => false,
            };
        }
    }
    malls.extend(args.malls);
    credentials.extend(args.credentials);

    println!("\nMalls (Admin API bucket and token)");
    if malls.is_empty() {
        println!("  none active lately (name one with --mall)");
    }
    for mall in &malls {
        print_mall(&status.mall_status(mall).await.map_err(crate::cause)?);
    }
    println!("\nGoogle credentials (quotas: calls in the window / limit; token; sheets)");
    if credentials.is_empty() {
        println!("  none active lately (name one with --credential)");
    }
    for credential in &credentials {
        print_credential(&status.credential_status(credential).await.map_err(crate::cause)?);
    }
    Ok(ExitCode::SUCCESS)
}

async fn print_queues(args: &Args) -> anyhow::Result<()> {
    let env = crate::operator_queues("sluice status")?;
    let given = [
        args.queue_url.clone().or(env.queue_url),
        args.events_dlq_url.clone().or(env.events_dlq_url),
        args.flush_queue_url.clone().or(env.flush_queue_url),
        args.flush_dlq_url.clone().or(env.flush_dlq_url),
        args.catch_up_queue_url.clone().or(env.catch_up_queue_url),
        args.catch_up_dlq_url.clone().or(env.catch_up_dlq_url),
    ];
    let labels = [
        "Queue",
        "Dead-letter queue",
        "Flush queue",
        "Flush dead-letter queue",
        "Catch-up queue",
        "Catch-up dead-letter queue",
    ];
    let (urls, endpoint) = queue_urls(given, args.sqs_endpoint.clone().or(env.sqs_endpoint), labels);
    println!("Queues                   waiting  in flight  delayed");
    if urls.iter().all(Option::is_none) {
        println!("  none known: pass --queue-url and the others (or SLUICE_QUEUE_URL ...), or run `sluice dev` here");
        return Ok(());
    }
    let client = sqs_client(&endpoint).await;
    let names = ["events", "events dead-letter", "flush", "flush dead-letter", "catch-up", "catch-up dead-letter"];
    for (name, url) in names.iter().zip(urls) {
        let Some(url) = url else { continue };
        // Any queue's counts read the same way (GetQueueAttributes).
        let queue = SqsQueue::new(client.clone(), &url);
        let q = Queue::attributes(&queue).await.with_context(|| url.clone())?;
        let alarm = if name.ends_with("dead-letter") && q.visible > 0 { "  <- see `sluice dlq show`" } else { "" };
        println!("  {name:<20} {:>9}  {:>9}  {:>7}{alarm}", q.visible, q.in_flight, q.delayed);
    }
    Ok(())
}

fn print_lagging(lagging: &[LaggingGroup], waiting: u64) {
    match lagging.first() {
        None => println!("\nGroups with events waiting: none"),
        Some(oldest) => println!(
            "\nGroups with events waiting: {waiting}; the oldest event was sent {} ago",
            seconds(oldest.oldest_age)
        ),
    }
    if !lagging.is_empty() {
        println!("  {:>10}  {:>7}  group", "oldest", "pending");
    }
    for group in lagging {
        let about = group.about.as_deref().and_then(|a| serde_json::from_str::<GroupAbout>(a).ok());
        let name = match about {
            Some(GroupAbout::Shop { mall_id, topic }) => format!("mall {mall_id}, topic {}", topic.0),
            Some(GroupAbout::Sheet { credential_id, spreadsheet_id, sheet_gid }) => {
                format!("credential {credential_id}, sheet {spreadsheet_id}#{sheet_gid}")
            }
            None => group.group.clone(),
        };
        println!("  {:>10}  {:>7}  {name}", seconds(group.oldest_age), group.pending);
    }
}

fn print_mall(mall: &MallStatus) {
    let token = match &mall.token {
        None => "no token (sluice tokens set)".to_owned(),
        Some(t) => format!("access expires {}, refresh {}", when(t.access_expires_ms), when(t.refresh_expires_ms)),
    };
    // Flow control: resources waiting for the mall's catch-up runs.
    let dirty = match mall.backlog.dirty {
        0 => String::new(),
        n => format!("; {n} resources in its dirty set (caught up within its bucket)"),
    };
    let hold = match &mall.hold {
        None => String::new(),
        Some(h) if h.parked => format!(
            "; PARKED since {} ({}), {} events held in order until `sluice tokens set`",
            when(h.since_ms),
            h.reason,
            h.held
        ),
        Some(h) => format!("; releasing {} held events (a new token is set)", h.held),
    };
    println!(
        "  {}: bucket {:.1}/{} (empty in {}); {token}{dirty}{hold}",
        mall.mall_id,
        mall.bucket_units,
        mall.bucket_capacity,
        seconds(mall.bucket_empty_in)
    );
}

fn print_credential(c: &CredentialStatus) {
    let state = match &c.rejected {
        Some(why) => format!("REJECTED, rows held until `sluice credentials set`: {why}"),
        None => "usable".to_owned(),
    };
    let token = match &c.token {
        None => "no token (sluice credentials set)".to_owned(),
        Some(t) => format!("access expires {}", when(t.access_expires_ms)),
    };
    println!("  {}: {state}; {token}", c.credential_id);
    println!("    writes {} (project {})", usage(&c.writes[0]), usage(&c.writes[1]));
    println!("    reads  {} (project {})", usage(&c.reads[0]), usage(&c.reads[1]));
    for sheet in &c.sheets {
        let b = &sheet.backlog;
        // The overflow and the queued count are flow control per sheet's
        // (docs/sheet-path.md: "One flooding sheet").
        println!(
            "    sheet {}#{}: {} queued, {} in the overflow, {} buffered, {} in flight, {} parked",
            sheet.spreadsheet_id, sheet.sheet_gid, b.queued, b.overflow, b.buffered, b.in_flight, b.parked
        );
        if sheet.duplicated > 0 {
            // Rows an append Google applied late wrote twice (see the alert).
            println!("      {} of sluice's rows found twice in it lately: delete the extra copies", sheet.duplicated);
        }
    }
}

fn usage(u: &WindowUsage) -> String {
    if u.used >= u.max {
        format!("{}/{} full, next in {}", u.used, u.max, seconds(u.next_free))
    } else {
        format!("{}/{}", u.used, u.max)
    }
}

fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// The drain to PostgreSQL: what waits in the snapshot streams for it.
async fn print_drain<C: redis::aio::ConnectionLike + Clone + Send>(store: SnapshotStore<C>) -> anyhow::Result<()> {
    let consumer = store.consumer(DEFAULT_GROUP, "sluice-status")?;
    let (mut undelivered, mut pending, mut oldest_ms) = (0u64, 0u64, None::<u64>);
    let mut per_consumer = std::collections::BTreeMap::<String, u64>::new();
    for shard in 0..consumer.shards() {
        let lag = consumer.lag(shard).await?;
        oldest_ms = oldest_ms.into_iter().chain(lag.oldest_unacknowledged_ms()).min();
        undelivered += lag.undelivered.unwrap_or(0);
        pending += lag.pending;
        for (name, count) in lag.consumers {
            *per_consumer.entry(name).or_default() += count;
        }
    }
    let age = oldest_ms.map_or_else(
        || "nothing waiting".to_owned(),
        |ms| format!("oldest waiting {:.1} s", now_ms().saturating_sub(ms) as f64 / 1000.0),
    );
    println!(
        "\nDrain to PostgreSQL (group {DEFAULT_GROUP}): {undelivered} not yet read, {pending} read and not yet committed; {age}"
    );
    for (name, count) in per_consumer {
        println!("  consumer {name}: {count} pending");
    }
    Ok(())
}

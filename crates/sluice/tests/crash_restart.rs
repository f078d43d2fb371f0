//! Issue 12's chaos test: `sluice dev` is killed with `kill -9` at five
//! seeded moments of a webhook stream and started again in the same
//! directory, as a user would; nothing it accepted may be lost.
//!
//! The sandbox Cafe24 runs as its own process (`sluice sandbox cafe24`), so
//! it survives the kills and stays the truth. The test changes the
//! sandbox's products through its control plane and posts the matching
//! webhooks to ingest itself, as a sender would: a 5xx or a connection
//! error is sent again, with the same `X-Trace-ID`. Only the `sluice dev`
//! process is killed (its pid, as `kill -9 PID` does); its private
//! redis-server, which keeps an append-only file in `.sluice/redis`, is
//! left to the watchdog that stops it, exactly as a user gets it. After
//! the stream the test waits, bounded, until `sluice status` shows nothing
//! waiting, in flight or dead-lettered, then compares every product's
//! newest stored snapshot (version and body) with the sandbox's.
//!
//! `make test` runs one short seed (`SLUICE_CHAOS_SEED` picks another),
//! without the drain to PostgreSQL, checking the snapshot streams.
//! The long variant is ignored there; `make chaos` runs it, for every seed
//! of `SLUICE_CHAOS_SEEDS` (a list `1,5,9` or a range `1-20`; default
//! `1-3`) with `SLUICE_CHAOS_CHANGES` changes each (default 600), with the
//! drain into a private PostgreSQL: then every product's row in
//! `sluice.snapshots` must equal the sandbox's, and every accepted event
//! must be answered in `sluice.events`.

use crate::support::crash_deliveries;
use crate::support::crash_figures;
use crate::support::crash_killer;
use crate::support::sink_rows;
use crate::support::stack;

use crash_deliveries::{Book, Delivery, SENDER_PATIENCE, deliver, explain_stale, unanswered_events};
use crash_figures::{Checked, Figures, Totals};
use crash_killer::{BUCKET_CAPACITY, BUCKET_LEAK, DevStart, Killer, killer};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value, json};
use sink_rows::{drained_answers, stale_rows};
use sluice_cafe24::{Change, WebhookBody, topic_for};
use sluice_domain::ResourceKind;
use stack::{
    Proc, answered_events, explain_waiting, get, port_outside_the_ephemeral_range, post, put, stale_products, status,
    stored, tokens_set, trace_stages, wait_for_no_process_in,
};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// How long the pipeline may take, after the last webhook was answered,
/// to leave nothing waiting. Issue 12 asks for held messages to be back
/// within 30 s of a restart; the rest is the buckets leaking.
const DRAIN_LIMIT: Duration = Duration::from_secs(40);

/// The shape of one run.
#[derive(Debug, Clone, Copy)]
struct Plan {
    seed: u64,
    malls: usize,
    products_per_mall: usize,
    /// Product changes, each followed by its webhook.
    changes: usize,
    /// Between two changes.
    pace: Duration,
    kills: usize,
    /// Webhooks in flight at once.
    senders: usize,
    /// Whether sluice dev drains the snapshots into PostgreSQL.
    sink: bool,
}

impl Plan {
    fn short(seed: u64) -> Self {
        Self {
            seed,
            malls: 3,
            products_per_mall: 5,
            changes: 240,
            pace: Duration::from_millis(50),
            kills: 5,
            senders: 6,
            sink: false,
        }
    }

    /// The change after which each kill comes: distinct, spread over the
    /// stream (never in its first or last tenth), in order.
    fn kill_points(&self, rng: &mut StdRng) -> Vec<usize> {
        let (first, last) = (self.changes / 10, self.changes - self.changes / 10);
        let slot = (last - first) / self.kills;
        (0..self.kills).map(|k| first + k * slot + rng.random_range(0..slot.max(1))).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_seeded_kill_9_restarts_during_a_webhook_stream_lose_nothing() {
    let seed = std::env::var("SLUICE_CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(12);
    run(Plan::short(seed)).await;
}

/// The many-seed variant (`make chaos`, or by hand with `--ignored`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: many seeds; run with --ignored"]
async fn many_seeded_kill_9_runs_lose_nothing() {
    let seeds = seeds(&std::env::var("SLUICE_CHAOS_SEEDS").unwrap_or_else(|_| "1-3".into()));
    let changes = std::env::var("SLUICE_CHAOS_CHANGES").ok().and_then(|s| s.parse().ok()).unwrap_or(600);
    let mut total = Totals::default();
    for &seed in &seeds {
        total.add(run(Plan { changes, sink: true, ..Plan::short(seed) }).await);
    }
    total.record(seeds.len());
}

/// `1,5,9` or `1-20`.
fn seeds(text: &str) -> Vec<u64> {
    let mut seeds = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => seeds.extend(a.parse::<u64>().unwrap()..=b.parse::<u64>().unwrap()),
            None => seeds.push(part.parse().unwrap()),
        }
    }
    seeds
}

/// The whole run, bounded: a stall fails with what was seen, never hangs.
async fn run(plan: Plan) -> Figures {
    // The phases bound themselves; this catches what they do not, within
    // the 120 s after which nextest would end the test without a word.
    let limit = plan.pace * plan.changes as u32 + SENDER_PATIENCE + DRAIN_LIMIT + Duration::from_secs(15);
    let started = Instant::now();
    let dir = std::env::temp_dir().join(format!("sluice-chaos-{}-{}", std::process::id(), plan.seed));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut run = Run { dir: dir.clone(), sandbox: None, killer: None };
    let figures = match tokio::time::timeout(limit, run.go(plan)).await {
        Ok(figures) => figures,
        Err(_) => panic!("seed {}: the chaos run did not finish within {limit:?}", plan.seed),
    };
    drop(run);
    println!("seed {}: run took {:.1} s", plan.seed, started.elapsed().as_secs_f64());
    figures
}

/// What must be stopped however the run ends.
struct Run {
    dir: PathBuf,
    sandbox: Option<Proc>,
    killer: Option<Killer>,
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(killer) = self.killer.take() {
            // Ends the killer's loop; the dev it holds is killed as it drops.
            drop(killer.kills);
            let _ = killer.thread.join();
        }
        drop(self.sandbox.take());
        // The private redis-server stops once its watchdog sees sluice dev
        // gone; only then may its directory go.
        let orphans = wait_for_no_process_in(&self.dir, Duration::from_secs(15));
        if orphans.is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else if !std::thread::panicking() {
            panic!("processes left running in {}: {orphans:?}", self.dir.display());
        }
    }
}

impl Run {
    async fn go(&mut self, plan: Plan) -> Figures {
        let mut rng = StdRng::seed_from_u64(plan.seed);
        let http = sluice_http::builder()
            .connect_timeout(Duration::from_secs(1))
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let malls: Vec<String> = (1..=plan.malls).map(|m| format!("chaos{m}")).collect();
        let sandbox = stack::sandbox_cafe24(&self.dir, &malls, (BUCKET_CAPACITY, BUCKET_LEAK));
        let cafe24 = sandbox.after("Cafe24 sandbox: ");
        let template = sandbox.after("Base URL template: ");
        self.sandbox = Some(sandbox);

        // Ingest keeps its port across restarts, as a sender's URL would.
        let ingest_port = port_outside_the_ephemeral_range();
        let workdir = self.dir.join("work");
        std::fs::create_dir_all(&workdir).unwrap();
        let database = match plan.sink {
            true => Some(sluice_testkit::postgres::TestPostgres::new(&format!("crash_restart_{}", plan.seed)).await),
            false => None,
        };
        let database_url = database.as_ref().map(|d| d.url.clone());
        let start = DevStart { workdir: workdir.clone(), ingest_port, template, database_url };
        let dev = start.spawn().unwrap_or_else(|e| panic!("sluice dev: {e}"));
        let ingest = dev.proc.after("Ingest: ");
        for mall in &malls {
            let tokens = post(&http, &format!("{cafe24}/sandbox/malls/{mall}/tokens"), json!({})).await;
            tokens_set(&workdir, mall, &tokens);
        }
        let mut products = Vec::new();
        for mall in &malls {
            for p in 0..plan.products_per_mall {
                let made = post(
                    &http,
                    &format!("{cafe24}/sandbox/malls/{mall}/resources/products"),
                    json!({"product_name": format!("chaos {mall} {p}"), "price": "1000.00"}),
                )
                .await;
                products.push((mall.clone(), made["id"].as_str().expect("product id").to_owned()));
            }
        }

        // The seeded stream: each product once (shuffled), then at random.
        let mut order: Vec<usize> = (0..products.len()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        let changes: Vec<(usize, u32)> = (0..plan.changes)
            .map(|i| {
                let product = order.get(i).copied().unwrap_or_else(|| rng.random_range(0..products.len()));
                (product, rng.random_range(100..100_000))
            })
            .collect();
        let kill_points = plan.kill_points(&mut rng);
        println!(
            "seed {}: {} changes to {} products, kills after changes {kill_points:?}",
            plan.seed,
            plan.changes,
            products.len()
        );

        let (kills, orders) = mpsc::channel::<usize>();
        let thread = std::thread::spawn(move || killer(dev, start, orders));
        self.killer = Some(Killer { kills, thread });

        let book = Arc::new(Mutex::new(Book::default()));
        let permits = Arc::new(tokio::sync::Semaphore::new(plan.senders));
        let mut senders = tokio::task::JoinSet::new();
        let stream_started = tokio::time::Instant::now();
        for (i, (product, price)) in changes.iter().enumerate() {
            tokio::time::sleep_until(stream_started + plan.pace * i as u32).await;
            let (mall, id) = &products[*product];
            let mut fields = Map::new();
            fields.insert("price".into(), json!(format!("{price}.00")));
            fields.insert("product_name".into(), json!(format!("chaos {mall} {id} #{i}")));
            let url = format!("{cafe24}/sandbox/malls/{mall}/resources/products/{id}");
            let changed = put(&http, &url, Value::Object(fields.clone())).await;
            assert_eq!(changed["change"], "updated", "{changed}");
            let body = WebhookBody::new(topic_for(ResourceKind::Product, Change::Updated), mall, id, &fields);
            let trace_id = format!("chaos-{}-{i}", plan.seed);
            let permit = permits.clone().acquire_owned().await.unwrap();
            let (http, ingest, book) = (http.clone(), ingest.clone(), book.clone());
            let product = *product;
            senders.spawn(async move {
                let delivery = deliver(&http, &ingest, &body, i, &trace_id).await;
                book.lock().unwrap().deliveries.push((product, delivery));
                drop(permit);
            });
            if kill_points.contains(&i) {
                let killer = self.killer.as_ref().expect("the killer");
                killer.kills.send(i).expect("the killer thread ended early");
            }
        }
        while let Some(done) = senders.join_next().await {
            done.expect("a sender panicked");
        }
        let stream_ended = Instant::now();
        let killer = self.killer.take().expect("the killer");
        drop(killer.kills);
        let (dev, restarts) = tokio::task::spawn_blocking(move || killer.thread.join())
            .await
            .unwrap()
            .unwrap_or_else(|_| panic!("seed {}: the killer thread panicked", plan.seed))
            .unwrap_or_else(|e| panic!("seed {}: restarting sluice dev failed: {e}", plan.seed));
        let book = std::mem::take(&mut *book.lock().unwrap());
        let mut dev = Some(dev);
        // The drain: sluice status clean and every product as the sandbox has it.
        let redis = sluice_redis::ConnectSettings::new(dev.as_ref().unwrap().redis_url());
        let drain_deadline = Instant::now() + DRAIN_LIMIT;
        let mut clean_but_stale = 0;
        let (status, checked) = loop {
            let status = status(&workdir);
            let (stale, stored, answered) = match &database {
                None => {
                    let entries = stored(&redis).await;
                    (stale_products(&http, &cafe24, &redis, &products).await, entries.len(), answered_events(&entries))
                }
                Some(database) => {
                    let (stored, answered) = drained_answers(&database.pool).await;
                    (stale_rows(&http, &cafe24, &database.pool, &products).await, stored, answered)
                }
            };
            let unanswered = unanswered_events(&book, &answered);
            let answered_twice = answered.values().filter(|n| **n > 1).count();
            let checked = Checked { stored, stale, unanswered, answered_twice };
            if status.clean() && checked.stale.is_empty() && checked.unanswered.is_empty() {
                break (status, checked);
            }
            // Nothing is waiting anywhere, yet a product is behind: nothing
            // will fetch it again. Seen twice, that is a loss.
            clean_but_stale = if status.clean() { clean_but_stale + 1 } else { 0 };
            if clean_but_stale >= 2 || Instant::now() > drain_deadline {
                break (status, checked);
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        let drain = stream_ended.elapsed();
        let counters = get(&http, &format!("{cafe24}/sandbox/counters")).await;
        let figures = Figures::new(&book, &restarts, &counters, &checked, drain);
        println!("seed {}: {figures}", plan.seed);

        let mut problems = Vec::new();
        if !status.clean() {
            problems.push(format!(
                "sluice status still shows work {:.0} s after the stream ended ({}):\n{}\nThe events the group ledger \
                 holds as waiting, and where their traces end:\n{}",
                drain.as_secs_f64(),
                status.diagnosis(),
                status.text,
                explain_waiting(&redis, &workdir).await
            ));
        }
        if !checked.stale.is_empty() {
            problems.push(format!(
                "{} of {} products stored differ from the sandbox (lost updates):\n{}",
                checked.stale.len(),
                products.len(),
                explain_stale(&checked.stale, &book, &products, &workdir)
            ));
        }
        if !checked.unanswered.is_empty() {
            let first = &checked.unanswered[0];
            problems.push(format!(
                "{} accepted events are answered by no stored snapshot; the first, {first}: {}",
                checked.unanswered.len(),
                trace_stages(&workdir, first)
            ));
        }
        let refused: Vec<&Delivery> = book.deliveries.iter().map(|(_, d)| d).filter(|d| d.outcome.is_err()).collect();
        if !refused.is_empty() {
            problems.push(format!(
                "{} webhooks never accepted (first: {:?})",
                refused.len(),
                refused.first().map(|d| d.outcome.clone())
            ));
        }
        for restart in &restarts {
            if restart.old_redis_gone_after.is_none() {
                problems.push(format!(
                    "the private redis-server outlived the sluice dev killed after change {}",
                    restart.after_change
                ));
            }
        }
        if !problems.is_empty() {
            panic!("seed {}: {}", plan.seed, problems.join("\n\n"));
        }
        assert_eq!(restarts.len(), plan.kills);

        // A clean stop, then nothing of ours may still run.
        let mut dev = dev.take().unwrap();
        dev.proc.signal("-INT");
        let exit = dev.proc.wait(Duration::from_secs(20));
        assert!(exit.is_some_and(|s| s.success()), "sluice dev did not stop cleanly on Ctrl-C: {exit:?}");
        drop(dev);
        let left = wait_for_no_process_in(&workdir, Duration::from_secs(15));
        assert!(left.is_empty(), "processes left in {} after a clean stop: {left:?}", workdir.display());
        figures
    }
}

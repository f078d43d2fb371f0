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
//! `make test` runs one short seed (`SLUICE_CHAOS_SEED` picks another).
//! The long variant is ignored there; `make chaos` runs it, for every seed
//! of `SLUICE_CHAOS_SEEDS` (a list `1,5,9` or a range `1-20`; default
//! `1-10`) with `SLUICE_CHAOS_CHANGES` changes each (default 600).

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value, json};
use sluice_cafe24::{Change, WebhookBody, topic_for};
use sluice_domain::ResourceKind;
use sluice_redis::{Keyspace, SnapshotStore};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// How long a process may take to print its `Ready.` line.
const START_LIMIT: Duration = Duration::from_secs(30);
/// How long the pipeline may take, after the last webhook was answered,
/// to leave nothing waiting. Issue 12 asks for held messages to be back
/// within 30 s of a restart; the rest is the buckets draining.
const DRAIN_LIMIT: Duration = Duration::from_secs(40);
/// How long a sender keeps retrying one delivery before it gives up: well
/// beyond the lease a killed attempt leaves on its delivery (ingest's
/// `accept_lease`), during which a retry is answered 503. Cafe24 itself
/// retries for far longer.
const SENDER_PATIENCE: Duration = Duration::from_secs(45);
/// Each mall's Admin API bucket, in the sandbox and in sluice alike: small,
/// so the limiter paces the fetches.
const BUCKET_CAPACITY: u32 = 10;
const BUCKET_DRAIN: u32 = 5;
const API_KEY: &str = "sluice-dev";

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
    let seeds = seeds(&std::env::var("SLUICE_CHAOS_SEEDS").unwrap_or_else(|_| "1-10".into()));
    let changes = std::env::var("SLUICE_CHAOS_CHANGES").ok().and_then(|s| s.parse().ok()).unwrap_or(600);
    for seed in seeds {
        run(Plan { changes, ..Plan::short(seed) }).await;
    }
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
async fn run(plan: Plan) {
    // The phases bound themselves; this catches what they do not, within
    // the 120 s after which nextest would end the test without a word.
    let limit = plan.pace * plan.changes as u32 + SENDER_PATIENCE + DRAIN_LIMIT + Duration::from_secs(15);
    let started = Instant::now();
    let dir = std::env::temp_dir().join(format!("sluice-chaos-{}-{}", std::process::id(), plan.seed));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut run = Run { dir: dir.clone(), sandbox: None, killer: None };
    match tokio::time::timeout(limit, run.go(plan)).await {
        Ok(()) => {}
        Err(_) => panic!("seed {}: the chaos run did not finish within {limit:?}", plan.seed),
    }
    drop(run);
    println!("seed {}: run took {:.1} s", plan.seed, started.elapsed().as_secs_f64());
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
    async fn go(&mut self, plan: Plan) {
        let mut rng = StdRng::seed_from_u64(plan.seed);
        let http = sluice_http::builder()
            .connect_timeout(Duration::from_secs(1))
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let malls: Vec<String> = (1..=plan.malls).map(|m| format!("chaos{m}")).collect();
        let sandbox = Proc::spawn(
            sluice(&self.dir)
                .args(["sandbox", "cafe24", "--port", "0", "--mall", &malls.join(",")])
                .args(["--bucket-capacity", &BUCKET_CAPACITY.to_string()])
                .args(["--bucket-drain", &BUCKET_DRAIN.to_string()]),
        )
        .unwrap_or_else(|e| panic!("sluice sandbox cafe24: {e}"));
        let cafe24 = sandbox.after("Cafe24 sandbox: ");
        let template = sandbox.after("Base URL template: ");
        self.sandbox = Some(sandbox);

        // Ingest keeps its port across restarts, as a sender's URL would.
        let ingest_port = port_outside_the_ephemeral_range();
        let workdir = self.dir.join("work");
        std::fs::create_dir_all(&workdir).unwrap();
        let start = DevStart { workdir: workdir.clone(), ingest_port, template };
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
        let redis = dev.as_ref().unwrap().redis_url();
        let drain_deadline = Instant::now() + DRAIN_LIMIT;
        let mut clean_but_stale = 0;
        let (status, stale) = loop {
            let status = status(&workdir);
            let stale = stale_products(&http, &cafe24, &redis, &products).await;
            if status.clean() && stale.is_empty() {
                break (status, stale);
            }
            // Nothing is waiting anywhere, yet a product is behind: nothing
            // will fetch it again. Seen twice, that is a loss.
            clean_but_stale = if status.clean() { clean_but_stale + 1 } else { 0 };
            if clean_but_stale >= 2 || Instant::now() > drain_deadline {
                break (status, stale);
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        let drain = stream_ended.elapsed();
        let counters = get(&http, &format!("{cafe24}/sandbox/counters")).await;
        let entries = stored(&redis).await;
        let unanswered = unanswered_events(&book, &entries);
        let figures = Figures::new(&book, &restarts, entries.len(), &counters, &stale, &unanswered, drain);
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
        if !stale.is_empty() {
            problems.push(format!(
                "{} of {} products stored differ from the sandbox (lost updates):\n{}",
                stale.len(),
                products.len(),
                explain_stale(&stale, &book, &products, &workdir)
            ));
        }
        if !unanswered.is_empty() {
            let first = &unanswered[0];
            problems.push(format!(
                "{} accepted events are answered by no stored snapshot; the first, {first}: {}",
                unanswered.len(),
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
    }
}

/// The thread that kills and restarts sluice dev when told, and its channel.
struct Killer {
    kills: mpsc::Sender<usize>,
    thread: std::thread::JoinHandle<Result<(Dev, Vec<Restart>), String>>,
}

/// One kill and restart.
#[derive(Debug, Clone)]
struct Restart {
    after_change: usize,
    /// From the kill to the new process's `Ready.`.
    ready_after: Duration,
    ready_at: Instant,
    /// Whether the killed process's redis-server was still listening when
    /// the new process started (both then run on one directory).
    old_redis_up_at_restart: bool,
    /// From the kill until the killed process's redis-server stopped
    /// listening; `None` if it still listened 10 s after the restart.
    old_redis_gone_after: Option<Duration>,
    /// Messages the killed process held in flight that the new one says it
    /// returned to their queues (its `Returned N messages …` line).
    returned: u64,
}

fn killer(mut dev: Dev, start: DevStart, kills: mpsc::Receiver<usize>) -> Result<(Dev, Vec<Restart>), String> {
    let mut restarts = Vec::new();
    for after_change in kills {
        let old_redis = dev.redis_port;
        let killed_at = Instant::now();
        dev.proc.signal("-KILL");
        dev.proc.wait(Duration::from_secs(10)).ok_or("sluice dev did not die of SIGKILL in 10 s")?;
        let old_redis_up_at_restart = listening(old_redis);
        dev = start.spawn()?;
        let ready_at = Instant::now();
        let ready_after = ready_at - killed_at;
        let gone_deadline = Instant::now() + Duration::from_secs(10);
        while dev.redis_port != old_redis && listening(old_redis) && Instant::now() < gone_deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let old_redis_gone_after = (dev.redis_port == old_redis || !listening(old_redis)).then(|| killed_at.elapsed());
        let returned = dev.proc.seen.iter().find_map(|l| l.strip_prefix("Returned ")?.split(' ').next()?.parse().ok());
        restarts.push(Restart {
            after_change,
            ready_after,
            ready_at,
            old_redis_up_at_restart,
            old_redis_gone_after,
            returned: returned.unwrap_or(0),
        });
    }
    Ok((dev, restarts))
}

/// How to start sluice dev, the same way every time.
struct DevStart {
    workdir: PathBuf,
    ingest_port: u16,
    template: String,
}

impl DevStart {
    fn spawn(&self) -> Result<Dev, String> {
        let mut command = sluice(&self.workdir);
        command
            .args([
                "dev",
                "--ingest-port",
                &self.ingest_port.to_string(),
                "--sqs-port",
                "0",
                "--sfn-port",
                "0",
                "--metrics-port",
                "0",
            ])
            .args(["--cafe24-base-url", &self.template, "--cafe24-client-id", "sandbox-client"])
            // It checks the snapshot streams: no drain trims them.
            .arg("--no-drain")
            .args(["--bucket-capacity", &BUCKET_CAPACITY.to_string()])
            .args(["--bucket-drain", &BUCKET_DRAIN.to_string()])
            .env("SLUICE_CAFE24_CLIENT_SECRET", "sandbox-secret");
        let proc = Proc::spawn(&mut command)?;
        let line = proc.after("Redis: ");
        let redis_port = line
            .strip_prefix("private redis-server on 127.0.0.1:")
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|port| port.parse().ok())
            .ok_or_else(|| format!("sluice dev did not start a private redis-server: {line:?}"))?;
        Ok(Dev { proc, redis_port })
    }
}

struct Dev {
    proc: Proc,
    redis_port: u16,
}

impl Dev {
    fn redis_url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.redis_port)
    }
}

/// A `sluice` child process and the lines it printed up to `Ready.`;
/// killed when dropped.
struct Proc {
    child: Child,
    seen: Vec<String>,
}

impl Proc {
    fn spawn(command: &mut Command) -> Result<Self, String> {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().map_err(|e| e.to_string())?;
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        // Keeps reading after `Ready.`, so the pipe never fills.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut proc = Self { child, seen: Vec::new() };
        let deadline = Instant::now() + START_LIMIT;
        while !proc.seen.iter().any(|l| l.starts_with("Ready.")) {
            match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => proc.seen.push(line),
                Err(_) => return Err(format!("no `Ready.` line within {START_LIMIT:?}; it printed {:?}", proc.seen)),
            }
        }
        Ok(proc)
    }

    /// The rest of the line printed that starts with `prefix`.
    fn after(&self, prefix: &str) -> String {
        let line = self.seen.iter().find_map(|l| l.strip_prefix(prefix));
        line.unwrap_or_else(|| panic!("no line {prefix:?} in {:?}", self.seen)).to_owned()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill").args([signal, &self.child.id().to_string()]).status().expect("kill");
        assert!(status.success(), "kill {signal} failed");
    }

    /// The exit status, or `None` when it is still running after `limit`.
    fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sluice(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sluice"));
    command.current_dir(dir);
    for name in [
        "SLUICE_REDIS_URL",
        "SLUICE_KEY_PREFIX",
        "SLUICE_API_KEYS",
        "SLUICE_QUEUE_URL",
        "SLUICE_EVENTS_DLQ_URL",
        "SLUICE_FLUSH_QUEUE_URL",
        "SLUICE_FLUSH_DLQ_URL",
        "SLUICE_SQS_ENDPOINT",
        "SLUICE_ALERT_URL",
    ] {
        command.env_remove(name);
    }
    command
}

fn tokens_set(workdir: &Path, mall: &str, tokens: &Value) {
    let mut child = sluice(workdir)
        .args(["tokens", "set", mall, "--token-json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sluice tokens set");
    child.stdin.take().unwrap().write_all(tokens.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "sluice tokens set {mall}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A free port below the kernel's ephemeral range: while sluice dev is
/// down, no outgoing connection (ours or a parallel test's) or port-0
/// listener can be given it.
fn port_outside_the_ephemeral_range() -> u16 {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    let low: u16 = range.split_whitespace().next().and_then(|p| p.parse().ok()).unwrap_or(32768);
    let span = low.saturating_sub(10_000).max(1);
    let start = 10_000 + (std::process::id() % u32::from(span)) as u16;
    (0..span)
        .map(|i| 10_000 + (start - 10_000 + i) % span)
        .find(|port| std::net::TcpListener::bind(("127.0.0.1", *port)).is_ok())
        .expect("a free port below the ephemeral range")
}

/// Whether something accepts connections on `port` of 127.0.0.1.
fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// Processes whose working directory is `dir` or below it (a sluice dev
/// run there, its redis watchdog, its redis-server), waited for up to
/// `limit` to end.
fn wait_for_no_process_in(dir: &Path, limit: Duration) -> Vec<String> {
    let deadline = Instant::now() + limit;
    loop {
        let found = processes_in(dir);
        if found.is_empty() || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn processes_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Ok(cwd) = std::fs::read_link(entry.path().join("cwd")) else { continue };
        if cwd.starts_with(dir) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push(format!("{} {}", entry.file_name().to_string_lossy(), cmdline.trim()));
        }
    }
    found
}

/// A call to the sandbox's control plane; its JSON answer, which must be a
/// success.
async fn control(http: &reqwest::Client, method: reqwest::Method, url: &str, body: Option<Value>) -> Value {
    let mut request = http.request(method.clone(), url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = response.status();
    let answer: Value = response.json().await.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    assert!(status.is_success(), "{method} {url}: {status} {answer}");
    answer
}

async fn post(http: &reqwest::Client, url: &str, body: Value) -> Value {
    control(http, reqwest::Method::POST, url, Some(body)).await
}

async fn put(http: &reqwest::Client, url: &str, body: Value) -> Value {
    control(http, reqwest::Method::PUT, url, Some(body)).await
}

async fn get(http: &reqwest::Client, url: &str) -> Value {
    control(http, reqwest::Method::GET, url, None).await
}

/// One webhook as its sender saw it.
#[derive(Debug, Clone)]
struct Delivery {
    /// The change it reports (its index in the stream).
    change: usize,
    trace_id: String,
    attempts: u32,
    /// Why each retry was needed: a 5xx error code or "connection".
    retried_for: Vec<String>,
    /// The 202 receipt, or the last answer when the sender gave up.
    outcome: Result<Value, String>,
    /// From the first attempt to the last answer.
    took: Duration,
    answered_at: Instant,
}

/// Posts a webhook until ingest answers 2xx or 4xx, sending it again with
/// the same X-Trace-ID after a 5xx or a connection error, for up to
/// [`SENDER_PATIENCE`].
async fn deliver(http: &reqwest::Client, ingest: &str, body: &WebhookBody, change: usize, trace_id: &str) -> Delivery {
    let first = Instant::now();
    let give_up = first + SENDER_PATIENCE;
    let mut backoff = Duration::from_millis(50);
    let mut delivery = Delivery {
        change,
        trace_id: trace_id.to_owned(),
        attempts: 0,
        retried_for: Vec::new(),
        outcome: Err("never sent".into()),
        took: Duration::ZERO,
        answered_at: first,
    };
    loop {
        delivery.attempts += 1;
        let sent =
            http.post(ingest).header("X-API-Key", API_KEY).header("X-Trace-ID", trace_id).json(body).send().await;
        let why = match sent {
            Ok(response) if response.status().is_server_error() => {
                let status = response.status();
                let answer: Value = response.json().await.unwrap_or(Value::Null);
                answer["error"]["code"].as_str().map_or_else(|| status.to_string(), str::to_owned)
            }
            Ok(response) => {
                let status = response.status();
                let answer: Value = response.json().await.unwrap_or(Value::Null);
                delivery.answered_at = Instant::now();
                delivery.took = delivery.answered_at - first;
                delivery.outcome = match status.as_u16() {
                    202 => Ok(answer),
                    _ => Err(format!("{status} {answer}")),
                };
                return delivery;
            }
            Err(_) => "connection".to_owned(),
        };
        if Instant::now() + backoff > give_up {
            delivery.answered_at = Instant::now();
            delivery.took = delivery.answered_at - first;
            delivery.outcome = Err(format!("gave up after {} attempts, the last: {why}", delivery.attempts));
            return delivery;
        }
        delivery.retried_for.push(why);
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

/// The deliveries, by product index.
#[derive(Debug, Default)]
struct Book {
    deliveries: Vec<(usize, Delivery)>,
}

/// `sluice status` as printed, and the figures the test reads from it.
struct Status {
    text: String,
    /// waiting, in flight, delayed.
    events: Option<[u64; 3]>,
    dead_letters: Option<[u64; 3]>,
    groups_waiting: bool,
}

fn status(workdir: &Path) -> Status {
    let out = sluice(workdir).arg("status").output().expect("sluice status");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let row = |name: &[&str]| {
        text.lines().find_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let numbers = words.get(name.len()..name.len() + 3)?;
            if !words.starts_with(name) {
                return None;
            }
            let numbers: Vec<u64> = numbers.iter().map(|n| n.parse().ok()).collect::<Option<_>>()?;
            Some([numbers[0], numbers[1], numbers[2]])
        })
    };
    Status {
        events: row(&["events"]),
        dead_letters: row(&["events", "dead-letter"]),
        groups_waiting: !text.contains("Groups with events waiting: none"),
        text,
    }
}

impl Status {
    fn clean(&self) -> bool {
        self.events == Some([0, 0, 0])
            && self.dead_letters.is_some_and(|d| d[0] == 0 && d[1] == 0)
            && !self.groups_waiting
    }

    fn diagnosis(&self) -> String {
        match (self.events, self.dead_letters) {
            (None, _) | (_, None) => "its queue figures could not be read".into(),
            (_, Some([dlq, ..])) if dlq > 0 => format!("{dlq} events dead-lettered"),
            (Some([_, in_flight, _]), _) if in_flight > 0 => format!(
                "{in_flight} messages still in flight: messages received by a killed sluice dev stay invisible until \
                 their visibility timeout (330 s) and block their groups (issue #12 finding 3)"
            ),
            (Some([waiting, ..]), _) if waiting > 0 => format!("{waiting} messages waiting"),
            _ => "the group ledger still lists events waiting".into(),
        }
    }
}

/// Products whose newest stored snapshot differs from the sandbox's state:
/// `(index, stored version, sandbox version)`.
type Stale = Vec<(usize, Option<String>, u64)>;

async fn stale_products(http: &reqwest::Client, cafe24: &str, redis: &str, products: &[(String, String)]) -> Stale {
    let newest = newest_snapshots(redis).await;
    let mut stale = Vec::new();
    for (i, (mall, id)) in products.iter().enumerate() {
        let truth = get(http, &format!("{cafe24}/sandbox/malls/{mall}/resources/products/{id}")).await;
        let version = truth["version"].as_u64().expect("sandbox version");
        let stored = newest.get(&(mall.clone(), id.clone()));
        let same = stored.is_some_and(|s| {
            s.get("version").map(String::as_str) == Some(&version.to_string())
                && s.get("body").and_then(|b| serde_json::from_str::<Value>(b).ok()).as_ref() == Some(&truth["body"])
        });
        if !same {
            stale.push((i, stored.and_then(|s| s.get("version").cloned()), version));
        }
    }
    stale
}

type Fields = std::collections::HashMap<String, String>;

/// Every stored entry, shard by shard, oldest first.
async fn stored(redis: &str) -> Vec<Fields> {
    let conn = redis::Client::open(redis).unwrap().get_multiplexed_async_connection().await.expect("redis");
    let keyspace = Keyspace::new(sluice_redis::keyspace::DEFAULT_PREFIX).unwrap();
    let shards = sluice_pipeline::PipelineConfig::default().snapshot_shards;
    let store = SnapshotStore::new(conn, keyspace, shards).unwrap();
    let mut all = Vec::new();
    for shard in 0..shards {
        let mut after = "-".to_owned();
        loop {
            let entries = store.read(shard, &after, 1000).await.expect("read snapshots");
            let Some(last) = entries.last() else { break };
            after = last.id.clone();
            all.extend(entries.into_iter().map(|e| e.fields));
        }
    }
    all
}

/// Events ingest accepted (enqueued, coalesced or a duplicate of one) that
/// no stored snapshot answers.
fn unanswered_events(book: &Book, entries: &[Fields]) -> Vec<String> {
    let mut answered = std::collections::HashSet::new();
    for entry in entries {
        let events: Vec<String> = serde_json::from_str(entry.get("event_ids").map_or("[]", String::as_str)).unwrap();
        answered.extend(events);
    }
    let accepted = book.deliveries.iter().filter_map(|(_, d)| d.outcome.as_ref().ok());
    let events = accepted.flat_map(|receipt| receipt["event_ids"].as_array().cloned().unwrap_or_default());
    events.filter_map(|e| e.as_str().map(str::to_owned)).filter(|e| !answered.contains(e)).collect()
}

/// The newest stored snapshot of each (mall, product id).
async fn newest_snapshots(redis: &str) -> BTreeMap<(String, String), Fields> {
    let mut newest = BTreeMap::new();
    for fields in stored(redis).await {
        let key = (fields.get("mall_id").cloned().unwrap_or_default(), fields.get("id").cloned().unwrap_or_default());
        newest.insert(key, fields);
    }
    newest
}

/// The events the group ledger holds as waiting (the first few of each
/// group), each with the stages its trace went through: `enqueued` but
/// never `dequeued` is waiting in the queue; `dequeued` last is held by a
/// process; no `enqueued` at all was entered in the ledger by a request
/// that died before its send.
async fn explain_waiting(redis: &str, workdir: &Path) -> String {
    let mut conn = redis::Client::open(redis).unwrap().get_multiplexed_async_connection().await.expect("redis");
    let keyspace = Keyspace::new(sluice_redis::keyspace::DEFAULT_PREFIX).unwrap();
    let ledger = sluice_redis::GroupLedger::new(conn.clone(), keyspace.clone());
    let (groups, _) = ledger.lagging(100).await.expect("the group ledger");
    let mut lines = Vec::new();
    for group in groups {
        let key = keyspace.key(&sluice_redis::Tag::new("groups"), "pending", &group.group);
        let events: Vec<String> = redis::cmd("ZRANGE").arg(&key).arg(0).arg(4).query_async(&mut conn).await.unwrap();
        lines.push(format!("  {} ({} pending)", group.group, group.pending));
        for event in events {
            lines.push(format!("    {event}: {}", trace_stages(workdir, &event)));
        }
    }
    lines.join("\n")
}

/// The stages of an event's trace, in order, and its `now:` line.
fn trace_stages(workdir: &Path, event: &str) -> String {
    let out = sluice(workdir).args(["trace", event]).output().expect("sluice trace");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut stages = Vec::new();
    let mut now = "";
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("now: ") {
            now = rest;
            break;
        }
        if line.starts_with(|c: char| c.is_ascii_digit()) {
            stages.extend(line.split_whitespace().nth(2));
        }
    }
    format!("{} (now: {now})", stages.join(" → "))
}

/// For each stale product (the first few): its versions, the webhook of
/// its last change, where the traces of that event and of the event it
/// joined end, and what that means.
fn explain_stale(stale: &Stale, book: &Book, products: &[(String, String)], workdir: &Path) -> String {
    let mut lines = Vec::new();
    for (i, stored, truth) in stale.iter().take(8) {
        let (mall, id) = &products[*i];
        lines.push(format!("  {mall}/product {id}: stored version {stored:?}, sandbox version {truth}"));
        let Some((_, last)) = book.deliveries.iter().filter(|(p, _)| p == i).max_by_key(|(_, d)| d.change) else {
            continue;
        };
        let receipt = match &last.outcome {
            Err(why) => {
                lines.push(format!("    the webhook of its last change, {}, was never accepted: {why}", last.trace_id));
                continue;
            }
            Ok(receipt) => receipt,
        };
        let event = receipt["event_ids"][0].as_str().unwrap_or_default();
        let stages = trace_stages(workdir, event);
        lines.push(format!(
            "    the webhook of its last change, {} ({} attempts): {}; {event}: {stages}",
            last.trace_id, last.attempts, receipt["status"]
        ));
        let Some(into) = receipt["into"].as_str() else { continue };
        let joined = trace_stages(workdir, into);
        lines.push(format!("      it joined {into}: {joined}"));
        if !joined.contains("enqueued") {
            lines.push(
                "      => it was coalesced into a mark whose owner never reached the queue (a request killed between \
                 its coalescing mark and its send): issue #12 finding 1"
                    .into(),
            );
        }
    }
    lines.join("\n")
}

/// What the run did, printed on one line.
struct Figures {
    sent: usize,
    accepted: BTreeMap<String, usize>,
    retried: usize,
    slowest: Duration,
    retry_reasons: BTreeMap<String, usize>,
    never_accepted: usize,
    stored: usize,
    lost: usize,
    unanswered: usize,
    upstream_429: u64,
    restarts: Vec<Restart>,
    /// From each restart's `Ready.` to the first 202 answered after it.
    first_accept_after_ready: Vec<Option<Duration>>,
    drain: Duration,
}

impl Figures {
    fn new(
        book: &Book,
        restarts: &[Restart],
        stored: usize,
        counters: &Value,
        stale: &Stale,
        unanswered: &[String],
        drain: Duration,
    ) -> Self {
        let mut accepted = BTreeMap::new();
        let mut retry_reasons = BTreeMap::new();
        for (_, d) in &book.deliveries {
            if let Ok(receipt) = &d.outcome {
                *accepted.entry(receipt["status"].as_str().unwrap_or("?").to_owned()).or_default() += 1;
            }
            for why in &d.retried_for {
                *retry_reasons.entry(why.clone()).or_default() += 1;
            }
        }
        let first_accept_after_ready = restarts
            .iter()
            .map(|r| {
                book.deliveries
                    .iter()
                    .filter(|(_, d)| d.outcome.is_ok() && d.answered_at > r.ready_at)
                    .map(|(_, d)| d.answered_at - r.ready_at)
                    .min()
            })
            .collect();
        let upstream = |name: &str| counters[name].as_u64().unwrap_or(0);
        Self {
            sent: book.deliveries.len(),
            accepted,
            retried: book.deliveries.iter().filter(|(_, d)| d.attempts > 1).count(),
            slowest: book.deliveries.iter().map(|(_, d)| d.took).max().unwrap_or_default(),
            retry_reasons,
            never_accepted: book.deliveries.iter().filter(|(_, d)| d.outcome.is_err()).count(),
            stored,
            lost: stale.len(),
            unanswered: unanswered.len(),
            upstream_429: upstream("refused_bucket") + upstream("refused_quota"),
            restarts: restarts.to_vec(),
            first_accept_after_ready,
            drain,
        }
    }
}

fn ms(d: Option<Duration>) -> String {
    d.map_or("never".to_owned(), |d| format!("{} ms", d.as_millis()))
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sent {}, accepted {:?}, retried {} (retries for {:?}; the slowest accepted after {:.1} s), never accepted \
             {}, snapshots stored {}, products lost {}, accepted events no snapshot answers {}, Cafe24 429s {}, \
             drained {:.1} s after the stream",
            self.sent,
            self.accepted,
            self.retried,
            self.retry_reasons,
            self.slowest.as_secs_f64(),
            self.never_accepted,
            self.stored,
            self.lost,
            self.unanswered,
            self.upstream_429,
            self.drain.as_secs_f64()
        )?;
        for (r, first) in self.restarts.iter().zip(&self.first_accept_after_ready) {
            write!(
                f,
                "\n  kill after change {}: ready again in {} ms having returned {} held messages, the first 202 {} \
                 later; the killed run's redis-server {} at the restart, gone after {}",
                r.after_change,
                r.ready_after.as_millis(),
                r.returned,
                ms(*first),
                if r.old_redis_up_at_restart { "still up" } else { "already gone" },
                ms(r.old_redis_gone_after),
            )?;
        }
        Ok(())
    }
}

//! The stack a Redis outage test runs as a user does (`redis_restart.rs`,
//! `cluster_failover.rs`): the sandbox Cafe24 as its own process (the
//! truth), `sluice dev` on the Redis under test, a few products per mall,
//! senders that change their own products and post the webhooks until told
//! to stop (see `redis_outage`), and afterwards the wait for the pipeline
//! to drain and the checks every such run shares. The test itself breaks
//! Redis in the middle of the stream, its own way.

use super::redis_outage::{self, Attempt, Delivery, Figures, Outage, Sender};
use super::stack::{self, Proc, Status, get, post, sluice, stale_products, status, stored, tokens_set};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;
use sluice_redis::ConnectSettings;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Each mall's Admin API bucket, in the sandbox and in sluice alike.
const BUCKET_CAPACITY: u32 = 10;
const BUCKET_LEAK: u32 = 5;
/// After the stream, how long the pipeline may take to store the rest.
pub(crate) const DRAIN_LIMIT: Duration = Duration::from_secs(40);
/// How long after Redis is back ingest may take to accept again.
pub(crate) const RECOVERY_LIMIT: Duration = Duration::from_secs(15);

/// The processes of a run and what the test reads back.
pub(crate) struct OutageStack {
    pub http: reqwest::Client,
    /// Kept for the run: the sandbox Cafe24 process.
    _sandbox: Proc,
    pub cafe24: String,
    pub dev: Proc,
    pub ingest: String,
    pub workdir: PathBuf,
    /// How the test reads what was stored.
    pub redis: ConnectSettings,
    /// (mall, product id) of every product the senders change.
    pub products: Vec<(String, String)>,
}

/// The senders at work, and every attempt they make.
pub(crate) struct Stream {
    senders: tokio::task::JoinSet<Vec<Delivery>>,
    book: Arc<Mutex<Vec<Attempt>>>,
}

impl OutageStack {
    /// The sandbox with `malls`, `sluice dev` in `dir/work` with `env`
    /// naming its Redis (`SLUICE_REDIS_URL`, …), which `redis` reaches
    /// too; tokens for every mall and `products_per_mall` products each.
    pub(crate) async fn start(
        dir: &Path,
        malls: &[String],
        products_per_mall: usize,
        redis: ConnectSettings,
        env: &[(&str, String)],
    ) -> Self {
        let http = sluice_http::builder()
            .connect_timeout(Duration::from_secs(1))
            .timeout(redis_outage::ANSWER_LIMIT)
            .build()
            .unwrap();
        let sandbox = stack::sandbox_cafe24(dir, malls, (BUCKET_CAPACITY, BUCKET_LEAK));
        let cafe24 = sandbox.after("Cafe24 sandbox: ");
        let workdir = dir.join("work");
        std::fs::create_dir_all(&workdir).expect("work dir");
        let dev = start_dev(&workdir, env, &sandbox.after("Base URL template: "));
        let ingest = dev.after("Ingest: ");
        let mut products = Vec::new();
        for mall in malls {
            let tokens = post(&http, &format!("{cafe24}/sandbox/malls/{mall}/tokens"), json!({})).await;
            tokens_set(&workdir, mall, &tokens);
            for p in 0..products_per_mall {
                let body = json!({"product_name": format!("outage {mall} {p}"), "price": "1000.00"});
                let made = post(&http, &format!("{cafe24}/sandbox/malls/{mall}/resources/products"), body).await;
                products.push((mall.clone(), made["id"].as_str().expect("product id").to_owned()));
            }
        }
        Self { http, _sandbox: sandbox, cafe24, dev, ingest, workdir, redis, products }
    }

    /// `senders` senders, each changing its own products at random
    /// (seeded) and posting the webhooks, until `stop_at`.
    pub(crate) fn stream(&self, seed: u64, senders: usize, stop_at: Instant) -> Stream {
        let book = Arc::new(Mutex::new(Vec::<Attempt>::new()));
        let mut tasks = tokio::task::JoinSet::new();
        for s in 0..senders {
            let owned: Vec<(String, String)> = self.products.iter().skip(s).step_by(senders).cloned().collect();
            let sender = Sender {
                http: self.http.clone(),
                cafe24: self.cafe24.clone(),
                ingest: self.ingest.clone(),
                name: format!("s{seed}-{s}"),
                book: book.clone(),
            };
            let rng = StdRng::seed_from_u64(seed * 1000 + s as u64);
            tasks.spawn(sender.run(owned, rng, stop_at));
        }
        Stream { senders: tasks, book }
    }

    /// Waits for the senders, then for the pipeline to drain (nothing
    /// waiting, every product stored as the sandbox has it); the run's
    /// figures (`[down, up]`: when Redis, or the part of it that failed,
    /// was away) and what went wrong in it.
    pub(crate) async fn finish(
        &mut self,
        mut stream: Stream,
        outage: Outage,
        window: [Instant; 2],
    ) -> (Figures, Vec<String>) {
        let mut deliveries = Vec::new();
        while let Some(done) = stream.senders.join_next().await {
            deliveries.extend(done.expect("a sender panicked"));
        }
        let stream_ended = Instant::now();
        let drain_deadline = Instant::now() + DRAIN_LIMIT;
        let (status, stale) = loop {
            let status = status(&self.workdir);
            let stale = stale_products(&self.http, &self.cafe24, &self.redis, &self.products).await;
            if (queues_empty(&status) && stale.is_empty()) || Instant::now() > drain_deadline {
                break (status, stale);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        let drained_after = stream_ended.elapsed();
        let entries = stored(&self.redis).await;
        let attempts = std::mem::take(&mut *stream.book.lock().unwrap());
        let mut figures = Figures::new(&deliveries, &attempts, &entries, window, drained_after);
        let counters = get(&self.http, &format!("{}/sandbox/counters", self.cafe24)).await;
        let upstream = |name: &str| counters[name].as_u64().unwrap_or(0);
        figures.upstream_429 = upstream("refused_bucket") + upstream("refused_quota");
        println!("the sandbox's counters: {counters}");

        let mut problems = figures.problems(outage);
        if figures.recovered_after.is_none_or(|t| t > RECOVERY_LIMIT) {
            problems.push(format!("no 202 within {RECOVERY_LIMIT:?} of Redis being back"));
        }
        if !queues_empty(&status) {
            problems.push(format!("sluice status still shows work ({}):\n{}", status.diagnosis(), status.text));
        } else if status.groups_waiting {
            // The group ledger feeds `sluice status` only, and the pipeline
            // marks an event done there best effort: a mark lost to the
            // outage leaves the event listed as waiting though it was
            // stored (the stores are checked above). Reported, not failed.
            let waiting = stack::explain_waiting(&self.redis, &self.workdir).await;
            println!("the group ledger still lists events waiting (their traces):\n{waiting}");
        }
        if !stale.is_empty() {
            let n = self.products.len();
            problems.push(format!("{} of {n} products stored differ from the sandbox: {stale:?}", stale.len()));
        }
        match self.dev.child.try_wait() {
            Ok(None) => {}
            exited => problems.push(format!("sluice dev did not keep running: {exited:?}")),
        }
        (figures, problems)
    }

    /// Ctrl-C to `sluice dev`, which must stop cleanly after all that.
    pub(crate) fn stop(mut self) {
        self.dev.signal("-INT");
        let exit = self.dev.wait(Duration::from_secs(20));
        assert!(exit.is_some_and(|s| s.success()), "sluice dev did not stop cleanly on Ctrl-C: {exit:?}");
    }
}

/// Nothing waiting, in flight or delayed in the event queue, nothing in
/// its dead-letter queue.
fn queues_empty(status: &Status) -> bool {
    status.events == Some([0, 0, 0]) && status.dead_letters.is_some_and(|d| d[0] == 0 && d[1] == 0)
}

/// `sluice dev` in `workdir` on the Redis `env` names, its Cafe24 the sandbox.
fn start_dev(workdir: &Path, env: &[(&str, String)], template: &str) -> Proc {
    let mut command = sluice(workdir);
    command
        .args(["dev", "--ingest-port", "0", "--sqs-port", "0", "--sfn-port", "0", "--metrics-port", "0"])
        .args(["--cafe24-base-url", template, "--cafe24-client-id", "sandbox-client"])
        .args(["--bucket-capacity", &BUCKET_CAPACITY.to_string()])
        .args(["--bucket-leak", &BUCKET_LEAK.to_string()])
        // The test reads what was stored from the snapshot streams, which a
        // drain into PostgreSQL would trim.
        .arg("--no-drain")
        .env("SLUICE_CAFE24_CLIENT_SECRET", "sandbox-secret")
        .envs(env.iter().map(|(k, v)| (k, v)));
    Proc::spawn(&mut command).unwrap_or_else(|e| panic!("sluice dev: {e}"))
}

//! What the tests that run sluice as a user does share: `sluice`
//! processes (`sluice dev`, `sluice sandbox cafe24`) and their printed
//! lines, the sandbox's control plane, `sluice status`, and the snapshots
//! the pipeline stored, read straight from Redis. Each test binary takes
//! it with `#[path = "support/stack.rs"] mod stack;` and uses a part.

use serde_json::Value;
use sluice_redis::{ConnectSettings, Connection, Keyspace, SnapshotStore};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a process may take to print its `Ready.` line.
pub(crate) const START_LIMIT: Duration = Duration::from_secs(30);

/// Why a webhook or row got no 2xx: the 4xx answer, or the last answer
/// before its sender gave up.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub(crate) struct NotAccepted(pub String);

/// A `sluice` child process and the lines it printed up to `Ready.`;
/// killed when dropped.
pub(crate) struct Proc {
    pub child: Child,
    pub seen: Vec<String>,
}

impl Proc {
    pub(crate) fn spawn(command: &mut Command) -> anyhow::Result<Self> {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn()?;
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
                Err(_) => anyhow::bail!("no `Ready.` line within {START_LIMIT:?}; it printed {:?}", proc.seen),
            }
        }
        Ok(proc)
    }

    /// The rest of the line printed that starts with `prefix`.
    pub(crate) fn after(&self, prefix: &str) -> String {
        let line = self.seen.iter().find_map(|l| l.strip_prefix(prefix));
        line.unwrap_or_else(|| panic!("no line {prefix:?} in {:?}", self.seen)).to_owned()
    }

    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill").args([signal, &self.child.id().to_string()]).status().expect("kill");
        assert!(status.success(), "kill {signal} failed");
    }

    /// The exit status, or `None` when it is still running after `limit`.
    pub(crate) fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
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

pub(crate) fn sluice(dir: &Path) -> Command {
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
        "SLUICE_CATCH_UP_QUEUE_URL",
        "SLUICE_CATCH_UP_DLQ_URL",
        "SLUICE_SQS_ENDPOINT",
        "SLUICE_ALERT_URL",
    ] {
        command.env_remove(name);
    }
    command
}

/// `sluice sandbox cafe24` in `dir` for `malls`, each mall's Admin API
/// bucket `(capacity, leak per second)`: the truth a kill cannot touch.
pub(crate) fn sandbox_cafe24(dir: &Path, malls: &[String], (capacity, drain): (u32, u32)) -> Proc {
    Proc::spawn(
        sluice(dir)
            .args(["sandbox", "cafe24", "--port", "0", "--mall", &malls.join(",")])
            .args(["--bucket-capacity", &capacity.to_string()])
            .args(["--bucket-leak", &drain.to_string()]),
    )
    .unwrap_or_else(|e| panic!("sluice sandbox cafe24: {e}"))
}

pub(crate) fn tokens_set(workdir: &Path, mall: &str, tokens: &Value) {
    with_stdin(workdir, &["tokens", "set", mall, "--token-json", "-"], &tokens.to_string());
}

/// `sluice credentials set CREDENTIAL` with a Google refresh token (the
/// access token given is unknown to the sandbox: sluice refreshes on the
/// 401).
pub(crate) fn credentials_set(workdir: &Path, credential: &str, refresh: &str) {
    let token = serde_json::json!({"access_token": "unknown", "expires_in": 3599, "token_type": "Bearer", "refresh_token": refresh});
    with_stdin(workdir, &["credentials", "set", credential, "--token-json", "-"], &token.to_string());
}

/// `sluice ARGS` with `input` on its stdin, so no token shows in `ps`;
/// panics unless it succeeds.
pub(crate) fn with_stdin(workdir: &Path, args: &[&str], input: &str) {
    let mut child = sluice(workdir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("sluice {args:?}: {e}"));
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "sluice {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A free port below the kernel's ephemeral range: while sluice dev is
/// down, no outgoing connection (ours or a parallel test's) or port-0
/// listener can be given it.
pub(crate) fn port_outside_the_ephemeral_range() -> u16 {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    let low: u16 = range.split_whitespace().next().and_then(|p| p.parse().ok()).unwrap_or(32768);
    let span = low.saturating_sub(10_000).max(1);
    // Two tests of one binary may ask at once, each binding its port only
    // later: each call starts past the last one's.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(97, std::sync::atomic::Ordering::Relaxed);
    let start = 10_000 + ((std::process::id() + call) % u32::from(span)) as u16;
    (0..span)
        .map(|i| 10_000 + (start - 10_000 + i) % span)
        .find(|port| std::net::TcpListener::bind(("127.0.0.1", *port)).is_ok())
        .expect("a free port below the ephemeral range")
}

/// Whether something accepts connections on `port` of 127.0.0.1.
pub(crate) fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// Processes whose working directory is `dir` or below it (a sluice dev
/// run there, its redis watchdog, its redis-server), waited for up to
/// `limit` to end.
pub(crate) fn wait_for_no_process_in(dir: &Path, limit: Duration) -> Vec<String> {
    let deadline = Instant::now() + limit;
    loop {
        let found = processes_in(dir);
        if found.is_empty() || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pid of the redis-server of a run in `dir` (or below it) serving
/// `port`: which process to watch, where a port alone may be another
/// test's by the time it is looked at again.
pub(crate) fn redis_server_in(dir: &Path, port: u16) -> Option<u32> {
    let port = port.to_string();
    processes_in(dir).into_iter().find_map(|line| {
        let mut words = line.split(' ');
        let pid = words.next()?.parse().ok()?;
        // redis-server retitles itself `redis-server 127.0.0.1:PORT`.
        let args: Vec<&str> = words.collect();
        let serves = args.first().is_some_and(|a| a.ends_with("redis-server"))
            && (args.iter().any(|a| a.rsplit_once(':').is_some_and(|(_, p)| p == port))
                || args.windows(2).any(|w| w[0] == "--port" && w[1] == port));
        serves.then_some(pid)
    })
}

/// Whether process `pid` still runs (a zombie counts as ended).
pub(crate) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')))
}

pub(crate) fn processes_in(dir: &Path) -> Vec<String> {
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
pub(crate) async fn control(http: &reqwest::Client, method: reqwest::Method, url: &str, body: Option<Value>) -> Value {
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

pub(crate) async fn post(http: &reqwest::Client, url: &str, body: Value) -> Value {
    control(http, reqwest::Method::POST, url, Some(body)).await
}

pub(crate) async fn put(http: &reqwest::Client, url: &str, body: Value) -> Value {
    control(http, reqwest::Method::PUT, url, Some(body)).await
}

pub(crate) async fn get(http: &reqwest::Client, url: &str) -> Value {
    control(http, reqwest::Method::GET, url, None).await
}

/// `sluice status` as printed, and the figures the test reads from it.
pub(crate) struct Status {
    pub text: String,
    /// waiting, in flight, delayed.
    pub events: Option<[u64; 3]>,
    pub dead_letters: Option<[u64; 3]>,
    /// The flush queue's and the catch-up queue's dead letters.
    pub flush_dead_letters: Option<[u64; 3]>,
    pub catch_up_dead_letters: Option<[u64; 3]>,
    /// "Catch up mall M" requests: while one is left, some mall's dirty set
    /// still has work (flow control).
    pub catch_up_requests: Option<[u64; 3]>,
    pub groups_waiting: bool,
}

pub(crate) fn status(workdir: &Path) -> Status {
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
        flush_dead_letters: row(&["flush", "dead-letter"]),
        catch_up_dead_letters: row(&["catch-up", "dead-letter"]),
        catch_up_requests: row(&["catch-up"]),
        groups_waiting: !text.contains("Groups with events waiting: none"),
        text,
    }
}

impl Status {
    pub(crate) fn clean(&self) -> bool {
        self.events == Some([0, 0, 0])
            && self.dead_letters.is_some_and(|d| d[0] == 0 && d[1] == 0)
            && self.catch_up_requests == Some([0, 0, 0])
            && !self.groups_waiting
    }

    pub(crate) fn diagnosis(&self) -> String {
        match (self.events, self.dead_letters) {
            (None, _) | (_, None) => "its queue figures could not be read".into(),
            (_, Some([dlq, ..])) if dlq > 0 => format!("{dlq} events dead-lettered"),
            (Some([_, in_flight, _]), _) if in_flight > 0 => format!(
                "{in_flight} messages still in flight: messages received by a killed sluice dev stay invisible until \
                 their visibility timeout (330 s) and block their groups (issue #12 finding 3)"
            ),
            (Some([waiting, ..]), _) if waiting > 0 => format!("{waiting} messages waiting"),
            _ if self.catch_up_requests != Some([0, 0, 0]) => {
                format!("catch-up requests left (waiting, in flight, delayed): {:?}", self.catch_up_requests)
            }
            _ => "the group ledger still lists events waiting".into(),
        }
    }
}

/// Products whose newest stored snapshot differs from the sandbox's state:
/// `(index, stored version, sandbox version)`.
pub(crate) type Stale = Vec<(usize, Option<String>, u64)>;

pub(crate) async fn stale_products(
    http: &reqwest::Client,
    cafe24: &str,
    redis: &ConnectSettings,
    products: &[(String, String)],
) -> Stale {
    let newest = newest_snapshots(redis).await;
    let mut stale = Vec::new();
    for (i, (mall, id)) in products.iter().enumerate() {
        let truth = get(http, &format!("{cafe24}/sandbox/malls/{mall}/resources/products/{id}")).await;
        let version = truth["version"].as_u64().expect("sandbox version");
        let stored = newest.get(&(mall.clone(), id.clone()));
        let same = stored.is_some_and(|s| s["version"] == version && s["body"] == truth["body"]);
        if !same {
            stale.push((i, stored.map(|s| s["version"].to_string()), version));
        }
    }
    stale
}

/// A stored snapshot as JSON (`sluice_redis::SnapshotEntry`'s fields).
pub(crate) type Fields = Value;

/// A connection to the Redis of the run: one server or a cluster, plain
/// or TLS, as `redis` says (`ConnectSettings::new(url)` for a plain one).
pub(crate) async fn connect(redis: &ConnectSettings) -> Connection {
    sluice_redis::connect(redis).await.unwrap_or_else(|e| panic!("redis: {e}"))
}

/// Every stored entry, shard by shard, oldest first.
pub(crate) async fn stored(redis: &ConnectSettings) -> Vec<Fields> {
    let conn = connect(redis).await;
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
            // Outcome entries (dead-lettered events) are no snapshots.
            let snapshots = entries.iter().filter(|e| !e.is_outcome());
            all.extend(snapshots.map(|e| serde_json::to_value(e.snapshot().expect("a snapshot")).unwrap()));
        }
    }
    all
}

/// The newest stored snapshot of each (mall, product id).
pub(crate) async fn newest_snapshots(redis: &ConnectSettings) -> BTreeMap<(String, String), Fields> {
    let mut newest = BTreeMap::new();
    for fields in stored(redis).await {
        let text = |name: &str| fields[name].as_str().unwrap_or_default().to_owned();
        let key = (text("mall_id"), text("id"));
        newest.insert(key, fields);
    }
    newest
}

/// The events each stored snapshot answers, with how many snapshots answer each.
pub(crate) fn answered_events(entries: &[Fields]) -> std::collections::HashMap<String, usize> {
    let mut answered = std::collections::HashMap::new();
    for entry in entries {
        let events: Vec<String> = serde_json::from_value(entry["event_ids"].clone()).unwrap();
        for event in events {
            *answered.entry(event).or_insert(0) += 1;
        }
    }
    answered
}

/// The events the group ledger holds as waiting (the first few of each
/// group), each with the stages its trace went through: `enqueued` but
/// never `dequeued` is waiting in the queue; `dequeued` last is held by a
/// process; no `enqueued` at all was entered in the ledger by a request
/// that died before its send.
pub(crate) async fn explain_waiting(redis: &ConnectSettings, workdir: &Path) -> String {
    let mut conn = connect(redis).await;
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
pub(crate) fn trace_stages(workdir: &Path, event: &str) -> String {
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

//! `sluice dev` killed with `kill -9` while its pipe holds a batch, and
//! started again on the same Redis and key prefix: the batch is handed out
//! again at once, not after the 330 s visibility timeout (issue 12). A
//! second `sluice dev` while the first lives is refused and takes nothing.
//!
//! The "Cafe24" here accepts connections and never answers, so a fetch
//! keeps its message in flight for as long as the test needs; each request
//! it sees is reported with the path asked for.

use crate::support;

use serde_json::json;
use sluice_testkit::TestRedis;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::Dev;

/// Well under the 330 s visibility timeout: only a release meets it.
const REDELIVERED_WITHIN: Duration = Duration::from_secs(30);

/// A Cafe24 that never answers; returns its URL template and the request
/// lines it receives.
fn silent_cafe24() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held: Vec<TcpStream> = Vec::new();
        for stream in listener.incoming().map_while(Result::ok) {
            let mut line = String::new();
            if BufReader::new(&stream).read_line(&mut line).is_ok() && tx.send(line.trim().to_owned()).is_err() {
                return;
            }
            held.push(stream);
        }
    });
    (format!("http://127.0.0.1:{port}/{{mall_id}}"), rx)
}

/// The next request for product 7, waited for up to `limit`.
fn next_fetch(requests: &mpsc::Receiver<String>, limit: Duration) -> Option<String> {
    let deadline = Instant::now() + limit;
    loop {
        let line = requests.recv_timeout(deadline.saturating_duration_since(Instant::now())).ok()?;
        if line.contains("/products/7") {
            return Some(line);
        }
    }
}

fn start(redis: &TestRedis, prefix: &str, cafe24: &str) -> Dev {
    Dev::start(Some(&redis.url()), &["--key-prefix", prefix, "--cafe24-base-url", cafe24])
}

fn set_tokens(dev: &Dev) {
    let tokens = json!({
        "access_token": "at", "expires_at": "2099-01-01T00:00:00.000",
        "refresh_token": "rt", "refresh_token_expires_at": "2099-01-01T00:00:00.000",
        "mall_id": "acme", "client_id": "c",
    });
    dev.set_tokens("acme", &tokens);
}

/// Starts a dev whose pipe holds product 7's event in flight (its fetch
/// hanging), and returns it with the requests seen.
async fn dev_holding_a_batch(redis: &TestRedis, prefix: &str) -> (Dev, String, mpsc::Receiver<String>) {
    let (cafe24, requests) = silent_cafe24();
    let mut dev = start(redis, prefix, &cafe24);
    set_tokens(&dev);
    let ingest = dev.url("Ingest");
    let response = sluice_http::client()
        .post(&ingest)
        .header("X-API-Key", "sluice-dev")
        .header("X-Trace-ID", "restart-test-1")
        .json(&json!({"event_no": 90002, "resource": {"mall_id": "acme", "product_no": 7}}))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("webhook");
    assert_eq!(response.status().as_u16(), 202, "{:?}", response.text().await);
    assert!(next_fetch(&requests, Duration::from_secs(30)).is_some(), "the pipe never fetched product 7");
    (dev, cafe24, requests)
}

#[tokio::test]
async fn a_restarted_dev_gets_the_batch_a_killed_one_held_back_at_once() {
    let redis = TestRedis::new("a_restarted_dev_gets_the_batch_a_killed_one_held_back_at_once");
    let prefix = redis.keyspace().prefix().to_owned();
    let (mut a, cafe24, requests) = dev_holding_a_batch(&redis, &prefix).await;
    a.signal("-KILL");
    a.wait(Duration::from_secs(10));

    let started = Instant::now();
    let mut b = start(&redis, &prefix, &cafe24);
    let fetched = next_fetch(&requests, REDELIVERED_WITHIN);
    assert!(
        fetched.is_some(),
        "the event the killed run held was not handed out again within {REDELIVERED_WITHIN:?} of the restart \
         (it waits out the 330 s visibility timeout); the new run printed {:?}",
        b.seen
    );
    assert!(started.elapsed() < REDELIVERED_WITHIN);
    assert!(b.wait_for_line("Returned 1 messages held in flight").contains("previous run"));
}

#[tokio::test]
async fn a_second_dev_on_the_same_queues_is_refused_and_takes_nothing() {
    let redis = TestRedis::new("a_second_dev_on_the_same_queues_is_refused_and_takes_nothing");
    let prefix = redis.keyspace().prefix().to_owned();
    let (a, cafe24, requests) = dev_holding_a_batch(&redis, &prefix).await;

    let dir = std::env::temp_dir().join(format!("sluice-dev-second-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("work dir");
    let mut second = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["dev", "--sqs-port", "0", "--sfn-port", "0", "--ingest-port", "0", "--metrics-port", "0"])
        .args(["--key-prefix", &prefix, "--cafe24-base-url", &cafe24, "--no-drain"])
        .current_dir(&dir)
        .env("SLUICE_REDIS_URL", redis.url())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("second sluice dev");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = second.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = second.kill();
            panic!("the second sluice dev neither refused nor stopped within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    std::io::Read::read_to_string(&mut second.stdout.take().expect("stdout"), &mut stdout).expect("stdout");
    std::io::Read::read_to_string(&mut second.stderr.take().expect("stderr"), &mut stderr).expect("stderr");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("another sluice dev") && stderr.contains("--key-prefix"), "{stderr}");
    // It never served, so it returned nothing of the first one's.
    assert!(!stdout.contains("Returned") && !stdout.contains("Ready."), "{stdout}");
    drop((a, requests));
}

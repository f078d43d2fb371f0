//! The shop path through a real `sluice dev` process: a change in its
//! sandbox Cafe24 sends a webhook over HTTP to its ingest; the pipeline
//! fetches and stores the product (one larger than a Step Functions state
//! may carry, too); `sluice trace` shows the journey. With a database, the
//! drain writes the product to PostgreSQL and the trace says so.

use crate::support;

use serde_json::{Value, json};
use sluice_domain::{ResourceKind, ResourceRef, ShopEvent, Topic};
use sluice_testkit::postgres::TestPostgres;
use std::time::Duration;
use support::Dev;

/// Creates a product in mall `acme` of the sandbox at `sandbox`; the
/// answer is the change report, with the webhook delivery it caused.
async fn create_product(sandbox: &str, product: Value) -> Value {
    sluice_http::client()
        .post(format!("{sandbox}/sandbox/malls/acme/resources/products"))
        .json(&product)
        .send()
        .await
        .expect("sandbox control plane")
        .json()
        .await
        .expect("change report")
}

/// The event id ingest gave the webhook of `change` (a change report whose
/// webhook ingest accepted).
fn event_of(change: &Value) -> String {
    let delivery = &change["webhook"];
    assert_eq!(delivery["status"], 202, "ingest did not accept the webhook: {change}");
    let id = change["id"].as_str().expect("id").to_owned();
    let event = ShopEvent::new(
        "acme",
        Topic(delivery["event_no"].as_u64().expect("event_no") as u32),
        ResourceRef { kind: ResourceKind::Product, id },
        delivery["trace_id"].as_str().expect("trace id"),
    )
    .unwrap();
    event.dedup_id().as_str().to_owned()
}

#[tokio::test]
async fn a_sandbox_change_flows_from_webhook_to_stored_snapshot() {
    let mut dev = Dev::start(None, &["--sandbox-mall", "acme", "--bucket-capacity", "5", "--bucket-leak", "10"]);
    let off = dev.wait_for_line("Drain to PostgreSQL: off");
    assert!(off.starts_with("Drain to PostgreSQL: off (--no-drain)") && off.contains("--database-url"), "{off}");
    let sandbox = dev.url("Cafe24 sandbox");
    let change = create_product(&sandbox, json!({"product_name": "sluice mug", "price": "12000"})).await;
    let event_id = event_of(&change);
    let output = dev.trace_once_stored(&event_id).await;
    for stage in ["received", "enqueued", "dequeued", "fetch", "stored"] {
        assert!(output.contains(stage), "trace lacks {stage}:\n{output}");
    }
    let (code, unknown) = dev.trace("s:acme:1:product:nope:x");
    assert_eq!(code, Some(1));
    assert!(unknown.contains("no trace for"), "{unknown}");
    dev.signal("-INT");
    assert!(dev.wait(Duration::from_secs(15)).success());
    assert!(!dev.workdir.join(".sluice/dev.json").exists(), "dev.json left after a clean stop");
}

#[tokio::test]
async fn a_deferred_webhook_is_traced_to_its_malls_dirty_set() {
    // One message in the queue defers the mall.
    let args = ["--sandbox-mall", "acme", "--flow-max-queued", "1"];
    let mut dev = Dev::start(None, &args);
    let sandbox = dev.url("Cafe24 sandbox");
    // At once: whichever the queue takes first counts, the other is
    // deferred (the first's fetch cannot end before the second arrives).
    let (first, second) = tokio::join!(
        create_product(&sandbox, json!({"product_name": "first"})),
        create_product(&sandbox, json!({"product_name": "second"}))
    );
    let traces = [dev.trace(&event_of(&first)), dev.trace(&event_of(&second))];
    let deferred: Vec<&String> = traces.iter().map(|(_, output)| output).filter(|o| o.contains("deferred")).collect();
    assert_eq!(deferred.len(), 1, "{traces:?}");
    assert!(deferred[0].contains("into mall acme's dirty set since "), "{}", deferred[0]);
    dev.signal("-INT");
    assert!(dev.wait(Duration::from_secs(15)).success());
}

#[tokio::test]
async fn a_product_larger_than_a_state_may_carry_is_stored() {
    let mut dev = Dev::start(None, &["--sandbox-mall", "acme"]);
    let sandbox = dev.url("Cafe24 sandbox");
    let ingest = dev.url("Ingest");
    // 1,600 variants: about 330 KB as the Admin API serves it, over Step
    // Functions' 256 KiB for a state's input or output.
    let variants: Vec<Value> = (0..1600)
        .map(|i| json!({"variant_code": format!("V{i:07}"), "options": [{"name": "size", "value": "x".repeat(180)}]}))
        .collect();
    let change = create_product(&sandbox, json!({"product_name": "many variants", "variants": variants})).await;
    // The sandbox's own webhook carries the whole resource, over ingest's
    // body limit; a sender's webhook names the product, as this one does.
    assert_eq!(change["webhook"]["status"], 413, "{}", change["webhook"]["status"]);
    let id = change["id"].as_str().expect("id").to_owned();
    let product_no: u64 = id.parse().expect("a product number");
    let response = sluice_http::client()
        .post(&ingest)
        .header("X-API-Key", "sluice-dev")
        .header("X-Trace-ID", "big-product-1")
        .json(&json!({"event_no": 90001, "resource": {"mall_id": "acme", "product_no": product_no}}))
        .send()
        .await
        .expect("webhook");
    assert_eq!(response.status().as_u16(), 202, "{:?}", response.text().await);
    let event =
        ShopEvent::new("acme", Topic(90001), ResourceRef { kind: ResourceKind::Product, id }, "big-product-1").unwrap();
    let event_id = event.dedup_id().as_str().to_owned();
    let output = dev.trace_once_stored(&event_id).await;
    // The stored stage's detail: the body that went into the stream.
    let stored = output.lines().find(|l| l.contains(" stored ")).expect("a stored stage");
    let detail: Value = serde_json::from_str(&stored[stored.find('{').expect("detail")..]).expect("detail JSON");
    let body_bytes = detail["body_bytes"].as_u64().expect("body_bytes");
    assert!(body_bytes > 262_144, "the stored body is {body_bytes} bytes: {stored}");
    assert!(!output.contains("failed"), "stored at the first try:\n{output}");
    dev.signal("-INT");
    assert!(dev.wait(Duration::from_secs(15)).success());
}

#[tokio::test]
async fn with_a_database_the_drain_writes_the_product_and_the_trace_shows_it() {
    let pg = TestPostgres::new("dev_drain").await;
    // Trust authentication ignores the password; it must never be printed.
    let url = pg.url.replacen("postgres@", "postgres:hunter2@", 1);
    let mut dev = Dev::start(None, &["--sandbox-mall", "acme", "--database-url", &url]);
    let database = pg.url.rsplit('/').next().expect("database name").to_owned();
    assert_eq!(dev.url("PostgreSQL"), format!("127.0.0.1:{}/{database}", pg.port()));
    let sandbox = dev.url("Cafe24 sandbox");
    let change = create_product(&sandbox, json!({"product_name": "drained mug"})).await;
    let event_id = event_of(&change);
    let output = dev.trace_until(&event_id, "now: in PostgreSQL").await;
    let written = output.lines().find(|l| l.contains(" written ")).expect("a written stage");
    assert!(written.contains("written    to PostgreSQL, row version "), "{written}");
    let name: String = sqlx::query_scalar("SELECT body->>'product_name' FROM sluice.snapshots WHERE mall_id = 'acme'")
        .fetch_one(&pg.pool)
        .await
        .unwrap();
    assert_eq!(name, "drained mug");
    dev.signal("-INT");
    assert!(dev.wait(Duration::from_secs(15)).success());
    assert!(dev.seen.iter().all(|l| !l.contains("hunter2")), "{:?}", dev.seen);
}

/// No URL given and no PostgreSQL where the default one is looked for
/// (`PGPORT` moves it to a closed port): the drain is off, said in one
/// line, and the rest runs: a change is fetched and stored in Redis.
#[tokio::test]
async fn without_a_reachable_postgresql_the_drain_is_off_in_one_line_and_the_rest_runs() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let mut dev = Dev::start_with_env(None, &["--sandbox-mall", "acme"], &[("PGPORT", &closed)]);
    let off = dev.wait_for_line("Drain to PostgreSQL: off");
    assert!(
        off.starts_with(&format!("Drain to PostgreSQL: off (no PostgreSQL answers at 127.0.0.1:{closed}); ")),
        "{off}"
    );
    assert!(off.contains("--database-url"), "it says how to turn it on: {off}");
    let mentions = dev.seen.iter().filter(|l| l.contains("PostgreSQL")).count();
    assert_eq!(mentions, 1, "one line: {:?}", dev.seen);
    let sandbox = dev.url("Cafe24 sandbox");
    let change = create_product(&sandbox, json!({"product_name": "undrained mug"})).await;
    let output = dev.trace_once_stored(&event_of(&change)).await;
    assert!(output.contains("now: stored in Redis, waiting for the drain"), "{output}");
    dev.signal("-INT");
    assert!(dev.wait(Duration::from_secs(15)).success());
}

#[test]
fn a_database_url_that_fails_stops_sluice_dev_naming_the_endpoint_not_the_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let run = |url: &str| {
        let dir = std::env::temp_dir().join(format!("sluice-dev-db-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["dev", "--sqs-port", "0", "--sfn-port", "0", "--ingest-port", "0", "--metrics-port", "0"])
            .args(["--database-url", url, "--redis-dir"])
            .arg(dir.join("redis"))
            .current_dir(&dir)
            .env_remove("SLUICE_REDIS_URL")
            .output()
            .expect("run sluice dev");
        let _ = std::fs::remove_dir_all(&dir);
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, stderr) = run(&format!("postgres://app:hunter2@127.0.0.1:{port}/nope"));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(&format!("postgresql at 127.0.0.1:{port}/nope")), "{stderr}");
    let (code, malformed) = run("mysql://app:hunter2@db/x");
    assert_eq!(code, Some(2), "{malformed}");
    assert!(!format!("{stderr}{malformed}").contains("hunter2"));
}

//! What is deployed, end to end on one machine (`--functions processes`):
//! the real binaries of `functions/*` under the local Lambda service, each
//! configured only by the variables `infra/template.yaml` gives it.
//!
//! Webhooks → the ingest binary behind the local HTTP API → the FIFO queue
//! → the pipe → the deployed state machine → the plan, token, fetch and
//! store binaries → Redis → the sandbox Cafe24; sheet rows → the ingest
//! binary → the buffer-row binary → the flush queue → the flush-sheet
//! binary (SQS event source) → the sandbox Google Sheets. Redis is what
//! ElastiCache Serverless is: a cluster (three masters here), TLS only,
//! an ACL user whose password the functions read from the local Secrets
//! Manager, a certificate they check. Checked as
//! `sluice demo shops` and `demo sheets` check: no event lost, none stored
//! twice, every resource as Cafe24 has it, every row exactly once with
//! its header once, no 429.

use crate::support;

use serde_json::{Value, json};
use sluice_cafe24::Secret;
use sluice_dev_stack::{DevConfig, DevStack, FunctionsMode, PipeConfig, ProcessFunctions};
use sluice_domain::{ResourceKind, ResourceRef, ShopEvent, Topic};
use sluice_lambda_runtime::{FunctionBinaries, Template};
use sluice_pipeline::PipelineConfig;
use sluice_redis::BucketSpec;
use sluice_sandbox::cafe24::{BucketConfig, ChangeReport, WebhookTarget};
use sluice_sandbox::{Cafe24Sandbox, Cafe24SandboxConfig, SheetsSandbox, SheetsSandboxConfig};
use sluice_testkit::TestRedis;
use sluice_testkit::sandbox::{cafe24_config, sheets_config};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use support::{KEY, product};

/// The whole test, built binaries given.
const LIMIT: Duration = Duration::from_secs(90);
const MALLS: [&str; 3] = ["mall-a", "mall-b", "mall-c"];
const DOC: &str = "doc";

/// The Redis the functions and the stack share, as the functions are told
/// of it: the URL with its user and password (which the local Secrets
/// Manager then serves them as the `CachePassword` secret, and as ingest's
/// `CacheIngestPassword`: the local Redis has one user).
fn redis_url(redis: &TestRedis) -> String {
    redis.server().url_with_password()
}

async fn start(redis: &TestRedis, cafe24: &Cafe24Sandbox, sheets: &SheetsSandbox, bucket: BucketSpec) -> DevStack {
    let processes = ProcessFunctions {
        binaries: FunctionBinaries::for_tests(&Template::bundled().unwrap().binaries()),
        redis_url: redis_url(redis),
        redis_ca_file: redis.server().ca_file(),
        api_keys: Secret::new(sluice_ingest::any_route_document(KEY)),
        max_concurrency: Some(4),
        log_dir: None,
    };
    let config = DevConfig {
        pipeline: PipelineConfig { bucket, ..PipelineConfig::default() },
        pipe: PipeConfig { workers: 2, retry_after: Some(Duration::from_millis(500)), ..PipeConfig::default() },
        functions: FunctionsMode::Processes(processes),
        ..support::dev_config(redis, cafe24_config(cafe24), sheets_config(sheets, "client", "secret"))
    };
    support::start(redis, config).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn webhooks_and_rows_run_through_the_deployed_functions_as_processes() {
    let redis = TestRedis::cluster("process_e2e");
    assert_eq!(redis.server().nodes(), sluice_testkit::CLUSTER_MASTERS);
    assert!(redis.url().starts_with("rediss://"), "TLS only: {}", redis.url());
    let bucket = BucketConfig::new(6, 10.0);
    let malls = MALLS.iter().map(|m| m.to_string()).collect();
    let cafe24 =
        Cafe24Sandbox::start(Cafe24SandboxConfig { malls, bucket, ..Cafe24SandboxConfig::default() }).await.unwrap();
    let sheets = SheetsSandbox::start(SheetsSandboxConfig::default()).await.unwrap();
    sheets.add_client("client", "secret");
    let refresh = sheets.add_user("client", "cred");
    sheets.create_spreadsheet(DOC, &[(0, "Burst"), (1, "Ordered")]);
    let stack = start(&redis, &cafe24, &sheets, BucketSpec::new(6, 10.0)).await;
    let functions = stack.functions.clone().expect("the functions run as processes");

    tokio::time::timeout(LIMIT, async {
        for mall in MALLS {
            stack.shop.set_token(mall, &sluice_testkit::pipeline::sandbox_token(&cafe24, mall)).await.unwrap();
        }
        stack.sheet.set_google_credential("cred", &Secret::new(refresh), None).await.unwrap();
        let mut products = Vec::new();
        for mall in MALLS {
            for i in 0..5 {
                products.push((mall, cafe24.create(mall, PRODUCT, product(&format!("p{i}"))).await.unwrap().id));
            }
        }
        let ingest = url(&stack, "Ingest");
        cafe24.set_webhook_target(Some(WebhookTarget { url: ingest, api_key: Secret::new(KEY) }));

        // 60 edits (so 60 webhooks) from 6 clients, while 6 more clients send 90 rows.
        let edits = edit_all(&cafe24, &products, 60, 6);
        let rows = send_rows(url(&stack, "Sheet rows"), 90, 6);
        let (reports, ()) = tokio::join!(edits, rows);
        let events = accepted_events(&reports);
        assert_eq!(events.len(), reports.len(), "ingest accepted every webhook");

        // Every event stored exactly once (a coalesced one in the snapshot of the fetch it joined).
        let answered = loop {
            let answered = answered_events(&stack).await;
            if events.iter().all(|e| answered.contains_key(e)) {
                break answered;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let twice: Vec<_> = answered.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "events stored twice: {twice:?}");
        for (mall, id) in &products {
            let truth = cafe24.resource(mall, PRODUCT, id).unwrap().unwrap().version;
            assert_eq!(newest_stored(&stack, mall, id).await, Some(truth), "{mall}/{id} is stored as Cafe24 has it");
        }
        let counters = cafe24.counters();
        assert_eq!((counters.refused_bucket, counters.refused_quota), (0, 0), "no Cafe24 429: {counters:?}");

        // Every row exactly once, the header once, no Google 429.
        let (burst, ordered) = loop {
            let (burst, ordered) = (column_a(&sheets, 0), column_a(&sheets, 1));
            if burst.len() > 60 && ordered.len() > 30 {
                break (burst, ordered);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let expected_burst: HashSet<String> = (0..60).map(|i| format!("b{i:03}")).collect();
        assert_eq!(burst[0], "row_id", "the header first");
        assert_eq!(burst.len(), 61, "the header once and 60 rows: {burst:?}");
        assert_eq!(burst[1..].iter().cloned().collect::<HashSet<_>>(), expected_burst, "each row exactly once");
        let expected_order: Vec<String> = (0..30).map(|i| format!("o{i:03}")).collect();
        assert_eq!(ordered[1..], expected_order[..], "one sender's rows in order, once each");
        assert_eq!(sheets.calls().iter().filter(|c| c.status == 429).count(), 0, "no Google 429");

        // Nothing dead-lettered, and every function did its part as a process.
        let (_, dlq) = stack.queues().await.unwrap();
        assert_eq!(dlq.visible + dlq.in_flight, 0);
        assert_eq!(stack.flush_dead_letters().await.unwrap().visible, 0);
        for pool in functions.functions() {
            let name = &pool.spec().binary;
            // Nothing failed, so nothing was recorded as a failure; no mall
            // had FlowMaxQueued messages queued, so none was drained; every
            // mall's token was fresh, so the fetch never asked the token
            // step for one.
            let idle = ["sluice-fn-record-failure", "sluice-fn-catch-up", "sluice-fn-ensure-token"];
            let expected = !idle.contains(&name.as_str());
            assert_eq!(pool.invocations() > 0, expected, "{name}: {} invocations", pool.invocations());
            assert!(pool.cold_starts() as usize <= pool.concurrency(), "{name}: environments reused");
        }
        // Ingest's EMF lines, added up as CloudWatch would: every request counted.
        let received = functions.metrics().total("ingest", "EventsReceived");
        assert_eq!(received as usize, 60 + 90, "ingest's EMF lines count every request");
    })
    .await
    .expect("the pipeline drained within the limit");

    let pids: Vec<u32> = functions.functions().flat_map(|f| f.idle_pids()).collect();
    assert!(!pids.is_empty());
    stack.stop().await.unwrap();
    for pid in pids {
        assert!(sluice_testkit::processes::is_gone(pid), "function process {pid} outlived the stack");
    }
    cafe24.stop().await;
    sheets.stop().await;
}

const PRODUCT: ResourceKind = ResourceKind::Product;

fn url(stack: &DevStack, what: &str) -> String {
    stack.urls.iter().find(|(w, _)| *w == what).map(|(_, u)| u.clone()).unwrap_or_else(|| panic!("no {what} URL"))
}

/// `count` product edits by `clients` concurrent clients, each sending its
/// webhook to ingest; what the sandbox reported for each.
async fn edit_all(
    cafe24: &Cafe24Sandbox,
    products: &[(&str, String)],
    count: usize,
    clients: usize,
) -> Vec<ChangeReport> {
    let edits: Vec<(String, String, usize)> = (0..count)
        .map(|i| (products[i * 7 % products.len()].0.to_owned(), products[i * 7 % products.len()].1.clone(), i))
        .collect();
    let chunks = edits.chunks(count.div_ceil(clients)).map(|c| c.to_vec());
    let sends = chunks.map(|chunk| async move {
        let mut reports = Vec::new();
        for (mall, id, i) in chunk {
            reports.push(cafe24.update(&mall, PRODUCT, &id, product(&format!("edit {i}"))).await.unwrap());
        }
        reports
    });
    futures::future::join_all(sends).await.into_iter().flatten().collect()
}

/// `count` rows: two thirds a burst to sheet 0 from `clients - 1` clients,
/// the rest to sheet 1 from one client, one after another.
async fn send_rows(url: String, count: usize, clients: usize) {
    let http = sluice_http::client();
    let row = |gid: u64, id: &str| {
        json!({"credential_id": "cred", "spreadsheet_id": DOC, "sheet_id": gid, "submission_id": format!("s-{id}"),
            "row_id": id, "header": ["row_id"], "values": [id]})
    };
    let burst: Vec<String> = (0..count * 2 / 3).map(|i| format!("b{i:03}")).collect();
    let ordered: Vec<String> = (0..count / 3).map(|i| format!("o{i:03}")).collect();
    let post = |gid: u64, ids: Vec<String>| {
        let (http, url) = (http.clone(), url.clone());
        async move {
            for id in ids {
                let answer = http.post(&url).header("X-API-Key", KEY).json(&row(gid, &id)).send().await.unwrap();
                assert!(answer.status().is_success(), "row {id}: {}", answer.text().await.unwrap_or_default());
            }
        }
    };
    let mut sends: Vec<_> = burst.chunks(burst.len().div_ceil(clients - 1)).map(|c| post(0, c.to_vec())).collect();
    sends.push(post(1, ordered));
    futures::future::join_all(sends).await;
}

/// The event ids ingest accepted, from the webhooks the sandbox sent.
fn accepted_events(reports: &[ChangeReport]) -> Vec<String> {
    reports
        .iter()
        .filter_map(|r| {
            let delivery = r.webhook.as_ref().filter(|d| d.status == Some(202))?;
            let resource = ResourceRef { kind: PRODUCT, id: r.id.clone() };
            let event =
                ShopEvent::new(r.mall_id.clone(), Topic(delivery.event_no), resource, delivery.trace_id.clone());
            Some(event.ok()?.dedup_id().as_str().to_owned())
        })
        .collect()
}

/// Every event id the stored snapshots answer, with how many answer it.
async fn answered_events(stack: &DevStack) -> HashMap<String, usize> {
    let mut answered = HashMap::new();
    for entry in stored(stack).await {
        let ids: Vec<String> = serde_json::from_value(entry["event_ids"].clone()).unwrap();
        for id in ids {
            *answered.entry(id).or_default() += 1;
        }
    }
    answered
}

async fn newest_stored(stack: &DevStack, mall: &str, id: &str) -> Option<u64> {
    stored(stack)
        .await
        .iter()
        .filter(|e| e["mall_id"] == mall && e["id"] == id)
        .filter_map(|e| e["version"].as_u64())
        .max()
}

/// Every snapshot entry, as JSON (`sluice_redis::SnapshotEntry`'s fields), over every shard.
async fn stored(stack: &DevStack) -> Vec<Value> {
    let store = stack.shop.snapshots();
    let mut out = Vec::new();
    for shard in 0..store.shards() {
        let mut after = "-".to_owned();
        loop {
            let entries = store.read(shard, &after, 1000).await.unwrap();
            let Some(last) = entries.last() else { break };
            after = last.id.clone();
            let snapshots = entries.iter().filter(|e| !e.is_outcome());
            out.extend(snapshots.map(|e| serde_json::to_value(e.snapshot().expect("a snapshot")).unwrap()));
        }
    }
    out
}

fn column_a(sheets: &SheetsSandbox, gid: u64) -> Vec<String> {
    let values = sheets.sheet_values(DOC, gid).unwrap_or_default();
    values.iter().map(|r| r.first().and_then(Value::as_str).unwrap_or("").trim_start_matches('\'').to_owned()).collect()
}

//! The drain Lambda's handler, called as the runtime calls it, against a
//! real private Redis and a real private PostgreSQL, the service built as
//! `main` builds it (settings from variables, Redis connected, the schema
//! migrated); snapshots reach the streams through the snapshot store the
//! store step uses. And its `bootstrap`'s cold start with a database it
//! cannot use.

use lambda_runtime::{Context, LambdaEvent};
use serde_json::{Value, json};
use sluice_config::{DrainSettings, EnvSource};
use sluice_fn_drain::start::drain_service;
use sluice_fn_drain::{DEADLINE_MARGIN, DrainService, Stopped, handler};
use sluice_lambda_harness::{BOOTSTRAP_TIMEOUT, Bootstrap, Reply, RuntimeApi, assert_refuses_to_start};
use sluice_pipeline::step_io::Snapshot;
use sluice_redis::{Connection, SnapshotStore};
use sluice_testkit::TestRedis;
use sluice_testkit::postgres::TestPostgres;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const BOOTSTRAP: &str = env!("CARGO_BIN_EXE_sluice-fn-drain");
const SHARDS: u32 = 2;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// The variables the template gives the function, with the test's Redis
/// and `database_url` as the value rather than a secret's ARN.
fn vars(redis: &TestRedis, database_url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("SLUICE_REDIS_URL", redis.url()),
        ("SLUICE_KEY_PREFIX", redis.keyspace().prefix().to_owned()),
        ("SLUICE_SNAPSHOT_SHARDS", SHARDS.to_string()),
        ("SLUICE_DATABASE_URL", database_url.to_owned()),
    ]
}

async fn service(redis: &TestRedis, pg: &TestPostgres) -> DrainService {
    let settings = DrainSettings::from_source(&EnvSource::from_pairs(vars(redis, &pg.url))).unwrap();
    drain_service(&settings).await.unwrap_or_else(|e| panic!("{e}"))
}

/// A scheduled invocation whose deadline is `left` away.
fn scheduled(left: Duration) -> LambdaEvent<Value> {
    let mut context = Context::default();
    context.deadline = now_ms() + left.as_millis() as u64;
    // What EventBridge Scheduler sends: the schedule's Input.
    LambdaEvent::new(json!({}), context)
}

/// A fetched product snapshot appended as the store step appends it:
/// the pipeline's own fields, through the snapshot store.
async fn store(store: &SnapshotStore<Connection>, mall: &str, id: &str, fetched_at_ms: u64) {
    let snapshot = Snapshot {
        mall_id: mall.to_owned(),
        kind: "product".to_owned(),
        id: id.to_owned(),
        status: "found".to_owned(),
        updated_date: None,
        version: None,
        body: json!({"product_no": id, "fetched": fetched_at_ms}),
        answers: vec![format!("ev-{mall}-{id}-{fetched_at_ms}")],
        fetched_at_ms,
    };
    store.append(mall, &format!("{mall}/{id}/{fetched_at_ms}"), &[snapshot.entry_field().0]).await.unwrap();
}

async fn rows(pg: &TestPostgres) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.snapshots").fetch_one(&pg.pool).await.unwrap()
}

#[tokio::test]
async fn a_run_drains_every_snapshot_into_postgresql_and_reports_what_it_did() {
    let (redis, pg) = (TestRedis::new("fn_drain_run"), TestPostgres::new("fn_drain_run").await);
    let drain = service(&redis, &pg).await;
    let snapshots = SnapshotStore::new(redis.conn().await, redis.keyspace(), SHARDS).unwrap();
    for (mall, id) in [("m1", "1"), ("m1", "2"), ("m2", "7")] {
        store(&snapshots, mall, id, 100).await;
    }
    store(&snapshots, "m1", "1", 90).await;

    let summary = handler(&drain, scheduled(Duration::from_secs(60))).await.unwrap();
    let r = summary.report;
    assert_eq!((r.taken, r.written, r.superseded, r.acked, r.trimmed), (4, 3, 1, 4, 4), "{summary:?}");
    assert_eq!(summary.stopped, Stopped::Empty);
    assert_eq!(summary.lag_seconds, None, "nothing waits any more");
    assert_eq!(rows(&pg).await, 3);
    let answer = serde_json::to_value(&summary).unwrap();
    assert_eq!(
        (&answer["written"], &answer["stopped"], &answer["lag_seconds"]),
        (&json!(3), &json!("empty"), &Value::Null)
    );

    let line = drain.metrics().take_emf("prod", "drain").expect("an EMF line").render(1);
    let emf: Value = serde_json::from_str(&line).unwrap();
    assert_eq!((emf["DrainRowsWritten"].as_f64(), emf["DrainRowsSuperseded"].as_f64()), (Some(3.0), Some(1.0)));
    assert!(emf.get("DrainLag").is_none(), "no lag is reported when nothing waits: {line}");

    let again = handler(&drain, scheduled(Duration::from_secs(60))).await.unwrap();
    assert_eq!((again.report.taken, again.stopped), (0, Stopped::Empty), "a second run finds nothing");
}

#[tokio::test]
async fn a_run_at_its_deadline_drains_nothing_and_reports_the_lag() {
    let (redis, pg) = (TestRedis::new("fn_drain_deadline"), TestPostgres::new("fn_drain_deadline").await);
    let drain = service(&redis, &pg).await;
    let snapshots = SnapshotStore::new(redis.conn().await, redis.keyspace(), SHARDS).unwrap();
    let before = now_ms();
    store(&snapshots, "m1", "1", 100).await;

    // Less than the margin left: no round starts.
    let summary = handler(&drain, scheduled(DEADLINE_MARGIN / 2)).await.unwrap();
    assert_eq!((summary.report.taken, summary.stopped), (0, Stopped::Deadline), "{summary:?}");
    let lag = summary.lag_seconds.expect("the stored snapshot waits");
    let bound = (now_ms() - before) as f64 / 1000.0;
    assert!((0.0..=bound).contains(&lag), "the lag {lag} s is the age of the snapshot, at most {bound} s");
    assert_eq!(rows(&pg).await, 0);

    let summary = handler(&drain, scheduled(Duration::from_secs(60))).await.unwrap();
    assert_eq!((summary.report.written, summary.lag_seconds), (1, None));
}

/// The real bootstrap, served by `serve_step` against a stand-in for the
/// Runtime API (its deadline a minute away), answers a scheduled
/// invocation with the summary, having drained into the database.
#[tokio::test]
async fn the_bootstrap_answers_a_scheduled_invocation_through_the_runtime_api() {
    let (redis, pg) = (TestRedis::new("fn_drain_bootstrap"), TestPostgres::new("fn_drain_bootstrap").await);
    let snapshots = SnapshotStore::new(redis.conn().await, redis.keyspace(), SHARDS).unwrap();
    store(&snapshots, "m1", "1", 100).await;
    let mut api = RuntimeApi::start(vec![json!({})]).await;
    let vars = vars(&redis, &pg.url).into_iter().collect();
    let _bootstrap = Bootstrap::spawn(BOOTSTRAP, &api.lambda_env(), &vars);
    let reply = tokio::time::timeout(BOOTSTRAP_TIMEOUT, api.replies.recv()).await.expect("an answer in time").unwrap();
    let Reply::Response { body, .. } = reply else { panic!("expected a response, got {reply:?}") };
    assert_eq!((&body["written"], &body["stopped"]), (&json!(1), &json!("empty")), "{body}");
    assert_eq!(rows(&pg).await, 1);
}

/// A cold start whose database cannot be reached ends with one log line
/// naming the variable and the endpoint, never the password, and no
/// panic: the bootstrap as Lambda runs it.
#[tokio::test]
async fn a_database_that_cannot_be_reached_fails_the_cold_start_naming_it_without_the_password() {
    let redis = TestRedis::new("fn_drain_cold_start");
    // Port 1 on loopback: nothing listens there.
    let url = "postgres://sluice:pw-secret@127.0.0.1:1/app";
    let vars = vars(&redis, url);
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let printed = assert_refuses_to_start(BOOTSTRAP, &pairs, "SLUICE_DATABASE_URL");
    assert!(printed.contains("cannot connect to postgresql at 127.0.0.1:1/app: no connection within"), "{printed}");
    assert!(!printed.contains("pw-secret"), "the password is never shown: {printed}");

    let settings = DrainSettings::from_source(&EnvSource::from_pairs(vars)).unwrap();
    let error = drain_service(&settings).await.unwrap_err().to_string();
    assert!(error.contains("127.0.0.1:1/app") && error.ends_with("(SLUICE_DATABASE_URL)"), "{error}");
    assert!(!error.contains("pw-secret"), "{error}");
}

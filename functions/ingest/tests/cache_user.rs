//! The ingest function's own cache user, as `infra/template.yaml` deploys
//! it, on a real server shaped like ElastiCache Serverless (three TLS-only
//! masters in cluster mode): ingest faces the internet, so its user reaches
//! the keys ingest uses and none other, above all no tenant's OAuth tokens.
//!
//! The user is the one the template's `IngestFunction` connects as (the
//! user name in its `SLUICE_REDIS_URL`), made on every node from the
//! template's `AccessString`; ingest is configured from the function's
//! variables as the template resolves them (key prefix `sluice:`, cluster
//! mode on, flow control per mall and per sheet on, their thresholds at 1
//! so that every path is reached in a few requests). Shown: (a) webhooks
//! and rows take every path (enqueued, coalesced, duplicate, deferred, the
//! overflow joining the buffer) without one command refused, the best-effort
//! writes included (the server's `ACL LOG` stays empty: a refused trace or
//! ledger write would not change an answer); (b) the same connection is
//! refused every token, a tenant's enrolment marker but for reading it,
//! and what else ingest never touches, by plain commands and by scripts
//! alike. The same checks on a user given `~*` report the tokens reached:
//! they would fail the template if its ingest user were given every key.

use lambda_http::tower::ServiceExt;
use serde_json::Value;
use sluice_config::EnvSource;
use sluice_domain::{CatchUpRequests, GroupKey, Secret};
use sluice_fn_ingest::{IngestSettings, build};
use sluice_ingest::{ApiKeys, Ingest};
use sluice_lambda_runtime::template_tree::Node;
use sluice_lambda_runtime::{Bindings, Endpoints, Template, function_spec};
use sluice_redis::{ConnectSettings, Connection, Keyspace, Tag};
use sluice_sqs_emulator::{EmbeddedQueue, MemoryBackend, QueueBackend, QueueConfig};
use sluice_testkit::TestRedis;
use std::collections::HashMap;
use std::sync::Arc;

use crate::support::{Recorded, event};

const KEY: &str = "cache-user-key-0123456789";
const QUEUE: &str = "sluice-events.fifo";
/// What ElastiCache would hold in the user's password secret.
const PASSWORD: &str = "ingest-password-0123456789abcdef";

/// A test's tenant, a mall and a Google credential, enrolled as `sluice
/// tokens set` and `sluice credentials set` enrol them: each test its own,
/// the tests sharing one cluster and the deployed key prefix.
#[derive(Debug, Clone, Copy)]
struct Tenants {
    mall: &'static str,
    credential: &'static str,
}

/// The template's function that API Gateway invokes, with its variables
/// resolved as the local stack resolves them, the cache's endpoint being
/// the test cluster's first node; the thresholds of flow control set to 1
/// (parameters a deployer may set).
fn ingest_spec(redis: &TestRedis) -> (function_spec::FunctionSpec, Bindings) {
    let bindings = Bindings::new()
        .parameter("Stage", "local")
        .parameter("Cafe24ClientId", "app")
        .parameter("GoogleClientId", "google-app")
        .parameter("FlowMaxQueued", 1)
        .parameter("SheetMaxQueued", 1)
        .resource("Cache.Endpoint.Address", "127.0.0.1")
        .resource("Cache.Endpoint.Port", redis.server().port(0).to_string())
        .resource("EventsQueue", format!("http://127.0.0.1:1/000000000000/{QUEUE}"))
        .resource("FlushQueue", "http://127.0.0.1:1/000000000000/sluice-flush")
        .resource("FlushQueue.Arn", "arn:aws:sqs:us-east-1:000000000000:sluice-flush")
        .resource("MallDrainQueue", "http://127.0.0.1:1/000000000000/sluice-mall-drain")
        .resource("MallDrainQueue.Arn", "arn:aws:sqs:us-east-1:000000000000:sluice-mall-drain")
        .secret("ApiKeys", Secret::new(KEY))
        .secret("Cafe24ClientSecret", Secret::new("cafe24-secret"))
        .secret("GoogleClientSecret", Secret::new("google-secret"))
        .secret("AlertWebhookUrl", Secret::new(" "))
        .secret("CachePassword", Secret::new(r#"{"username":"sluice","password":"not ingest's"}"#))
        .secret("CacheIngestPassword", Secret::new(format!(r#"{{"username":"ingest","password":"{PASSWORD}"}}"#)))
        .with_endpoints(Endpoints {
            redis_ca_file: redis.server().ca_file().map(|f| f.display().to_string()),
            ..Endpoints::default()
        });
    let specs = function_spec::specs(&Template::bundled().unwrap(), &bindings).unwrap_or_else(|e| panic!("{e}"));
    let ingest = specs.into_iter().find(|s| !s.http_routes.is_empty()).expect("a function behind the HTTP API");
    (ingest, bindings)
}

/// The cache user `name` of the template: its `AccessString` (a folded
/// block scalar is joined as YAML joins it) and the secret that sets its
/// password (`{{resolve:secretsmanager:${Secret}:…}}`).
fn template_user(name: &str) -> (String, String) {
    let root = Node::parse(sluice_lambda_runtime::template::TEMPLATE);
    let resources = root.child("Resources").expect("Resources");
    let user = resources
        .children
        .iter()
        .filter(|r| r.scalar("Type") == Some("AWS::ElastiCache::User"))
        .filter_map(|r| r.child("Properties"))
        .find(|p| p.scalar("UserName") == Some(name))
        .unwrap_or_else(|| panic!("infra/template.yaml has no AWS::ElastiCache::User named {name}"));
    let access = user.child("AccessString").expect("an AccessString");
    let access = match access.value() {
        Some(">-" | ">") => {
            assert!(access.children.iter().all(|c| c.children.is_empty()), "a folded AccessString, one indentation");
            access.children.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join(" ")
        }
        Some(value) => value.trim_matches('"').to_owned(),
        None => panic!("{name}'s AccessString is empty"),
    };
    let passwords = user.at(&["AuthenticationMode", "Passwords"]).expect("a password");
    let secret = passwords
        .children
        .iter()
        .find_map(|p| p.text.split_once("{{resolve:secretsmanager:${")?.1.split_once('}').map(|(id, _)| id.to_owned()))
        .unwrap_or_else(|| panic!("{name}'s password is not resolved from a secret of the template"));
    (access, secret)
}

/// `url`'s user: `rediss://ingest@host:port` → `ingest`.
fn url_user(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split_once('@').map(|(user, _)| user).unwrap_or_else(|| panic!("{url} names no user"))
}

/// Makes ACL user `name` on every node: ElastiCache's access string is the
/// engine's ACL rules without a password (it sets that itself) and without
/// `reset` (which it refuses), so the server gets `reset`, the rules as
/// they are, and the password.
async fn set_user(redis: &TestRedis, name: &str, access: &str) {
    for i in 0..redis.server().nodes() {
        let mut node = sluice_redis::connect(&redis.server().node_settings(i)).await.unwrap();
        let mut setuser = redis::cmd("ACL");
        setuser.arg("SETUSER").arg(name).arg("reset").arg(access.split_whitespace().collect::<Vec<_>>());
        setuser.arg(format!(">{PASSWORD}"));
        let ok: String = setuser.query_async(&mut node).await.unwrap_or_else(|e| panic!("ACL SETUSER {name}: {e}"));
        assert_eq!(ok, "OK");
    }
}

/// Every command refused to `user` on any node since the last reset, one
/// line each (`ACL LOG`: reason, what it ran in, the key or command).
async fn refusals(redis: &TestRedis, user: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for i in 0..redis.server().nodes() {
        let mut node = sluice_redis::connect(&redis.server().node_settings(i)).await.unwrap();
        let log: Vec<redis::Value> = redis::cmd("ACL").arg("LOG").arg(1000).query_async(&mut node).await.unwrap();
        for entry in log {
            let fields: HashMap<String, redis::Value> = redis::from_redis_value(entry).unwrap();
            let text = |k: &str| fields.get(k).and_then(|v| redis::from_redis_value_ref::<String>(v).ok());
            if text("username").as_deref() == Some(user) {
                lines.push(format!(
                    "node {i}: {} refused in {}: {}",
                    text("reason").unwrap_or_default(),
                    text("context").unwrap_or_default(),
                    text("object").unwrap_or_default()
                ));
            }
        }
    }
    lines
}

async fn reset_acl_logs(redis: &TestRedis) {
    for i in 0..redis.server().nodes() {
        let mut node = sluice_redis::connect(&redis.server().node_settings(i)).await.unwrap();
        redis::cmd("ACL").arg("LOG").arg("RESET").exec_async(&mut node).await.unwrap();
    }
}

/// Connects as `settings` say with the user's password, as
/// `sluice_lambda::start::connect` does once it has read the password's
/// secret (the Lambda's timeouts and retries).
async fn connect(mut settings: ConnectSettings) -> Connection {
    settings.password = Some(PASSWORD.to_owned());
    settings.connect_timeout = sluice_lambda::start::REDIS_TIMEOUT;
    settings.response_timeout = sluice_lambda::start::REDIS_TIMEOUT;
    settings.reconnect_retries = sluice_lambda::start::REDIS_RECONNECT_RETRIES;
    let endpoint = settings.endpoint();
    sluice_redis::connect(&settings).await.unwrap_or_else(|e| panic!("connect to {endpoint:?}: {e}"))
}

/// The keys a tenant has besides ingest's, written as the other functions
/// write them (as the shared user): the enrolment markers, the OAuth
/// tokens, a stored snapshot, a parked mall's state.
async fn seed(tenants: Tenants, admin: &mut Connection) {
    let now = sluice_testkit::now_ms();
    let mall = Tag::for_mall(tenants.mall);
    let credential = Tag::for_credential(tenants.credential);
    let ks = Keyspace::default();
    for (tag, name) in [(&mall, "cafe24"), (&credential, "google")] {
        redis::cmd("SET").arg(ks.key(tag, "enrolled", name)).arg(now).exec_async(admin).await.unwrap();
        let fields = [("access", "secret-access"), ("refresh", "secret-refresh")];
        redis::cmd("HSET").arg(ks.key(tag, "token", name)).arg(&fields).exec_async(admin).await.unwrap();
    }
    let stream = ks.key(&Tag::new("store:0"), "stream", "");
    redis::cmd("XADD").arg(&stream).arg("*").arg("snapshot").arg("{}").exec_async(admin).await.unwrap();
    redis::cmd("HSET").arg(ks.key(&mall, "hold", "")).arg("state").arg("parked").exec_async(admin).await.unwrap();
}

/// What `conn` reaches that ingest must not, one line each: every command
/// here must be refused. The keys are those [`seed`] wrote.
async fn reaches_too_far(tenants: Tenants, conn: &Connection) -> Vec<String> {
    let ks = Keyspace::default();
    let mall = Tag::for_mall(tenants.mall);
    let credential = Tag::for_credential(tenants.credential);
    let cafe24_token = ks.key(&mall, "token", "cafe24");
    let google_token = ks.key(&credential, "token", "google");
    let enrolled = ks.key(&mall, "enrolled", "cafe24");
    let probes: Vec<(&str, redis::Cmd)> = vec![
        ("read a mall's token", redis::cmd("HGETALL").arg(&cafe24_token).clone()),
        ("read a credential's token", redis::cmd("HGETALL").arg(&google_token).clone()),
        ("overwrite a mall's token", redis::cmd("HSET").arg(&cafe24_token).arg("access").arg("forged").clone()),
        ("delete a credential's token", redis::cmd("DEL").arg(&google_token).clone()),
        // Scripts are checked as commands are: the keys they declare, and
        // every call they make.
        (
            "read a token in a script",
            redis::cmd("EVAL").arg("return redis.call('HGETALL', KEYS[1])").arg(1).arg(&cafe24_token).clone(),
        ),
        (
            "read a token a script was not given as a key",
            redis::cmd("EVAL")
                .arg("return redis.call('HGETALL', ARGV[1])")
                .arg(1)
                .arg(ks.key(&mall, "gate", "products:1"))
                .arg(&cafe24_token)
                .clone(),
        ),
        (
            "enrol a tenant",
            redis::cmd("SET").arg(ks.key(&Tag::for_mall("invented"), "enrolled", "cafe24")).arg(1).clone(),
        ),
        ("withdraw a tenant", redis::cmd("DEL").arg(&enrolled).clone()),
        // EVAL declares its keys read-write: a key ingest may only read
        // cannot be a script's key (EVAL_RO's would be).
        (
            "use the enrolment marker as a script's key",
            redis::cmd("EVAL").arg("return redis.call('EXISTS', KEYS[1])").arg(1).arg(&enrolled).clone(),
        ),
        (
            "read the stored snapshots",
            redis::cmd("XRANGE").arg(ks.key(&Tag::new("store:0"), "stream", "")).arg("-").arg("+").clone(),
        ),
        ("read a parked mall's state", redis::cmd("HGETALL").arg(ks.key(&mall, "hold", "")).clone()),
        // Key patterns do not limit SCAN: refused as a command.
        ("list key names", redis::cmd("SCAN").arg(0).arg("COUNT").arg(1000).clone()),
    ];
    // Reading the marker is what ingest may do (`sluice_redis::enrolment`),
    // before a probe below withdraws it from a user that may.
    let enrolled: bool = redis::cmd("EXISTS").arg(&enrolled).query_async(&mut conn.clone()).await.unwrap();
    assert!(enrolled, "ingest reads whether a mall is enrolled");
    let mut reached = Vec::new();
    for (what, cmd) in probes {
        match cmd.query_async::<redis::Value>(&mut conn.clone()).await {
            Ok(value) => reached.push(format!("{what}: {value:?}")),
            Err(e) => {
                // NOPERM, or a script's call refused (`ERR … can't access …`
                // from Redis 7.0, NOPERM from later servers).
                let refused = e.code() == Some("NOPERM") || e.to_string().contains("can't access");
                assert!(refused, "{what}: failed otherwise than refused: {e}");
            }
        }
    }
    reached
}

/// One request through the router, as API Gateway delivers it: the
/// answer's status code and `status` field.
async fn answer(ingest: &Ingest<Connection>, path: &str, body: &str, trace: Option<&str>) -> (u16, String) {
    let mut headers = vec![("x-api-key", KEY)];
    if let Some(trace) = trace {
        headers.push(("x-trace-id", trace));
    }
    let mut event = event(body, &headers, false);
    event["rawPath"] = path.into();
    event["requestContext"]["http"]["path"] = path.into();
    let request = lambda_http::request::from_str(&event.to_string()).unwrap();
    let response = ingest.router().oneshot(request).await.unwrap();
    let code = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    let answer: Value = serde_json::from_slice(&bytes).unwrap();
    (code, answer["status"].as_str().map_or_else(|| answer.to_string(), str::to_owned))
}

fn product(tenants: Tenants, product_no: u64) -> String {
    let mall = tenants.mall;
    format!(r#"{{"event_no":90002,"resource":{{"mall_id":"{mall}","product_no":{product_no}}}}}"#)
}

fn row(tenants: Tenants, n: u64) -> String {
    let credential = tenants.credential;
    format!(
        r#"{{"credential_id":"{credential}","spreadsheet_id":"doc","sheet_id":0,"submission_id":"s{n}","row_id":"r{n}","values":[{n}]}}"#
    )
}

#[tokio::test]
async fn the_ingest_user_takes_every_path_and_reaches_no_token() {
    let tenants = Tenants { mall: "acme", credential: "cred-1" };
    let redis = TestRedis::cluster("fn_ingest_cache_user");
    let (spec, bindings) = ingest_spec(&redis);
    let vars: HashMap<&str, &str> = spec.variables.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let user = url_user(vars["SLUICE_REDIS_URL"]);
    assert_ne!(user, sluice_testkit::TEST_USER, "ingest connects as a user of its own, not the shared one");
    let (access, password_secret) = template_user(user);
    // The password the function reads is the one that sets its user's.
    let secret_arn = bindings.secrets().iter().find(|s| s.logical_id == password_secret).map(|s| s.arn.as_str());
    assert_eq!(Some(vars["SLUICE_REDIS_PASSWORD_SECRET_ARN"]), secret_arn, "{user}'s password secret");
    set_user(&redis, user, &access).await;

    let mut admin = redis.conn().await;
    seed(tenants, &mut admin).await;
    reset_acl_logs(&redis).await;

    // Ingest as the function builds it from its variables, connected as its user.
    let env = IngestSettings::from_source(&EnvSource::from_pairs(spec.variables.clone())).unwrap();
    assert_eq!(env.common.keyspace, Keyspace::default(), "the deployed prefix, sluice:");
    assert!(env.flow.queue.is_some(), "flow control per mall is on, as deployed");
    let conn = connect(env.common.redis_settings()).await;
    let backend = MemoryBackend::new();
    backend.create_queue(QUEUE, &QueueConfig::default()).await.unwrap();
    let recorded = Arc::new(Recorded::default());
    let drain = Some(recorded.clone() as Arc<dyn CatchUpRequests>);
    let api_keys = ApiKeys::from_list(&Secret::new(sluice_ingest::any_route_document(KEY))).unwrap();
    let ingest = build(env.ingest_config(api_keys), EmbeddedQueue::new(backend, QUEUE), conn.clone(), drain).unwrap();

    // (a) Every path of a webhook and of a row, nothing refused.
    let webhooks = [
        (1, "d1", "enqueued"),
        (1, "d2", "coalesced"),
        (1, "d1", "duplicate"),
        // The mall has one message in the queue, its threshold: deferred,
        // a catch-up chain started, then joined.
        (2, "d3", "deferred"),
        (3, "d4", "deferred"),
    ];
    for (product_no, trace, expected) in webhooks {
        let answered = answer(&ingest, "/webhooks/cafe24", &product(tenants, product_no), Some(trace)).await;
        assert_eq!(answered, (202, expected.to_owned()), "product {product_no}, delivery {trace}");
    }
    assert_eq!(recorded.0.lock().unwrap().len(), 1, "one catch-up chain for the mall");
    let rows = |n| row(tenants, n);
    assert_eq!(answer(&ingest, "/sheets/rows", &rows(1), None).await, (202, "enqueued".to_owned()));
    assert_eq!(answer(&ingest, "/sheets/rows", &rows(2), None).await, (202, "deferred".to_owned()));
    // The buffer step took row 1 (as the shared user): no row counts any
    // more, so the next row moves the overflow into the buffer first.
    let sheet = Tag::for_sheet(GroupKey::sheet(tenants.credential, "doc", 0).as_str());
    let queued = Keyspace::default().key(&sheet, "queued", "");
    redis::cmd("ZREM").arg(&queued).arg("r1").exec_async(&mut admin).await.unwrap();
    assert_eq!(answer(&ingest, "/sheets/rows", &rows(3), None).await, (202, "enqueued".to_owned()));
    assert_eq!(answer(&ingest, "/sheets/rows", &rows(2), None).await, (202, "duplicate".to_owned()));
    assert_eq!(ingest.counters().snapshot().trace_failures, 0, "every trace entry written");
    let refused = refusals(&redis, user).await;
    assert!(refused.is_empty(), "the template's {user} user lacks patterns for: {refused:#?}");

    // (b) The same connection, refused what ingest never needs.
    let reached = reaches_too_far(tenants, &conn).await;
    assert!(reached.is_empty(), "the template's {user} user reaches: {reached:#?}");
}

/// The checks above, on a user given every key as the shared one is: they
/// report the tokens reached, so the test above fails should the
/// template's ingest user ever be given `~*`.
#[tokio::test]
async fn a_user_given_every_key_is_caught() {
    let tenants = Tenants { mall: "acme-all-keys", credential: "cred-all-keys" };
    let redis = TestRedis::cluster("fn_ingest_cache_user_all_keys");
    let (access, _) = template_user(sluice_testkit::TEST_USER);
    assert!(access.split_whitespace().any(|rule| rule == "~*"), "the shared user has every key: {access}");
    set_user(&redis, "every-key", &access).await;
    seed(tenants, &mut redis.conn().await).await;
    let mut settings = redis.server().settings();
    settings.url = settings.url.replacen(&format!("://{}@", sluice_testkit::TEST_USER), "://every-key@", 1);
    let reached = reaches_too_far(tenants, &connect(settings).await).await;
    for what in ["read a mall's token", "read a credential's token", "read a token in a script", "enrol a tenant"] {
        assert!(reached.iter().any(|r| r.starts_with(what)), "{what} not reported: {reached:#?}");
    }
}

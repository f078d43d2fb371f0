//! `sluice tokens` on a parked mall, against a real Redis and an SQS
//! endpoint (the embedded queue's, over real HTTP): `show` says it is
//! parked; `set` without a catch-up queue refuses and stores nothing
//! (the held events would stay unasked for); with one, it stores the token,
//! turns the hold to releasing and queues the mall's catch-up run.

use crate::support;

use serde_json::json;
use sluice_aws::{SqsEndpoint, sqs_client};
use sluice_domain::CatchUpRequest;
use sluice_pipeline::shop_service::ADMIN_API;
use sluice_redis::{ParkedMalls, Tag, TokenStore};
use sluice_testkit::TestRedis;
use std::process::Output;
use support::local_sqs::{LocalSqs, operator_command};

/// Runs `sluice` on `redis`'s keys, in a directory with no `sluice dev`
/// holding `token.json`, a Cafe24 token response.
fn sluice(redis: &TestRedis, args: &[&str], sqs_endpoint: Option<&str>) -> Output {
    let mut command = operator_command(redis, "tokens", args);
    let tokens = json!({
        "access_token": "at-secret", "expires_at": "2099-01-01T00:00:00.000",
        "refresh_token": "rt-secret", "refresh_token_expires_at": "2099-01-01T00:00:00.000",
        "mall_id": "acme", "client_id": "c",
    });
    let dir = command.get_current_dir().unwrap().to_owned();
    std::fs::write(dir.join("token.json"), tokens.to_string()).unwrap();
    if let Some(endpoint) = sqs_endpoint {
        command.env("SLUICE_SQS_ENDPOINT", endpoint);
    }
    command.output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_set_releases_a_parked_mall_through_the_catch_up_queue() {
    let redis = TestRedis::new("cli_tokens_parked");
    let holds = ParkedMalls::new(redis.conn().await, redis.keyspace());
    let tokens = TokenStore::new(redis.conn().await, redis.keyspace());
    let tag = Tag::for_mall("acme");
    holds.park(&tag, "Cafe24 refused its refresh token (invalid_grant)", Some(("e1", "{}"))).await.unwrap();

    let show = sluice(&redis, &["tokens", "show", "acme"], None);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("mall acme: PARKED (Cafe24 refused its refresh token (invalid_grant))"), "{text}");
    assert!(text.contains("1 events held, in order"), "{text}");
    // `sluice status` names it too, beside its bucket.
    let status = operator_command(&redis, "tokens", &["status", "--mall", "acme"]).output().unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("PARKED since") && text.contains("1 events held in order"), "{text}");

    let set = ["tokens", "set", "acme", "--token-json", "token.json"];
    let refused = sluice(&redis, &set, None);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--catch-up-queue-url"), "{refused:?}");
    assert!(tokens.get(&tag, ADMIN_API).await.unwrap().is_none(), "nothing stored without a way to release");
    assert!(holds.state(&tag).await.unwrap().unwrap().parked);

    let sqs = LocalSqs::start(&redis, "mall-drain").await;
    let (endpoint, queue_url) = (sqs.endpoint.clone(), sqs.queue_url.clone());

    let released = sluice(&redis, &[&set[..], &["--catch-up-queue-url", &queue_url]].concat(), Some(&endpoint));
    let text = String::from_utf8_lossy(&released.stdout);
    assert!(released.status.success(), "{}{text}", String::from_utf8_lossy(&released.stderr));
    assert!(text.contains("its 1 held events resume now, in order"), "{text}");
    assert!(!text.contains("secret"), "no token is printed: {text}");
    assert_eq!(tokens.get(&tag, ADMIN_API).await.unwrap().unwrap().refresh_token, "rt-secret");
    let state = holds.state(&tag).await.unwrap().unwrap();
    assert!(!state.parked && state.held == 1, "releasing, the event still held until its run: {state:?}");
    let client = sqs_client(&SqsEndpoint::Local(endpoint)).await;
    let received = client.receive_message().queue_url(&queue_url).max_number_of_messages(10).send().await.unwrap();
    let bodies: Vec<CatchUpRequest> =
        received.messages().iter().map(|m| CatchUpRequest::from_body(m.body().unwrap()).unwrap()).collect();
    assert_eq!(bodies.len(), 1, "one catch-up run asked for: {bodies:?}");
    assert_eq!(bodies[0].mall_id, "acme");

    sqs.stop().await;
}

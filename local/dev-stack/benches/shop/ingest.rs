//! Ingest throughput: webhooks/s accepted from 64 concurrent clients over
//! HTTP on this machine, next to a bare handler that only answers 202
//! (what HTTP alone costs here).

use crate::rig::API_KEY;
use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use sluice_aws::{SqsEndpoint, SqsQueue, sqs_client};
use sluice_cafe24::Secret;
use sluice_domain::{Queue, WorkQueue};
use sluice_ingest::{ApiKeys, Ingest, IngestConfig};
use sluice_private_servers::{RedisProcess, ServerOptions};
use sluice_redis::Keyspace;
use sluice_redis::{ConnectSettings, Connection};
use sluice_sqs_emulator::sqs_api::{self, SqsApi};
use sluice_sqs_emulator::{EmbeddedQueue, QueueBackend, QueueConfig, RedisBackend};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

const CLIENTS: usize = 64;
const RUN: Duration = Duration::from_secs(3);

pub(crate) async fn run() {
    let bare = serve(Router::new().route("/webhooks/cafe24", post(|| async { (StatusCode::ACCEPTED, "{}") }))).await;
    let (_, bare_rate) = load(&bare).await;

    let redis = RedisProcess::start(ServerOptions::default()).expect("redis-server");
    let conn = sluice_redis::connect(&ConnectSettings::new(redis.url())).await.expect("connect");
    let backend = RedisBackend::new(conn.clone(), Keyspace::default());
    for name in ["direct.fifo", "adapter.fifo"] {
        backend.create_queue(name, &QueueConfig::default()).await.expect("queue");
    }

    // Ingest over the embedded queue in Redis, called directly.
    let direct = ingest(EmbeddedQueue::new(backend.clone(), "direct.fifo"), conn.clone(), "direct").await;
    let (_, direct_rate) = load(&direct).await;

    // Ingest as sluice dev runs it: through the SQS adapter and endpoint.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("listen");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    let api = SqsApi::new(backend, endpoint.clone());
    let queue_url = api.queue_url("adapter.fifo");
    tokio::spawn(sqs_api::serve(listener, api, std::future::pending()));
    let queue = SqsQueue::new(sqs_client(&SqsEndpoint::Local(endpoint)).await, queue_url);
    let adapter = ingest(queue.clone(), conn, "adapter").await;
    let (_, adapter_rate) = load(&adapter).await;
    let queued = queue.attributes().await.expect("attributes").visible;

    println!("## 3. Ingest: webhooks/s accepted from {CLIENTS} concurrent clients ({} s each)\n", RUN.as_secs());
    println!("| server | webhooks/s | vs bare HTTP |");
    println!("|---|---:|---:|");
    println!("| bare axum handler answering 202 (the HTTP ceiling here) | {bare_rate:.0} | 1.00× |");
    println!("| sluice ingest → embedded queue in Redis | {direct_rate:.0} | {:.2}× |", direct_rate / bare_rate);
    println!(
        "| sluice ingest → SQS adapter → SQS endpoint → queue in Redis (as `sluice dev`) | {adapter_rate:.0} | {:.2}× |",
        adapter_rate / bare_rate
    );
    println!(
        "\nEvery 202 was a message in the queue ({queued} queued by the last run). Target ≥ 5,000/s through `sluice dev`: {}.\n",
        if adapter_rate >= 5000.0 { "met" } else { "MISSED" }
    );
}

async fn ingest<Q: WorkQueue + 'static>(queue: Q, conn: Connection, prefix: &str) -> String {
    let keyspace = Keyspace::new(format!("bench-{prefix}:")).expect("keyspace");
    let config =
        IngestConfig { keyspace, ..IngestConfig::new(ApiKeys::from_list(&Secret::new(API_KEY)).expect("keys")) };
    let ingest = Ingest::new(config, queue, conn).expect("ingest");
    serve(ingest.router()).await
}

async fn serve(router: Router) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("listen");
    let url = format!("http://{}/webhooks/cafe24", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

/// Webhooks answered 202, and per second, each for a product of its own
/// (so none coalesces: every one goes to the queue).
pub(crate) async fn load(url: &str) -> (u64, f64) {
    let client = sluice_http::client();
    let accepted = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut clients = tokio::task::JoinSet::new();
    for c in 0..CLIENTS {
        let (client, url, accepted) = (client.clone(), url.to_owned(), accepted.clone());
        clients.spawn(async move {
            let mut i = 0u64;
            while started.elapsed() < RUN {
                let body = format!(
                    r#"{{"event_no":90002,"resource":{{"mall_id":"bench","product_no":{}}}}}"#,
                    c as u64 * 1_000_000_000 + i + 1
                );
                let response = client
                    .post(&url)
                    .header("x-api-key", API_KEY)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .expect("post");
                if response.status() == reqwest::StatusCode::ACCEPTED {
                    accepted.fetch_add(1, Ordering::Relaxed);
                }
                i += 1;
            }
        });
    }
    while clients.join_next().await.is_some() {}
    let accepted = accepted.load(Ordering::Relaxed);
    (accepted, accepted as f64 / started.elapsed().as_secs_f64())
}

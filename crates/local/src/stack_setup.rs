//! What a stack needs before it serves: its queues created in Redis, the
//! consumer lease taken, and its listeners bound with errors naming the
//! flag that picks another port.

use crate::dev_stack::{DevConfig, EVENTS_DLQ, EVENTS_QUEUE, FLUSH_DLQ, FLUSH_QUEUE};
use anyhow::anyhow;
use sluice_queue::{
    ConsumerLease, LeaseError, LeaseOwner, LeaseSettings, QueueBackend, QueueConfig, QueueError, RedisBackend,
    RedrivePolicy,
};
use sluice_redis::{Connection, Keyspace};
use tokio::net::TcpListener;

/// Takes the consumer lease of the queues under `keyspace` for this
/// process (waiting, bounded, for a holder that may be alive: see
/// [`sluice_queue::redis_store::lease`]).
pub async fn take_consumer_lease(
    conn: &Connection,
    keyspace: &Keyspace,
) -> Result<ConsumerLease<Connection>, LeaseError> {
    let backend = RedisBackend::new(conn.clone(), keyspace.clone());
    backend.take_consumer_lease(LeaseOwner::this_process(), LeaseSettings::default()).await
}

pub(crate) async fn create_queues<B: QueueBackend>(backend: &B, config: &DevConfig) -> anyhow::Result<()> {
    let explain = |name: &str, e: QueueError| match e {
        QueueError::QueueNameExists { attribute, .. } => anyhow!(
            "queue {name} already exists in Redis with a different {attribute}; delete it \
             (aws sqs delete-queue --endpoint-url ...) or use another --key-prefix"
        ),
        e => anyhow!(e).context(format!("cannot create queue {name}")),
    };
    backend.create_queue(EVENTS_DLQ, &QueueConfig::default()).await.map_err(|e| explain(EVENTS_DLQ, e))?;
    let events = QueueConfig {
        visibility_timeout: config.visibility_timeout,
        redrive: Some(RedrivePolicy {
            dead_letter_queue: EVENTS_DLQ.to_owned(),
            max_receive_count: config.max_receive_count,
        }),
        ..QueueConfig::default()
    };
    backend.create_queue(EVENTS_QUEUE, &events).await.map_err(|e| explain(EVENTS_QUEUE, e))?;
    backend.create_queue(FLUSH_DLQ, &QueueConfig::default()).await.map_err(|e| explain(FLUSH_DLQ, e))?;
    let flush = QueueConfig {
        visibility_timeout: config.flush.visibility_timeout,
        redrive: Some(RedrivePolicy {
            dead_letter_queue: FLUSH_DLQ.to_owned(),
            max_receive_count: config.max_receive_count,
        }),
        ..QueueConfig::default()
    };
    backend.create_queue(FLUSH_QUEUE, &flush).await.map_err(|e| explain(FLUSH_QUEUE, e))?;
    Ok(())
}

pub(crate) async fn listen(port: u16, what: &str, flag: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| anyhow!("cannot listen on 127.0.0.1:{port} for {what}: {e} (choose another with {flag})"))
}

pub(crate) fn port(listener: &TcpListener) -> anyhow::Result<u16> {
    Ok(listener.local_addr()?.port())
}

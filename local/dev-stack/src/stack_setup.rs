//! What a stack needs before it serves besides its queues
//! ([`crate::dev_queues`]): the consumer lease taken, and its listeners
//! bound with errors naming the flag that picks another port.

use anyhow::anyhow;
use sluice_redis::{Connection, Keyspace};
use sluice_sqs_emulator::{ConsumerLease, LeaseError, LeaseOwner, LeaseSettings, RedisBackend};
use tokio::net::TcpListener;

/// Takes the consumer lease of the queues under `keyspace` for this
/// process (waiting, bounded, for a holder that may be alive: see
/// [`sluice_sqs_emulator::redis_store::lease`]).
pub async fn take_consumer_lease(
    conn: &Connection,
    keyspace: &Keyspace,
) -> Result<ConsumerLease<Connection>, LeaseError> {
    let backend = RedisBackend::new(conn.clone(), keyspace.clone());
    backend.take_consumer_lease(LeaseOwner::this_process(), LeaseSettings::default()).await
}

/// A listener on 127.0.0.1:`port` (0: a free one), and its
/// `http://127.0.0.1:<port>`.
pub(crate) async fn listen(port: u16, what: &str, flag: &str) -> anyhow::Result<(TcpListener, String)> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| anyhow!("cannot listen on 127.0.0.1:{port} for {what}: {e} (choose another with {flag})"))?;
    let url = format!("http://127.0.0.1:{}", listener.local_addr()?.port());
    Ok((listener, url))
}

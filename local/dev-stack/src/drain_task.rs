//! The drain to PostgreSQL inside the stack (`sluice dev`, the demos): one
//! consumer of the snapshot streams (`sluice_sink::Drain`), recording in
//! each event's trace when its row was written, and an alert when the
//! database has failed for longer than `alert_after`.
//!
//! The consumer has one fixed name: only one stack consumes a Redis and key
//! prefix at a time (the consumer lease), so a restarted `sluice dev` takes
//! its predecessor's unacknowledged entries as its own at once instead of
//! claiming them after `claim_idle`.
//!
//! The alert goes through the pipeline's alerter (the Slack-compatible
//! webhook of `--alert-url`), once per episode: a failure that lasts past
//! `alert_after` sends one message, its end another; a new failure is a
//! new episode.

use anyhow::Context;
use sluice_pipeline::ShopService;
use sluice_pipeline::alerts::Alerter;
use sluice_redis::{Connection, Keyspace};
use sluice_sink::{Drain, DrainConfig, SnapshotWriter};
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The consumer group and name the stack drains as.
pub const DRAIN_GROUP: &str = sluice_redis::snapshot_consumer::DEFAULT_GROUP;
pub const DRAIN_CONSUMER: &str = "sluice-dev";
/// How often the alert watcher looks at the drain's health.
const HEALTH_CHECK: Duration = Duration::from_secs(1);

/// The drain's database and settings.
#[derive(Debug, Clone)]
pub struct DrainSetup {
    pub pool: PgPool,
    /// `host:port/database`: what messages name (never the URL: it may
    /// hold a password).
    pub endpoint: String,
    pub config: DrainConfig,
    /// A drain failing this long raises an alert.
    pub alert_after: Duration,
}

/// The running drain.
#[derive(Debug)]
pub struct DrainTask {
    pub drain: Arc<Drain<Connection>>,
    pub endpoint: String,
    task: JoinHandle<()>,
}

impl DrainTask {
    /// Applies the migrations the database lacks, then drains until `stop`.
    pub async fn start(
        setup: DrainSetup,
        shop: &ShopService<Connection>,
        alerts: (Connection, Keyspace, Option<String>),
        stop: CancellationToken,
    ) -> anyhow::Result<Self> {
        sluice_sink::migrate(&setup.pool)
            .await
            .with_context(|| format!("applying sluice's migrations to postgresql at {}", setup.endpoint))?;
        let consumer = shop.snapshots().consumer(DRAIN_GROUP, DRAIN_CONSUMER)?;
        let writer = SnapshotWriter::new(setup.pool);
        let drain = Arc::new(Drain::new(consumer, writer, setup.config).with_traces(shop.traces().clone()));
        let (conn, keyspace, url) = alerts;
        let alerter = Alerter::new(conn, keyspace, url, setup.alert_after);
        let watcher = Watcher { endpoint: setup.endpoint.clone(), alert_after: setup.alert_after, alerter };
        let task = tokio::spawn({
            let drain = drain.clone();
            async move {
                // The drain finishes the batch in hand when `stop` fires;
                // the watcher only waits.
                tokio::join!(drain.run(stop.clone()), watcher.watch(&drain, stop.clone()));
            }
        });
        Ok(Self { drain, endpoint: setup.endpoint, task })
    }

    /// Entries not yet in PostgreSQL: delivered to no drain, or delivered
    /// and not acknowledged, over every shard.
    pub async fn behind(&self) -> anyhow::Result<u64> {
        let consumer = self.drain.consumer();
        let mut behind = 0;
        for shard in 0..consumer.shards() {
            let lag = consumer.lag(shard).await?;
            // Redis cannot always count the undelivered (entries deleted out
            // of order); an unacknowledged one still means behind.
            let undelivered = lag.undelivered.unwrap_or(u64::from(lag.oldest_unacknowledged.is_some()));
            behind += lag.pending + undelivered;
        }
        Ok(behind)
    }

    /// Waits for the drain to stop (its token cancelled).
    pub async fn join(self) {
        if let Err(e) = self.task.await {
            tracing::warn!(error = %e, "the drain task panicked");
        }
    }
}

struct Watcher {
    endpoint: String,
    alert_after: Duration,
    alerter: Alerter<Connection>,
}

impl Watcher {
    async fn watch(&self, drain: &Drain<Connection>, stop: CancellationToken) {
        let mut alerted = false;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(HEALTH_CHECK) => {}
            }
            match drain.health().failing() {
                Some((since, error)) if !alerted && since >= self.alert_after => {
                    let text = format!(
                        "sluice: the drain to PostgreSQL at {} has failed for {} s: {error}. Snapshots wait in \
                         Redis and are written once it recovers.",
                        self.endpoint,
                        since.as_secs()
                    );
                    self.alerter.alert("drain:postgresql", &text).await;
                    alerted = true;
                }
                None if alerted => {
                    let text = format!("sluice: the drain to PostgreSQL at {} writes again.", self.endpoint);
                    self.alerter.alert("drain:postgresql:recovered", &text).await;
                    alerted = false;
                }
                _ => {}
            }
        }
    }
}

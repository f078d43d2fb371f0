//! The drain worker: moves the snapshot streams into PostgreSQL.
//!
//! One pass over a shard: take this consumer's own unacknowledged entries
//! first (a batch the database refused last time), else entries another
//! consumer has held past `claim_idle` (it died), else new entries (the
//! first two are looked for only when there can be some, see
//! `ShardState`: in a steady flow a pass reads once); write
//! them in one transaction; acknowledge them and trim what every group
//! has acknowledged (one script: a pass is two Redis calls and one
//! PostgreSQL transaction in a steady flow). A failure anywhere before the acknowledgement leaves the
//! entries pending, to be taken again by this consumer or claimed by
//! another: nothing is acknowledged that is not committed.
//!
//! A round ([`Drain::round`]) passes over every shard in three stages
//! that run at once: reads up to two batches ahead of the write, one
//! write at a time, acknowledgements after it.
//!
//! [`Drain::run`] loops over the shards until cancelled, waiting
//! `idle_poll` when a whole round found nothing (a blocking read cannot
//! wait on several shards: on a cluster they live in different slots) and
//! backing off exponentially while PostgreSQL or Redis fails;
//! [`DrainHealth`] says since when, for the caller's alert.
//! [`Drain::until_empty`] is the scheduled function's body: drain until a
//! round finds nothing or the deadline nears.

use crate::batch::Batch;
pub use crate::drain_health::DrainHealth;
use crate::error::SinkError;
use crate::event_rows::Journeys;
pub use crate::pass_report::PassReport;
use crate::writer::{BatchOutcome, SnapshotWriter};
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_redis::{SnapshotConsumer, Traces};
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Rows whose events' traces are written at once after a batch.
const TRACE_ROWS_IN_FLIGHT: usize = 64;

/// How a drain worker reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainConfig {
    /// Entries per batch (one transaction).
    pub batch: usize,
    /// An entry another consumer has held this long is claimed: longer
    /// than any one batch's write takes.
    pub claim_idle: Duration,
    /// The wait after a round that found nothing.
    pub idle_poll: Duration,
    /// The longest wait between retries while a write keeps failing.
    pub max_backoff: Duration,
}

impl Default for DrainConfig {
    fn default() -> Self {
        Self {
            batch: 500,
            claim_idle: Duration::from_secs(30),
            idle_poll: Duration::from_millis(200),
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// What the read stage of a pass took from a shard, read into a batch.
#[derive(Debug)]
struct Taken {
    shard: u32,
    /// The entries' ids, to acknowledge once the batch is committed.
    ids: Vec<String>,
    batch: Batch,
    journeys: Journeys,
    claimed: u64,
    /// Entries acknowledged while reading (their fields were gone).
    acked: u64,
}

/// A batch committed and not yet acknowledged.
#[derive(Debug)]
struct Written {
    shard: u32,
    ids: Vec<String>,
    outcome: BatchOutcome,
    claimed: u64,
    acked: u64,
}

/// What a drain worker knows of one shard between its passes: what spares
/// a pass the reads that would find nothing (most passes, in a steady
/// flow: three reads a pass became one).
#[derive(Debug)]
struct ShardState {
    /// The group exists on the shard's stream.
    group_ready: AtomicBool,
    /// This consumer may hold entries of the shard it has not
    /// acknowledged: from before it took any until a pass acknowledged all
    /// it took, so a failure anywhere leaves it set.
    may_hold: AtomicBool,
    /// When this consumer last looked for entries to claim on the shard.
    claim_checked: Mutex<Option<Instant>>,
}

impl Default for ShardState {
    fn default() -> Self {
        Self { group_ready: AtomicBool::new(false), may_hold: AtomicBool::new(true), claim_checked: Mutex::new(None) }
    }
}

impl ShardState {
    /// Whether to look for entries to claim now: a quarter of `claim_idle`
    /// after the last look, so an entry is claimed at most that much later
    /// than it could be.
    fn claim_due(&self, claim_idle: Duration) -> bool {
        let mut checked = self.claim_checked.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let due = checked.is_none_or(|at| at.elapsed() >= claim_idle / 4);
        if due {
            *checked = Some(Instant::now());
        }
        due
    }
}

/// A drain worker: one consumer of the snapshot streams.
#[derive(Debug)]
pub struct Drain<C> {
    consumer: SnapshotConsumer<C>,
    writer: SnapshotWriter,
    traces: Option<Traces<C>>,
    config: DrainConfig,
    shards: Vec<ShardState>,
    health: DrainHealth,
}

impl<C: ConnectionLike + Clone + Send + Sync> Drain<C> {
    pub fn new(consumer: SnapshotConsumer<C>, writer: SnapshotWriter, config: DrainConfig) -> Self {
        let shards = (0..consumer.shards()).map(|_| ShardState::default()).collect();
        Self { consumer, writer, traces: None, config, shards, health: DrainHealth::default() }
    }

    /// Also records "written to PostgreSQL" in each answered event's trace.
    pub fn with_traces(mut self, traces: Traces<C>) -> Self {
        self.traces = Some(traces);
        self
    }

    pub fn health(&self) -> &DrainHealth {
        &self.health
    }

    pub fn consumer(&self) -> &SnapshotConsumer<C> {
        &self.consumer
    }

    /// One batch from `shard`, written, acknowledged and trimmed.
    pub async fn pass(&self, shard: u32) -> Result<PassReport, SinkError> {
        let taken = self.take(shard).await?;
        let written = self.write(taken).await?;
        self.acknowledge(written).await
    }

    /// The read stage of a pass: this consumer's own pending entries, else
    /// claimed ones, else new ones, read into a batch (with the traces of
    /// the events they concern, when the drain records journeys). Own
    /// entries are looked for only when it may hold some, claimable ones
    /// every quarter of `claim_idle`.
    async fn take(&self, shard: u32) -> Result<Taken, SinkError> {
        let state = &self.shards[shard as usize];
        if !state.group_ready.load(Ordering::Relaxed) {
            self.consumer.ensure_group(shard).await?;
            state.group_ready.store(true, Ordering::Relaxed);
        }
        let batch = self.config.batch;
        let (mut entries, mut claimed, mut acked) = (Vec::new(), 0, 0);
        if state.may_hold.load(Ordering::Relaxed) {
            entries = self.consumer.own_pending(shard, batch).await?;
            // Entries whose fields were trimmed away while pending (the
            // stream's MAXLEN cap) cannot be written: acknowledge them so
            // they stop coming back.
            let gone: Vec<String> = entries.extract_if(.., |e| e.fields.is_empty()).map(|e| e.id).collect();
            acked = self.consumer.ack(shard, &gone).await?;
        }
        // Whatever is read next is held until acknowledged, even if the
        // read itself fails after Redis delivered it.
        state.may_hold.store(true, Ordering::Relaxed);
        if entries.is_empty() && state.claim_due(self.config.claim_idle) {
            entries = self.consumer.claim_idle(shard, self.config.claim_idle, batch).await?;
            claimed = entries.len() as u64;
        }
        if entries.is_empty() {
            entries = self.consumer.new_entries(shard, batch).await?;
        }
        let ids = entries.iter().map(|e| e.id.clone()).collect();
        let batch = Batch::read(entries);
        let journeys = self.journeys(&batch).await;
        Ok(Taken { shard, ids, batch, journeys, claimed, acked })
    }

    /// The write stage of a pass: the batch in one transaction.
    async fn write(&self, taken: Taken) -> Result<Written, SinkError> {
        let Taken { shard, ids, batch, journeys, claimed, acked } = taken;
        let outcome = if ids.is_empty() {
            BatchOutcome::default()
        } else {
            let stream = self.consumer.stream_key(shard)?;
            self.writer.write_batch(stream, batch, &journeys).await?
        };
        Ok(Written { shard, ids, outcome, claimed, acked })
    }

    /// The last stage of a pass: the committed batch acknowledged, the
    /// stream trimmed, the events' traces told.
    async fn acknowledge(&self, written: Written) -> Result<PassReport, SinkError> {
        let Written { shard, ids, outcome, claimed, mut acked } = written;
        let holds_none = || self.shards[shard as usize].may_hold.store(false, Ordering::Relaxed);
        if ids.is_empty() {
            holds_none();
            return Ok(PassReport { acked, ..PassReport::default() });
        }
        let (now_acked, trimmed) = self.consumer.ack_and_trim(shard, &ids).await?;
        acked += now_acked;
        holds_none();
        self.trace(&outcome).await;
        Ok(PassReport {
            taken: ids.len() as u64,
            claimed,
            written: outcome.written.len() as u64,
            superseded: outcome.superseded.len() as u64,
            redelivered: outcome.redelivered.len() as u64,
            dead_lettered: outcome.outcomes.len() as u64,
            unreadable: outcome.unreadable as u64,
            acked,
            trimmed,
        })
    }

    /// One pass over every shard, its stages overlapped: the shards'
    /// batches are read (and parsed) ahead, written one after another,
    /// and acknowledged while the next is written. Each stage goes on as
    /// soon as it has work, not in step with the others, so PostgreSQL's
    /// connection goes from one transaction to the next without waiting
    /// for Redis or for this process. Never two stages of the same shard at
    /// once (a second read would return the batch being written as
    /// pending, to write twice); every stage of a round is done when it
    /// returns. A stage that fails stops those before it; what was
    /// written before the failure is still acknowledged.
    pub async fn round(&self) -> Result<PassReport, SinkError> {
        let shards = self.consumer.shards();
        // One batch waiting ahead of each stage: reads run at most two
        // batches ahead of the write.
        let (taken_tx, mut taken_rx) = tokio::sync::mpsc::channel::<Taken>(1);
        let (written_tx, mut written_rx) = tokio::sync::mpsc::channel::<Written>(1);
        let read = async move {
            for shard in 0..shards {
                let taken = self.take(shard).await?;
                if taken_tx.send(taken).await.is_err() {
                    break; // the write stage failed
                }
            }
            Ok::<_, SinkError>(())
        };
        let write = async move {
            while let Some(taken) = taken_rx.recv().await {
                let written = self.write(taken).await?;
                if written_tx.send(written).await.is_err() {
                    break; // the acknowledgement failed
                }
            }
            Ok::<_, SinkError>(())
        };
        let acknowledge = async move {
            let mut report = PassReport::default();
            while let Some(written) = written_rx.recv().await {
                report.add(self.acknowledge(written).await?);
            }
            Ok::<_, SinkError>(report)
        };
        let (read, write, report) = tokio::join!(read, write, acknowledge);
        read?;
        write?;
        report
    }

    /// Rounds until one finds nothing, or `deadline` is reached.
    pub async fn until_empty(&self, deadline: Instant) -> Result<PassReport, SinkError> {
        let mut total = PassReport::default();
        while Instant::now() < deadline {
            let round = self.round().await?;
            total.add(round);
            if round.taken == 0 {
                break;
            }
        }
        Ok(total)
    }

    /// Drains until `cancel`: rounds back to back while there is work,
    /// `idle_poll` apart when there is none, backing off while failing.
    pub async fn run(&self, cancel: CancellationToken) {
        let mut backoff = Duration::ZERO;
        while !cancel.is_cancelled() {
            let wait = match self.round().await {
                Ok(report) => {
                    self.health.recovered();
                    backoff = Duration::ZERO;
                    if report.taken == 0 { self.config.idle_poll } else { Duration::ZERO }
                }
                Err(e) => {
                    self.health.failed(&e);
                    backoff = (backoff * 2).clamp(Duration::from_millis(100), self.config.max_backoff);
                    tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "drain: batch not written; its entries stay pending");
                    backoff
                }
            };
            if !wait.is_zero() {
                tokio::select! {
                    () = cancel.cancelled() => break,
                    () = tokio::time::sleep(wait) => {}
                }
            }
        }
    }

    /// The traces of the events `entries` answer (or record as dead-lettered),
    /// read at once (a multiplexed connection sends the reads together).
    /// Best effort: an
    /// event whose trace cannot be read gets only the drain's outcome.
    async fn journeys(&self, batch: &Batch) -> Journeys {
        let Some(traces) = &self.traces else { return Journeys::new() };
        let ids: BTreeSet<&str> = batch.concerned_events().collect();
        let reads = ids.into_iter().map(|id| async move { (id.to_owned(), traces.read(id).await) });
        let read = futures::future::join_all(reads).await.into_iter().filter_map(|(id, read)| match read {
            Ok(trace) => (!trace.is_empty()).then_some((id, trace)),
            Err(e) => {
                tracing::debug!(error = %e, "drain: trace not read; the event log gets the drain's outcome only");
                None
            }
        });
        read.collect()
    }

    /// Best effort: the rows are committed whether or not the traces say
    /// so. A redelivered entry's trace gets the outcome its first pass
    /// committed: that pass died before it could record it.
    async fn trace(&self, outcome: &BatchOutcome) {
        use futures::StreamExt;
        let Some(traces) = &self.traces else { return };
        let rows = (outcome.written.iter().map(|row| ("written", row)))
            .chain(outcome.superseded.iter().map(|row| ("superseded", row)))
            .chain(outcome.redelivered.iter().map(|(row, stage)| (stage.as_str(), row)));
        // The rows' records in the air together (a batch is hundreds of
        // rows): one after another, each waited its own round trip and
        // wake-up, and the pass with it.
        // Collected first: a stream over a mapping closure would make the
        // caller's future not `Send` (the closure's lifetimes are not general).
        let records: Vec<_> = rows
            .map(|(stage, row)| {
                let resource = format!("{}/{}/{}", row.mall_id, row.kind, row.resource_id);
                let detail = json!({"sink": "postgresql", "version": row.version, "resource": resource});
                async move { traces.record_all(&row.event_ids, stage, &detail).await }
            })
            .collect();
        let mut records = futures::stream::iter(records).buffer_unordered(TRACE_ROWS_IN_FLIGHT);
        while let Some(recorded) = records.next().await {
            if let Err(e) = recorded {
                tracing::debug!(error = %e, "drain: trace not recorded");
            }
        }
    }
}

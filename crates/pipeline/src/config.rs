//! The pipeline's settings: one struct, read once (from flags in `sluice
//! dev`, from environment variables in Lambda), never per call.

use sluice_redis::BucketSpec;
use std::time::Duration;

/// How the steps behave.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineConfig {
    /// Each mall's Admin API bucket, as Cafe24 meters it (40, draining 2/s).
    pub bucket: BucketSpec,
    /// A budget wait up to this long is waited inside the step, exactly;
    /// longer ones go back to the state machine as a Wait state, whose
    /// seconds are whole (Step Functions allows no fractions).
    pub inline_wait_max: Duration,
    /// Most time one step invocation spends waiting in total, so a Lambda
    /// never idles long; past it the wait goes to the state machine.
    pub step_wait_budget: Duration,
    /// An access token this close to expiry is refreshed first.
    pub token_refresh_margin: Duration,
    /// Lease of the per-mall refresh lock; longer than one refresh call.
    pub refresh_lock_lease: Duration,
    /// The queue's maxReceiveCount, so a failure's trace can say whether
    /// the item will be retried or parked in the dead-letter queue.
    pub max_receive_count: u32,
    /// Streams the snapshots are spread over, by mall.
    pub snapshot_shards: u32,
    /// How many FIFO groups of one batch are processed at once.
    pub map_max_concurrency: u32,
    /// How long event traces are kept after their latest entry.
    pub trace_retention: Duration,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            bucket: BucketSpec::default(),
            inline_wait_max: Duration::from_secs(1),
            step_wait_budget: Duration::from_secs(5),
            token_refresh_margin: Duration::from_secs(60),
            refresh_lock_lease: Duration::from_secs(30),
            max_receive_count: 5,
            snapshot_shards: 16,
            map_max_concurrency: 10,
            trace_retention: sluice_redis::trace::DEFAULT_RETENTION,
        }
    }
}

//! A drain held against PostgreSQL's ceiling on a host whose speed drifts
//! by half within minutes (other tenants): each drain runs between two
//! COPYs of the same rows and is divided by their mean, and the run is
//! repeated: the median of the rounds is what the table shows (a single
//! pair gave 0.27 to 0.43 for the same code).

use crate::cpu::{self, Cpu};
use sluice_redis::{Connection, SnapshotStore, Traces};
use sluice_testkit::TestRedis;
use sqlx::PgPool;

/// Rounds per drain.
pub(crate) const ROUNDS: usize = 3;

/// One drain between two COPYs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paired {
    /// The drain's rows per second.
    pub rate: f64,
    /// The mean of the COPYs' rows per second, before and after it.
    pub ceiling: f64,
    /// The CPU the drain used: (drain, redis-server, PostgreSQL).
    pub cpu: Cpu,
}

impl Paired {
    pub(crate) fn ratio(&self) -> f64 {
        self.rate / self.ceiling
    }
}

/// [`ROUNDS`] drains with `consumers` (with `traces`: as deployed), the
/// median by ratio, and every round's ratio.
pub(crate) async fn median_of_rounds(
    redis: &TestRedis,
    store: &SnapshotStore<Connection>,
    pool: &PgPool,
    consumers: usize,
    traces: Option<&Traces<Connection>>,
    first_version: i64,
) -> (Paired, Vec<f64>) {
    let mut rounds = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        // Fresh entries each round (a version the store has not seen).
        super::fill(store, first_version + round as i64).await;
        super::reset(pool).await;
        let before_copy = super::copy_ceiling(pool).await;
        super::reset(pool).await;
        let before = cpu::now(redis, pool).await;
        let rate = super::drain_with(store, pool, consumers, traces).await;
        let cpu = cpu::now(redis, pool).await - before;
        let after_copy = super::copy_ceiling(pool).await;
        rounds.push(Paired { rate, ceiling: (before_copy + after_copy) / 2.0, cpu });
    }
    rounds.sort_by(|a, b| a.ratio().total_cmp(&b.ratio()));
    let ratios = rounds.iter().map(Paired::ratio).collect();
    (rounds[ROUNDS / 2], ratios)
}

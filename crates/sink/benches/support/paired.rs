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
    median_around_copies(
        redis,
        pool,
        // Fresh entries each round (a version the store has not seen).
        async |round| super::fill(store, first_version + round as i64).await,
        async || super::drain_with(store, pool, consumers, traces).await,
    )
    .await
}

/// [`ROUNDS`] rounds of `run` (rows per second), each after `prepare`
/// and between two COPYs, its CPU measured around `run` alone; the median
/// by ratio, and every round's ratio.
pub(crate) async fn median_around_copies(
    redis: &TestRedis,
    pool: &PgPool,
    mut prepare: impl AsyncFnMut(usize),
    mut run: impl AsyncFnMut() -> f64,
) -> (Paired, Vec<f64>) {
    let mut rounds = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        prepare(round).await;
        super::reset(pool).await;
        let before_copy = super::copy_ceiling(pool).await;
        super::reset(pool).await;
        let before = cpu::now(redis, pool).await;
        let rate = run().await;
        let cpu = cpu::now(redis, pool).await - before;
        let after_copy = super::copy_ceiling(pool).await;
        rounds.push(Paired { rate, ceiling: (before_copy + after_copy) / 2.0, cpu });
    }
    rounds.sort_by(|a, b| a.ratio().total_cmp(&b.ratio()));
    let ratios = rounds.iter().map(Paired::ratio).collect();
    (rounds[ROUNDS / 2], ratios)
}

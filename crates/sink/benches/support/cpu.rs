//! Where a benchmark's CPU went: this process (the drain), redis-server
//! and PostgreSQL (the postmaster and its backends), read from /proc. On a
//! machine shared with other work the wall clock says little; the CPU
//! seconds per 100,000 rows say what each part costs.

use sluice_testkit::TestRedis;
use sqlx::PgPool;

/// CPU seconds used so far: (drain, redis-server, postgresql).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cpu(pub f64, pub f64, pub f64);

impl std::ops::Sub for Cpu {
    type Output = Cpu;
    fn sub(self, o: Cpu) -> Cpu {
        Cpu(self.0 - o.0, self.1 - o.1, self.2 - o.2)
    }
}

/// (parent pid, user + system ticks of it and its waited-for children).
fn stat(pid: u32) -> Option<(u32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = text.rsplit_once(") ")?.1.split(' ').collect();
    let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    Some((fields.get(1)?.parse().ok()?, tick(11) + tick(12) + tick(13) + tick(14)))
}

/// `root` and its live children (PostgreSQL's backends; the ones that
/// exited are in the postmaster's children's ticks).
fn tree(root: u32) -> u64 {
    let children = std::fs::read_dir("/proc").into_iter().flatten().flatten().filter_map(|e| {
        let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
        stat(pid).filter(|(parent, _)| *parent == root).map(|(_, ticks)| ticks)
    });
    stat(root).map_or(0, |(_, ticks)| ticks) + children.sum::<u64>()
}

pub(crate) async fn now(redis: &TestRedis, pool: &PgPool) -> Cpu {
    let mut conn = redis.conn().await;
    let info: String = redis::cmd("INFO").arg("server").query_async(&mut conn).await.expect("INFO");
    let redis_pid = info.lines().find_map(|l| l.strip_prefix("process_id:")).and_then(|p| p.trim().parse().ok());
    let backend: i32 = sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(pool).await.expect("backend pid");
    let postmaster = stat(backend as u32).map_or(0, |(parent, _)| parent);
    // USER_HZ: 100 on Linux.
    let seconds = |ticks: u64| ticks as f64 / 100.0;
    Cpu(
        seconds(stat(std::process::id()).map_or(0, |(_, t)| t)),
        seconds(redis_pid.and_then(stat).map_or(0, |(_, t)| t)),
        seconds(tree(postmaster)),
    )
}

/// The machine's load average over the last minute.
pub(crate) fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split(' ').next().map(str::to_owned))
        .unwrap_or_default()
}

//! Figures from a redis-server's `INFO`, as the benchmarks read them:
//! its own CPU time (what a command costs the server, whoever sent it) and
//! the commands it has processed.

use redis::aio::ConnectionLike;
use std::time::Duration;

/// A numeric field (`used_cpu_user`, `total_commands_processed`, …) of an
/// `INFO` answer.
pub fn info_field(info: &str, name: &str) -> Option<f64> {
    info.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')).and_then(|v| v.trim().parse().ok())
}

/// The CPU time (user + system) in an `INFO cpu` answer.
pub fn cpu_time(info: &str) -> Duration {
    let field = |name| info_field(info, name).unwrap_or(0.0);
    Duration::from_secs_f64(field("used_cpu_user") + field("used_cpu_sys"))
}

/// The server's CPU time so far.
pub async fn server_cpu<C: ConnectionLike>(conn: &mut C) -> Duration {
    let info: String = redis::cmd("INFO").arg("cpu").query_async(conn).await.expect("INFO cpu");
    cpu_time(&info)
}

/// Commands the server has processed so far.
pub async fn commands_processed<C: ConnectionLike>(conn: &mut C) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query_async(conn).await.expect("INFO stats");
    info_field(&info, "total_commands_processed").unwrap_or(0.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_by_their_whole_name() {
        let info = "# CPU\r\nused_cpu_sys:1.5\r\nused_cpu_sys_children:9\r\nused_cpu_user:0.25\r\n";
        assert_eq!(cpu_time(info), Duration::from_millis(1750));
        assert_eq!(info_field(info, "used_cpu"), None);
    }
}

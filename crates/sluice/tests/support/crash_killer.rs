//! `crash_restart.rs`'s killer: the thread that `kill -9`s `sluice dev`
//! when told and starts it again in the same directory, the same way
//! every time, timing each restart.

use super::stack::{Proc, alive, listening, redis_server_in, sluice};
use anyhow::Context;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Each mall's Admin API bucket, in the sandbox and in sluice alike: small,
/// so the limiter paces the fetches.
pub(crate) const BUCKET_CAPACITY: u32 = 10;
pub(crate) const BUCKET_LEAK: u32 = 5;

/// The thread that kills and restarts sluice dev when told, and its channel.
pub(crate) struct Killer {
    pub(crate) kills: mpsc::Sender<usize>,
    pub(crate) thread: std::thread::JoinHandle<anyhow::Result<(Dev, Vec<Restart>)>>,
}

/// One kill and restart.
#[derive(Debug, Clone)]
pub(crate) struct Restart {
    pub(crate) after_change: usize,
    /// From the kill to the new process's `Ready.`.
    pub(crate) ready_after: Duration,
    pub(crate) ready_at: Instant,
    /// Whether the killed process's redis-server was still listening when
    /// the new process started (both then run on one directory).
    pub(crate) old_redis_up_at_restart: bool,
    /// From the kill until the killed process's redis-server stopped
    /// listening; `None` if it still listened 10 s after the restart.
    pub(crate) old_redis_gone_after: Option<Duration>,
    /// Messages the killed process held in flight that the new one says it
    /// returned to their queues (its `Returned N messages …` line).
    pub(crate) returned: u64,
}

pub(crate) fn killer(
    mut dev: Dev,
    start: DevStart,
    kills: mpsc::Receiver<usize>,
) -> anyhow::Result<(Dev, Vec<Restart>)> {
    let mut restarts = Vec::new();
    for after_change in kills {
        let old_redis = dev.redis_port;
        // Followed by its pid: once it is gone, another test's server may
        // take its port, and the port alone would say it outlived the kill.
        let old_server = redis_server_in(&start.workdir, old_redis)
            .with_context(|| format!("no redis-server on port {old_redis} runs in {}", start.workdir.display()))?;
        let gone = || !alive(old_server);
        let killed_at = Instant::now();
        dev.proc.signal("-KILL");
        dev.proc.wait(Duration::from_secs(10)).context("sluice dev did not die of SIGKILL in 10 s")?;
        let old_redis_up_at_restart = listening(old_redis);
        dev = start.spawn()?;
        let ready_at = Instant::now();
        let ready_after = ready_at - killed_at;
        let gone_deadline = Instant::now() + Duration::from_secs(10);
        while dev.redis_port != old_redis && !gone() && Instant::now() < gone_deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let old_redis_gone_after = (dev.redis_port == old_redis || gone()).then(|| killed_at.elapsed());
        let returned = dev.proc.seen.iter().find_map(|l| l.strip_prefix("Returned ")?.split(' ').next()?.parse().ok());
        restarts.push(Restart {
            after_change,
            ready_after,
            ready_at,
            old_redis_up_at_restart,
            old_redis_gone_after,
            returned: returned.unwrap_or(0),
        });
    }
    Ok((dev, restarts))
}

/// How to start sluice dev, the same way every time.
pub(crate) struct DevStart {
    pub(crate) workdir: PathBuf,
    pub(crate) ingest_port: u16,
    pub(crate) template: String,
    /// The drain's database; without one, `--no-drain`.
    pub(crate) database_url: Option<String>,
}

impl DevStart {
    pub(crate) fn spawn(&self) -> anyhow::Result<Dev> {
        let mut command = sluice(&self.workdir);
        command
            .args([
                "dev",
                "--ingest-port",
                &self.ingest_port.to_string(),
                "--sqs-port",
                "0",
                "--sfn-port",
                "0",
                "--metrics-port",
                "0",
            ])
            .args(["--cafe24-base-url", &self.template, "--cafe24-client-id", "sandbox-client"])
            .args(["--bucket-capacity", &BUCKET_CAPACITY.to_string()])
            .args(["--bucket-leak", &BUCKET_LEAK.to_string()])
            .env("SLUICE_CAFE24_CLIENT_SECRET", "sandbox-secret");
        match &self.database_url {
            Some(url) => command.args(["--database-url", url]),
            // The snapshot streams are checked: no drain may trim them.
            None => command.arg("--no-drain"),
        };
        let proc = Proc::spawn(&mut command)?;
        let line = proc.after("Redis: ");
        let redis_port = line
            .strip_prefix("private redis-server on 127.0.0.1:")
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|port| port.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("sluice dev did not start a private redis-server: {line:?}"))?;
        Ok(Dev { proc, redis_port })
    }
}

pub(crate) struct Dev {
    pub(crate) proc: Proc,
    pub(crate) redis_port: u16,
}

impl Dev {
    pub(crate) fn redis_url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.redis_port)
    }
}

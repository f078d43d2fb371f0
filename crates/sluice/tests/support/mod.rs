//! A `sluice dev` process for tests: started in a working directory of
//! its own, with free ports, its printed lines collected.

pub(crate) mod abuse;
pub(crate) mod crash_deliveries;
pub(crate) mod crash_figures;
pub(crate) mod crash_killer;
pub(crate) mod load;
pub(crate) mod local_sqs;
pub(crate) mod outage_stack;
pub(crate) mod redis_outage;
pub(crate) mod sink_rows;
pub(crate) mod stack;
pub(crate) mod upstreams;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Distinct per call, so tests running in parallel never share a data dir.
fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `sluice dev` and the lines it printed so far.
pub(crate) struct Dev {
    child: Child,
    lines: mpsc::Receiver<String>,
    pub seen: Vec<String>,
    /// A data dir this helper made up, removed on drop.
    made_dir: Option<std::path::PathBuf>,
    /// The process's working directory (it writes `.sluice/dev.json` there).
    pub workdir: std::path::PathBuf,
    /// The variables it was started with: `sluice trace` gets them too.
    env: Vec<(String, String)>,
}

impl Dev {
    pub(crate) fn start(redis_url: Option<&str>, extra: &[&str]) -> Self {
        Self::start_with_env(redis_url, extra, &[])
    }

    /// [`Self::start`] with `env` set too (`PGPORT`: where the default
    /// PostgreSQL is looked for).
    pub(crate) fn start_with_env(redis_url: Option<&str>, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sluice"));
        let private_dir = std::env::temp_dir().join(format!("sluice-dev-{}-{}", std::process::id(), rand_suffix()));
        let made_dir = (!extra.contains(&"--redis-dir")).then_some(private_dir);
        let mut extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        if let Some(dir) = &made_dir {
            extra.extend(["--redis-dir".to_owned(), dir.to_string_lossy().into_owned()]);
        }
        // Not the machine's PostgreSQL unless a test names one (a URL, or
        // where the default one is).
        let default_moved = env.iter().any(|(name, _)| *name == "PGPORT" || *name == "PGHOST");
        if !extra.iter().any(|a| a == "--database-url") && !default_moved {
            extra.push("--no-drain".to_owned());
        }
        let workdir = std::env::temp_dir().join(format!("sluice-dev-cwd-{}-{}", std::process::id(), rand_suffix()));
        std::fs::create_dir_all(&workdir).expect("work dir");
        command.current_dir(&workdir);
        command
            .args(["dev", "--sqs-port", "0", "--sfn-port", "0", "--ingest-port", "0", "--metrics-port", "0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .envs(env.iter().copied());
        match redis_url {
            Some(url) => command.env("SLUICE_REDIS_URL", url),
            None => command.env_remove("SLUICE_REDIS_URL"),
        };
        let mut child = command.spawn().expect("start sluice dev");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let env = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let mut dev = Self { child, lines, seen: Vec::new(), made_dir, workdir, env };
        dev.wait_for_line("Ready.");
        dev
    }

    pub(crate) fn wait_for_line(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(line) = self.seen.iter().find(|l| l.starts_with(prefix)) {
                return line.clone();
            }
            match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("sluice dev printed no {prefix:?} line; it printed: {:?}", self.seen),
            }
        }
    }

    /// The URL printed after `label: `.
    pub(crate) fn url(&mut self, label: &str) -> String {
        let line = self.wait_for_line(&format!("{label}: "));
        line[label.len() + 2..].to_owned()
    }

    /// `sluice trace ID` in this `sluice dev`'s directory: (exit code, stdout).
    pub(crate) fn trace(&self, event_id: &str) -> (Option<i32>, String) {
        self.trace_with_env(event_id, &[])
    }

    /// [`Self::trace`] with `env` set too (over the ones `sluice dev` got).
    pub(crate) fn trace_with_env(&self, event_id: &str, env: &[(&str, &str)]) -> (Option<i32>, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["trace", event_id])
            .current_dir(&self.workdir)
            .env_remove("SLUICE_REDIS_URL")
            .env_remove("SLUICE_DATABASE_URL")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .envs(env.iter().copied())
            .output()
            .expect("run sluice trace");
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `sluice trace` of `event_id`, polled until it shows the event stored
    /// (30 s at the most).
    pub(crate) async fn trace_once_stored(&self, event_id: &str) -> String {
        self.trace_until(event_id, "now: stored").await
    }

    /// `sluice trace` of `event_id`, polled until its output contains
    /// `wanted` (30 s at the most).
    pub(crate) async fn trace_until(&self, event_id: &str, wanted: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (code, output) = self.trace(event_id);
            if code == Some(0) && output.contains(wanted) {
                return output;
            }
            assert!(Instant::now() < deadline, "no {wanted:?} in 30 s; last trace:\n{output}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `sluice tokens set MALL` in this `sluice dev`'s directory, the token
    /// response on stdin.
    pub(crate) fn set_tokens(&self, mall: &str, tokens: &serde_json::Value) {
        use std::io::Write;
        let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["tokens", "set", mall, "--token-json", "-"])
            .current_dir(&self.workdir)
            .env_remove("SLUICE_REDIS_URL")
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sluice tokens set");
        child.stdin.take().expect("stdin").write_all(tokens.to_string().as_bytes()).expect("write tokens");
        let out = child.wait_with_output().expect("sluice tokens set");
        assert!(out.status.success(), "sluice tokens set: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Whether the process is still running (it has not exited or died).
    pub(crate) fn running(&mut self) -> bool {
        self.child.try_wait().expect("wait").is_none()
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill").args([signal, &self.child.id().to_string()]).status().expect("kill");
        assert!(status.success());
    }

    pub(crate) fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "sluice dev did not exit within {timeout:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = &self.made_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        let _ = std::fs::remove_dir_all(&self.workdir);
    }
}

//! Who holds a consumer lease, and whether that holder is verifiably dead.
//!
//! An owner is `<host>|<pid>|<token>`. The host is the machine's name and
//! its pid namespace (`/proc/self/ns/pid`), so two containers that share a
//! hostname but not their pids are never mistaken for one host. The token
//! is random per lease, so a restarted process whose pid was reused is
//! still a different owner.
//!
//! "Verifiably dead" is deliberately narrow: the holder is on this host
//! (same name, same pid namespace) and no process with its pid runs here
//! (a zombie counts as dead: it runs no code). Anything else — another
//! host, an unknown host identity, a pid that is alive (even if reused by
//! an unrelated process) — is treated as alive, and the lease is only taken
//! once it lapses.

use std::path::Path;
use std::sync::OnceLock;

/// The holder of a consumer lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseOwner {
    host: String,
    pid: u32,
    token: String,
}

impl LeaseOwner {
    /// This process, with a fresh token.
    pub fn this_process() -> Self {
        Self::on_this_host(std::process::id())
    }

    /// A process `pid` of this host, with a fresh token (tests use it to
    /// stand for a process that died).
    pub fn on_this_host(pid: u32) -> Self {
        Self::new(host_identity().unwrap_or_default(), pid)
    }

    /// A process `pid` of `host`, with a fresh token.
    pub fn new(host: impl Into<String>, pid: u32) -> Self {
        // '|' separates the fields; a host name never holds one, but keep
        // the encoding unambiguous whatever it is given.
        let host = host.into().replace('|', "/");
        Self { host, pid, token: format!("{:016x}", rand::random::<u64>()) }
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// As stored in the lease key.
    pub(crate) fn encode(&self) -> String {
        format!("{}|{}|{}", self.host, self.pid, self.token)
    }

    /// A stored owner; `None` for a value no sluice wrote.
    pub(crate) fn decode(value: &str) -> Option<Self> {
        let mut parts = value.rsplitn(3, '|');
        let token = parts.next()?.to_owned();
        let pid = parts.next()?.parse().ok()?;
        let host = parts.next()?.to_owned();
        Some(Self { host, pid, token })
    }

    /// On this host, and its process is gone.
    pub fn is_verifiably_dead(&self) -> bool {
        match host_identity() {
            Some(here) if !self.host.is_empty() && here == self.host => !pid_alive(self.pid),
            _ => false,
        }
    }
}

impl std::fmt::Display for LeaseOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = self.host.split('/').next().unwrap_or(&self.host);
        write!(f, "pid {} on {host}", self.pid)
    }
}

/// This machine's name and pid namespace, or `None` when the name cannot
/// be found out (then no holder is ever judged dead by its pid).
fn host_identity() -> Option<String> {
    static IDENTITY: OnceLock<Option<String>> = OnceLock::new();
    IDENTITY
        .get_or_init(|| {
            let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .or_else(|| std::env::var("HOSTNAME").ok())
                .or_else(|| command_output("hostname", &[]))?
                .trim()
                .to_owned();
            if name.is_empty() {
                return None;
            }
            let namespace =
                std::fs::read_link("/proc/self/ns/pid").map(|ns| ns.to_string_lossy().into_owned()).unwrap_or_default();
            Some(format!("{name}/{namespace}"))
        })
        .clone()
}

/// Whether a process `pid` runs on this host. Where it cannot be told,
/// the answer is "alive": taking a live consumer's messages is the one
/// mistake that must not happen.
fn pid_alive(pid: u32) -> bool {
    if Path::new("/proc/self/stat").exists() {
        return match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // State is the first field after the command's closing ')'.
            Ok(stat) => {
                !matches!(stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()), Some('Z' | 'X'))
            }
            Err(e) => e.kind() != std::io::ErrorKind::NotFound,
        };
    }
    // No /proc (macOS): `ps -p` answers for any user's process.
    match std::process::Command::new("ps").args(["-p", &pid.to_string(), "-o", "pid="]).output() {
        Ok(out) => out.status.success() || !out.stderr.is_empty(),
        Err(_) => true,
    }
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_round_trip_and_tell_dead_from_alive() {
        let me = LeaseOwner::this_process();
        assert_eq!(LeaseOwner::decode(&me.encode()), Some(me.clone()));
        assert_ne!(LeaseOwner::this_process(), me, "a fresh token each time");
        assert!(!me.is_verifiably_dead(), "this process is alive");
        let mut child = std::process::Command::new("true").spawn().expect("spawn true");
        child.wait().expect("wait");
        assert!(LeaseOwner::on_this_host(child.id()).is_verifiably_dead(), "a reaped child is dead");
        assert!(!LeaseOwner::new("elsewhere", child.id()).is_verifiably_dead(), "another host is never judged");
        assert_eq!(LeaseOwner::decode("garbage"), None);
    }
}

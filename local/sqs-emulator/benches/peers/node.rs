//! The Node side: `bench/peers` (package.json + lockfile), installed with
//! `npm ci` when its node_modules is missing, and its driver scripts run as
//! child processes against the bench's redis-server, one JSON line each.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};

pub(crate) fn peers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench/peers")
}

fn works(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Ready to run the peers, or one line saying what is missing.
pub(crate) fn ready() -> Result<String, String> {
    let dir = peers_dir();
    if !works("node") {
        return Err("node is not on PATH".into());
    }
    if !dir.join("node_modules").is_dir() {
        if !works("npm") {
            return Err(format!("npm is not on PATH and {} has no node_modules", dir.display()));
        }
        // npm's progress goes to stderr: stdout is the Markdown report.
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("npm ci could not start: {e}"))?;
        if !status.success() {
            return Err(format!("npm ci in {} failed ({status})", dir.display()));
        }
    }
    let out = Command::new("node").arg("--version").output().map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Runs `node <script> <args>` in bench/peers and parses its JSON line.
pub(crate) fn run(script: &str, args: &[String]) -> Value {
    let out = Command::new("node")
        .arg(script)
        .args(args)
        .current_dir(peers_dir())
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("node {script}: {e}"));
    assert!(out.status.success(), "node {script} {args:?} failed: {}", out.status);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("node {script}: not one JSON line: {e}"))
}

/// The version of an installed peer package, from its package.json.
pub(crate) fn version(package: &str) -> String {
    let path = peers_dir().join("node_modules").join(package).join("package.json");
    std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v["version"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

//! A reader that stops early (`sluice status | head`) ends the command
//! quietly: exit status 0, no panic message. The pipe's reading end is
//! closed before `sluice` writes its first line.

use sluice_testkit::TestRedis;
use std::io::Read;
use std::process::{Command, Stdio};

/// Runs `command` with its stdout a pipe nobody reads; returns its exit
/// status and stderr.
fn run_with_closed_stdout(mut command: Command) -> (Option<i32>, String) {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run sluice");
    drop(child.stdout.take());
    let mut stderr = String::new();
    child.stderr.take().expect("piped").read_to_string(&mut stderr).expect("read stderr");
    (child.wait().expect("wait").code(), stderr)
}

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

#[test]
fn asl_validate_exits_quietly_on_a_closed_stdout() {
    let dir = std::env::temp_dir().join(format!("sluice-closed-stdout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pass.asl.json");
    std::fs::write(&file, r#"{"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#).unwrap();
    let mut command = sluice();
    command.args(["asl", "validate", file.to_str().unwrap()]);
    let (status, stderr) = run_with_closed_stdout(command);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!((status, stderr.as_str()), (Some(0), ""));
}

#[test]
fn status_exits_quietly_on_a_closed_stdout() {
    let redis = TestRedis::new("closed_stdout");
    let mut command = sluice();
    command
        .arg("status")
        .current_dir(std::env::temp_dir())
        .env("SLUICE_REDIS_URL", redis.url())
        .env("SLUICE_KEY_PREFIX", redis.keyspace().prefix());
    for name in ["SLUICE_QUEUE_URL", "SLUICE_EVENTS_DLQ_URL", "SLUICE_FLUSH_QUEUE_URL", "SLUICE_FLUSH_DLQ_URL"] {
        command.env_remove(name);
    }
    let (status, stderr) = run_with_closed_stdout(command);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!((status, stderr.as_str()), (Some(0), ""));
}

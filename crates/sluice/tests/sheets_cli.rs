//! The sheet path's commands as a user runs them: the demo, and a Google
//! credential's tokens.

use sluice_testkit::TestRedis;
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn sluice(args: &[&str], redis: Option<&TestRedis>, stdin: &str) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sluice"));
    command.args(args).env_remove("SLUICE_REDIS_URL").env_remove("SLUICE_FLUSH_QUEUE_URL");
    if let Some(redis) = redis {
        command.env("SLUICE_REDIS_URL", redis.url()).env("SLUICE_KEY_PREFIX", redis.keyspace().prefix());
    }
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn demo_sheets_lands_every_row_exactly_once_within_the_quotas() {
    let out = sluice(
        &["demo", "sheets", "--rows", "200", "--spread-rows", "60", "--sheets", "2", "--clients", "20"],
        None,
        "",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("sheet 0: header 1x, 200 of 200 rows exactly once, 0 missing, 0 twice  [ok]"), "{stdout}");
    assert!(stdout.contains("sheet 2: header 1x, 30 of 30 rows exactly once"), "{stdout}");
    assert!(stdout.contains("answered 429: 0"), "{stdout}");
    assert!(stdout.contains("OK: every row exactly once"), "{stdout}");
}

#[test]
fn credentials_set_refuses_bad_input_with_exit_2_and_stores_a_good_one() {
    let redis = TestRedis::new("cli_credentials");
    let queue = ["--flush-queue-url", "http://127.0.0.1:9/000000000000/flush"];
    let set = |json: &str| {
        sluice(&[&["credentials", "set", "cred-1", "--token-json", "-"][..], &queue[..]].concat(), Some(&redis), json)
    };

    let out = set("not json");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a Google token response"));
    let out = set(r#"{"access_token":"ya29.a","expires_in":3599,"token_type":"Bearer"}"#);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no refresh_token"));
    let show = sluice(&["credentials", "show", "cred-1"], Some(&redis), "");
    assert_eq!(show.status.code(), Some(1), "nothing stored by a refused set");

    let out = set(
        r#"{"access_token":"ya29.secret-access","expires_in":3599,"token_type":"Bearer","refresh_token":"1//secret-refresh"}"#,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("0 held rows redriven"), "{stdout}");
    let show = sluice(&["credentials", "show", "cred-1"], Some(&redis), "");
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(show.status.success() && shown.contains("usable"), "{shown}");
    assert!(!shown.contains("secret") && !stdout.contains("secret"), "no token is ever printed");
}

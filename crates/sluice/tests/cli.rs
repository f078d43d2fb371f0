//! The `sluice` binary as a user runs it.

use std::process::Command;

fn sluice(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sluice")).args(args).env_remove("SLUICE_REDIS_URL").output().expect("run sluice")
}

#[test]
fn bad_arguments_exit_2_and_name_the_problem() {
    let out = sluice(&["demo", "primitives", "--callers", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--callers"), "{err}");
    let out = sluice(&["demo", "nonsense"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn demo_primitives_runs_against_a_private_redis_and_holds_the_limit() {
    let out = sluice(&["demo", "primitives", "--callers", "40", "--rate", "5", "--seconds", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("private redis-server on 127.0.0.1:"), "{stdout}");
    assert!(stdout.contains("Most in any rolling 1 s window (Redis timestamps): 5 of 5 allowed: held."), "{stdout}");
    assert!(stdout.contains("Lock: 1 of 40 callers"), "{stdout}");
    assert!(stdout.contains("Gate: 1 of 40 callers"), "{stdout}");
}

#[test]
fn an_invalid_rust_log_exits_2_and_says_what_to_give() {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["asl", "validate", "no-such-file.json"])
        .env("RUST_LOG", "sluice_sink=loud")
        .output()
        .expect("run sluice");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("sluice: RUST_LOG is invalid (") && err.contains("`warn`"), "{err}");
}

#[test]
fn an_unusable_redis_url_is_a_one_line_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["demo", "primitives", "--seconds", "1"])
        .env("SLUICE_REDIS_URL", "not-a-url")
        .output()
        .expect("run sluice");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("SLUICE_REDIS_URL is invalid: expected redis://host:port"), "{err}");
}

#[test]
fn demo_shops_runs_the_pipeline_and_every_invariant_holds() {
    let out = sluice(&["demo", "shops", "--malls", "3", "--products", "5", "--webhooks", "150", "--clients", "20"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    // Where PostgreSQL is installed the demo drains into a private one and checks it there.
    let checks: &[&str] = match stdout.contains("PostgreSQL: none") {
        true => &["events lost", "events stored twice", "upstream 429s", "resources whose stored state differs"],
        false => &[
            "events lost",
            "events recorded twice in sluice.events",
            "upstream 429s",
            "rows in sluice.snapshots that differ from Cafe24",
            "snapshots not yet drained to PostgreSQL",
        ],
    };
    assert_rows_ok(&stdout, checks);
}

/// Each of `checks` is a report row counting 0, `ok`; every invariant held.
fn assert_rows_ok(stdout: &str, checks: &[&str]) {
    for line in checks {
        let row = stdout.lines().find(|l| l.contains(line)).unwrap_or_else(|| panic!("no {line:?} row:\n{stdout}"));
        assert!(row.trim_end().ends_with("0  ok"), "{row}");
    }
    assert!(stdout.contains("Every invariant held."), "{stdout}");
}

#[tokio::test]
async fn demo_shops_checks_the_database_it_is_given() {
    let pg = sluice_testkit::postgres::TestPostgres::new("demo_shops").await;
    let url = pg.url.clone();
    let args = ["demo", "shops", "--malls", "2", "--products", "4", "--webhooks", "40", "--clients", "8"];
    let out = tokio::task::spawn_blocking(move || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sluice"));
        command.args(args).args(["--database-url", &url]).env_remove("SLUICE_REDIS_URL").output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let database = pg.url.rsplit('/').next().unwrap().to_owned();
    assert!(stdout.contains(&format!("PostgreSQL: 127.0.0.1:{}/{database}\n", pg.port())), "{stdout}");
    assert_rows_ok(
        &stdout,
        &["rows in sluice.snapshots that differ from Cafe24", "events recorded twice in sluice.events"],
    );
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM sluice.snapshots").fetch_one(&pg.pool).await.unwrap();
    assert!(rows > 0 && rows <= 8, "{rows} rows for 8 products");
    // Each row was written from a snapshot of its own, drained.
    let count = |name: &str| -> i64 {
        let row = stdout.lines().find(|l| l.contains(name)).unwrap_or_else(|| panic!("no {name:?} row:\n{stdout}"));
        row.split_whitespace().last().unwrap().parse().unwrap()
    };
    let drained = count("snapshots drained to PostgreSQL");
    assert!(drained >= rows && drained <= count("fetched from Cafe24"), "{drained} drained for {rows} rows:\n{stdout}");
}

#[test]
fn demo_shops_refuses_an_impossible_bucket_with_exit_2() {
    let out = sluice(&["demo", "shops", "--bucket-leak", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bucket-leak"));
}

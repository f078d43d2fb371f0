//! `sluice db migrate` against a private PostgreSQL: the tables appear, a
//! second run changes nothing, and a missing or bad URL is a one-line usage
//! error (exit 2) that never shows a password.

use sluice_testkit::postgres::TestPostgres;
use std::process::{Command, Output};

fn sluice(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .env_remove("SLUICE_DATABASE_URL")
        .env_remove("SLUICE_DATABASE_URL_SECRET_ARN")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn migrate_creates_the_tables_once() {
    let pg = TestPostgres::new("db_migrate").await;
    let out = sluice(&["db", "migrate"], &[("SLUICE_DATABASE_URL", &pg.url)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shipped = sluice_sink::schema::migrator().iter().count();
    let said = format!("schema sluice is up to date: {shipped} migration(s) applied");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), said);
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'sluice' ORDER BY 1",
    )
    .fetch_all(&pg.pool)
    .await
    .unwrap();
    assert_eq!(tables, ["_sqlx_migrations", "events", "snapshots", "unreadable_entries"]);
    let again = sluice(&["db", "migrate", "--database-url", &pg.url], &[]);
    assert!(again.status.success(), "{}", stderr(&again));
}

#[test]
fn no_database_or_a_bad_one_is_a_usage_error() {
    let none = sluice(&["db", "migrate"], &[]);
    assert_eq!(none.status.code(), Some(2));
    assert_eq!(stderr(&none).trim(), "sluice db migrate: no database: give --database-url or SLUICE_DATABASE_URL");
    let bad = sluice(&["db", "migrate"], &[("SLUICE_DATABASE_URL", "mysql://root:hunter2@db/x")]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).starts_with("sluice db migrate: SLUICE_DATABASE_URL is invalid"), "{}", stderr(&bad));
    assert!(!stderr(&bad).contains("hunter2"));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let down = sluice(&["db", "migrate", "--database-url", &format!("postgres://u:hunter2@127.0.0.1:{port}/db")], &[]);
    assert_eq!(down.status.code(), Some(1));
    assert!(
        stderr(&down).contains(&format!("cannot connect to postgresql at 127.0.0.1:{port}/db")),
        "{}",
        stderr(&down)
    );
    assert!(!stderr(&down).contains("hunter2"));
}

#[tokio::test]
async fn trace_falls_back_to_postgresql_once_the_redis_trace_is_gone() {
    let pg = TestPostgres::new("trace_fallback").await;
    let redis = sluice_testkit::TestRedis::new("trace_fallback");
    sluice_sink::migrate(&pg.pool).await.unwrap();
    let entry = sluice_redis::StoredEntry {
        id: "1700000000000-0".into(),
        fields: [
            ("mall_id", "m1"),
            ("kind", "product"),
            ("id", "7"),
            ("status", "found"),
            ("event_ids", r#"["ev-old"]"#),
            ("fetched_at_ms", "1700000000000"),
            ("body", "{}"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect(),
    };
    sluice_sink::SnapshotWriter::new(pg.pool.clone()).write("stream", vec![entry]).await.unwrap();
    let env = [
        ("SLUICE_REDIS_URL", redis.url()),
        ("SLUICE_KEY_PREFIX", redis.keyspace().prefix().to_owned()),
        ("SLUICE_DATABASE_URL", pg.url.clone()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = sluice(&["trace", "ev-old"], &env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", stderr(&out));
    assert!(stdout.contains("from PostgreSQL"), "{stdout}");
    assert!(stdout.contains("written") && stdout.contains("\"resource_id\":\"7\""), "{stdout}");
    let unknown = sluice(&["trace", "ev-never"], &env);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stdout).contains("not in PostgreSQL"));
}

//! The private redis-server that keeps a data directory: one server per
//! directory at a time, so a run started right after a killed one never
//! loads the append-only file while the old server still writes to it.

use sluice_private_servers::{RedisProcess, ServerOptions};
use std::sync::mpsc;
use std::time::Duration;

#[test]
fn a_second_server_on_the_same_directory_waits_for_the_first_to_stop() {
    let dir = std::env::temp_dir().join(format!("sluice-redis-lock-{}", std::process::id()));
    let options = ServerOptions { data_dir: Some(dir.clone()), ..ServerOptions::default() };
    let first = RedisProcess::start(options.clone()).unwrap();
    let (started, second) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = started.send(RedisProcess::start(options));
    });
    // An upper bound, not a synchronisation: the second must not be up
    // while the first runs, however long we look.
    assert!(second.recv_timeout(Duration::from_millis(700)).is_err(), "two servers on one directory");
    drop(first);
    let second = second.recv_timeout(Duration::from_secs(15)).expect("started once the first stopped").unwrap();
    let mut conn = redis::Client::open(second.url()).unwrap().get_connection().unwrap();
    let pong: String = redis::cmd("PING").query(&mut conn).unwrap();
    assert_eq!(pong, "PONG");
    drop(second);
    std::fs::remove_dir_all(&dir).unwrap();
}

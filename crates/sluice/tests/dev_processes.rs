//! `sluice dev --functions processes` as a user runs it: the banner says
//! so, a webhook is answered by the ingest binary, and when `sluice dev`
//! is killed outright (`kill -9`, no destructor runs) its function
//! processes end by themselves: their Runtime API went with it.

use crate::support;

use sluice_lambda_runtime::{FunctionBinaries, Template};
use sluice_testkit::processes::{children, is_gone};
use std::time::{Duration, Instant};
use support::Dev;

#[tokio::test]
async fn dev_runs_the_functions_as_processes_and_none_outlives_it() {
    let binaries = FunctionBinaries::for_tests(&Template::bundled().unwrap().binaries());
    let dir = binaries.dir().to_str().expect("a UTF-8 path").to_owned();
    let mut dev = Dev::start(None, &["--functions", "processes", "--functions-dir", &dir, "--sandbox-mall", "acme"]);
    let banner = dev.wait_for_line("Functions: ");
    assert!(banner.starts_with("Functions: processes") && banner.contains(&dir), "{banner}");

    let answer = sluice_http::client()
        .post(dev.url("Ingest"))
        .header("X-API-Key", "sluice-dev")
        .header("X-Trace-ID", "t-1")
        .body(r#"{"event_no":90002,"resource":{"mall_id":"acme","product_no":1}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202, "{}", answer.text().await.unwrap_or_default());
    let functions = children(dev.pid(), "sluice-fn-");
    assert!(!functions.is_empty(), "the ingest binary answered as a child process");

    dev.signal("-KILL");
    dev.wait(Duration::from_secs(10));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !functions.iter().all(|pid| is_gone(*pid)) {
        assert!(Instant::now() < deadline, "function processes outlived sluice dev: {functions:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

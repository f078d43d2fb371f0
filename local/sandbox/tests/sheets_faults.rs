//! Fault injection in the Sheets sandbox over real HTTP: queued statuses,
//! "applied, but the response timed out", "applied, but reported failed",
//! token endpoint faults, and the probabilistic plan.

use crate::sheets_support;

use serde_json::json;
use sheets_support::{FIRST_GID, Fixture, SPREADSHEET, bounded};
use sluice_sandbox::sheets::RecordedFault;
use sluice_sandbox::{FaultConfig, SheetsFault, SheetsOp, SheetsSandboxConfig, TimeoutMode};
use std::time::{Duration, Instant};

#[tokio::test]
async fn status_faults_answer_their_status_and_apply_nothing() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        f.sandbox.inject(SheetsFault::Status { op: SheetsOp::ValuesAppend, status: 503, times: 2 });
        f.sandbox.inject(SheetsFault::Status { op: SheetsOp::ValuesGet, status: 429, times: 1 });
        for _ in 0..2 {
            let reply = f.append(&f.access_token, "Sheet1", "RAW", json!([["x"]])).await;
            assert_eq!(reply.status, 503);
            assert_eq!(reply.body["error"]["status"], "UNAVAILABLE");
        }
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, FIRST_GID), Some(vec![]));
        let reply = f.get(&f.access_token, "Sheet1", "").await;
        assert_eq!(reply.status, 429);
        assert_eq!(reply.body["error"]["details"][0]["metadata"]["quota_limit"], "ReadRequestsPerMinutePerUser");
        assert_eq!(f.append(&f.access_token, "Sheet1", "RAW", json!([["x"]])).await.status, 200);
        assert_eq!(f.control(reqwest::Method::GET, "/faults", None).await.body, json!([]));
        let faulted: Vec<_> = f.sandbox.calls().into_iter().filter(|c| c.fault.is_some()).collect();
        assert_eq!(faulted.len(), 3);
        // Past the quota check, so counted; nothing applied.
        assert!(faulted.iter().all(|c| c.counted && !c.applied && c.fault == Some(RecordedFault::Status)));
    })
    .await;
}

#[tokio::test]
async fn apply_then_hold_writes_the_rows_and_times_the_client_out_without_holding_up_others() {
    bounded(async {
        // The polling reads below must not run into the read quota.
        let roomy = SheetsSandboxConfig { read_per_user: 1_000_000, read_per_project: 1_000_000, ..Default::default() };
        let f = Fixture::start(roomy).await;
        let hold = Duration::from_secs(30);
        f.sandbox.inject(SheetsFault::ApplyThenHold { op: SheetsOp::ValuesAppend, hold });
        let impatient = sluice_http::builder().timeout(Duration::from_millis(1000)).build().unwrap();
        let url = format!("{}:append?valueInputOption=RAW&insertDataOption=INSERT_ROWS", f.values_url("Sheet1"));
        let held = impatient.post(url).bearer_auth(&f.access_token).json(&json!({"values": [["held"]]})).send();
        let others = async {
            // While the append's answer is held, other calls are answered
            // (their answers show the held row was written).
            loop {
                let reply = f.get(&f.access_token, "Sheet1", "").await;
                if reply.body.get("values").is_some() {
                    return (Instant::now(), reply);
                }
                tokio::task::yield_now().await;
            }
        };
        let started = Instant::now();
        let (held, (seen_at, reply)) = tokio::join!(held, others);
        let error = held.expect_err("the client times out");
        assert!(error.is_timeout(), "{error:?}");
        assert!(seen_at.duration_since(started) < Duration::from_millis(1000), "others waited for the hold");
        assert_eq!(reply.body["values"], json!([["held"]]));
        let append = f.sandbox.calls().into_iter().find(|c| c.op == SheetsOp::ValuesAppend).unwrap();
        assert_eq!((append.status, append.applied, append.rows), (200, true, 1));
        assert_eq!(append.fault, Some(RecordedFault::ApplyThenHold));
        // The next append is not held.
        assert_eq!(f.append(&f.access_token, "Sheet1", "RAW", json!([["next"]])).await.status, 200);
    })
    .await;
}

#[tokio::test]
async fn apply_then_status_writes_the_rows_but_reports_failure() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        f.sandbox.inject(SheetsFault::ApplyThenStatus { op: SheetsOp::ValuesUpdate, status: 500 });
        let reply = f.update(&f.access_token, "Sheet1!A1", "RAW", json!([["written anyway"]])).await;
        assert_eq!((reply.status, reply.body["error"]["status"].as_str()), (500, Some("INTERNAL")));
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, FIRST_GID), Some(vec![vec![json!("written anyway")]]));
        let call = f.sandbox.calls().pop().unwrap();
        assert_eq!((call.status, call.applied, call.counted), (500, true, true));
        assert_eq!(call.fault, Some(RecordedFault::ApplyThenStatus));
    })
    .await;
}

#[tokio::test]
async fn token_endpoint_faults_answer_oauth_errors_or_issue_anyway() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        f.sandbox.inject(SheetsFault::Status { op: SheetsOp::Token, status: 503, times: 1 });
        f.sandbox.inject(SheetsFault::ApplyThenStatus { op: SheetsOp::Token, status: 500 });
        let reply = f.refresh(&f.refresh_token).await;
        assert_eq!((reply.status, reply.body["error"].as_str()), (503, Some("temporarily_unavailable")));
        let reply = f.refresh(&f.refresh_token).await;
        assert_eq!((reply.status, reply.body["error"].as_str()), (500, Some("server_error")));
        assert_eq!(f.refresh(&f.refresh_token).await.status, 200);
        let tokens: Vec<(u16, bool)> =
            f.sandbox.calls().iter().filter(|c| c.op == SheetsOp::Token).map(|c| (c.status, c.applied)).collect();
        assert_eq!(tokens, [(200, true), (503, false), (500, true), (200, true)]);
    })
    .await;
}

#[tokio::test]
async fn probabilistic_faults_fail_calls_before_they_apply() {
    bounded(async {
        let faults = FaultConfig { server_error_rate: 1.0, ..FaultConfig::default() };
        let f = Fixture::start(SheetsSandboxConfig { faults, ..SheetsSandboxConfig::default() }).await;
        let reply = f.append(&f.access_token, "Sheet1", "RAW", json!([["x"]])).await;
        assert_eq!((reply.status, reply.body["error"]["status"].as_str()), (500, Some("INTERNAL")));
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, FIRST_GID), Some(vec![]));
        // A queued fault wins over the plan.
        f.sandbox.inject(SheetsFault::ApplyThenStatus { op: SheetsOp::ValuesAppend, status: 502 });
        assert_eq!(f.append(&f.access_token, "Sheet1", "RAW", json!([["y"]])).await.status, 502);
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, FIRST_GID), Some(vec![vec![json!("y")]]));

        let drop = FaultConfig { timeout_rate: 1.0, timeout_mode: TimeoutMode::Drop, ..FaultConfig::default() };
        f.sandbox.set_faults(drop).unwrap();
        let url = format!("{}:append?valueInputOption=RAW", f.values_url("Sheet1"));
        let response = f.http.post(url).bearer_auth(&f.access_token).json(&json!({"values": [["z"]]})).send().await;
        // The connection breaks inside the body: depending on when the
        // client notices, before or after it has read the status line.
        let broken = match response {
            Ok(response) => response.bytes().await.err(),
            Err(error) => Some(error),
        };
        assert!(broken.is_some(), "the answer breaks off");
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, FIRST_GID).unwrap().len(), 1);

        f.sandbox.set_faults(FaultConfig::default()).unwrap();
        assert_eq!(f.append(&f.access_token, "Sheet1", "RAW", json!([["z"]])).await.status, 200);
        let faults: Vec<_> = f.sandbox.calls().iter().filter_map(|c| c.fault).collect();
        assert_eq!(
            faults,
            [RecordedFault::ServerError, RecordedFault::ApplyThenStatus, RecordedFault::Timeout(TimeoutMode::Drop)]
        );
    })
    .await;
}

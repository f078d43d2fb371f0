//! The Sheets sandbox's quotas over real HTTP: exact sliding windows per
//! user and per project, reads apart from writes, Google's 429 body, and
//! what counts.

use crate::sheets_support;

use serde_json::json;
use sheets_support::{CLIENT_ID, FIRST_GID, Fixture, SPREADSHEET, USER, bounded};
use sluice_sandbox::{SheetsOp, SheetsSandboxConfig};
use std::time::Duration;

const WINDOW: Duration = Duration::from_secs(2);

fn config(write_per_user: u32, write_per_project: u32, read_per_user: u32) -> SheetsSandboxConfig {
    SheetsSandboxConfig {
        write_per_user,
        write_per_project,
        read_per_user,
        quota_window: WINDOW,
        project_number: 555,
        ..SheetsSandboxConfig::default()
    }
}

#[tokio::test]
async fn writes_past_the_user_quota_get_429_until_the_window_has_passed() {
    bounded(async {
        let f = Fixture::start(config(3, 300, 60)).await;
        let t = &f.access_token;
        for i in 0..3 {
            let reply = f.append(t, "Sheet1", "RAW", json!([[i]])).await;
            assert_eq!(reply.status, 200, "{:?}", reply.body);
        }
        let reply = f.append(t, "Sheet1", "RAW", json!([["refused"]])).await;
        assert_eq!(reply.status, 429, "{:?}", reply.body);
        assert!(reply.headers.get("retry-after").is_none());
        let error = &reply.body["error"];
        assert_eq!((error["code"].as_u64(), error["status"].as_str()), (Some(429), Some("RESOURCE_EXHAUSTED")));
        assert_eq!(
            error["message"],
            "Quota exceeded for quota metric 'Write requests' and limit 'Write requests per minute per user' of \
             service 'sheets.googleapis.com' for consumer 'project_number:555'."
        );
        let info = &error["details"][0];
        assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
        assert_eq!(
            (info["reason"].as_str(), info["domain"].as_str()),
            (Some("RATE_LIMIT_EXCEEDED"), Some("googleapis.com"))
        );
        let metadata = &info["metadata"];
        assert_eq!(metadata["quota_limit"], "WriteRequestsPerMinutePerUser");
        assert_eq!(metadata["quota_metric"], "sheets.googleapis.com/write_requests");
        assert_eq!(metadata["quota_limit_value"], "3");
        assert_eq!(
            (metadata["consumer"].as_str(), metadata["service"].as_str()),
            (Some("projects/555"), Some("sheets.googleapis.com"))
        );
        // Reads have their own quota.
        assert_eq!(f.get(t, "Sheet1", "").await.status, 200);

        // The refusal did not count: once the first write leaves the window
        // (on the sandbox's clock), one more is accepted.
        let appends = |calls: Vec<sluice_sandbox::SheetsCall>| {
            calls.into_iter().filter(|c| c.op == SheetsOp::ValuesAppend).collect::<Vec<_>>()
        };
        let before = appends(f.sandbox.calls());
        assert_eq!((before[3].status, before[3].counted, before[3].applied), (429, false, false));
        tokio::time::sleep((before[0].at + WINDOW).saturating_sub(f.sandbox.clock())).await;
        assert_eq!(f.append(t, "Sheet1", "RAW", json!([["after the window"]])).await.status, 200);
        let held = f.sandbox.sheet_values(SPREADSHEET, FIRST_GID).unwrap();
        assert_eq!(held, vec![vec![json!(0)], vec![json!(1)], vec![json!(2)], vec![json!("after the window")]]);
        // The next is refused exactly while the second write is still in
        // its window.
        let status = f.append(t, "Sheet1", "RAW", json!([["next"]])).await.status;
        let next = appends(f.sandbox.calls()).pop().unwrap();
        assert_eq!(status, if next.at < before[1].at + WINDOW { 429 } else { 200 });
        assert_eq!(f.sandbox.max_accepted_writes_in(WINDOW, Some(USER)), 3);
    })
    .await;
}

#[tokio::test]
async fn a_concurrent_burst_is_cut_at_the_limit_exactly() {
    bounded(async {
        let f = Fixture::start(config(5, 300, 60)).await;
        let appends = (0..20).map(|i| f.append(&f.access_token, "Sheet1", "RAW", json!([[i]])));
        let statuses: Vec<u16> = futures::future::join_all(appends).await.iter().map(|r| r.status).collect();
        assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 5, "{statuses:?}");
        assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 15, "{statuses:?}");
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, FIRST_GID).unwrap().len(), 5);
        assert_eq!(f.sandbox.max_accepted_writes_in(WINDOW, None), 5);
    })
    .await;
}

#[tokio::test]
async fn the_project_quota_spans_its_users() {
    bounded(async {
        let f = Fixture::start(config(3, 4, 60)).await;
        for i in 0..3 {
            assert_eq!(f.append(&f.access_token, "Sheet1", "RAW", json!([[i]])).await.status, 200);
        }
        let bob = f.access_token_for(&f.sandbox.add_user(CLIENT_ID, "bob")).await;
        assert_eq!(f.append(&bob, "Sheet1", "RAW", json!([["bob"]])).await.status, 200);
        let reply = f.append(&bob, "Sheet1", "RAW", json!([["bob again"]])).await;
        assert_eq!(reply.status, 429);
        let metadata = &reply.body["error"]["details"][0]["metadata"];
        assert_eq!(
            (metadata["quota_limit"].as_str(), metadata["quota_limit_value"].as_str()),
            (Some("WriteRequestsPerMinutePerProject"), Some("4"))
        );

        // Another project (client) has its own budget.
        f.sandbox.add_client("other-project", "other-secret");
        let carol = f.sandbox.add_user("other-project", "carol");
        let reply = f
            .token_request(&[
                ("grant_type", "refresh_token"),
                ("client_id", "other-project"),
                ("client_secret", "other-secret"),
                ("refresh_token", &carol),
            ])
            .await;
        let carol = reply.body["access_token"].as_str().unwrap().to_owned();
        assert_eq!(f.append(&carol, "Sheet1", "RAW", json!([["carol"]])).await.status, 200);
    })
    .await;
}

#[tokio::test]
async fn reads_count_against_the_read_quota_including_spreadsheet_get() {
    bounded(async {
        let f = Fixture::start(config(60, 300, 2)).await;
        let t = &f.access_token;
        assert_eq!(f.spreadsheet(t, SPREADSHEET).await.status, 200);
        assert_eq!(f.get(t, "Sheet1", "").await.status, 200);
        let reply = f.get(t, "Sheet1", "").await;
        assert_eq!(reply.status, 429);
        assert_eq!(reply.body["error"]["details"][0]["metadata"]["quota_limit"], "ReadRequestsPerMinutePerUser");
        assert_eq!(f.append(t, "Sheet1", "RAW", json!([["write"]])).await.status, 200);
    })
    .await;
}

#[tokio::test]
async fn unauthenticated_calls_and_errors_after_the_quota_check_count_as_recorded() {
    bounded(async {
        let f = Fixture::start(config(2, 300, 60)).await;
        assert_eq!(f.append("ya29.bogus", "Sheet1", "RAW", json!([["x"]])).await.status, 401);
        // A 400 was accepted by the quota check, so it counts.
        assert_eq!(f.append(&f.access_token, "'Nope'!A1", "RAW", json!([["x"]])).await.status, 400);
        assert_eq!(f.append(&f.access_token, "Sheet1", "RAW", json!([["x"]])).await.status, 200);
        assert_eq!(f.append(&f.access_token, "Sheet1", "RAW", json!([["x"]])).await.status, 429);
        let counted: Vec<(u16, bool)> = f
            .sandbox
            .calls()
            .iter()
            .filter(|c| c.op == SheetsOp::ValuesAppend)
            .map(|c| (c.status, c.counted))
            .collect();
        assert_eq!(counted, [(401, false), (400, true), (200, true), (429, false)]);
    })
    .await;
}

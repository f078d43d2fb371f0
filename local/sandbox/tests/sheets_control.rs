//! The Sheets sandbox's call record and its `/sandbox/sheets/…` control
//! plane, over real HTTP.

use crate::sheets_support;

use reqwest::Method;
use serde_json::json;
use sheets_support::{CLIENT_ID, FIRST_GID, Fixture, SPREADSHEET, USER, bounded};
use sluice_sandbox::{SheetsCall, SheetsOp};

#[tokio::test]
async fn the_record_tells_who_did_what_and_what_it_was_told() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        f.append(&f.access_token, "'Sheet1'!A1", "RAW", json!([["a"], ["b"]])).await;
        f.get(&f.access_token, "Sheet1!A1:A", "").await;
        f.get("ya29.nobody", "Sheet1", "").await;
        let calls = f.sandbox.calls();
        let seqs: Vec<u64> = calls.iter().map(|c| c.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
        assert!(calls.windows(2).all(|w| w[0].at <= w[1].at), "records are in time order");
        let user = Some(USER.to_owned());
        let client = Some(CLIENT_ID.to_owned());
        let expect = |op, range: Option<&str>, status, rows, applied, counted| SheetsCall {
            seq: 0,
            at: Default::default(),
            op,
            user: if status == 401 { None } else { user.clone() },
            client_id: if status == 401 { None } else { client.clone() },
            spreadsheet_id: range.map(|_| SPREADSHEET.to_owned()),
            range: range.map(str::to_owned),
            status,
            rows,
            applied,
            counted,
            fault: None,
        };
        let expected = [
            expect(SheetsOp::Token, None, 200, 0, true, false),
            expect(SheetsOp::ValuesAppend, Some("'Sheet1'!A1"), 200, 2, true, true),
            expect(SheetsOp::ValuesGet, Some("Sheet1!A1:A"), 200, 2, true, true),
            expect(SheetsOp::ValuesGet, Some("Sheet1"), 401, 0, false, false),
        ];
        for (call, expected) in calls.iter().zip(expected) {
            assert_eq!(SheetsCall { seq: 0, at: Default::default(), ..call.clone() }, expected);
        }
        assert_eq!(f.sandbox.calls_after(3).len(), 1);
    })
    .await;
}

#[tokio::test]
async fn the_control_plane_drives_the_sandbox() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let created = f
            .control(
                Method::POST,
                "/spreadsheets",
                Some(json!({"spreadsheet_id": "ops", "sheets": [{"gid": 3, "title": "Log"}]})),
            )
            .await;
        assert_eq!(created.status, 201, "{:?}", created.body);
        let clash = json!({"spreadsheet_id": "bad", "sheets": [{"gid": 1, "title": "A"}, {"gid": 1, "title": "B"}]});
        assert_eq!(f.control(Method::POST, "/spreadsheets", Some(clash)).await.status, 400);
        let client = json!({"client_id": "cli", "client_secret": "cli-secret"});
        assert_eq!(f.control(Method::POST, "/clients", Some(client)).await.status, 201);
        let user = f.control(Method::POST, "/users", Some(json!({"client_id": "cli", "user": "dan"}))).await;
        let refresh_token = user.body["refresh_token"].as_str().unwrap().to_owned();
        let form = [("grant_type", "refresh_token"), ("client_id", "cli"), ("client_secret", "cli-secret")];
        let granted = f.token_request(&[&form[..], &[("refresh_token", refresh_token.as_str())]].concat()).await;
        let token = granted.body["access_token"].as_str().unwrap().to_owned();

        let url = format!("{}/v4/spreadsheets/ops/values/Log:append?valueInputOption=RAW", f.sandbox.base_url());
        let response =
            f.http.post(url).bearer_auth(&token).json(&json!({"values": [["hello", 1]]})).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let values = f.control(Method::GET, "/spreadsheets/ops/sheets/3/values", None).await;
        assert_eq!(values.body, json!({"values": [["hello", 1]]}));
        assert_eq!(f.control(Method::GET, "/spreadsheets/ops/sheets/9/values", None).await.status, 404);
        let listed = f.control(Method::GET, "/spreadsheets", None).await;
        assert_eq!(listed.body[1]["sheets"][0], json!({"gid": 3, "title": "Log", "rows": 1}));

        let fault = json!({"status": {"op": "values_get", "status": 503}});
        assert_eq!(f.control(Method::POST, "/faults", Some(fault)).await.status, 200);
        let bad_fault = json!({"status": {"op": "values_get", "status": 200}});
        assert_eq!(f.control(Method::POST, "/faults", Some(bad_fault)).await.status, 400);
        assert_eq!(f.control(Method::GET, "/faults", None).await.body.as_array().map(Vec::len), Some(1));
        assert_eq!(f.get(&f.access_token, "Sheet1", "").await.status, 503);

        assert_eq!(f.control(Method::POST, &format!("/users/{USER}/expire"), None).await.status, 200);
        assert_eq!(f.get(&f.access_token, "Sheet1", "").await.status, 401);
        assert_eq!(f.control(Method::POST, &format!("/users/{USER}/revoke"), None).await.status, 200);
        assert_eq!(f.refresh(&f.refresh_token).await.body["error"], "invalid_grant");

        let denied = f.control(Method::POST, "/spreadsheets/ops/deny", Some(json!({"user": "dan"}))).await;
        assert_eq!(denied.status, 200);
        let response = f
            .http
            .get(format!("{}/v4/spreadsheets/ops", f.sandbox.base_url()))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403);
        assert_eq!(
            f.control(Method::DELETE, &format!("/spreadsheets/{SPREADSHEET}/sheets/{FIRST_GID}"), None).await.status,
            200
        );
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, FIRST_GID), None);

        let calls = f.control(Method::GET, "/calls?after=1", None).await;
        let first = &calls.body[0];
        assert_eq!((first["seq"].as_u64(), first["op"].as_str()), (Some(2), Some("token")));
        assert!(first["at_secs"].is_f64());
    })
    .await;
}

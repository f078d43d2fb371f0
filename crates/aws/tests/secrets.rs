//! `SecretsReader` against a Secrets Manager stand-in speaking the
//! service's JSON protocol (`awsJson1_1`, `X-Amz-Target:
//! secretsmanager.GetSecretValue`): the one part of the cold start that
//! is AWS itself. It answers the secrets it holds as the service does and
//! the others with the service's `ResourceNotFoundException`.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use sluice_aws::{SecretsError, SecretsReader};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const ARN: &str = "arn:aws:secretsmanager:ap-northeast-2:123456789012:secret:sluice-api-keys-AbCdEf";
const CACHE_ARN: &str = "arn:aws:secretsmanager:ap-northeast-2:123456789012:secret:sluice-cache-AbCdEf";

/// The secrets it holds, and the `X-Amz-Target` of every call made to it.
#[derive(Debug)]
struct StandIn {
    held: HashMap<&'static str, &'static str>,
    targets: Mutex<Vec<String>>,
}

async fn secrets_manager(
    State(stand_in): State<Arc<StandIn>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, HeaderMap, String) {
    let target = headers.get("x-amz-target").and_then(|t| t.to_str().ok()).unwrap_or_default();
    stand_in.targets.lock().unwrap().push(target.to_owned());
    assert_eq!(target, "secretsmanager.GetSecretValue");
    assert!(headers.contains_key("authorization"), "the SDK signs every call");
    let request: Value = serde_json::from_slice(&body).unwrap();
    let id = request["SecretId"].as_str().unwrap();
    let mut out = HeaderMap::new();
    out.insert("content-type", "application/x-amz-json-1.1".parse().unwrap());
    match stand_in.held.get(id) {
        Some(value) => {
            let answer = json!({
                "ARN": id, "Name": "sluice", "SecretString": value, "VersionId": "v1",
                "VersionStages": ["AWSCURRENT"], "CreatedDate": 1_764_000_000.0
            });
            (StatusCode::OK, out, answer.to_string())
        }
        None => {
            let answer = json!({"__type": "ResourceNotFoundException", "Message": "Secrets Manager can't find the specified secret."});
            (StatusCode::BAD_REQUEST, out, answer.to_string())
        }
    }
}

async fn serve() -> (String, Arc<StandIn>) {
    let held = HashMap::from([(ARN, "key-one,key-two"), (CACHE_ARN, r#"{"username":"sluice","password":"pw-1"}"#)]);
    let stand_in = Arc::new(StandIn { held, targets: Mutex::default() });
    let app = Router::new().route("/", axum::routing::post(secrets_manager)).with_state(stand_in.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, stand_in)
}

async fn stand_in() -> String {
    serve().await.0
}

#[tokio::test]
async fn a_secret_is_read_whole_or_by_field() {
    let reader = SecretsReader::with_endpoint(&stand_in().await);
    assert_eq!(reader.read(ARN).await.unwrap(), "key-one,key-two");
    assert_eq!(reader.read_field(CACHE_ARN, "password").await.unwrap(), "pw-1");
}

/// What a read sends is what `SecretsReader::CALLS` lists (which the
/// template's IAM check reads), with the action IAM documents for it.
#[tokio::test]
async fn a_read_calls_what_the_reader_lists() {
    let (url, stand_in) = serve().await;
    let reader = SecretsReader::with_endpoint(&url);
    reader.read(ARN).await.unwrap();
    reader.read_field(CACHE_ARN, "password").await.unwrap();
    let listed: Vec<String> = SecretsReader::CALLS.iter().map(|c| format!("secretsmanager.{}", c.operation)).collect();
    let sent = stand_in.targets.lock().unwrap().clone();
    assert_eq!(sent, [listed.clone(), listed].concat());
    assert!(SecretsReader::CALLS.iter().all(crate::api_calls::action_matches_operation));
}

#[tokio::test]
async fn a_missing_secret_or_field_is_named_without_any_value() {
    let reader = SecretsReader::with_endpoint(&stand_in().await);
    let gone = "arn:aws:secretsmanager:ap-northeast-2:123456789012:secret:gone";
    let err = reader.read(gone).await.unwrap_err();
    assert!(matches!(&err, SecretsError::Call { arn, .. } if arn == gone), "{err}");
    assert!(err.to_string().contains("ResourceNotFoundException"), "{err}");
    let err = reader.read_field(CACHE_ARN, "token").await.unwrap_err().to_string();
    assert!(err.contains(CACHE_ARN) && err.contains("\"token\"") && !err.contains("pw-1"), "{err}");
    let err = reader.read_field(ARN, "password").await.unwrap_err().to_string();
    assert!(!err.contains("key-one"), "{err}");
}

//! The abuse run's tools: a raw HTTP/1.1 exchange over TCP (so a request
//! may be anything, not just what an HTTP client agrees to send), the
//! seeded generators of bad requests, and what a bad request's answer must
//! look like.

use rand::rngs::StdRng;
use rand::{Rng, RngExt};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Every exchange is answered within this, or the run fails.
pub(crate) const BOUND: Duration = Duration::from_secs(20);
pub(crate) const API_KEY: &str = "sluice-dev";

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Webhook,
    Rows,
    Sqs,
}

/// A bad request: its kind (for the report), its bytes, and whether
/// hyper may refuse it before it is parsed (a bare status or a closed
/// connection, as DESIGN.md's "How the rules apply" allows).
#[derive(Debug, Clone)]
pub(crate) struct Abuse {
    pub kind: &'static str,
    pub target: Target,
    pub bytes: Vec<u8>,
    pub bare_ok: bool,
}

/// What came back.
#[derive(Debug)]
pub(crate) enum Outcome {
    Answered {
        status: u16,
        body: Vec<u8>,
    },
    /// The server closed the connection without a response.
    Closed,
}

impl Outcome {
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            Self::Answered { status, .. } => Some(*status),
            Self::Closed => None,
        }
    }

    pub(crate) fn json(&self) -> Option<Value> {
        match self {
            Self::Answered { body, .. } => serde_json::from_slice(body).ok(),
            Self::Closed => None,
        }
    }

    fn text(&self) -> String {
        match self {
            Self::Answered { status, body } => format!("{status} {}", String::from_utf8_lossy(body)),
            Self::Closed => "closed without an answer".into(),
        }
    }
}

/// Sends `bytes` on a fresh connection to `address` and reads one response.
pub(crate) async fn exchange(address: &str, bytes: &[u8]) -> Outcome {
    let run = async {
        let mut stream = TcpStream::connect(address).await.expect("connect");
        // The server may answer (and close) before it has read everything:
        // a write error is not an outcome; what can be read is.
        let _ = stream.write_all(bytes).await;
        read_response(&mut stream).await
    };
    tokio::time::timeout(BOUND, run).await.unwrap_or_else(|_| panic!("no answer within {BOUND:?}"))
}

async fn read_response(stream: &mut TcpStream) -> Outcome {
    let mut received = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&received[..end]).to_ascii_lowercase();
            let status: u16 = head.get(9..12).and_then(|s| s.parse().ok()).expect("a status line");
            let length =
                head.lines().find_map(|l| l.strip_prefix("content-length:")).map(|n| n.trim().parse::<usize>());
            match length {
                Some(Ok(length)) if received.len() >= end + 4 + length => {
                    return Outcome::Answered { status, body: received[end + 4..end + 4 + length].to_vec() };
                }
                Some(_) => {}
                // No length: the body runs to the end of the connection.
                None if matches!(stream.read(&mut chunk).await, Ok(0) | Err(_)) => {
                    return Outcome::Answered { status, body: received[end + 4..].to_vec() };
                }
                None => {}
            }
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) if received.is_empty() => return Outcome::Closed,
            Ok(0) | Err(_) => panic!("closed mid-response: {:?}", String::from_utf8_lossy(&received)),
            Ok(n) => received.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A whole request with `headers` (one `name: value` each) and `body`.
pub(crate) fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// A request to `target` with the headers it needs, carrying `body`.
pub(crate) fn to(target: Target, body: &[u8], extra: &[(&str, &str)]) -> Vec<u8> {
    let mut headers: Vec<(&str, &str)> = match target {
        Target::Webhook | Target::Rows => vec![("x-api-key", API_KEY), ("content-type", "application/json")],
        Target::Sqs => vec![("x-amz-target", "AmazonSQS.SendMessage"), ("content-type", "application/x-amz-json-1.0")],
    };
    headers.extend_from_slice(extra);
    request("POST", path(target), &headers, body)
}

pub(crate) fn path(target: Target) -> &'static str {
    match target {
        Target::Webhook => "/webhooks/cafe24",
        Target::Rows => "/sheets/rows",
        Target::Sqs => "/",
    }
}

/// Ids that are no mall, spreadsheet or queue: key syntax and spaces.
const HOSTILE_IDS: [&str; 9] = ["a}{b", "{a}", "a/b", "a:b", "a b", "}", "{", "../x", " "];
/// Numbers no id or count takes: out of every integer type, negative or
/// fractional. (2^32, past `event_no`'s u32, is a fine product number.)
const HUGE_NUMBERS: [&str; 6] =
    ["1e999999", "-1e400", "123456789012345678901234567890", "18446744073709551616", "-1", "1.5"];

fn pick<'a>(rng: &mut StdRng, from: &[&'a str]) -> &'a str {
    from[rng.random_range(0..from.len())]
}

/// JSON nested `depth` deep (arrays or objects), as a field's value.
fn deep(rng: &mut StdRng, depth: usize) -> String {
    if rng.random_bool(0.5) {
        "[".repeat(depth) + &"]".repeat(depth)
    } else {
        "{\"a\":".repeat(depth) + "1" + &"}".repeat(depth)
    }
}

/// A bad body for `target` of a seeded kind.
fn bad_body(rng: &mut StdRng, target: Target, queue_url: &str) -> (&'static str, Vec<u8>) {
    let sqs = |fields: String| fields.into_bytes();
    match rng.random_range(0..6) {
        0 => {
            let mut bytes = vec![0u8; rng.random_range(1..4096)];
            rng.fill_bytes(&mut bytes);
            ("random bytes", bytes)
        }
        1 => {
            let text = match target {
                Target::Webhook => r#"{"event_no":90001,"resource":{"mall_id":"a\xff\xfe","product_no":1}}"#,
                Target::Rows => r#"{"credential_id":"\xc3\x28","spreadsheet_id":"s","sheet_id":0}"#,
                Target::Sqs => r#"{"QueueUrl":"\xed\xa0\x80","MessageBody":"x"}"#,
            };
            // The escapes above are text; make them the bytes they name.
            ("invalid UTF-8", unescape_hex(text))
        }
        2 => ("JSON nested 10,000 deep", {
            let nested = deep(rng, 10_000);
            match target {
                Target::Webhook => format!(r#"{{"event_no":90001,"resource":{nested}}}"#).into_bytes(),
                Target::Rows => format!(r#"{{"values":{nested}}}"#).into_bytes(),
                Target::Sqs => format!(r#"{{"QueueUrl":"{queue_url}","MessageBody":{nested}}}"#).into_bytes(),
            }
        }),
        3 => ("a huge number", {
            let n = pick(rng, &HUGE_NUMBERS);
            match target {
                Target::Webhook if rng.random_bool(0.5) => {
                    let n = if rng.random_bool(0.2) { "4294967296" } else { n };
                    format!(r#"{{"event_no":{n},"resource":{{"mall_id":"acme","product_no":1}}}}"#).into_bytes()
                }
                Target::Webhook => {
                    format!(r#"{{"event_no":90001,"resource":{{"mall_id":"acme","product_no":{n}}}}}"#).into_bytes()
                }
                Target::Rows => row_with(&format!(r#""sheet_id":{n}"#), "s1"),
                Target::Sqs => sqs(format!(
                    r#"{{"QueueUrl":"{queue_url}","MessageBody":"x","MessageGroupId":"g","MessageDeduplicationId":"d","DelaySeconds":{n}}}"#
                )),
            }
        }),
        4 => ("an id with key syntax", {
            let id = pick(rng, &HOSTILE_IDS);
            match target {
                Target::Webhook => {
                    serde_json::to_vec(&json!({"event_no": 90001, "resource": {"mall_id": id, "product_no": 1}}))
                        .expect("json")
                }
                Target::Rows => row_with(&format!(r#""spreadsheet_id":{}"#, json!(id)), "s2"),
                Target::Sqs => {
                    let url = format!("{}{}", queue_url.rsplit_once('/').expect("a queue url").0, "/") + id;
                    serde_json::to_vec(&json!({"QueueUrl": url, "MessageBody": "x", "MessageGroupId": id,
                        "MessageDeduplicationId": id}))
                    .expect("json")
                }
            }
        }),
        _ => ("a body of the wrong shape", {
            let shapes = ["[]", "null", "\"text\"", "{}", "{\"a\":", "true", ""];
            pick(rng, &shapes).as_bytes().to_vec()
        }),
    }
}

/// A sheet row whose `field` (a JSON member) is the bad one.
fn row_with(field: &str, row_id: &str) -> Vec<u8> {
    format!(
        r#"{{"credential_id":"c","spreadsheet_id":"s","sheet_id":0,"submission_id":"b","row_id":"{row_id}","values":["x"],{field}}}"#
    )
    .into_bytes()
}

/// `\xNN` escapes in `text` as the bytes they name.
fn unescape_hex(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(b"\\x") {
            out.push(u8::from_str_radix(&text[i + 2..i + 4], 16).expect("hex"));
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// One seeded bad request to one of the three targets.
pub(crate) fn abuse(rng: &mut StdRng, queue_url: &str) -> Abuse {
    let target = [Target::Webhook, Target::Rows, Target::Sqs][rng.random_range(0..3)];
    let headed = |kind, bytes| Abuse { kind, target, bytes, bare_ok: false };
    match rng.random_range(0..20) {
        // Most requests: a well-formed head with a bad body.
        0..=13 => {
            let (kind, body) = bad_body(rng, target, queue_url);
            headed(kind, to(target, &body, &[]))
        }
        14 => Abuse {
            bare_ok: true,
            ..headed("a 1 MiB header", to(target, b"{}", &[("x-padding", &"a".repeat(1 << 20))]))
        },
        15 => {
            let mut bytes = vec![0u8; rng.random_range(1..2048)];
            rng.fill_bytes(&mut bytes);
            Abuse { bare_ok: true, ..headed("random bytes for a request", bytes) }
        }
        16 => headed("a body over every limit (3 MiB)", to(target, &vec![b'x'; 3 << 20], &[])),
        17 => headed("a wrong method", request("GET", path(target), &[("x-api-key", API_KEY)], b"")),
        18 => headed("a bad chunked body", {
            let head = format!(
                "POST {} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: {API_KEY}\r\nx-amz-target: AmazonSQS.SendMessage\r\n\
                 transfer-encoding: chunked\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n",
                path(target)
            );
            head.into_bytes()
        }),
        _ => match target {
            Target::Sqs => {
                headed("an unknown action", request("POST", "/", &[("x-amz-target", "AmazonSQS.Explode")], b"{}"))
            }
            _ => headed("a wrong API key", request("POST", path(target), &[("x-api-key", "sluice-dev ")], b"{}")),
        },
    }
}

/// Why `outcome` is not an acceptable answer to `abuse`, if it is not: a
/// 4xx whose JSON body names the problem (a `message`), or, where hyper
/// refuses before parsing, a bare 4xx or a closed connection.
pub(crate) fn fault(abuse: &Abuse, outcome: &Outcome) -> Option<String> {
    let status = outcome.status();
    if abuse.bare_ok && matches!(outcome, Outcome::Closed) {
        return None;
    }
    if !status.is_some_and(|s| (400..500).contains(&s)) {
        return Some(format!("not a 4xx: {}", outcome.text()));
    }
    let json = outcome.json();
    let message = json.as_ref().and_then(|j| j["error"]["message"].as_str().or(j["message"].as_str()));
    match message {
        Some(m) if !m.is_empty() => None,
        _ if abuse.bare_ok && matches!(outcome, Outcome::Answered { body, .. } if body.is_empty()) => None,
        _ => Some(format!("no JSON error naming the problem: {}", outcome.text())),
    }
}

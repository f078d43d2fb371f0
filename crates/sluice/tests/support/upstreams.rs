//! The sandbox upstreams as processes (`sluice sandbox cafe24`, `sluice
//! sandbox sheets`), a `sluice dev` wired to both, and the senders a test
//! drives them with: a webhook or a sheet row posted again after a 5xx or
//! a connection error, as a real sender would. Taken with
//! `#[path = "support/upstreams.rs"] mod upstreams;` next to `stack`.

use super::stack::{NotAccepted, Proc, credentials_set, post, sluice, tokens_set};
use serde_json::Value;
use serde_json::json;
use sluice_redis::{Keyspace, ParkedMalls, Tag};
use sluice_testkit::alert_listener::AlertListener;
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

pub(crate) const API_KEY: &str = "sluice-dev";
/// The OAuth client both sandboxes accept, and sluice dev acts as.
pub(crate) const CLIENT_ID: &str = "sandbox-client";
pub(crate) const CLIENT_SECRET: &str = "sandbox-secret";

/// Both sandboxes, running until dropped.
pub(crate) struct Upstreams {
    /// The sandboxes' processes: held only to stop them when dropped.
    _cafe24_proc: Proc,
    _sheets_proc: Proc,
    /// `http://127.0.0.1:PORT` of the Cafe24 sandbox (its control plane is under `/sandbox`).
    pub cafe24: String,
    /// `http://127.0.0.1:PORT/malls/{mall_id}`.
    pub template: String,
    /// The Sheets API base URL, its token URL, its control plane.
    pub sheets_api: String,
    pub token_url: String,
    pub sheets_control: String,
    /// The first refresh token of each `--user`.
    pub refresh_tokens: HashMap<String, String>,
}

impl Upstreams {
    /// `malls` in the Cafe24 sandbox with a bucket of `capacity` leaking
    /// `drain` a second; one spreadsheet with a tab per gid of `sheets`,
    /// and `users` in the Sheets sandbox. No faults yet.
    pub(crate) fn start(
        dir: &Path,
        malls: &[String],
        bucket: (u32, u32),
        spreadsheet: &str,
        sheets: &[u64],
        users: &[&str],
    ) -> Self {
        let cafe24_proc =
            Proc::spawn(sluice(dir).args(["sandbox", "cafe24", "--port", "0", "--mall", &malls.join(",")]).args([
                "--bucket-capacity",
                &bucket.0.to_string(),
                "--bucket-leak",
                &bucket.1.to_string(),
            ]))
            .unwrap_or_else(|e| panic!("sluice sandbox cafe24: {e}"));
        let mut command = sluice(dir);
        command.args(["sandbox", "sheets", "--port", "0"]);
        for user in users {
            command.args(["--user", user]);
        }
        for gid in sheets {
            command.args(["--spreadsheet", &format!("{spreadsheet}:{gid}:Sheet{gid}")]);
        }
        let sheets_proc = Proc::spawn(&mut command).unwrap_or_else(|e| panic!("sluice sandbox sheets: {e}"));
        let sheets_api = sheets_proc.after("Google Sheets sandbox: ").split(' ').next().unwrap().to_owned();
        let refresh_tokens =
            users.iter().map(|u| ((*u).to_owned(), sheets_proc.after(&format!("User {u}: refresh token ")))).collect();
        Self {
            cafe24: cafe24_proc.after("Cafe24 sandbox: "),
            template: cafe24_proc.after("Base URL template: "),
            sheets_control: format!("{sheets_api}/sandbox/sheets"),
            token_url: sheets_proc.after("Token URL: "),
            sheets_api,
            refresh_tokens,
            _cafe24_proc: cafe24_proc,
            _sheets_proc: sheets_proc,
        }
    }

    /// `sluice dev` in `workdir` against both sandboxes, with `extra` flags.
    pub(crate) fn dev(&self, workdir: &Path, extra: &[&str]) -> Proc {
        let mut command = sluice(workdir);
        command
            .args(["dev", "--ingest-port", "0", "--sqs-port", "0", "--sfn-port", "0", "--metrics-port", "0"])
            .args(["--cafe24-base-url", &self.template, "--cafe24-client-id", CLIENT_ID])
            .args(["--sheets-api-url", &self.sheets_api, "--google-token-url", &self.token_url])
            .args(["--google-client-id", CLIENT_ID])
            .args(extra)
            .env("SLUICE_CAFE24_CLIENT_SECRET", CLIENT_SECRET)
            .env("SLUICE_GOOGLE_CLIENT_SECRET", CLIENT_SECRET);
        Proc::spawn(&mut command).unwrap_or_else(|e| panic!("sluice dev: {e}"))
    }
}

/// What a regrant watches and where it acts: the test's client, its
/// alert listener, `sluice dev`'s directory and Redis, and how long an
/// alert may take to come (a release may take three times that).
#[derive(Clone, Copy)]
pub(crate) struct Watch<'a> {
    pub http: &'a reqwest::Client,
    pub alerts: &'a AlertListener,
    pub workdir: &'a Path,
    pub redis: &'a str,
    pub limit: Duration,
}

impl Upstreams {
    /// A URL of the Cafe24 sandbox's per-mall control plane: `path` after
    /// `/sandbox/malls/`.
    pub(crate) fn cafe24_control(&self, path: &str) -> String {
        format!("{}/sandbox/malls/{path}", self.cafe24)
    }

    /// `per_mall` products in each of `malls`: (mall, product id), in order.
    pub(crate) async fn create_products(
        &self,
        http: &reqwest::Client,
        malls: &[String],
        per_mall: usize,
    ) -> Vec<(String, String)> {
        let mut products = Vec::new();
        for mall in malls {
            for p in 0..per_mall {
                let fields = json!({"product_name": format!("{mall} {p}"), "price": "10.00"});
                let made = post(http, &self.cafe24_control(&format!("{mall}/resources/products")), fields).await;
                products.push((mall.clone(), made["id"].as_str().expect("product id").to_owned()));
            }
        }
        products
    }

    /// Once `mall` is parked (its alert, within `limit`), a new grant
    /// from the sandbox through `sluice tokens set`; how long from there
    /// until every event held for it was released.
    pub(crate) async fn regrant_mall_once_parked(&self, on: &Watch<'_>, mall: &'static str) -> Duration {
        let Watch { http, alerts, workdir, redis, limit } = *on;
        let parked = format!("mall `{mall}` is parked");
        let (seen, ()) = poll(limit, || async { (alerts.count(&parked) > 0, ()) }).await;
        assert!(seen, "no parked alert for {mall} within {limit:?}: {:?}", alerts.texts());
        let tokens = post(http, &self.cafe24_control(&format!("{mall}/tokens")), json!({})).await;
        let (workdir, set_at) = (workdir.to_owned(), Instant::now());
        tokio::task::spawn_blocking(move || tokens_set(&workdir, mall, &tokens)).await.unwrap();
        let conn = redis::Client::open(redis).unwrap().get_multiplexed_async_connection().await.unwrap();
        let holds = ParkedMalls::new(conn, Keyspace::new(sluice_redis::keyspace::DEFAULT_PREFIX).unwrap());
        let tag = Tag::for_mall(mall);
        let (released, ()) = poll(limit * 3, || async { (holds.state(&tag).await.unwrap().is_none(), ()) }).await;
        assert!(released, "{mall}'s held events not released within {:?} of sluice tokens set", limit * 3);
        set_at.elapsed()
    }

    /// Once `credential` is rejected (its alert, within `limit`), a new
    /// grant from the sandbox through `sluice credentials set`; how long
    /// from there until every row in `before` (sheet, row ids) was written.
    pub(crate) async fn regrant_google_once_rejected(
        &self,
        on: &Watch<'_>,
        credential: &'static str,
        spreadsheet: &str,
        before: &[(u64, Vec<String>)],
    ) -> Duration {
        let Watch { http, alerts, workdir, limit, .. } = *on;
        let rejected = format!("credential `{credential}` was rejected");
        let (seen, ()) = poll(limit, || async { (alerts.count(&rejected) > 0, ()) }).await;
        assert!(seen, "no rejected-credential alert within {limit:?}: {:?}", alerts.texts());
        let users = format!("{}/users", self.sheets_control);
        let grant = post(http, &users, json!({"client_id": CLIENT_ID, "user": credential})).await;
        let refresh = grant["refresh_token"].as_str().expect("refresh token").to_owned();
        let (workdir, set_at) = (workdir.to_owned(), Instant::now());
        tokio::task::spawn_blocking(move || credentials_set(&workdir, credential, &refresh)).await.unwrap();
        let (written, ()) = poll(limit * 3, || async {
            let mut all = true;
            for (gid, sent) in before {
                all &= tally_rows(&sheet_rows(http, &self.sheets_control, spreadsheet, *gid).await, sent).lost == 0;
            }
            (all, ())
        })
        .await;
        if !written {
            let show = sluice(on.workdir).args(["credentials", "show", credential]).output().unwrap();
            panic!(
                "rows held for {credential} not written within {:?} of sluice credentials set; credentials show: {}{}",
                limit * 3,
                String::from_utf8_lossy(&show.stdout),
                String::from_utf8_lossy(&show.stderr)
            );
        }
        set_at.elapsed()
    }
}

/// `redis://…/` of the private redis-server a `sluice dev` started.
pub(crate) fn private_redis_url(dev: &Proc) -> String {
    let line = dev.after("Redis: private redis-server on ");
    format!("redis://{}/", line.split(|c: char| c.is_whitespace() || c == ',').next().unwrap_or_default())
}

/// Posts `body` to ingest until it answers 2xx or 4xx (the answer, or
/// `Err` with the last status), sending it again after a 5xx or a
/// connection error for up to `patience`. `trace_id` is the delivery's
/// `X-Trace-ID`, the same on every attempt.
pub(crate) async fn post_until_answered(
    http: &reqwest::Client,
    url: &str,
    body: &Value,
    trace_id: Option<&str>,
    patience: Duration,
) -> Result<Value, NotAccepted> {
    let give_up = Instant::now() + patience;
    let mut backoff = Duration::from_millis(50);
    loop {
        let mut request = http.post(url).header("X-API-Key", API_KEY).json(body);
        if let Some(id) = trace_id {
            request = request.header("X-Trace-ID", id);
        }
        let why = match request.send().await {
            Ok(r) if r.status().is_server_error() => r.status().to_string(),
            Ok(r) => {
                let status = r.status();
                let answer: Value = r.json().await.unwrap_or(Value::Null);
                return if status.is_success() { Ok(answer) } else { Err(NotAccepted(format!("{status} {answer}"))) };
            }
            Err(e) => format!("connection: {e}"),
        };
        if Instant::now() + backoff > give_up {
            return Err(NotAccepted(format!("gave up after {patience:?}, the last answer: {why}")));
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

/// A sheet's rows as the sandbox holds them, header included.
pub(crate) async fn sheet_rows(http: &reqwest::Client, control: &str, spreadsheet: &str, gid: u64) -> Vec<Value> {
    let held = super::stack::get(http, &format!("{control}/spreadsheets/{spreadsheet}/sheets/{gid}/values")).await;
    held["values"].as_array().cloned().unwrap_or_default()
}

/// How a sheet's rows compare with the row ids sent to it, in order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct RowTally {
    pub headers: usize,
    /// Sent and accepted but not in the sheet.
    pub lost: usize,
    /// Rows written more than once (each extra copy counts).
    pub duplicated: usize,
    /// Whether the rows there are in the order sent.
    pub in_order: bool,
}

/// Tallies `held` (column A holds each row's id, `row_id` on the header
/// row) against `sent`, the ids accepted for the sheet in their order.
pub(crate) fn tally_rows(held: &[Value], sent: &[String]) -> RowTally {
    let ids: Vec<&str> = held.iter().map(|row| row[0].as_str().unwrap_or("?")).collect();
    let headers = ids.iter().filter(|id| **id == "row_id").count();
    let rows: Vec<&str> = ids.into_iter().filter(|id| *id != "row_id").collect();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for id in &rows {
        *seen.entry(id).or_default() += 1;
    }
    let lost = sent.iter().filter(|id| !seen.contains_key(id.as_str())).count();
    let duplicated = seen.values().map(|n| n - 1).sum();
    let position: HashMap<&str, usize> = sent.iter().enumerate().map(|(i, id)| (id.as_str(), i)).collect();
    let order: Vec<usize> = rows.iter().filter_map(|id| position.get(id).copied()).collect();
    let header_first = held.first().is_some_and(|row| row[0] == "row_id");
    RowTally { headers, lost, duplicated, in_order: header_first && order.windows(2).all(|w| w[0] < w[1]) }
}

/// Waits, bounded by `limit`, until `check` holds; its last answer either way.
pub(crate) async fn poll<T, F: std::future::Future<Output = (bool, T)>>(
    limit: Duration,
    mut check: impl FnMut() -> F,
) -> (bool, T) {
    let deadline = Instant::now() + limit;
    loop {
        let (done, seen) = check().await;
        if done || Instant::now() >= deadline {
            return (done, seen);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The alerts' problems for a run whose `parked` malls were each parked
/// once and released once, whose `credential` was rejected once, and
/// whose other episodes (a mall's calls failing, a sheet's flushes
/// delayed: the seed decides) each ended as often as they started.
pub(crate) fn episode_problems(
    alerts: &AlertListener,
    malls: &[String],
    parked: &[&str],
    credential: &str,
    (spreadsheet, sheets): (&str, &[u64]),
) -> Vec<String> {
    let mut expected = vec![(format!("credential `{credential}` was rejected"), 1)];
    for mall in malls {
        let once = usize::from(parked.contains(&mall.as_str()));
        expected.extend([(format!("mall `{mall}` is parked"), once), (format!("mall `{mall}` is back"), once)]);
    }
    let mut pairs: Vec<(String, String)> = malls
        .iter()
        .map(|m| (format!("mall `{m}`'s Cafe24 calls failed"), format!("mall `{m}`'s Cafe24 calls work again")))
        .collect();
    pairs.extend(sheets.iter().map(|gid| {
        (format!("sheet {gid}'s flushes were delayed"), format!("`{spreadsheet}` sheet {gid} is written again"))
    }));
    alert_problems(alerts, &expected, &pairs)
}

/// What is wrong with the alerts: each of `expected` (a text, how many
/// alerts contain it) must come exactly so often, and each pair (an
/// episode's start, its end) must have ended as often as it started.
pub(crate) fn alert_problems(
    alerts: &AlertListener,
    expected: &[(String, usize)],
    pairs: &[(String, String)],
) -> Vec<String> {
    let texts = alerts.texts();
    let mut problems = Vec::new();
    for (needle, wanted) in expected {
        let n = alerts.count(needle);
        if n != *wanted {
            problems.push(format!("{n} alerts containing {needle:?}, wanted {wanted}: {texts:?}"));
        }
    }
    for (start, end) in pairs {
        let (starts, ends) = (alerts.count(start), alerts.count(end));
        if starts != ends {
            problems.push(format!("{starts} alerts {start:?} but {ends} {end:?}"));
        }
    }
    problems
}

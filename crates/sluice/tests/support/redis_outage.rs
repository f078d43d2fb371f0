//! The parts of `redis_restart.rs` that are not its plot: a redis-server
//! that can be stopped and started again where it was, senders that
//! retry as Cafe24 does and note every answer, and the figures of a run.

use super::stack::{listening, port_outside_the_ephemeral_range, put};
use rand::RngExt;
use rand::rngs::StdRng;
use serde_json::{Map, Value, json};
use sluice_cafe24::{Change, WebhookBody, topic_for};
use sluice_domain::ResourceKind;
use sluice_private_servers::{AppendFsync, RedisProcess, ServerOptions};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a sender keeps sending one webhook again before giving up:
/// well beyond any outage the tests make.
pub(crate) const SENDER_PATIENCE: Duration = Duration::from_secs(30);
/// How long a sender waits for one answer. Ingest must answer while Redis
/// is away, so a request left hanging this long counts as no answer.
pub(crate) const ANSWER_LIMIT: Duration = Duration::from_secs(5);
/// How soon ingest must answer while Redis is away: a sender's request is
/// not to hang for the length of the outage.
pub(crate) const DOWN_ANSWER_LIMIT: Duration = Duration::from_secs(2);
const API_KEY: &str = "sluice-dev";

/// A redis-server on a fixed port and data directory, `appendfsync always`.
pub(crate) struct Redis {
    process: Option<RedisProcess>,
    options: ServerOptions,
}

impl Redis {
    /// On a port below the ephemeral range, so no outgoing connection can
    /// be given it while the server is down (and the restart finds it free).
    pub(crate) fn start(dir: PathBuf) -> Self {
        let options = ServerOptions {
            data_dir: Some(dir),
            fsync: AppendFsync::Always,
            port: Some(port_outside_the_ephemeral_range()),
            ..ServerOptions::default()
        };
        let process = RedisProcess::start(options.clone()).expect("redis-server");
        Self { process: Some(process), options }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.options.port.unwrap_or_default())
    }

    /// Sends `signal` to the server itself and returns once it has exited.
    pub(crate) fn stop(&mut self, signal: &str) {
        let mut conn = redis::Client::open(self.url()).unwrap().get_connection().expect("redis before the stop");
        let info: String = redis::cmd("INFO").arg("server").query(&mut conn).unwrap();
        let pid = info.lines().find_map(|l| l.strip_prefix("process_id:")).expect("process_id").trim().to_owned();
        drop(conn);
        let killed = std::process::Command::new("kill").args([signal, &pid]).status().expect("kill");
        assert!(killed.success(), "kill {signal} {pid}");
        // Its watchdog waits for the server to exit (reaping it) and then
        // gives up the data directory's lock the restart needs.
        drop(self.process.take());
        assert!(!listening(self.options.port.unwrap_or_default()), "redis-server still listens after {signal}");
    }

    /// Starts it again on the same port and directory: it reloads the file.
    pub(crate) fn restart(&mut self) {
        assert!(self.process.is_none(), "restart of a running redis-server");
        self.process = Some(RedisProcess::start(self.options.clone()).expect("redis-server restarted"));
    }
}

/// One POST of a webhook and what came back.
#[derive(Debug, Clone)]
pub(crate) struct Attempt {
    pub sent_at: Instant,
    pub answered_at: Instant,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Answer {
        status: u16,
        /// Whether a `Retry-After` header came with it.
        retry_after: bool,
        /// `error.code` of a JSON error body.
        code: Option<String>,
    },
    /// No answer within [`ANSWER_LIMIT`], or the connection failed.
    NoAnswer(String),
}

/// One webhook as its sender saw it in the end.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    /// The event ids of its `202`; `None` if the sender gave up.
    pub accepted: Option<Vec<String>>,
}

/// A sender of webhooks for the products it owns.
pub(crate) struct Sender {
    pub http: reqwest::Client,
    pub cafe24: String,
    pub ingest: String,
    pub name: String,
    pub book: Arc<Mutex<Vec<Attempt>>>,
}

impl Sender {
    /// Changes one of `owned` in the sandbox and sends its webhook, again
    /// and again, until `stop_at`.
    pub(crate) async fn run(self, owned: Vec<(String, String)>, mut rng: StdRng, stop_at: Instant) -> Vec<Delivery> {
        let mut deliveries = Vec::new();
        while Instant::now() < stop_at {
            let (mall, id) = &owned[rng.random_range(0..owned.len())];
            let n = deliveries.len();
            let mut fields = Map::new();
            fields.insert("price".into(), json!(format!("{}.00", rng.random_range(100..100_000))));
            fields.insert("product_name".into(), json!(format!("outage {mall} {id} {} #{n}", self.name)));
            let url = format!("{}/sandbox/malls/{mall}/resources/products/{id}", self.cafe24);
            let changed = put(&self.http, &url, Value::Object(fields.clone())).await;
            assert_eq!(changed["change"], "updated", "{changed}");
            let body = WebhookBody::new(topic_for(ResourceKind::Product, Change::Updated), mall, id, &fields);
            deliveries.push(self.deliver(&body, format!("{}-{n}", self.name)).await);
        }
        deliveries
    }

    /// Posts until a 2xx or 4xx, again with the same X-Trace-ID after a
    /// 5xx or no answer, for up to [`SENDER_PATIENCE`].
    async fn deliver(&self, body: &WebhookBody, trace_id: String) -> Delivery {
        let give_up = Instant::now() + SENDER_PATIENCE;
        let mut backoff = Duration::from_millis(50);
        loop {
            let sent_at = Instant::now();
            let sent = self
                .http
                .post(&self.ingest)
                .header("X-API-Key", API_KEY)
                .header("X-Trace-ID", &trace_id)
                .json(body)
                .send()
                .await;
            let (outcome, answer) = match sent {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let retry_after = response.headers().contains_key(reqwest::header::RETRY_AFTER);
                    let answer: Value = response.json().await.unwrap_or(Value::Null);
                    let code = answer["error"]["code"].as_str().map(str::to_owned);
                    (Outcome::Answer { status, retry_after, code }, answer)
                }
                Err(e) => {
                    (Outcome::NoAnswer(if e.is_timeout() { "timeout" } else { "connection" }.into()), Value::Null)
                }
            };
            self.book.lock().unwrap().push(Attempt { sent_at, answered_at: Instant::now(), outcome: outcome.clone() });
            let settled = match &outcome {
                Outcome::Answer { status: 202, .. } => Some(Some(event_ids(&answer))),
                Outcome::Answer { status, .. } if *status < 500 => Some(None),
                _ if Instant::now() + backoff > give_up => Some(None),
                _ => None,
            };
            if let Some(accepted) = settled {
                return Delivery { accepted };
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(500));
        }
    }
}

fn event_ids(receipt: &Value) -> Vec<String> {
    let ids = receipt["event_ids"].as_array().cloned().unwrap_or_default();
    ids.iter().filter_map(|e| e.as_str().map(str::to_owned)).collect()
}

/// What a run did, for the report and the assertions.
#[derive(Debug, Default)]
pub(crate) struct Figures {
    pub sent: usize,
    pub attempts: usize,
    pub accepted: usize,
    pub gave_up: Vec<Delivery>,
    /// 5xx answers by status and code, over the whole run.
    pub refusals: BTreeMap<String, usize>,
    pub no_answer: usize,
    /// Attempts sent after Redis stopped and answered before it was back.
    pub while_down: usize,
    /// Attempts under way at some moment while it was away (sent before
    /// it was back, answered after it went).
    pub overlapping: usize,
    /// Attempts sent while Redis was down that waited longer than
    /// [`DOWN_ANSWER_LIMIT`] for their answer: (sent after the stop, waited).
    pub down_held: Vec<(Duration, Duration)>,
    /// Of those: 503 with Retry-After and a JSON error body.
    pub down_503: usize,
    /// Of those: 202s. Wrong when all of Redis was away; right in a
    /// failover for events whose keys the lost master did not hold.
    pub down_202: usize,
    /// Of those: anything else, described.
    pub down_wrong: Vec<String>,
    pub down_slowest: Duration,
    pub down_for: Duration,
    /// Accepted events answered by a stored snapshot (once, or more).
    pub stored: usize,
    pub lost: Vec<String>,
    /// Accepted events more than one snapshot answers: fetched on their
    /// own after also joining another's fetch (a 503 to a request whose
    /// event had joined one; harmless: the newer snapshot wins).
    pub answered_twice: Vec<String>,
    /// Fetching events whose snapshot was appended more than once: what
    /// the store step's idempotency must prevent.
    pub duplicated: Vec<String>,
    /// From Redis back to the first 202 of a request sent after that.
    pub recovered_after: Option<Duration>,
    pub drained_after: Duration,
    /// The sandbox Cafe24's 429s (bucket and quota), set by the run.
    pub upstream_429: u64,
}

/// How much of Redis an outage takes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outage {
    /// The whole server: no request can be accepted meanwhile.
    Whole,
    /// One master of a cluster, until its replica takes over: events whose
    /// keys live on the other masters may still be accepted.
    OneMaster,
    /// A planned switch to a master's replica (`CLUSTER FAILOVER`): the
    /// master holds its clients' writes until the replica has them all, so
    /// a request under way waits (tens of ms) rather than fails, and few
    /// or none are both sent and answered inside the switch.
    Switch,
}

impl Figures {
    pub(crate) fn new(
        deliveries: &[Delivery],
        attempts: &[Attempt],
        entries: &[super::stack::Fields],
        [down_at, up_at]: [Instant; 2],
        drained_after: Duration,
    ) -> Self {
        let mut f = Self {
            sent: deliveries.len(),
            attempts: attempts.len(),
            down_for: up_at - down_at,
            drained_after,
            ..Self::default()
        };
        let answered = super::stack::answered_events(entries);
        let mut fetched: HashMap<String, usize> = HashMap::new();
        for entry in entries {
            let events: Vec<String> = serde_json::from_value(entry["event_ids"].clone()).unwrap();
            *fetched.entry(events.first().cloned().unwrap_or_default()).or_default() += 1;
        }
        f.duplicated = fetched.into_iter().filter(|(_, n)| *n > 1).map(|(event, _)| event).collect();
        for a in attempts {
            let waited = a.answered_at - a.sent_at;
            if a.sent_at >= down_at && a.sent_at < up_at && waited > DOWN_ANSWER_LIMIT {
                f.down_held.push((a.sent_at - down_at, waited));
            }
            let down = a.sent_at >= down_at && a.answered_at <= up_at;
            f.overlapping += usize::from(a.sent_at < up_at && a.answered_at > down_at);
            match &a.outcome {
                Outcome::Answer { status, code, .. } if *status >= 500 => {
                    let code = code.as_deref().unwrap_or("no JSON body");
                    *f.refusals.entry(format!("{status} {code}")).or_default() += 1;
                }
                Outcome::Answer { status: 202, .. } if a.sent_at >= up_at => {
                    let after = a.answered_at - up_at;
                    f.recovered_after = Some(f.recovered_after.map_or(after, |r| r.min(after)));
                }
                Outcome::NoAnswer(_) => f.no_answer += 1,
                Outcome::Answer { .. } => {}
            }
            if !down {
                continue;
            }
            f.while_down += 1;
            f.down_slowest = f.down_slowest.max(waited);
            match &a.outcome {
                Outcome::Answer { status: 503, retry_after: true, code: Some(_) } => f.down_503 += 1,
                Outcome::Answer { status: 202, .. } => f.down_202 += 1,
                other => {
                    f.down_wrong.push(format!("{other:?} {} ms after the stop", (a.sent_at - down_at).as_millis()))
                }
            }
        }
        for d in deliveries {
            let Some(events) = &d.accepted else {
                f.gave_up.push(d.clone());
                continue;
            };
            f.accepted += 1;
            for event in events {
                match answered.get(event).copied().unwrap_or(0) {
                    0 => f.lost.push(event.clone()),
                    1 => f.stored += 1,
                    _ => {
                        f.stored += 1;
                        f.answered_twice.push(event.clone());
                    }
                }
            }
        }
        f
    }

    /// What the run must not have done.
    pub(crate) fn problems(&self, outage: Outage) -> Vec<String> {
        let mut problems = Vec::new();
        if outage == Outage::Whole && self.down_202 > 0 {
            problems.push(format!("{} requests were accepted (202) while Redis was down", self.down_202));
        }
        if outage == Outage::Switch && self.overlapping == 0 {
            problems.push("no webhook was under way during the switch: the test proved nothing".into());
        } else if outage != Outage::Switch && self.while_down == 0 {
            problems.push("no webhook was sent while Redis was down: the test proved nothing".into());
        }
        if !self.down_wrong.is_empty() {
            problems.push(format!(
                "{} answers while Redis was down were not a 503 with Retry-After and a JSON body: {:?}",
                self.down_wrong.len(),
                self.down_wrong.iter().take(5).collect::<Vec<_>>()
            ));
        }
        if !self.down_held.is_empty() {
            problems.push(format!(
                "{} requests sent while Redis was down waited more than {DOWN_ANSWER_LIMIT:?} for an answer \
                 (sent after the stop, waited): {:?}",
                self.down_held.len(),
                self.down_held.iter().take(5).collect::<Vec<_>>()
            ));
        }
        if self.no_answer > 0 {
            problems.push(format!("{} requests got no answer within {ANSWER_LIMIT:?}", self.no_answer));
        }
        if !self.gave_up.is_empty() {
            problems.push(format!("{} webhooks never accepted, the first: {:?}", self.gave_up.len(), self.gave_up[0]));
        }
        if !self.lost.is_empty() {
            problems.push(format!("{} accepted events never stored, the first {:?}", self.lost.len(), &self.lost[..1]));
        }
        if !self.duplicated.is_empty() {
            problems.push(format!("{} snapshots appended twice: {:?}", self.duplicated.len(), self.duplicated));
        }
        problems
    }
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Option<Duration>| d.map_or("never".to_owned(), |d| format!("{} ms", d.as_millis()));
        write!(
            f,
            "webhooks sent {} ({} posts), accepted {}, never accepted {}; 5xx answers {:?}, no answer {}; while \
             Redis was down ({:.1} s): {} posts answered, {} of them 503 with Retry-After and JSON, {} of them 202, \
             {} otherwise, the slowest answer {} ms, {} posts held longer than {:?}; accepted events stored {}, lost {}, \
             answered by two snapshots {}, snapshots appended twice {}; Cafe24 429s {}; the first 202 {} after \
             Redis was back; drained {:.1} s after the stream",
            self.sent,
            self.attempts,
            self.accepted,
            self.gave_up.len(),
            self.refusals,
            self.no_answer,
            self.down_for.as_secs_f64(),
            self.while_down,
            self.down_503,
            self.down_202,
            self.down_wrong.len(),
            self.down_slowest.as_millis(),
            self.down_held.len(),
            DOWN_ANSWER_LIMIT,
            self.stored,
            self.lost.len(),
            self.answered_twice.len(),
            self.duplicated.len(),
            self.upstream_429,
            ms(self.recovered_after),
            self.drained_after.as_secs_f64(),
        )
    }
}

//! Wait: delays for `Seconds`/`SecondsPath`, or until
//! `Timestamp`/`TimestampPath`, on the execution's clock.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/state-wait.html>.

use crate::definition::MAX_TIMEOUT_SECONDS;
use crate::definition::state::StateParse;
use crate::executor::{Step, Visit};
use crate::failure::Failure;
use crate::path::Path;
use crate::timestamp;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::time::{Duration, SystemTime};

#[derive(Debug)]
pub(crate) struct WaitState {
    until: WaitFor,
}

#[derive(Debug)]
enum WaitFor {
    Seconds(u64),
    SecondsPath(Path),
    Timestamp(DateTime<Utc>),
    TimestampPath(Path),
}

const WAIT_FIELDS: [&str; 4] = ["Seconds", "SecondsPath", "Timestamp", "TimestampPath"];

impl WaitState {
    pub(crate) fn parse(parse: &StateParse<'_>) -> Option<Self> {
        let fields = &parse.fields;
        let given: Vec<&str> = WAIT_FIELDS.into_iter().filter(|f| fields.has(f)).collect();
        if given.len() != 1 {
            fields.problem("Seconds", format!("exactly one of {} is required", WAIT_FIELDS.join(", ")));
            return None;
        }
        let until = match given[0] {
            "Seconds" => WaitFor::Seconds(fields.unsigned("Seconds", MAX_TIMEOUT_SECONDS)?),
            "SecondsPath" => WaitFor::SecondsPath(fields.path("SecondsPath")?),
            "Timestamp" => {
                let text = fields.string("Timestamp")?;
                match timestamp::parse(text) {
                    Some(at) => WaitFor::Timestamp(at),
                    None => {
                        fields.problem("Timestamp", format!("{text:?} is not an RFC 3339 timestamp"));
                        return None;
                    }
                }
            }
            _ => WaitFor::TimestampPath(fields.path("TimestampPath")?),
        };
        Some(Self { until })
    }

    pub(crate) async fn run(&self, visit: Visit<'_>, raw: Value) -> Result<Step, Failure> {
        let effective = visit.input(&raw)?;
        let clock = visit.run.clock;
        let delay = match &self.until {
            WaitFor::Seconds(seconds) => Duration::from_secs(*seconds),
            WaitFor::SecondsPath(path) => match path.select(&effective, &visit.context()) {
                Some(value) => value.as_u64().map(Duration::from_secs).ok_or_else(|| {
                    Failure::runtime(format!(
                        "SecondsPath '{}' must select a non-negative integer, found {value}",
                        path.text()
                    ))
                })?,
                None => return Err(Failure::runtime(format!("SecondsPath '{}' matches nothing", path.text()))),
            },
            WaitFor::Timestamp(at) => until(clock.now(), *at),
            WaitFor::TimestampPath(path) => {
                let value = path.select(&effective, &visit.context());
                match value.as_ref().and_then(Value::as_str).and_then(timestamp::parse) {
                    Some(at) => until(clock.now(), at),
                    None => {
                        return Err(Failure::runtime(format!(
                            "TimestampPath '{}' must select an RFC 3339 timestamp, found {}",
                            path.text(),
                            value.map_or_else(|| "nothing".to_owned(), |v| v.to_string())
                        )));
                    }
                }
            }
        };
        clock.sleep(delay).await;
        visit.output(effective).map(Step::Continue)
    }
}

/// The time from `now` to `at`; zero when `at` has passed.
fn until(now: SystemTime, at: DateTime<Utc>) -> Duration {
    SystemTime::from(at).duration_since(now).unwrap_or(Duration::ZERO)
}

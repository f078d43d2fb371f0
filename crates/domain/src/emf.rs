//! CloudWatch Embedded Metric Format: one JSON log line that CloudWatch
//! Logs turns into metrics (namespace `Sluice`), so a Lambda reports its
//! counts by printing, with no API call and no agent. Only the line is
//! built here; printing it is the caller's (a function's `main`).
//!
//! A counter set lists its counts once, as [`Counter`]s: the EMF line and
//! `sluice dev`'s `GET /metrics` are both rendered from that list.
//!
//! ```json
//! {"_aws": {"Timestamp": 1700000000000, "CloudWatchMetrics": [{"Namespace": "Sluice",
//!   "Dimensions": [["Stage", "Function"]], "Metrics": [{"Name": "UpstreamCalls", "Unit": "Count"}]}]},
//!  "Stage": "prod", "Function": "fetch", "UpstreamCalls": 3}
//! ```

use serde_json::{Map, Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// The namespace every sluice metric is in.
pub const NAMESPACE: &str = "Sluice";

/// The one dimension set every sluice metric is published under: the
/// stack's stage (`SLUICE_STAGE`) and the function that counted. An alarm
/// or a dashboard finds a metric only under all of them
/// (`tests/tests/template_metrics.rs` checks the template's).
pub const DIMENSIONS: [&str; 2] = ["Stage", "Function"];

/// [`DIMENSIONS`] with their values, as an [`EmfLine`] takes them.
pub fn dimensions<'a>(stage: &'a str, function: &'a str) -> [(&'a str, &'a str); 2] {
    [(DIMENSIONS[0], stage), (DIMENSIONS[1], function)]
}

/// A metric's unit, as CloudWatch names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Milliseconds,
    /// An age, such as the drain's lag: alarm thresholds read as seconds.
    Seconds,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Self::Count => "Count",
            Self::Milliseconds => "Milliseconds",
            Self::Seconds => "Seconds",
        }
    }
}

/// One EMF line: the values of some metrics under one set of dimensions.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EmfLine {
    dimensions: Vec<(String, String)>,
    metrics: Vec<(String, Unit, f64)>,
}

impl EmfLine {
    pub fn new(dimensions: &[(&str, &str)]) -> Self {
        Self {
            dimensions: dimensions.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            metrics: Vec::new(),
        }
    }

    /// Adds a value to the metric `name` (a zero is kept out: an absent
    /// metric costs nothing and alarms treat missing data as they are told).
    pub fn add(&mut self, name: &str, unit: Unit, value: f64) -> &mut Self {
        if value != 0.0 && value.is_finite() {
            match self.metrics.iter_mut().find(|(n, ..)| n == name) {
                Some((.., sum)) => *sum += value,
                None => self.metrics.push((name.to_owned(), unit, value)),
            }
        }
        self
    }

    pub fn is_empty(&self) -> bool {
        self.metrics.is_empty()
    }

    /// The JSON line at `timestamp_ms` (Unix milliseconds).
    pub fn render(&self, timestamp_ms: u64) -> String {
        let names: Vec<&str> = self.dimensions.iter().map(|(k, _)| k.as_str()).collect();
        let definitions: Vec<Value> =
            self.metrics.iter().map(|(name, unit, _)| json!({"Name": name, "Unit": unit.as_str()})).collect();
        let aws = json!({"Timestamp": timestamp_ms, "CloudWatchMetrics": [{
            "Namespace": NAMESPACE, "Dimensions": [names], "Metrics": definitions}]});
        let dimensions = self.dimensions.iter().map(|(key, value)| (key.clone(), Value::String(value.clone())));
        let metrics = self.metrics.iter().map(|(name, _, value)| (name.clone(), json!(value)));
        let root: Map<String, Value> = std::iter::once(("_aws".into(), aws)).chain(dimensions).chain(metrics).collect();
        Value::Object(root).to_string()
    }
}

/// The EMF metrics a [`Counter`] adds to.
pub type EmfMetrics = &'static [(&'static str, Unit)];

/// One count of a counter set `S`, named for both places it is published:
/// `GET /metrics` shows its running total as `<prefix><name>_total<labels>`,
/// and an EMF line adds its growth to each metric of `emf` (several counts
/// may add to one: both upstreams' calls make `UpstreamCalls`).
#[derive(Debug)]
pub struct Counter<S> {
    pub name: &'static str,
    pub labels: &'static str,
    pub emf: EmfMetrics,
    pub read: fn(&S) -> &AtomicU64,
}

impl<S> Counter<S> {
    pub const fn new(name: &'static str, labels: &'static str, emf: EmfMetrics, read: fn(&S) -> &AtomicU64) -> Self {
        Self { name, labels, emf, read }
    }

    pub fn get(&self, set: &S) -> u64 {
        (self.read)(set).load(Ordering::Relaxed)
    }
}

/// The totals of a counter set that EMF lines have carried so far (none at
/// first): each line carries only the growth since, so each count reaches
/// CloudWatch once while the running totals stay whole for `GET /metrics`.
#[derive(Debug, Default)]
pub struct Reported(Mutex<Vec<u64>>);

impl Reported {
    /// What `set` grew by since the last take, as an EMF line under
    /// `dimensions`; `None` when nothing did.
    pub fn take<S>(&self, counters: &[Counter<S>], set: &S, dimensions: &[(&str, &str)]) -> Option<EmfLine> {
        let now: Vec<u64> = counters.iter().map(|c| c.get(set)).collect();
        let before = std::mem::replace(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner), now.clone());
        let mut line = EmfLine::new(dimensions);
        for (i, counter) in counters.iter().enumerate() {
            let grew = now[i].saturating_sub(before.get(i).copied().unwrap_or(0));
            for (name, unit) in counter.emf {
                line.add(name, *unit, grew as f64);
            }
        }
        (!line.is_empty()).then_some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_carries_its_definitions_dimensions_and_values() {
        let mut line = EmfLine::new(&[("Stage", "prod"), ("Function", "fetch")]);
        line.add("UpstreamCalls", Unit::Count, 3.0).add("Upstream429", Unit::Count, 0.0);
        line.add("LimiterWait", Unit::Milliseconds, 250.0);
        let value: Value = serde_json::from_str(&line.render(1_700_000_000_000)).unwrap();
        let meta = &value["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(value["_aws"]["Timestamp"], 1_700_000_000_000u64);
        assert_eq!(meta["Namespace"], "Sluice");
        assert_eq!(meta["Dimensions"], json!([["Stage", "Function"]]));
        assert_eq!(
            meta["Metrics"],
            json!([{"Name": "UpstreamCalls", "Unit": "Count"}, {"Name": "LimiterWait", "Unit": "Milliseconds"}])
        );
        assert_eq!((value["Stage"].as_str(), value["UpstreamCalls"].as_f64()), (Some("prod"), Some(3.0)));
        assert!(value.get("Upstream429").is_none(), "zeros are left out");
        assert!(EmfLine::new(&[]).is_empty());
    }

    #[derive(Debug, Default)]
    struct Set {
        a: AtomicU64,
        b: AtomicU64,
    }

    const SET: &[Counter<Set>] = &[
        Counter::new("a", "", &[("A", Unit::Count), ("Sum", Unit::Count)], |s| &s.a),
        Counter::new("b", "", &[("Sum", Unit::Count)], |s| &s.b),
    ];

    #[test]
    fn each_line_carries_what_grew_since_the_last() {
        let set = Set::default();
        let reported = Reported::default();
        assert!(reported.take(SET, &set, &[]).is_none());
        set.a.fetch_add(2, Ordering::Relaxed);
        set.b.fetch_add(3, Ordering::Relaxed);
        let value: Value = serde_json::from_str(&reported.take(SET, &set, &[]).unwrap().render(1)).unwrap();
        assert_eq!((value["A"].as_f64(), value["Sum"].as_f64()), (Some(2.0), Some(5.0)), "{value}");
        assert!(reported.take(SET, &set, &[]).is_none(), "taken once");
    }
}

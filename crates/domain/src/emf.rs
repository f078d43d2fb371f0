//! CloudWatch Embedded Metric Format: one JSON log line that CloudWatch
//! Logs turns into metrics (namespace `Sluice`), so a Lambda reports its
//! counts by printing, with no API call and no agent. Only the line is
//! built here; printing it is the caller's (a function's `main`).
//!
//! ```json
//! {"_aws": {"Timestamp": 1700000000000, "CloudWatchMetrics": [{"Namespace": "Sluice",
//!   "Dimensions": [["Stage", "Function"]], "Metrics": [{"Name": "UpstreamCalls", "Unit": "Count"}]}]},
//!  "Stage": "prod", "Function": "fetch", "UpstreamCalls": 3}
//! ```

use serde_json::{Map, Value, json};

/// The namespace every sluice metric is in.
pub const NAMESPACE: &str = "Sluice";

/// A metric's unit, as CloudWatch names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Milliseconds,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Self::Count => "Count",
            Self::Milliseconds => "Milliseconds",
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

    /// Adds a value (a zero is kept out: an absent metric costs nothing and
    /// alarms treat missing data as they are told).
    pub fn add(&mut self, name: &str, unit: Unit, value: f64) -> &mut Self {
        if value != 0.0 && value.is_finite() {
            self.metrics.push((name.to_owned(), unit, value));
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
        let mut root = Map::new();
        root.insert(
            "_aws".into(),
            json!({"Timestamp": timestamp_ms, "CloudWatchMetrics": [{
                "Namespace": NAMESPACE, "Dimensions": [names], "Metrics": definitions}]}),
        );
        for (key, value) in &self.dimensions {
            root.insert(key.clone(), Value::String(value.clone()));
        }
        for (name, _, value) in &self.metrics {
            root.insert(name.clone(), json!(value));
        }
        Value::Object(root).to_string()
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
}

//! The functions' EMF lines added up, as CloudWatch turns them into
//! metrics: per `Function` dimension and metric name, the sum of every
//! value printed. What the deployed stack's alarms and dashboard would
//! see, read locally by the demos' reports.

use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// See the module docs.
#[derive(Debug, Default)]
pub struct EmfTotals(Mutex<BTreeMap<(String, String), f64>>);

impl EmfTotals {
    /// Adds the metrics of `line` if it is an EMF document (a JSON object
    /// with `_aws.CloudWatchMetrics`); any other line is ignored.
    pub fn add_line(&self, line: &str) {
        if !line.starts_with('{') || !line.contains("\"_aws\"") {
            return;
        }
        let Ok(document) = serde_json::from_str::<Value>(line) else { return };
        let function = document["Function"].as_str().unwrap_or_default().to_owned();
        let names = document["_aws"]["CloudWatchMetrics"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|directive| directive["Metrics"].as_array().into_iter().flatten())
            .filter_map(|metric| metric["Name"].as_str());
        let mut totals = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for name in names {
            if let Some(value) = document[name].as_f64() {
                *totals.entry((function.clone(), name.to_owned())).or_default() += value;
            }
        }
    }

    /// The sum of `metric` over every line of `function` (the `Function`
    /// dimension: `ingest`, `fetch`, …).
    pub fn total(&self, function: &str, metric: &str) -> f64 {
        let totals = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        totals.get(&(function.to_owned(), metric.to_owned())).copied().unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_emf_documents_count() {
        let totals = EmfTotals::default();
        let line = |n: u32| {
            format!(
                r#"{{"_aws":{{"Timestamp":1,"CloudWatchMetrics":[{{"Namespace":"Sluice","Dimensions":[["Stage","Function"]],"Metrics":[{{"Name":"EventsEnqueued","Unit":"Count"}}]}}]}},"Stage":"local","Function":"ingest","EventsEnqueued":{n}}}"#
            )
        };
        totals.add_line(&line(2));
        totals.add_line(&line(3));
        totals.add_line(r#"{"level":"INFO","fields":{"message":"EventsEnqueued"}}"#);
        totals.add_line("{\"_aws\": not json");
        assert_eq!(totals.total("ingest", "EventsEnqueued"), 5.0);
        assert_eq!(totals.total("fetch", "EventsEnqueued"), 0.0);
    }
}

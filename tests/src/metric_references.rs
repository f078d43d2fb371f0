//! The metrics `infra/template.yaml`'s alarms and dashboard name: each
//! one's namespace, name and dimensions, wherever the template writes them
//! (an alarm's own `Namespace`/`MetricName`/`Dimensions`, the
//! `MetricStat`s of its `Metrics`, a dashboard widget's metric rows with
//! their `"."` and `"..."` shorthands, and the `SEARCH` expressions).

use crate::template::{block, dashboard_body, flow_mappings, resources_of_type};
use serde_json::Value;

/// One metric the template names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricReference {
    /// Where: `alarm Upstream429s`, `dashboard widget "Ingest"`.
    pub place: String,
    pub namespace: String,
    /// Empty when the place names none that could be read.
    pub name: String,
    /// Each dimension's name, with its value where the place gives one (a
    /// `SEARCH` schema names dimensions without values).
    pub dimensions: Vec<(String, Option<String>)>,
}

/// Every metric the alarms and the dashboard name, and a problem for what
/// cannot be read (a dashboard body that is not JSON, say).
pub fn metric_references(template: &str) -> (Vec<MetricReference>, Vec<String>) {
    let mut references = alarm_references(template);
    let mut problems = Vec::new();
    match dashboard_body(template).map(|body| serde_json::from_str::<Value>(&body)) {
        Some(Ok(dashboard)) => references.extend(dashboard_references(&dashboard)),
        Some(Err(e)) => problems.push(format!("the dashboard body is not JSON: {e}")),
        None => problems.push("the template has no DashboardBody".to_owned()),
    }
    (references, problems)
}

/// The text after `key:` up to the end of its flow or block value.
fn value_after<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    let rest = text.split_once(key)?.1;
    Some(rest.split([',', '}', '\n']).next().unwrap_or_default().trim())
}

/// The `[…]` after `Dimensions:` in `text`, brackets inside quotes skipped.
fn dimensions_list(text: &str) -> Option<&str> {
    let rest = text.split_once("Dimensions:")?.1;
    let open = rest.find('[')?;
    let mut quoted = false;
    for (i, c) in rest[open..].char_indices() {
        match c {
            '"' => quoted = !quoted,
            ']' if !quoted => return Some(&rest[open..=open + i]),
            _ => {}
        }
    }
    None
}

fn alarm_references(template: &str) -> Vec<MetricReference> {
    let mut references = Vec::new();
    for alarm in resources_of_type(template, "AWS::CloudWatch::Alarm") {
        let text = block(template, &format!("{alarm}:")).join("\n");
        // Each metric of an alarm starts at its `Namespace:`.
        for metric in text.split("Namespace:").skip(1) {
            let dimensions = dimensions_list(metric)
                .map(flow_mappings)
                .unwrap_or_default()
                .into_iter()
                .map(|pairs| {
                    let get = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
                    (get("Name").unwrap_or_default(), get("Value"))
                })
                .collect();
            references.push(MetricReference {
                place: format!("alarm {alarm}"),
                namespace: metric.split([',', '}', '\n']).next().unwrap_or_default().trim().to_owned(),
                name: value_after(metric, "MetricName:").unwrap_or_default().to_owned(),
                dimensions,
            });
        }
    }
    references
}

fn dashboard_references(dashboard: &Value) -> Vec<MetricReference> {
    let mut references = Vec::new();
    for widget in dashboard["widgets"].as_array().into_iter().flatten() {
        let place = format!("dashboard widget {}", widget["properties"]["title"]);
        let mut previous: Vec<String> = Vec::new();
        for row in widget["properties"]["metrics"].as_array().into_iter().flatten() {
            let items = row.as_array().cloned().unwrap_or_default();
            if let Some(expression) = items.first().and_then(|i| i["expression"].as_str()) {
                references.extend(search_references(&place, expression));
                continue;
            }
            let given: Vec<String> = items.iter().filter_map(|i| i.as_str().map(str::to_owned)).collect();
            let row = expand_row(&previous, &given);
            references.push(MetricReference {
                place: place.clone(),
                namespace: row.first().cloned().unwrap_or_default(),
                name: row.get(1).cloned().unwrap_or_default(),
                dimensions: row[2.min(row.len())..].chunks(2).map(|p| (p[0].clone(), p.get(1).cloned())).collect(),
            });
            previous = row;
        }
    }
    references
}

/// A metric row with CloudWatch's shorthands filled in from the row
/// before: `"."` repeats the item at its place, a leading `"..."` repeats
/// every item of the previous row that the rest does not give.
pub fn expand_row(previous: &[String], given: &[String]) -> Vec<String> {
    if given.first().map(String::as_str) == Some("...") {
        let rest = &given[1..];
        let kept = previous.len().saturating_sub(rest.len());
        return previous[..kept].iter().chain(rest).cloned().collect();
    }
    given
        .iter()
        .enumerate()
        .map(|(i, item)| if item == "." { previous.get(i).cloned().unwrap_or_default() } else { item.clone() })
        .collect()
}

/// The metrics of each `SEARCH('{Namespace,Dim,…} MetricName="X" Dim="v"', …)`
/// in a dashboard expression.
pub fn search_references(place: &str, expression: &str) -> Vec<MetricReference> {
    let mut references = Vec::new();
    for search in expression.split("SEARCH('").skip(1) {
        let query = search.split('\'').next().unwrap_or_default();
        let schema = query.split_once('{').and_then(|(_, s)| s.split_once('}')).map_or("", |(s, _)| s);
        let mut names = schema.split(',').map(str::trim);
        let namespace = names.next().unwrap_or_default().to_owned();
        let quoted = |key: &str| {
            query.split_once(&format!("{key}=\"")).and_then(|(_, v)| v.split_once('"')).map(|(v, _)| v.to_owned())
        };
        references.push(MetricReference {
            place: place.to_owned(),
            namespace,
            name: quoted("MetricName").unwrap_or_default(),
            dimensions: names.map(|n| (n.to_owned(), quoted(n))).collect(),
        });
    }
    references
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn shorthands_repeat_the_row_before() {
        let first = strings(&["AWS/SQS", "Visible", "QueueName", "q"]);
        assert_eq!(
            expand_row(&first, &strings(&[".", "Age", ".", "."])),
            strings(&["AWS/SQS", "Age", "QueueName", "q"])
        );
        assert_eq!(expand_row(&first, &strings(&["...", "dlq"])), strings(&["AWS/SQS", "Visible", "QueueName", "dlq"]));
    }

    #[test]
    fn a_search_names_its_namespace_metric_and_dimensions() {
        let found = search_references(
            "w",
            r#"SUM(SEARCH('{Sluice,Function,Stage} MetricName="Calls" Stage="${Stage}"', 'Sum', 60))"#,
        );
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].namespace.as_str(), found[0].name.as_str()), ("Sluice", "Calls"));
        assert_eq!(
            found[0].dimensions,
            [("Function".to_owned(), None), ("Stage".to_owned(), Some("${Stage}".to_owned()))]
        );
    }

    #[test]
    fn an_alarm_s_metrics_are_read_in_every_form() {
        let sample = "  A:\n    Type: AWS::CloudWatch::Alarm\n    Properties:\n      Namespace: AWS/SQS\n      MetricName: Age\n      Dimensions: [{Name: QueueName, Value: !GetAtt Q.QueueName}]\n  B:\n    Type: AWS::CloudWatch::Alarm\n    Properties:\n      Metrics:\n        - {Id: e, MetricStat: {Metric: {Namespace: AWS/Lambda, MetricName: Errors, Dimensions: [{Name: FunctionName, Value: !Ref F}]}}}\n        - Id: s\n          MetricStat:\n            Metric:\n              Namespace: Sluice\n              MetricName: Upstream429\n              Dimensions: [{Name: Stage, Value: !Ref Stage}, {Name: Function, Value: fetch}]\n";
        let found = alarm_references(sample);
        let read: Vec<(&str, &str, &str)> =
            found.iter().map(|r| (r.place.as_str(), r.namespace.as_str(), r.name.as_str())).collect();
        assert_eq!(
            read,
            [("alarm A", "AWS/SQS", "Age"), ("alarm B", "AWS/Lambda", "Errors"), ("alarm B", "Sluice", "Upstream429")]
        );
        assert_eq!(found[2].dimensions[1], ("Function".to_owned(), Some("fetch".to_owned())));
    }
}

//! The metrics `infra/template.yaml`'s alarms and dashboard name against
//! what publishes them (`sluice_tests::metrics`): the code's EMF metrics
//! (namespace, names, dimension set, each function's `Function`) and the
//! AWS services' own (names and dimension names). A misnamed metric raises
//! no error anywhere: its alarm never fires, its graph stays empty. Run on
//! the template, and on copies with a name or a dimension wrong, to show
//! the check reports it.

use sluice_tests::metric_references::metric_references;
use sluice_tests::metrics::metric_problems;
use sluice_tests::template::{broken_copy, template};

#[test]
fn every_metric_the_template_names_is_published() {
    let problems = metric_problems(&template());
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The readers find the metrics of every form the template writes: the
/// alarms' (single, `MetricStat` in flow and block style) and the
/// dashboard's (rows with shorthands, `SEARCH`).
#[test]
fn the_references_cover_alarms_and_dashboard() {
    let (references, problems) = metric_references(&template());
    assert!(problems.is_empty(), "{problems:#?}");
    let has = |place: &str, namespace: &str, name: &str| {
        references.iter().any(|r| r.place.contains(place) && r.namespace == namespace && r.name == name)
    };
    assert!(has("alarm EventsDlqNotEmpty", "AWS/SQS", "ApproximateNumberOfMessagesVisible"));
    assert!(has("alarm FetchErrors", "AWS/Lambda", "Throttles"));
    assert!(has("alarm Upstream429s", "Sluice", "Upstream429"));
    assert!(has("alarm CacheNearLimits", "AWS/ElastiCache", "ElastiCacheProcessingUnits"));
    assert!(has("\"Ingest\"", "Sluice", "EventsRejected"));
    assert!(has("\"Dead-letter queues\"", "AWS/SQS", "ApproximateNumberOfMessagesVisible"));
    assert!(has("\"Upstream calls and 429s\"", "Sluice", "UpstreamCalls"));
    assert!(has("alarm DrainLagHigh", "Sluice", "DrainLag"));
    assert!(has("\"Drain to PostgreSQL", "Sluice", "DrainRowsWritten"));
    assert!(references.len() >= 40, "{}", references.len());
}

fn problems_after(from: &str, to: &str) -> Vec<String> {
    metric_problems(&broken_copy(from, to))
}

/// A misspelled EMF metric in an alarm: no code emits it.
#[test]
fn a_misspelled_metric_in_an_alarm_is_reported() {
    let problems = problems_after("MetricName: Upstream429\n", "MetricName: Upstream429s\n");
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].starts_with("alarm Upstream429s: no code emits Sluice/\"Upstream429s\""), "{problems:#?}");
}

/// A misspelled EMF metric on the dashboard, in a row and in a SEARCH.
#[test]
fn a_misspelled_metric_on_the_dashboard_is_reported() {
    let problems = problems_after(r#"[".", "EventsCoalesced","#, r#"[".", "EventsCoalesed","#);
    assert!(
        problems.iter().any(|p| p.contains("\"Ingest\": no code emits Sluice/\"EventsCoalesed\"")),
        "{problems:#?}"
    );
    let problems = problems_after(r#"MetricName=\"UpstreamCalls\""#, r#"MetricName=\"UpstreamCall\""#);
    assert!(problems.iter().any(|p| p.contains("no code emits Sluice/\"UpstreamCall\"")), "{problems:#?}");
}

/// An EMF metric under another function than the one that emits it, or
/// under a dimension set the code does not publish.
#[test]
fn wrong_dimensions_of_our_metrics_are_reported() {
    let problems = problems_after("{Name: Function, Value: fetch}", "{Name: Function, Value: fetcher}");
    assert!(problems.iter().any(|p| p.contains("Function fetcher is no deployed function")), "{problems:#?}");
    let problems = problems_after(
        r#"["Sluice", "SheetRowsBuffered", "Stage", "${Stage}", "Function", "buffer-row"]"#,
        r#"["Sluice", "SheetRowsBuffered", "Function", "buffer-row"]"#,
    );
    assert!(problems.iter().any(|p| p.contains("the code publishes under exactly")), "{problems:#?}");
    let problems = problems_after(r#""Function", "ingest"]"#, r#""Function", "fetch"]"#);
    assert!(
        problems.iter().any(|p| p.contains("no code emits Sluice/\"EventsReceived\" (for [\"fetch\"])")),
        "{problems:#?}"
    );
}

/// An AWS metric misspelled, under a dimension its namespace does not
/// use, and a namespace nobody publishes.
#[test]
fn wrong_aws_metrics_are_reported() {
    let problems = problems_after("MetricName: ThrottledCmds\n", "MetricName: ThrottledCommands\n");
    assert!(
        problems.iter().any(|p| p.contains("AWS/ElastiCache has no metric \"ThrottledCommands\"")),
        "{problems:#?}"
    );
    let problems = problems_after(
        "Dimensions: [{Name: clusterId, Value: !Ref Cache}]",
        "Dimensions: [{Name: CacheClusterId, Value: !Ref Cache}]",
    );
    assert!(problems.iter().any(|p| p.contains("not dimension \"CacheClusterId\"")), "{problems:#?}");
    let problems = problems_after("Namespace: AWS/SQS\n", "Namespace: AWS/SQSS\n");
    assert!(problems.iter().any(|p| p.contains("namespace \"AWS/SQSS\"")), "{problems:#?}");
}

/// The drain's lag alarm on a step's metric name, or on another function:
/// the drain emits its own metrics, and only it emits them.
#[test]
fn a_drain_metric_under_the_wrong_name_or_function_is_reported() {
    let renamed = problems_after("MetricName: DrainLag\n", "MetricName: DrainLagSeconds\n");
    assert_eq!(renamed.len(), 1, "{renamed:#?}");
    assert!(renamed[0].starts_with("alarm DrainLagHigh: no code emits Sluice/\"DrainLagSeconds\""), "{renamed:#?}");
    let elsewhere = problems_after(
        "MetricName: DrainLag\n      Dimensions: [{Name: Stage, Value: !Ref Stage}, {Name: Function, Value: drain}]",
        "MetricName: DrainLag\n      Dimensions: [{Name: Stage, Value: !Ref Stage}, {Name: Function, Value: store}]",
    );
    assert!(
        elsewhere.iter().any(|p| p.contains("no code emits Sluice/\"DrainLag\" (for [\"store\"])")),
        "{elsewhere:#?}"
    );
}

//! Every operation the endpoint serves, as `aws-sdk-sfn` calls it.

use super::endpoint::{Endpoint, bounded};
use aws_sdk_sfn::types::{ExecutionStatus, StateMachineType, SyncExecutionStatus};
use serde_json::{Value, json};
use sluice_aws::{StateMachineClient, SyncOutcome};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

fn parse(text: Option<&str>) -> Value {
    serde_json::from_str(text.expect("JSON text")).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_machines_are_listed_and_described() {
    bounded(LIMIT, async {
        let sfn = Endpoint::start(10).await;
        let listed = sfn.client.list_state_machines().send().await.unwrap();
        let arns: Vec<&str> = listed.state_machines().iter().map(|m| m.state_machine_arn()).collect();
        assert_eq!(arns, [sfn.greeter_arn.as_str(), sfn.slow_arn.as_str()]);
        assert_eq!(sfn.greeter_arn, "arn:aws:states:us-east-1:000000000000:stateMachine:greeter");
        assert!(listed.state_machines().iter().all(|m| m.r#type() == &StateMachineType::Express));
        let one = sfn.client.list_state_machines().max_results(1).send().await.unwrap();
        let rest = sfn.client.list_state_machines().set_next_token(one.next_token().map(str::to_owned)).send();
        assert_eq!(rest.await.unwrap().state_machines()[0].name(), "slow");

        let described = sfn.client.describe_state_machine().state_machine_arn(&sfn.greeter_arn).send().await.unwrap();
        assert_eq!((described.name(), described.r#type()), ("greeter", &StateMachineType::Express));
        let definition: Value = serde_json::from_str(described.definition()).unwrap();
        assert_eq!(definition["States"]["Greet"]["Parameters"]["FunctionName"], "greet", "substituted");
        assert!(described.role_arn().starts_with("arn:aws:iam::000000000000:role/"));
        sfn.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_execution_answers_its_output_and_can_be_looked_up() {
    bounded(LIMIT, async {
        let sfn = Endpoint::start(10).await;
        let input = r#"{"who": "sluice"}"#;
        let run = sfn.client.start_sync_execution().state_machine_arn(&sfn.greeter_arn).name("first").input(input);
        let run = run.send().await.unwrap();
        let arn = "arn:aws:states:us-east-1:000000000000:execution:greeter:first";
        assert_eq!((run.execution_arn(), run.status()), (arn, &SyncExecutionStatus::Succeeded));
        assert_eq!((run.name(), run.state_machine_arn()), (Some("first"), Some(sfn.greeter_arn.as_str())));
        // The ARN answered is the one the execution itself read.
        assert_eq!(parse(run.output()), json!({"greeting": "Hello, sluice!", "execution": arn}));
        assert_eq!(run.input(), Some(input), "the input comes back as sent");
        assert!(run.start_date() <= run.stop_date());
        assert!(run.billing_details().unwrap().billed_duration_in_milliseconds() >= 100);

        let described = sfn.client.describe_execution().execution_arn(arn).send().await.unwrap();
        assert_eq!(described.status(), &ExecutionStatus::Succeeded);
        assert_eq!(described.output(), run.output());
        assert!(described.stop_date().is_some());
        let bare = sfn.client.describe_execution().execution_arn(arn).included_data("METADATA_ONLY".into());
        let bare = bare.send().await.unwrap();
        assert_eq!((bare.input(), bare.output()), (None, None));

        let history = sfn.client.get_execution_history().execution_arn(arn).send().await.unwrap();
        let types: Vec<&str> = history.events().iter().map(|e| e.r#type().as_str()).collect();
        assert_eq!(
            types,
            [
                "ExecutionStarted",
                "ChoiceStateEntered",
                "ChoiceStateExited",
                "TaskStateEntered",
                "TaskScheduled",
                "TaskStarted",
                "TaskSucceeded",
                "TaskStateExited",
                "ExecutionSucceeded",
            ]
        );
        let ids: Vec<(i64, i64)> = history.events().iter().map(|e| (e.id(), e.previous_event_id())).collect();
        assert_eq!(ids[..3], [(1, 0), (2, 1), (3, 2)]);
        let scheduled = history.events()[4].task_scheduled_event_details().expect("details");
        assert_eq!((scheduled.resource_type(), scheduled.resource()), ("lambda", "invoke"));
        assert_eq!(parse(Some(scheduled.parameters()))["FunctionName"], "greet");
        let started = history.events()[0].execution_started_event_details().expect("details");
        assert_eq!(parse(started.input()), json!({"who": "sluice"}));
        assert_eq!(history.events()[1].state_entered_event_details().unwrap().name(), "Route");
        assert_eq!(history.next_token(), None);

        // Pages of 4, newest first, without the data.
        let mut newest_first = Vec::new();
        let mut token = None;
        loop {
            let page = sfn.client.get_execution_history().execution_arn(arn).max_results(4).reverse_order(true);
            let page = page.include_execution_data(false).set_next_token(token).send().await.unwrap();
            assert!(page.events().len() <= 4);
            for event in page.events() {
                newest_first.push(event.r#type().as_str().to_owned());
                if let Some(started) = event.execution_started_event_details() {
                    assert_eq!(started.input(), None, "no data asked for");
                }
            }
            token = page.next_token().map(str::to_owned);
            if token.is_none() {
                break;
            }
        }
        let mut oldest_first = newest_first.clone();
        oldest_first.reverse();
        assert_eq!(oldest_first, types);

        let listed = sfn.client.list_executions().state_machine_arn(&sfn.greeter_arn).send().await.unwrap();
        let listed: Vec<_> = listed.executions().iter().map(|e| (e.name(), e.status().as_str())).collect();
        assert_eq!(listed, [("first", "SUCCEEDED")]);
        sfn.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_or_timed_out_execution_is_answered_200_with_its_error_and_cause() {
    bounded(LIMIT, async {
        let sfn = Endpoint::start(10).await;
        let run = sfn.client.start_sync_execution().state_machine_arn(&sfn.greeter_arn).input(r#"{"fail": 1}"#);
        let run = run.send().await.expect("a failed execution is still a 200");
        assert_eq!(run.status(), &SyncExecutionStatus::Failed);
        assert_eq!((run.error(), run.cause(), run.output()), (Some("Test.Refused"), Some("asked to fail"), None));
        let history = sfn.client.get_execution_history().execution_arn(run.execution_arn()).send().await.unwrap();
        let last = history.events().last().unwrap();
        assert_eq!(last.execution_failed_event_details().unwrap().error(), Some("Test.Refused"));

        let slow = sfn.client.start_sync_execution().state_machine_arn(&sfn.slow_arn).send().await.unwrap();
        assert_eq!((slow.status(), slow.error()), (&SyncExecutionStatus::TimedOut, Some("States.Timeout")));
        let described = sfn.client.describe_execution().execution_arn(slow.execution_arn()).send().await.unwrap();
        assert_eq!(described.status(), &ExecutionStatus::TimedOut);

        // sluice-aws's adapter reads the same answers into its outcomes.
        let greeter = StateMachineClient::new(sfn.client.clone(), sfn.greeter_arn.clone());
        let failed = greeter.start_sync(r#"{"fail": true}"#, Some("adapter-failed")).await.unwrap();
        let expected = SyncOutcome::Failed { error: "Test.Refused".into(), cause: "asked to fail".into() };
        assert_eq!(failed.outcome, expected);
        assert!(failed.execution_arn.ends_with(":execution:greeter:adapter-failed"));
        let greeted = greeter.start_sync(r#"{"who": "adapter"}"#, None).await.unwrap();
        let SyncOutcome::Succeeded { output } = greeted.outcome else { panic!("{greeted:?}") };
        assert_eq!(parse(Some(&output))["greeting"], "Hello, adapter!");
        let slow = StateMachineClient::new(sfn.client.clone(), sfn.slow_arn.clone());
        let timed_out = slow.start_sync("{}", None).await.unwrap();
        assert_eq!(timed_out.outcome.status(), "TIMED_OUT");
        sfn.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_execution_answers_at_once_and_the_execution_runs_on() {
    bounded(LIMIT, async {
        let sfn = Endpoint::start(10).await;
        let start = || sfn.client.start_execution().state_machine_arn(&sfn.greeter_arn).name("held");
        let started = start().input(r#"{"hold": "on"}"#).send().await.unwrap();
        let arn = started.execution_arn().to_owned();
        assert_eq!(arn, "arn:aws:states:us-east-1:000000000000:execution:greeter:held");
        // Held in its task: running, its history only begun.
        let running = sfn.client.describe_execution().execution_arn(&arn).send().await.unwrap();
        assert_eq!((running.status(), running.stop_date()), (&ExecutionStatus::Running, None));
        let history = sfn.client.get_execution_history().execution_arn(&arn).send().await.unwrap();
        let types: Vec<&str> = history.events().iter().map(|e| e.r#type().as_str()).collect();
        assert_eq!(types, ["ExecutionStarted"]);
        // The same name and input while it runs: the same execution.
        let again = start().input(r#"{"hold": "on"}"#).send().await.unwrap();
        assert_eq!(again.execution_arn(), arn);
        let adapter = StateMachineClient::new(sfn.client.clone(), sfn.greeter_arn.clone());
        assert_eq!(adapter.start(r#"{"hold": "on"}"#, Some("held")).await.unwrap(), arn);

        sfn.release.add_permits(1);
        let ended = loop {
            let described = sfn.client.describe_execution().execution_arn(&arn).send().await.unwrap();
            if described.status() != &ExecutionStatus::Running {
                break described;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert_eq!(ended.status(), &ExecutionStatus::Succeeded);
        assert_eq!(parse(ended.output()), json!({"held": "on"}));
        sfn.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_latest_executions_are_remembered() {
    bounded(LIMIT, async {
        let sfn = Endpoint::start(2).await;
        let mut arns = Vec::new();
        for n in 0..3 {
            let run = sfn.client.start_sync_execution().state_machine_arn(&sfn.greeter_arn).name(format!("run-{n}"));
            arns.push(run.send().await.unwrap().execution_arn().to_owned());
        }
        let forgotten = sfn.client.describe_execution().execution_arn(&arns[0]).send().await.unwrap_err();
        let forgotten = forgotten.into_service_error();
        assert!(forgotten.is_execution_does_not_exist(), "{forgotten:?}");
        assert!(forgotten.to_string().contains("remembers its last 2 executions"), "{forgotten}");
        for arn in &arns[1..] {
            sfn.client.describe_execution().execution_arn(arn).send().await.expect("remembered");
        }
        let listed = sfn.client.list_executions().state_machine_arn(&sfn.greeter_arn).send().await.unwrap();
        let names: Vec<&str> = listed.executions().iter().map(|e| e.name()).collect();
        assert_eq!(names, ["run-2", "run-1"]);
        sfn.stop().await;
    })
    .await;
}

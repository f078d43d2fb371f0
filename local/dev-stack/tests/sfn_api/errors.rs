//! Each error as Step Functions answers it: typed by `aws-sdk-sfn` from
//! the code, with a message naming the problem; and the protocol's own
//! errors, over raw HTTP.

use super::endpoint::{Endpoint, bounded};
use aws_sdk_sfn::error::ProvideErrorMetadata;
use serde_json::json;
use sluice_aws::{SfnError, StateMachineClient};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);
const UNKNOWN_MACHINE: &str = "arn:aws:states:us-east-1:000000000000:stateMachine:nope";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starting_refuses_what_step_functions_refuses() {
    bounded(LIMIT, async {
        let sfn = Endpoint::start(10).await;
        let sync = || sfn.client.start_sync_execution();

        let e = sync().state_machine_arn(UNKNOWN_MACHINE).send().await.unwrap_err().into_service_error();
        assert!(e.is_state_machine_does_not_exist(), "{e:?}");
        assert!(e.message().unwrap().contains(UNKNOWN_MACHINE));
        let e = sync().state_machine_arn("greeter").send().await.unwrap_err().into_service_error();
        assert!(e.is_invalid_arn() && e.message().unwrap().contains("Unable to parse ARN"), "{e:?}");
        let other_region = sfn.greeter_arn.replace("us-east-1", "eu-west-1");
        let e = sync().state_machine_arn(other_region).send().await.unwrap_err().into_service_error();
        assert!(e.is_state_machine_does_not_exist(), "{e:?}");

        let e = sync().state_machine_arn(&sfn.greeter_arn).input("{not json").send().await.unwrap_err();
        let e = e.into_service_error();
        assert!(e.is_invalid_execution_input(), "{e:?}");
        assert!(e.message().unwrap().starts_with("Invalid State Machine Execution Input"), "{e:?}");
        let e = sync().state_machine_arn(&sfn.greeter_arn).name("has space").send().await.unwrap_err();
        assert!(e.into_service_error().is_invalid_name());

        sync().state_machine_arn(&sfn.greeter_arn).name("once").send().await.expect("first");
        let again = sfn.client.start_execution().state_machine_arn(&sfn.greeter_arn).name("once");
        let e = again.send().await.unwrap_err().into_service_error();
        assert!(e.is_execution_already_exists(), "an ended execution's name: {e:?}");
        let e = sync().state_machine_arn(&sfn.greeter_arn).name("once").send().await.unwrap_err();
        assert_eq!(e.into_service_error().code(), Some("ExecutionAlreadyExists"));

        // sluice-aws's adapter keeps the code.
        let missing = StateMachineClient::new(sfn.client.clone(), UNKNOWN_MACHINE);
        let e = missing.start_sync("{}", None).await.unwrap_err();
        assert_eq!(e.code(), Some("StateMachineDoesNotExist"), "{e}");
        assert!(matches!(e, SfnError::Call { operation: "StartSyncExecution", .. }));
        sfn.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn looking_up_refuses_what_step_functions_refuses() {
    bounded(LIMIT, async {
        let sfn = Endpoint::start(10).await;
        let unknown = "arn:aws:states:us-east-1:000000000000:execution:greeter:never-ran";
        let e = sfn.client.describe_execution().execution_arn(unknown).send().await.unwrap_err();
        let e = e.into_service_error();
        assert!(e.is_execution_does_not_exist() && e.message().unwrap().contains(unknown), "{e:?}");
        let e = sfn.client.get_execution_history().execution_arn(unknown).send().await.unwrap_err();
        assert!(e.into_service_error().is_execution_does_not_exist());
        let e = sfn.client.describe_execution().execution_arn(&sfn.greeter_arn).send().await.unwrap_err();
        let e = e.into_service_error();
        assert!(e.is_invalid_arn() && e.message().unwrap().contains("stateMachine"), "{e:?}");
        let e = sfn.client.describe_state_machine().state_machine_arn(unknown).send().await.unwrap_err();
        assert!(e.into_service_error().is_invalid_arn());
        let e = sfn.client.describe_state_machine().state_machine_arn(UNKNOWN_MACHINE).send().await.unwrap_err();
        assert!(e.into_service_error().is_state_machine_does_not_exist());

        let run = sfn.client.start_sync_execution().state_machine_arn(&sfn.greeter_arn).send().await.unwrap();
        let history = sfn.client.get_execution_history().execution_arn(run.execution_arn()).next_token("page:999");
        let e = history.send().await.unwrap_err().into_service_error();
        assert!(e.is_invalid_token(), "{e:?}");
        let history = sfn.client.get_execution_history().execution_arn(run.execution_arn()).max_results(1001);
        assert_eq!(history.send().await.unwrap_err().code(), Some("ValidationException"));
        sfn.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protocol_refuses_what_it_cannot_read_naming_it() {
    bounded(LIMIT, async {
        let sfn = Endpoint::start(10).await;
        let target = Some("AWSStepFunctions.StartSyncExecution");
        let (status, body) = sfn.raw(target, "{}").await;
        assert_eq!(status, 400);
        assert_eq!(body["__type"], "ValidationException");
        assert!(body["message"].as_str().unwrap().contains("'stateMachineArn'"), "{body}");
        let (status, body) = sfn.raw(target, "{").await;
        assert_eq!((status, &body["__type"]), (400, &json!("SerializationException")));
        let (status, body) = sfn.raw(Some("AWSStepFunctions.CreateStateMachine"), "{}").await;
        assert_eq!((status, &body["__type"]), (400, &json!("UnknownOperationException")));
        assert!(body["message"].as_str().unwrap().starts_with("CreateStateMachine is not supported"), "{body}");
        let (_, body) = sfn.raw(None, "{}").await;
        assert!(body["message"].as_str().unwrap().contains("No X-Amz-Target"), "{body}");
        let (_, body) = sfn.raw(Some("AmazonSQS.ListQueues"), "{}").await;
        assert!(body["message"].as_str().unwrap().contains("not a Step Functions operation"), "{body}");
        // A body too large to read is refused in the same JSON shape, not
        // as the web framework's plain text.
        let (status, body) = sfn.raw(target, &" ".repeat(3 * 1024 * 1024)).await;
        assert_eq!((status, &body["__type"]), (400, &json!("ValidationException")));
        assert!(body["message"].as_str().unwrap().contains("larger than this endpoint reads"), "{body}");
        sfn.stop().await;
    })
    .await;
}

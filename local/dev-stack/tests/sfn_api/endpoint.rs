//! A Step Functions endpoint for tests: two small state machines served
//! on 127.0.0.1, and an `aws-sdk-sfn` client pointed at it.
//!
//! `greeter` routes on its input: `{"fail": …}` ends in a Fail state,
//! `{"hold": …}` waits in a task until the test releases it, anything
//! else is greeted, with the execution's own ARN (`$$.Execution.Id`) in
//! the output. `slow` never ends its one task and times out after 1 s of
//! its clock, which runs 100 times faster than real time.

use serde_json::{Value, json};
use sluice_asl::{Clock, Executor, StateMachine, Substitutions, TaskError, TaskRegistry};
use sluice_aws::{SfnEndpoint, sfn_client};
use sluice_dev_stack::sfn_api::{self, StepFunctionsApi};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

pub(crate) const GREETER: &str = r#"{
  "StartAt": "Route",
  "States": {
    "Route": {
      "Type": "Choice",
      "Choices": [
        {"Variable": "$.fail", "IsPresent": true, "Next": "Refuse"},
        {"Variable": "$.hold", "IsPresent": true, "Next": "Hold"}
      ],
      "Default": "Greet"
    },
    "Greet": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "${Greeter}", "Payload": {"who.$": "$.who", "execution.$": "$$.Execution.Id"}},
      "OutputPath": "$.Payload",
      "End": true
    },
    "Hold": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "${Holder}", "Payload.$": "$"},
      "OutputPath": "$.Payload",
      "End": true
    },
    "Refuse": {"Type": "Fail", "Error": "Test.Refused", "Cause": "asked to fail"}
  }
}"#;

pub(crate) const SLOW: &str = r#"{
  "StartAt": "Forever",
  "TimeoutSeconds": 1,
  "States": {
    "Forever": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "${Never}"}, "End": true}
  }
}"#;

/// A served endpoint.
pub(crate) struct Endpoint {
    pub(crate) url: String,
    pub(crate) client: aws_sdk_sfn::Client,
    pub(crate) greeter_arn: String,
    pub(crate) slow_arn: String,
    /// One permit lets one held execution finish.
    pub(crate) release: Arc<Semaphore>,
    /// Cancelled by [`Endpoint::stop`], or when the endpoint is dropped.
    stop: Option<DropGuard>,
    server: Option<JoinHandle<std::io::Result<()>>>,
}

/// The clock of `slow`: its waits pass 100 times faster.
#[derive(Debug)]
struct Hurried;

impl Clock for Hurried {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep(&self, duration: Duration) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration / 100))
    }
}

impl Endpoint {
    /// Serves both machines, remembering the last `kept` executions.
    pub(crate) async fn start(kept: usize) -> Self {
        let release = Arc::new(Semaphore::new(0));
        let held = release.clone();
        let registry = TaskRegistry::new()
            .with("greet", |input: Value| async move {
                let who = input["who"].as_str().unwrap_or("you").to_owned();
                Ok::<_, TaskError>(json!({"greeting": format!("Hello, {who}!"), "execution": input["execution"]}))
            })
            .with("hold", move |input: Value| {
                let held = held.clone();
                async move {
                    held.acquire().await.expect("semaphore").forget();
                    Ok::<_, TaskError>(json!({"held": input["hold"]}))
                }
            })
            .with("never", |_: Value| std::future::pending::<Result<Value, TaskError>>());
        let registry = Arc::new(registry);
        let subs = Substitutions::new().with("Greeter", "greet").with("Holder", "hold").with("Never", "never");
        let machine = |text: &str| Arc::new(StateMachine::load(text, &subs).expect("definition"));
        let greeter = Executor::from_shared(machine(GREETER), registry.clone(), Arc::new(sluice_asl::SystemClock));
        let slow = Executor::from_shared(machine(SLOW), registry, Arc::new(Hurried));
        let api = StepFunctionsApi::new(kept)
            .with_state_machine("greeter", subs.apply(GREETER), greeter)
            .with_state_machine("slow", subs.apply(SLOW), slow);
        let (greeter_arn, slow_arn) = (api.state_machine_arn("greeter"), api.state_machine_arn("slow"));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("listen");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let stop = CancellationToken::new();
        let server = tokio::spawn(sfn_api::serve(listener, api, stop.clone().cancelled_owned()));
        let stop = Some(stop.drop_guard());
        let client = sfn_client(&SfnEndpoint::Local(url.clone())).await;
        Self { url, client, greeter_arn, slow_arn, release, stop, server: Some(server) }
    }

    /// Stops the server, which first waits for the executions still running.
    pub(crate) async fn stop(mut self) {
        self.stop.take().expect("running").disarm().cancel();
        let server = self.server.take().expect("running");
        tokio::time::timeout(Duration::from_secs(10), server).await.expect("stops").expect("joins").expect("serves");
    }

    /// A raw request to the endpoint: (status, body).
    pub(crate) async fn raw(&self, target: Option<&str>, body: &str) -> (u16, Value) {
        let mut request = sluice_http::client()
            .post(&self.url)
            .header("content-type", "application/x-amz-json-1.0")
            .body(body.to_owned());
        if let Some(target) = target {
            request = request.header("x-amz-target", target);
        }
        let response = request.send().await.expect("request");
        assert_eq!(response.headers()["content-type"], "application/x-amz-json-1.0");
        (response.status().as_u16(), response.json().await.expect("JSON body"))
    }
}

/// Runs `test` within `limit`, so a hang fails instead of stalling the suite.
pub(crate) async fn bounded<F: std::future::Future>(limit: Duration, test: F) -> F::Output {
    tokio::time::timeout(limit, test).await.expect("the test ran past its time limit")
}

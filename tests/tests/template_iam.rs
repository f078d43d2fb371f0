//! Each function's AWS calls against its IAM policies in
//! `infra/template.yaml` (`sluice_tests::iam`): a call its role does not
//! allow fails in AWS only, as AccessDenied at the first request. The calls
//! come from the code (each function crate's `AWS_CALLS`, made of the
//! adapters' lists). Run on the template, and on copies with a policy
//! dropped or pointed elsewhere, to show the check reports it.

use sluice_tests::iam::{FUNCTION_CALLS, declared_calls_problems, iam_problems};
use sluice_tests::template::{broken_copy, functions_and_binaries, template};

#[test]
fn every_function_may_make_the_calls_its_code_makes() {
    let problems = iam_problems(&template());
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The check has something to check: every function has calls (its
/// secrets at least), and the ones that send to a queue say so.
#[test]
fn every_function_declares_its_calls() {
    let template = template();
    assert_eq!(functions_and_binaries(&template).len(), FUNCTION_CALLS.len());
    for (binary, uses) in FUNCTION_CALLS {
        assert!(!uses.is_empty(), "{binary}");
    }
    let sends = |binary: &str| {
        FUNCTION_CALLS
            .iter()
            .any(|(b, uses)| *b == binary && uses.iter().any(|u| u.calls.iter().any(|c| c.action == "sqs:SendMessage")))
    };
    assert!(sends("sluice-fn-ingest") && sends("sluice-fn-buffer-row") && sends("sluice-fn-flush-sheet"));
    // fetch hands a fetch its mall's bucket cannot serve over to the mall's drain.
    assert!(sends("sluice-fn-catch-up") && sends("sluice-fn-fetch"));
    assert!(!sends("sluice-fn-store"));
}

/// Each step function declares the calls of the service its `main` starts.
#[test]
fn each_step_function_declares_what_its_service_calls() {
    let problems = declared_calls_problems(&template());
    assert!(problems.is_empty(), "{problems:#?}");
}

/// buffer-row's SQS policy removed: its sends to the flush queue are not allowed.
#[test]
fn a_missing_send_permission_is_reported() {
    // buffer-row's policies end with the flush queue's and the cache password's.
    let buffer_row = "        - SQSSendMessagePolicy:\n            QueueName: !GetAtt FlushQueue.QueueName\n        - AWSSecretsManagerGetSecretValuePolicy: {SecretArn: !Ref CachePassword}\n  FlushSheetFunction:";
    let broken = broken_copy(
        buffer_row,
        "        - AWSSecretsManagerGetSecretValuePolicy: {SecretArn: !Ref CachePassword}\n  FlushSheetFunction:",
    );
    let problems = iam_problems(&broken);
    assert_eq!(
        problems,
        [
            "BufferRowFunction calls SendMessageBatch (sqs:SendMessage) on FlushQueue (SLUICE_FLUSH_QUEUE_URL), which its policies do not allow"
        ]
    );
}

/// ingest allowed to send to the wrong queue: the right one is not allowed.
#[test]
fn a_permission_on_another_resource_is_reported() {
    let broken = broken_copy("QueueName: !GetAtt EventsQueue.QueueName", "QueueName: !GetAtt EventsDlq.QueueName");
    let problems = iam_problems(&broken);
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("IngestFunction calls SendMessageBatch (sqs:SendMessage) on EventsQueue")),
        "{problems:#?}"
    );
}

/// A secret's read permission dropped, and a policy this check cannot expand.
#[test]
fn a_missing_secret_permission_and_an_unknown_policy_are_reported() {
    let broken = broken_copy(
        "        - AWSSecretsManagerGetSecretValuePolicy: {SecretArn: !Ref ApiKeys}\n",
        "        - AmazonSQSFullAccess\n",
    );
    let problems = iam_problems(&broken);
    assert!(
        problems.contains(
            &"IngestFunction: policy AmazonSQSFullAccess is not a SAM policy template this check knows".to_owned()
        ),
        "{problems:#?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("IngestFunction calls GetSecretValue (secretsmanager:GetSecretValue) on ApiKeys")),
        "{problems:#?}"
    );
}

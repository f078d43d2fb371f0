//! `sluice redrive --group G`: the dead-lettered messages of one FIFO group,
//! taken from the events dead-letter queue and run through the state
//! machine one at a time, in the group's order, through `aws-sdk-sfn`
//! (StartSyncExecution, as the Pipe starts the Express machine): each
//! message's execution must succeed, and the message not come back in its
//! `batchItemFailures`, before the message is deleted and the next one
//! starts. The first that does not succeed stops the redrive; it and the
//! rest of the group stay in the dead-letter queue, in order. Each execution ARN is printed.
//!
//! Unlike `sluice dlq redrive` (StartMessageMoveTask, the whole queue back
//! to its source, where other groups' new events interleave with it), this
//! keeps a group's order and says what became of each message.
//!
//! A FIFO queue cannot be asked for one group. Receiving hands out the
//! first messages of the groups that are free, so the messages of other
//! groups are held (invisible) while the scan goes on, and made visible
//! again at the end, whatever the end. Targets come from the flags, else
//! `SLUICE_EVENTS_DLQ_URL`, `SLUICE_STATE_MACHINE_ARN` and the endpoint
//! variables, else (when neither the queue nor the state machine is named)
//! the running `sluice dev`'s.

use crate::dev_state::DevState;
use crate::usage;
use anyhow::Context;
use sluice_aws::{SfnEndpoint, SqsEndpoint, SqsQueue, StateMachineClient, SyncOutcome, sfn_client, sqs_client};
use sluice_domain::queue::{ReceiptHandle, ReceiveRequest, ReceivedMessage};
use sluice_domain::{GroupKey, Queue, WorkQueue};
use std::process::ExitCode;
use std::time::Duration;

const WHO: &str = "sluice redrive";

/// How long the messages of other groups stay held while the scan goes on.
const HOLD: Duration = Duration::from_secs(900);
/// How long a message stays invisible while its execution runs: above the
/// Express machine's 5 minutes, like the event queue's visibility timeout.
const RUNNING: Duration = Duration::from_secs(330);
/// The long poll of each receive: an empty answer after it means nothing
/// is left to receive (a short poll may miss messages).
const POLL: Duration = Duration::from_secs(1);

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The FIFO group whose dead-lettered messages to run, as `sluice dlq show`
    /// prints it (its MessageGroupId).
    #[arg(long)]
    group: String,
    /// The events dead-letter queue's URL (default: SLUICE_EVENTS_DLQ_URL,
    /// else the running `sluice dev`'s).
    #[arg(long)]
    dlq_url: Option<String>,
    /// The pipeline state machine's ARN (default: SLUICE_STATE_MACHINE_ARN,
    /// else the running `sluice dev`'s).
    #[arg(long)]
    state_machine_arn: Option<String>,
    /// A local SQS endpoint instead of AWS (default: SLUICE_SQS_ENDPOINT).
    #[arg(long)]
    sqs_endpoint: Option<String>,
    /// A local Step Functions endpoint instead of AWS (default: SLUICE_SFN_ENDPOINT).
    #[arg(long)]
    sfn_endpoint: Option<String>,
}

/// What a redrive works on, resolved.
#[derive(Debug)]
struct Target {
    group: GroupKey,
    dlq_url: String,
    state_machine_arn: String,
    sqs: SqsEndpoint,
    sfn: SfnEndpoint,
}

pub(crate) async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let target = resolve(args)?;
    let dlq = SqsQueue::new(sqs_client(&target.sqs).await, target.dlq_url.clone());
    let machine = StateMachineClient::new(sfn_client(&target.sfn).await, target.state_machine_arn.clone());
    println!("redriving group {} from {} through {}", target.group, target.dlq_url, target.state_machine_arn);
    let mut held = Vec::new();
    let outcome = redrive(&dlq, &machine, &target.group, &mut held).await;
    // Whatever happened, the other groups' messages go back at once.
    release(&dlq, &held).await;
    let report = outcome?;
    match report.stopped_at {
        None if report.done == 0 => {
            println!("no dead-lettered message of group {} in {}", target.group, target.dlq_url)
        }
        None => println!("redrove {} messages of group {}", report.done, target.group),
        Some(reason) => {
            println!(
                "stopped after {} messages: {reason}; it and the rest of group {} stay in the dead-letter queue",
                report.done, target.group
            );
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The flags, else the environment, else the running `sluice dev`'s;
/// missing or malformed ones are usage errors.
fn resolve(args: Args) -> anyhow::Result<Target> {
    let group = GroupKey::parse(&args.group).map_err(|e| usage(WHO, format!("--group: {e}")))?;
    let env = crate::operator_queues(WHO)?;
    let mut dlq_url = args.dlq_url.or(env.events_dlq_url);
    let mut state_machine_arn = args.state_machine_arn.or(env.state_machine_arn);
    let mut sqs = args.sqs_endpoint.or(env.sqs_endpoint);
    let mut sfn = args.sfn_endpoint.or(env.sfn_endpoint);
    // Nothing named: the `sluice dev` of this directory, all of it (a
    // queue of one stack and a state machine of another would not do).
    if dlq_url.is_none()
        && state_machine_arn.is_none()
        && let Some(dev) = DevState::read(&DevState::path())
    {
        dlq_url = dev.url("Dead-letter queue");
        state_machine_arn = dev.url("State machine");
        sqs = sqs.or_else(|| dev.url("SQS endpoint"));
        sfn = sfn.or_else(|| dev.url("Step Functions endpoint"));
    }
    let dlq_url = dlq_url.ok_or_else(|| {
        usage(WHO, "no dead-letter queue: pass --dlq-url (or set SLUICE_EVENTS_DLQ_URL), or run `sluice dev` here")
    })?;
    if !dlq_url.starts_with("http://") && !dlq_url.starts_with("https://") {
        return Err(usage(WHO, format!("--dlq-url {dlq_url:?} is not a queue URL (http:// or https://)")));
    }
    let state_machine_arn = state_machine_arn.ok_or_else(|| {
        usage(
            WHO,
            "no state machine: pass --state-machine-arn (or set SLUICE_STATE_MACHINE_ARN; the stack's output \
             StateMachineArn), or run `sluice dev` here",
        )
    })?;
    if !(state_machine_arn.starts_with("arn:")
        && state_machine_arn.contains(":states:")
        && state_machine_arn.contains(":stateMachine:"))
    {
        return Err(usage(
            WHO,
            format!(
                "--state-machine-arn {state_machine_arn:?} is not a state machine ARN (arn:aws:states:…:stateMachine:…)"
            ),
        ));
    }
    let endpoint = |url: Option<String>| url.filter(|u| !u.is_empty()).map_or(SqsEndpoint::Aws, SqsEndpoint::Local);
    Ok(Target { group, dlq_url, state_machine_arn, sqs: endpoint(sqs), sfn: endpoint(sfn) })
}

/// How far a redrive got.
#[derive(Debug, Default)]
struct Report {
    done: usize,
    /// Why it stopped before the group's end.
    stopped_at: Option<String>,
}

/// Runs the group's messages in order until none is left or one fails;
/// `held` collects the other groups' messages taken on the way.
async fn redrive(
    dlq: &SqsQueue,
    machine: &StateMachineClient,
    group: &GroupKey,
    held: &mut Vec<ReceiptHandle>,
) -> anyhow::Result<Report> {
    let request = ReceiveRequest::new(10, HOLD, POLL).context("receive settings")?;
    let mut report = Report::default();
    loop {
        let batch = dlq.receive(request).await.context("cannot receive from the dead-letter queue")?;
        if batch.is_empty() {
            return Ok(report);
        }
        let (ours, others): (Vec<_>, Vec<_>) = batch.into_iter().partition(|m| m.group == *group);
        held.extend(others.into_iter().map(|m| m.receipt));
        // A FIFO queue hands out a group's messages in order, and no more
        // of it while one is out: these are the next ones, in order.
        for (i, message) in ours.iter().enumerate() {
            if let Some(reason) = run_one(dlq, machine, message).await? {
                held.extend(ours[i..].iter().map(|m| m.receipt.clone()));
                report.stopped_at = Some(reason);
                return Ok(report);
            }
            report.done += 1;
        }
    }
}

/// Runs one message's execution and deletes the message when it
/// succeeded; otherwise says why not.
async fn run_one(
    dlq: &SqsQueue,
    machine: &StateMachineClient,
    message: &ReceivedMessage,
) -> anyhow::Result<Option<String>> {
    let id = message.message_id.as_str();
    dlq.change_visibility(&message.receipt, RUNNING)
        .await
        .with_context(|| format!("cannot keep message {id} invisible while it runs"))?;
    let input = serde_json::Value::Array(vec![sluice_dev_stack::pipe::pipe_message(message)]).to_string();
    let execution = match machine.start_sync(&input, None).await {
        Ok(execution) => execution,
        Err(e) => return Ok(Some(format!("message {id} did not start: {e}"))),
    };
    println!("{id}  {}  {}", execution.outcome.status(), execution.execution_arn);
    match &execution.outcome {
        SyncOutcome::Succeeded { output } => match sluice_dev_stack::pipe::failed_items(output) {
            Some(failed) if !failed.contains(id) => {
                dlq.delete(&message.receipt).await.with_context(|| format!("cannot delete message {id}"))?;
                Ok(None)
            }
            Some(_) => Ok(Some(format!("message {id} failed again (see `sluice trace` for why)"))),
            None => Ok(Some(format!("message {id}: the execution's output is not JSON: {output}"))),
        },
        SyncOutcome::Failed { error, cause } | SyncOutcome::TimedOut { error, cause } => {
            Ok(Some(format!("message {id}: execution {}: {error}: {cause}", execution.outcome.status())))
        }
    }
}

/// Makes `held` visible again; a message that cannot be is only reported
/// (it comes back by itself when its hold ends).
async fn release(dlq: &SqsQueue, held: &[ReceiptHandle]) {
    for receipt in held {
        if let Err(e) = dlq.change_visibility(receipt, Duration::ZERO).await {
            eprintln!("{WHO}: a held message stays invisible for up to {} s: {e}", HOLD.as_secs());
        }
    }
}

//! `sluice dlq list|show|redrive`: the dead-letter queues of a deployed
//! stack or of the `sluice dev` running in this directory, through the SQS
//! API (aws-sdk-sqs; AWS credentials and region from the environment, or a
//! local endpoint). `list` counts what waits in each; `show` peeks at
//! messages without taking them (they stay visible); `redrive` moves them
//! back to the queue they came from with StartMessageMoveTask and waits for
//! the move to finish.

use crate::dev_state::queue_urls;
use crate::usage;
use anyhow::{Context, anyhow};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use sluice_aws::{SqsQueue, sqs_client};
use sluice_domain::Queue;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
pub(crate) struct Queues {
    /// The events dead-letter queue's URL (default: the running `sluice dev`'s).
    #[arg(long)]
    events_dlq_url: Option<String>,
    /// The flush dead-letter queue's URL (default: the running `sluice dev`'s).
    #[arg(long)]
    flush_dlq_url: Option<String>,
    /// The catch-up dead-letter queue's URL: "catch up mall M" requests
    /// that failed too often (default: the running `sluice dev`'s).
    #[arg(long, alias = "mall-drain-dlq-url")]
    catch_up_dlq_url: Option<String>,
    /// A local SQS endpoint instead of AWS (default: the running `sluice dev`'s).
    #[arg(long)]
    sqs_endpoint: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Which {
    Events,
    Flush,
    /// `mall-drain`: its name before the catch-up was called so.
    #[value(alias = "mall-drain")]
    CatchUp,
}

impl Which {
    const ALL: [Which; 3] = [Which::Events, Which::Flush, Which::CatchUp];

    /// Its name, its URL's flag, and its name in the running `sluice dev`'s
    /// list of URLs.
    fn names(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Self::Events => ("events", "--events-dlq-url", "Dead-letter queue"),
            Self::Flush => ("flush", "--flush-dlq-url", "Flush dead-letter queue"),
            Self::CatchUp => ("catch-up", "--catch-up-dlq-url", "Catch-up dead-letter queue"),
        }
    }
}

/// Each dead-letter queue's URL, where known, in [`Which::ALL`]'s order.
type Urls = [Option<String>; 3];

#[derive(Debug, clap::Subcommand)]
pub(crate) enum DlqCommand {
    /// How many messages wait in each dead-letter queue.
    List(Queues),
    /// Peek at a dead-letter queue's messages; they stay where they are.
    Show {
        #[command(flatten)]
        queues: Queues,
        #[arg(long, value_enum, default_value = "events")]
        queue: Which,
        /// Most messages to show (1 to 10).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(i32).range(1..=10))]
        max: i32,
    },
    /// Move a dead-letter queue's messages back to the queue they came from.
    Redrive {
        #[command(flatten)]
        queues: Queues,
        #[arg(long, value_enum, default_value = "events")]
        queue: Which,
    },
}

pub(crate) async fn run(command: DlqCommand) -> anyhow::Result<ExitCode> {
    match command {
        DlqCommand::List(queues) => {
            let (client, urls) = resolve(&queues).await?;
            for (which, url) in Which::ALL.iter().zip(&urls) {
                let Some(url) = url else { continue };
                // Any queue's counts read the same way (GetQueueAttributes).
                let queue = SqsQueue::new(client.clone(), url);
                let q = Queue::attributes(&queue).await.with_context(|| format!("GetQueueAttributes on {url}"))?;
                println!("{:<10} {:>6} waiting  {:>4} in flight  {url}", which.names().0, q.visible, q.in_flight);
            }
            Ok(ExitCode::SUCCESS)
        }
        DlqCommand::Show { queues, queue, max } => {
            let (client, url) = one(&queues, queue).await?;
            show(&client, &url, max).await
        }
        DlqCommand::Redrive { queues, queue } => {
            let (client, url) = one(&queues, queue).await?;
            redrive(&client, &url).await
        }
    }
}

const WHO: &str = "sluice dlq";

/// The client and the DLQ URLs: the flags, else the running `sluice
/// dev`'s; none known is a usage error.
async fn resolve(queues: &Queues) -> anyhow::Result<(Client, Urls)> {
    let env = crate::operator_queues(WHO)?;
    let given = [
        queues.events_dlq_url.clone().or(env.events_dlq_url),
        queues.flush_dlq_url.clone().or(env.flush_dlq_url),
        queues.catch_up_dlq_url.clone().or(env.catch_up_dlq_url),
    ];
    let endpoint = queues.sqs_endpoint.clone().or(env.sqs_endpoint);
    let (urls, endpoint) = queue_urls(given, endpoint, Which::ALL.map(|which| which.names().2));
    if urls.iter().all(Option::is_none) {
        return Err(usage(
            WHO,
            "no dead-letter queue: pass --events-dlq-url / --flush-dlq-url / --catch-up-dlq-url, or run `sluice dev` here",
        ));
    }
    Ok((sqs_client(&endpoint).await, urls))
}

async fn one(queues: &Queues, which: Which) -> anyhow::Result<(Client, String)> {
    let (client, urls) = resolve(queues).await?;
    let url = Which::ALL.iter().zip(urls).find_map(|(w, url)| (*w == which).then_some(url)).flatten();
    url.map(|url| (client, url))
        .ok_or_else(|| usage(WHO, format!("no such dead-letter queue known: pass {}", which.names().1)))
}

async fn show(client: &Client, url: &str, max: i32) -> anyhow::Result<ExitCode> {
    // Visibility 0: a peek, the messages stay receivable.
    let answer = client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(max)
        .visibility_timeout(0)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .map_err(|e| anyhow!("ReceiveMessage on {url}: {}", aws_sdk_sqs::error::DisplayErrorContext(e)))?;
    let messages = answer.messages();
    if messages.is_empty() {
        println!("{url}: empty");
    }
    for message in messages {
        let attribute = |name: MessageSystemAttributeName| {
            message.attributes().and_then(|a| a.get(&name).cloned()).unwrap_or_default()
        };
        println!(
            "{}  group {}  received {}x\n  {}",
            message.message_id().unwrap_or("?"),
            attribute(MessageSystemAttributeName::MessageGroupId),
            attribute(MessageSystemAttributeName::ApproximateReceiveCount),
            message.body().unwrap_or("")
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn redrive(client: &Client, url: &str) -> anyhow::Result<ExitCode> {
    let attributes = client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| anyhow!("GetQueueAttributes on {url}: {}", aws_sdk_sqs::error::DisplayErrorContext(e)))?;
    let arn = attributes.attributes().and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned()).unwrap_or_default();
    let started = client
        .start_message_move_task()
        .source_arn(&arn)
        .send()
        .await
        .map_err(|e| anyhow!("StartMessageMoveTask from {arn}: {}", aws_sdk_sqs::error::DisplayErrorContext(e)))?;
    println!("redrive started from {arn} ({})", started.task_handle().unwrap_or("no handle"));
    // Wait for it to end (SQS moves up to 500 messages a second by default).
    let until = Instant::now() + Duration::from_secs(300);
    loop {
        let tasks = client
            .list_message_move_tasks()
            .source_arn(&arn)
            .max_results(1)
            .send()
            .await
            .map_err(|e| anyhow!("ListMessageMoveTasks: {}", aws_sdk_sqs::error::DisplayErrorContext(e)))?;
        if let Some(task) = tasks.results().first() {
            match task.status() {
                Some("COMPLETED") => {
                    println!("moved {} messages back", task.approximate_number_of_messages_moved());
                    return Ok(ExitCode::SUCCESS);
                }
                Some("FAILED") | Some("CANCELLED") => {
                    println!(
                        "the redrive ended {}: {}",
                        task.status().unwrap_or("?"),
                        task.failure_reason().unwrap_or("")
                    );
                    return Ok(ExitCode::FAILURE);
                }
                _ => {}
            }
        }
        if Instant::now() > until {
            println!("the redrive is still running; `sluice dlq list` shows how far it got");
            return Ok(ExitCode::SUCCESS);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

//! `sluice demo primitives`: many concurrent callers share one
//! sliding-window limit for a few seconds, then race for one lock and one
//! gate. Prints what every second looked like and checks, from the
//! admitted calls' Redis timestamps, that the limit held exactly.

use crate::redis_target::RedisTarget;
use anyhow::Context;
use futures::future::join_all;
use sluice_redis::Connection;
use sluice_redis::{Acquire, Admission, DenyCache, Gates, Keyspace, Limit, Locks, SlidingWindowLimiter, Tag};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(1);

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Concurrent callers.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    callers: u32,
    /// Calls allowed in any rolling one-second window.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    rate: u32,
    /// How long the callers run, in seconds.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=600))]
    seconds: u32,
}

#[derive(Debug, Clone, Copy)]
enum Outcome {
    Admitted { second: usize, server_us: u64 },
    Denied { second: usize, wait: Duration, cached: bool },
}

pub(crate) async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let target = RedisTarget::from_env_or_private(None)?;
    let conn = target.connect().await?;
    // A prefix of its own, so reruns against a shared Redis never meet.
    let run_id = format!("{:x}", rand::random::<u64>());
    let keyspace = Keyspace::new(format!("sluice:demo:{run_id}:"))?;
    println!("Redis: {}", target.description);
    println!(
        "{} callers share a limit of {} calls in any rolling 1 s window, for {} s. Each caller that is denied waits \
         exactly the wait it was given, then asks again. Callers arrive spread over the first second.\n",
        args.callers, args.rate, args.seconds
    );
    let outcomes = limiter_run(&args, conn.clone(), keyspace.clone()).await?;
    let limit_held = report_limiter(&args, &outcomes);
    let lock_held = race_for_lock(&args, conn.clone(), keyspace.clone()).await?;
    let gate_held = race_for_gate(&args, conn, keyspace).await?;
    if limit_held && lock_held && gate_held {
        println!("\nEvery check held.");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("\nA check FAILED (see above).");
        Ok(ExitCode::FAILURE)
    }
}

async fn limiter_run(args: &Args, conn: Connection, ks: Keyspace) -> anyhow::Result<Vec<Outcome>> {
    // One process, so one deny cache: callers denied by Redis are answered
    // from memory until their wait is over.
    let limiter = Arc::new(SlidingWindowLimiter::new(conn, ks, Arc::new(DenyCache::new())));
    let set = Arc::new(limiter.limits(&Tag::new("demo"), &[Limit::new("calls", args.rate, WINDOW)])?);
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let run_for = Duration::from_secs(u64::from(args.seconds));
    let started = Instant::now();
    let mut callers = tokio::task::JoinSet::new();
    for caller in 0..args.callers {
        let (limiter, set, outcomes) = (limiter.clone(), set.clone(), outcomes.clone());
        // Callers arrive spread over the first second, as webhooks do.
        let arrives = WINDOW * caller / args.callers;
        callers.spawn(async move {
            tokio::time::sleep_until((started + arrives).into()).await;
            while started.elapsed() < run_for {
                let second = started.elapsed().as_secs() as usize;
                let outcome = match limiter.acquire(&set, 1).await? {
                    Admission::Admitted { server_time_us } => Outcome::Admitted { second, server_us: server_time_us },
                    Admission::Denied { wait, server_time_us } => {
                        Outcome::Denied { second, wait, cached: server_time_us.is_none() }
                    }
                };
                outcomes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(outcome);
                if let Outcome::Denied { wait, .. } = outcome {
                    tokio::time::sleep(wait.min(run_for.saturating_sub(started.elapsed()))).await;
                }
            }
            Ok::<_, sluice_redis::Error>(())
        });
    }
    while let Some(joined) = callers.join_next().await {
        joined.context("a caller panicked")??;
    }
    Ok(outcomes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone())
}

/// Prints a line per second and checks the limit; true when it held.
fn report_limiter(args: &Args, outcomes: &[Outcome]) -> bool {
    println!(
        "{:>6}  {:>8}  {:>15}  {:>17}  waits given: min / median / max",
        "second", "admitted", "denied by Redis", "denied from cache"
    );
    for second in 0..args.seconds as usize {
        let (mut admitted, mut by_redis, mut from_cache) = (0, 0, 0);
        let mut waits = Vec::new();
        for outcome in outcomes {
            match *outcome {
                Outcome::Admitted { second: s, .. } if s == second => admitted += 1,
                Outcome::Denied { second: s, wait, cached } if s == second => {
                    *if cached { &mut from_cache } else { &mut by_redis } += 1;
                    waits.push(wait);
                }
                _ => {}
            }
        }
        waits.sort_unstable();
        let waits = match (waits.first(), waits.get(waits.len() / 2), waits.last()) {
            (Some(min), Some(median), Some(max)) => format!("{} / {} / {}", ms(*min), ms(*median), ms(*max)),
            _ => "-".to_owned(),
        };
        println!("{:>6}  {admitted:>8}  {by_redis:>15}  {from_cache:>17}  {waits}", second + 1);
    }
    let mut stamps: Vec<u64> = outcomes
        .iter()
        .filter_map(|o| if let Outcome::Admitted { server_us, .. } = o { Some(*server_us) } else { None })
        .collect();
    stamps.sort_unstable();
    let window_us = WINDOW.as_micros() as u64;
    let busiest = (0..stamps.len())
        .map(|i| stamps[i..].iter().take_while(|&&s| s < stamps[i] + window_us).count())
        .max()
        .unwrap_or(0);
    let held = busiest <= args.rate as usize;
    println!(
        "\nAdmitted {} calls in {} s. Most in any rolling 1 s window (Redis timestamps): {busiest} of {} allowed: {}.",
        stamps.len(),
        args.seconds,
        args.rate,
        if held { "held" } else { "EXCEEDED" }
    );
    held
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

/// All callers try one lock at once: exactly one may win.
async fn race_for_lock(args: &Args, conn: Connection, ks: Keyspace) -> anyhow::Result<bool> {
    let locks = Locks::new(conn, ks);
    let tag = Tag::new("demo");
    let tries = (0..args.callers).map(|_| locks.acquire(&tag, "sync", Duration::from_secs(10)));
    let mut winners = Vec::new();
    let mut busy_for = Duration::ZERO;
    // Concurrently on this task: they share one connection, which pipelines them.
    for attempt in join_all(tries).await {
        match attempt? {
            Acquire::Acquired(lease) => winners.push(lease),
            Acquire::Busy { retry_after } => busy_for = busy_for.max(retry_after),
        }
    }
    let held = winners.len() == 1;
    println!(
        "Lock: {} of {} callers took `sync` at once; the others were told it is busy for up to {}.",
        winners.len(),
        args.callers,
        ms(busy_for)
    );
    for lease in &winners {
        locks.release(lease).await?;
        // Releasing twice is a stale release, refused with its reason.
        if let Err(stale) = locks.release(lease).await {
            println!("      A second release of the same lease is refused: {stale}.");
        }
    }
    Ok(held)
}

/// All callers try one gate at once: exactly one may pass.
async fn race_for_gate(args: &Args, conn: Connection, ks: Keyspace) -> anyhow::Result<bool> {
    let gates = Gates::new(conn, ks);
    let tag = Tag::new("demo");
    let tries = (0..args.callers).map(|_| gates.pass(&tag, "item", Duration::from_secs(10)));
    let mut passed = 0;
    for entry in join_all(tries).await {
        passed += usize::from(entry?.passed());
    }
    println!("Gate: {passed} of {} callers passed a one-per-10 s gate at once.", args.callers);
    Ok(passed == 1)
}

//! A Redis connection that checks the hash-slot rule on every script call:
//! [`SlotCheckingConnection`] passes every command to the real connection
//! and, for each `EVAL`/`EVALSHA` (alone or in a pipeline), computes the
//! cluster slot of every key the call declares. A call whose keys span two
//! slots is recorded in its [`SlotLog`]: on a cluster (ElastiCache
//! Serverless) it would fail with CROSSSLOT.
//!
//! This sees what the code sends, whatever the server: a test on a single
//! `redis-server` still catches a script that a cluster would refuse.

use crate::slot::key_slot;
use redis::Cmd;
use redis::aio::ConnectionLike;
use std::sync::{Arc, Mutex, PoisonError};

/// What the connection saw: every script call's keys, and the calls that
/// broke the rule.
#[derive(Debug, Default)]
pub struct SlotLog {
    calls: Mutex<Vec<Vec<String>>>,
}

impl SlotLog {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The keys of every script call seen so far, in order.
    pub fn calls(&self) -> Vec<Vec<String>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The calls whose keys lie in more than one slot.
    pub fn cross_slot(&self) -> Vec<Vec<String>> {
        self.calls().into_iter().filter(|keys| !one_slot(keys)).collect()
    }

    fn record(&self, cmd: &Cmd) {
        if let Some(keys) = script_keys(cmd) {
            self.calls.lock().unwrap_or_else(PoisonError::into_inner).push(keys);
        }
    }
}

/// Whether every key lies in the slot of the first.
pub fn one_slot(keys: &[String]) -> bool {
    keys.windows(2).all(|pair| key_slot(&pair[0]) == key_slot(&pair[1]))
}

/// The keys of an `EVAL`/`EVALSHA` call (`<name> <script|sha> <numkeys>
/// <key>…`), or `None` for any other command.
fn script_keys(cmd: &Cmd) -> Option<Vec<String>> {
    let mut args = cmd.args_iter().map(|arg| match arg {
        redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        _ => String::new(),
    });
    let name = args.next()?.to_ascii_uppercase();
    if !matches!(name.as_str(), "EVAL" | "EVALSHA" | "EVAL_RO" | "EVALSHA_RO") {
        return None;
    }
    let _script = args.next()?;
    let count: usize = args.next()?.parse().ok()?;
    Some(args.take(count).collect())
}

/// A connection that records every script call's keys in a [`SlotLog`]
/// (built from its two fields: the connection, and the log it shares).
#[derive(Debug, Clone)]
pub struct SlotCheckingConnection<C> {
    pub inner: C,
    pub log: Arc<SlotLog>,
}

sluice_redis::forward_requests! {
    impl[C: ConnectionLike + Send] SlotCheckingConnection<C>, |this| {
        command(cmd) => {
            this.log.record(cmd);
            this.inner.req_packed_command(cmd)
        },
        pipeline(pipeline, offset, count) => {
            pipeline.cmd_iter().for_each(|cmd| this.log.record(cmd));
            this.inner.req_packed_commands(pipeline, offset, count)
        },
        db => this.inner.get_db(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_calls_keys_are_read_and_checked() {
        let log = SlotLog::default();
        let mut call = redis::cmd("EVALSHA");
        call.arg("abc").arg(2).arg("p:{a}:x").arg("p:{a}:y").arg("argv");
        log.record(&call);
        let mut cross = redis::cmd("EVAL");
        cross.arg("return 1").arg(2).arg("p:{a}:x").arg("p:{b}:x");
        log.record(&cross);
        log.record(redis::cmd("GET").arg("p:{c}:x"));
        assert_eq!(log.calls(), [vec!["p:{a}:x", "p:{a}:y"], vec!["p:{a}:x", "p:{b}:x"]]);
        assert_eq!(log.cross_slot(), [vec!["p:{a}:x", "p:{b}:x"]]);
    }
}

//! A Redis connection that dies on cue: [`CrashingConnection`] passes every
//! command to the real connection and counts them; once [`CrashPlan::arm`]ed
//! it panics just before sending command `n`, or just after command `n` was
//! answered. The task running the caller dies there, exactly as a process
//! killed at that await point would: nothing after it runs, no undo, and
//! Redis keeps whatever the commands before it did.
//!
//! A pipeline counts as one command: it is one await point.

use redis::Cmd;
use redis::aio::ConnectionLike;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Which side of command `n` the crash falls on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Before it reaches Redis: it never runs.
    Before,
    /// After Redis ran it, before the caller sees the answer.
    After,
}

/// Where to crash, and what happened: shared by the test and the
/// connection's clones.
#[derive(Debug, Default)]
pub struct CrashPlan {
    /// Commands counted since the last [`arm`](Self::arm) or
    /// [`count`](Self::count).
    seen: AtomicUsize,
    target: Mutex<Option<(usize, Side)>>,
    fired: AtomicBool,
    /// The crashed command's name and first argument, for the report.
    what: Mutex<String>,
}

impl CrashPlan {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Crash at command `n` (0-based, counted from now), on `side`.
    pub fn arm(&self, n: usize, side: Side) {
        self.seen.store(0, Ordering::SeqCst);
        self.fired.store(false, Ordering::SeqCst);
        *self.target.lock().unwrap_or_else(PoisonError::into_inner) = Some((n, side));
    }

    /// Count commands from now on, crash nowhere.
    pub fn count(&self) {
        self.seen.store(0, Ordering::SeqCst);
        *self.target.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Commands counted since [`arm`](Self::arm) or [`count`](Self::count).
    pub fn seen(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }

    /// Whether the armed crash happened (and disarms it).
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    /// The command the crash fell on.
    pub fn what(&self) -> String {
        self.what.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Called once per command: whether to crash before or after it.
    fn step(&self, what: impl FnOnce() -> String) -> Option<Side> {
        let n = self.seen.fetch_add(1, Ordering::SeqCst);
        let mut target = self.target.lock().unwrap_or_else(PoisonError::into_inner);
        match *target {
            Some((at, side)) if at == n => {
                *target = None;
                self.fired.store(true, Ordering::SeqCst);
                *self.what.lock().unwrap_or_else(PoisonError::into_inner) = what();
                Some(side)
            }
            _ => None,
        }
    }
}

/// A connection that crashes its caller where its [`CrashPlan`] says.
#[derive(Clone)]
pub struct CrashingConnection<C> {
    inner: C,
    plan: Arc<CrashPlan>,
}

impl<C> std::fmt::Debug for CrashingConnection<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrashingConnection").field("plan", &self.plan).finish_non_exhaustive()
    }
}

impl<C> CrashingConnection<C> {
    pub fn new(inner: C, plan: Arc<CrashPlan>) -> Self {
        Self { inner, plan }
    }
}

fn describe(cmd: &Cmd) -> String {
    let mut args = cmd.args_iter().filter_map(|arg| match arg {
        redis::Arg::Simple(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        _ => None,
    });
    let name = args.next().unwrap_or_default();
    let first = match name.as_str() {
        // EVALSHA <sha> <numkeys> <first key>: the key says which script.
        "EVALSHA" | "EVAL" => args.nth(2),
        _ => args.next(),
    };
    // Keys read better without the test's prefix and the event id.
    let first = first.map(|key| key.rsplit_once('}').map_or(key.clone(), |(_, rest)| rest.to_owned()));
    match first {
        Some(first) => format!("{name} {first}"),
        None => name,
    }
}

fn crash(side: Side, what: &str) -> ! {
    panic!("simulated crash {} `{what}`", if side == Side::Before { "before" } else { "after" })
}

/// Sends one request (`send`), the task dying just before or just after
/// it when `plan` is armed for it.
async fn send_or_crash<F: Future>(plan: &CrashPlan, what: impl Fn() -> String, send: impl FnOnce() -> F) -> F::Output {
    let side = plan.step(&what);
    if side == Some(Side::Before) {
        crash(Side::Before, &what());
    }
    let answer = send().await;
    if side == Some(Side::After) {
        crash(Side::After, &what());
    }
    answer
}

sluice_redis::forward_requests! {
    impl[C: ConnectionLike + Send] CrashingConnection<C>, |this| {
        command(cmd) => {
            let inner = &mut this.inner;
            Box::pin(send_or_crash(&this.plan, move || describe(cmd), move || inner.req_packed_command(cmd)))
        },
        pipeline(pipeline, offset, count) => {
            let (plan, inner) = (&this.plan, &mut this.inner);
            let what = move || format!("pipeline of {}", pipeline.cmd_iter().count());
            Box::pin(send_or_crash(plan, what, move || inner.req_packed_commands(pipeline, offset, count)))
        },
        db => this.inner.get_db(),
    }
}

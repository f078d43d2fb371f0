//! One execution environment: a function's `bootstrap` running as a child
//! process against its own Runtime API ([`crate::runtime_api`]), with the
//! environment variables the template gives the function and those Lambda
//! sets. It serves one invocation at a time, as Lambda's do.
//!
//! A process that exits before it answers fails what it was given: during
//! init with what it posted to `/init/error`, else `Runtime.ExitError`,
//! each with its last log lines. An invocation past the function's timeout
//! stops the process (`Sandbox.Timedout`). The process is killed when the
//! environment's stop token is cancelled or the environment is dropped
//! (`kill_on_drop`); should this whole process die first, its Runtime API
//! goes with it, and the runtime's next call fails, which ends it.

use crate::function_error::{FunctionError, kinds};
use crate::function_logs::{LogSink, LogTail};
use crate::function_spec::{FunctionSpec, lambda_variables};
use crate::runtime_api::{Invocation, RuntimeApi};
use axum::body::Bytes;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Lambda's limit on an on-demand environment's init phase.
pub(crate) const INIT_LIMIT: Duration = Duration::from_secs(10);
/// How long a dead process's output may take to be read to its end.
const LOG_DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Environment {
    mailbox: mpsc::Sender<Invocation>,
    /// `Some` once the process has exited: what its unanswered work failed with.
    exited: watch::Receiver<Option<FunctionError>>,
    stop: CancellationToken,
    /// Set when this environment must not serve again (it timed out).
    retired: AtomicBool,
    /// Stops the Runtime API when the environment goes.
    _api: Arc<RuntimeApi>,
    pub(crate) pid: Option<u32>,
}

/// Where and how a function's environments start.
#[derive(Debug)]
pub(crate) struct Launch {
    pub(crate) binary: PathBuf,
    pub(crate) region: String,
    pub(crate) logs: Arc<LogSink>,
    /// A cancelled parent stops the environment.
    pub(crate) stop: CancellationToken,
    /// Tracks the task that reaps the process, so a shutdown can wait for it.
    pub(crate) tasks: TaskTracker,
}

impl Environment {
    /// Starts the process of `spec`; its init runs while the first
    /// invocation waits. `serial` numbers its log stream.
    pub(crate) async fn start(spec: &FunctionSpec, launch: &Launch, serial: u64) -> Result<Self, FunctionError> {
        let service = |what: &str, e: std::io::Error| {
            FunctionError::new(kinds::SERVICE, format!("cannot {what} for {}: {e}", spec.name))
        };
        let (api, mailbox) = RuntimeApi::start(&spec.arn).await.map_err(|e| service("start a Runtime API", e))?;
        let stream = format!("local/[$LATEST]{serial:016x}");
        let mut command = tokio::process::Command::new(&launch.binary);
        command
            .env_clear()
            .envs(spec.variables.iter().map(|(k, v)| (k, v)))
            .envs(lambda_variables(spec, &api.addr.to_string(), &launch.region, &stream))
            .current_dir(launch.binary.parent().unwrap_or(Path::new("/")))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| service(&format!("run {}", launch.binary.display()), e))?;
        let pid = child.id();
        let tail = Arc::new(LogTail::default());
        let readers: Vec<_> = [child.stdout.take().map(boxed), child.stderr.take().map(boxed)]
            .into_iter()
            .flatten()
            .map(|stream| tokio::spawn(launch.logs.clone().drain(spec.name.clone(), stream, tail.clone())))
            .collect();
        let api = Arc::new(api);
        let (exit_tx, exited) = watch::channel(None);
        let stop = launch.stop.child_token();
        let (watched_api, watched_stop) = (api.clone(), stop.clone());
        launch.tasks.spawn(async move {
            let status = tokio::select! {
                status = child.wait() => status,
                () = watched_stop.cancelled() => {
                    let _ = child.kill().await;
                    child.wait().await
                }
            };
            // The output ends with the process (unless a child of it keeps the pipe).
            let _ = tokio::time::timeout(LOG_DRAIN_LIMIT, futures::future::join_all(readers)).await;
            let error = exit_error(&watched_api, &status, watched_stop.is_cancelled()).with_log(tail.lines());
            watched_api.fail_in_flight(&error);
            let _ = exit_tx.send(Some(error));
        });
        Ok(Self { mailbox, exited, stop, retired: AtomicBool::new(false), _api: api, pid })
    }

    /// Hands `payload` to the function and waits for its answer, at most
    /// `timeout` (plus [`INIT_LIMIT`] on a cold start).
    pub(crate) async fn invoke(&self, payload: Bytes, timeout: Duration, cold: bool) -> Result<Bytes, FunctionError> {
        let (reply, answer) = oneshot::channel();
        let request_id = uuid::Uuid::new_v4().to_string();
        let invocation = Invocation { request_id: request_id.clone(), payload, timeout, reply };
        let limit = timeout + if cold { INIT_LIMIT } else { Duration::ZERO };
        let mut exited = self.exited.clone();
        let sent = tokio::select! {
            sent = self.mailbox.send(invocation) => sent.is_ok(),
            () = until_exited(&mut exited) => false,
        };
        if !sent {
            return Err(self.exit_error().await);
        }
        tokio::select! {
            biased;
            answer = answer => match answer {
                Ok(answer) => answer,
                Err(_) => Err(self.exit_error().await),
            },
            () = until_exited(&mut exited) => Err(self.exit_error().await),
            () = tokio::time::sleep(limit) => {
                self.retire();
                Err(FunctionError::new(
                    kinds::TIMEOUT,
                    format!("RequestId: {request_id} Error: Task timed out after {:.2} seconds", timeout.as_secs_f64()),
                ))
            }
        }
    }

    /// Whether it may serve another invocation.
    pub(crate) fn reusable(&self) -> bool {
        !self.retired.load(Ordering::SeqCst) && self.exited.borrow().is_none()
    }

    /// Stops the process; it serves nothing more.
    pub(crate) fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
        self.stop.cancel();
    }

    /// What the exited process left its work with, once it has exited.
    async fn exit_error(&self) -> FunctionError {
        until_exited(&mut self.exited.clone()).await;
        let error = self.exited.borrow().clone();
        error.unwrap_or_else(|| FunctionError::new(kinds::SERVICE, "the environment is gone"))
    }
}

impl Drop for Environment {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Returns once the process has exited (or its watcher is gone).
async fn until_exited(exited: &mut watch::Receiver<Option<FunctionError>>) {
    let _ = exited.wait_for(Option::is_some).await.map(|_| ());
}

fn boxed(stream: impl tokio::io::AsyncRead + Unpin + Send + 'static) -> Box<dyn tokio::io::AsyncRead + Unpin + Send> {
    Box::new(stream)
}

/// What the work a process left unanswered fails with.
fn exit_error(api: &RuntimeApi, status: &std::io::Result<std::process::ExitStatus>, stopped: bool) -> FunctionError {
    let status = match status {
        Ok(status) => status.to_string(),
        Err(e) => format!("unknown status ({e})"),
    };
    if stopped {
        return FunctionError::new(kinds::SERVICE, format!("the environment was stopped ({status})"));
    }
    if !api.initialized() {
        if let Some(reported) = api.init_error() {
            return reported;
        }
        return FunctionError::new(kinds::EXIT, format!("Runtime exited during init with error: {status}"));
    }
    FunctionError::new(kinds::EXIT, format!("Runtime exited with error: {status}"))
}

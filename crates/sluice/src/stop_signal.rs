//! What stops a long-running command (`sluice dev`, `sluice sandbox …`):
//! Ctrl-C, or SIGTERM where there is one (a service manager, `kill`).
//!
//! The handlers are installed by [`install`], before the command says
//! "Ready": a signal sent the moment a caller reads that line must stop
//! the command cleanly, not kill it by the default action (a handler
//! registered only when first polled would come too late).

/// Signal handlers installed and waiting to be awaited.
pub(crate) struct StopSignal {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

/// Installs the handlers now. One that cannot be installed leaves its
/// signal's default action (a kill still stops us).
pub(crate) fn install() -> StopSignal {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        StopSignal { interrupt: signal(SignalKind::interrupt()).ok(), terminate: signal(SignalKind::terminate()).ok() }
    }
    #[cfg(not(unix))]
    StopSignal {}
}

impl StopSignal {
    /// Resolves on Ctrl-C or SIGTERM.
    pub(crate) async fn wait(self) {
        #[cfg(unix)]
        tokio::select! {
            () = received(self.interrupt) => {}
            () = received(self.terminate) => {}
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Resolves when `signal` arrives; never without a handler.
#[cfg(unix)]
async fn received(signal: Option<tokio::signal::unix::Signal>) {
    match signal {
        Some(mut signal) => {
            signal.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}

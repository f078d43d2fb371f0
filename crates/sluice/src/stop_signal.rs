//! What stops a long-running command (`sluice dev`, `sluice sandbox …`):
//! Ctrl-C, or SIGTERM where there is one (a service manager, `kill`).

/// Resolves on Ctrl-C or SIGTERM.
pub(crate) async fn stop_signal() {
    let ctrl_c = async {
        // If the handler cannot be installed, only SIGTERM (or a kill) stops us.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

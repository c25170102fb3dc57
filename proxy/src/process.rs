//! What the `deltascope` process shares between its commands (`serve`,
//! `record`): the lines it prints on stdout, which people and tooling read,
//! and the signals that stop it.

/// Resolves on Ctrl-C or SIGTERM; never if neither can be listened for.
pub(crate) async fn stop_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                terminate.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

/// One line on stdout, flushed (tooling reads serve's stdout line by line).
pub(crate) fn print_line(line: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    // If stdout is gone nobody can read it anyway; keep serving.
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

//! The HTTP layer: the routes of the subset (`pulls.rs`, `commits.rs`), GitHub-shaped answers
//! (`answer.rs`) and a listener whose connections a fault can cut (`listener.rs`). Here: the
//! shared state and the server's own thread and runtime.

mod answer;
mod commits;
mod listener;
mod pulls;

use crate::faults::Faults;
use crate::repos::Repos;
use crate::{ForgeError, OWNER};
use axum::routing::{get, put};
use axum::Router;
use listener::{Cut, CuttableListener};
use std::sync::Arc;
use std::time::Duration;

/// What every request shares.
#[derive(Debug)]
pub(crate) struct App {
    /// The repositories and their locks.
    pub repos: Repos,
    /// Faults waiting for merge requests.
    pub faults: Faults,
    /// `http://127.0.0.1:PORT`, for the links the server hands out.
    pub base_url: String,
}

/// The server's thread, stopped by sending on (or dropping) `stop`.
#[derive(Debug)]
pub(crate) struct Running {
    /// Stops the server.
    pub stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// The server's thread.
    pub thread: Option<std::thread::JoinHandle<()>>,
}

/// The pull request number of a path under `owner`, when the owner is [`OWNER`] and the number
/// is one (GitHub answers 404 otherwise).
pub(crate) fn target(owner: &str, number: &str) -> Option<u64> {
    if owner != OWNER {
        return None;
    }
    number.parse().ok()
}

/// Runs `f` (git work, blocking) on the runtime's blocking threads; it runs to its end even if
/// the request that started it is dropped.
pub(crate) async fn blocking<R: Send + 'static>(
    f: impl FnOnce() -> Result<R, ForgeError> + Send + 'static,
) -> Result<R, ForgeError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ForgeError::Task(e.to_string()))?
}

fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/repos/{owner}/{repo}/pulls/{number}", get(pulls::get))
        .route(
            "/repos/{owner}/{repo}/pulls/{number}/merge",
            put(pulls::merge),
        )
        .route("/repos/{owner}/{repo}/commits", get(commits::list))
        // Paths and methods outside the subset: GitHub-shaped 404s (no HTTP 405 here, which
        // the merge endpoint gives a meaning of its own).
        .fallback(|| async { answer::not_found(answer::DOC_REST) })
        .method_not_allowed_fallback(|| async { answer::not_found(answer::DOC_REST) })
        .with_state(app)
}

/// Serves `app` on `listener` (bound, non-blocking) from a thread of its own with its own
/// runtime, until stopped.
pub(crate) fn start(app: Arc<App>, listener: std::net::TcpListener) -> Result<Running, ForgeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("forge")
        .enable_all()
        .build()
        .map_err(ForgeError::Runtime)?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<std::io::Result<()>>();
    let thread = std::thread::Builder::new()
        .name("forge".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => {
                        let _ = ready_tx.send(Ok(()));
                        l
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let service = router(app).into_make_service_with_connect_info::<Cut>();
                let serve = axum::serve(CuttableListener(listener), service);
                tokio::select! {
                    _ = serve => {}
                    _ = stop_rx => {}
                }
            });
            runtime.shutdown_timeout(Duration::from_millis(500));
        })
        .map_err(ForgeError::Runtime)?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(Running {
            stop: Some(stop_tx),
            thread: Some(thread),
        }),
        Ok(Err(e)) => Err(ForgeError::Runtime(e)),
        Err(_) => Err(ForgeError::Runtime(std::io::Error::other(
            "the server's thread stopped while starting",
        ))),
    }
}

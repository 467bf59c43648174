//! Stopping a run: the Ctrl-C / SIGTERM handler that sets the cancel flag, and the error and
//! exit code of an interrupted run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The run was interrupted (Ctrl-C or SIGTERM): workers were killed, and nothing more was
/// written; its words name the results files written before (by [`note_written`]), which are
/// kept.
#[derive(Debug, thiserror::Error)]
#[error("interrupted: workers were stopped and {}", written_words())]
pub struct Interrupted;

/// Results files this process has written (complete: each written whole, then renamed).
static WRITTEN: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Records a results file written whole, so an interruption afterwards names it.
pub(crate) fn note_written(path: &std::path::Path) {
    let mut written = WRITTEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !written.iter().any(|p| p == path) {
        written.push(path.to_path_buf());
    }
}

/// What a run keeps of its finished work in a partial file, and how to go on from it (one
/// sentence), while it has one: an interruption says it.
static KEPT: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Records (or, with `None`, forgets) what the run keeps in its partial file and how to go on
/// from it, so an interruption names them.
pub(crate) fn note_kept(words: Option<String>) {
    *KEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = words;
}

/// What the run keeps in its partial file, if it keeps anything.
fn kept() -> Option<String> {
    KEPT.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// Whether the report site is being rendered (it is finished whole before the run stops).
static RENDERING: AtomicBool = AtomicBool::new(false);

/// Records that the report site's rendering starts (`true`) or has ended (`false`).
pub(crate) fn note_rendering(on: bool) {
    RENDERING.store(on, Ordering::SeqCst);
}

/// Whether a stopping signal came (Ctrl-C or SIGTERM) since the handler was installed, or since
/// [`forget_stop`].
pub(crate) fn stopped_by_signal() -> bool {
    STOPPED_BY.load(Ordering::SeqCst) != 0
}

/// Forgets a stopping signal that ended what it was expected to end (`--keep-emulator` serves
/// until Ctrl-C): the run is not interrupted by it.
pub(crate) fn forget_stop() {
    STOPPED_BY.store(0, Ordering::SeqCst);
}

/// What the signal handler says as the run stops.
fn stopping_words() -> String {
    if RENDERING.load(Ordering::SeqCst) {
        return "the report site being rendered is finished first (it replaces the old one \
                whole, never in part), then the run stops; the results already written are kept"
            .to_owned();
    }
    let none = WRITTEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .is_empty();
    match (none, kept()) {
        (true, None) => "workers are killed and no results will be written".to_owned(),
        // The trials still running may finish and be kept before the run stops: the count and
        // the command that resumes come with the run's last line, not here.
        (true, Some(_)) => "workers are killed and the results file will not be written; the \
                            finished trials are kept in the campaign's partial file (how many, \
                            and how to go on, once the run has stopped)"
            .to_owned(),
        (false, _) => {
            "nothing more will be written; the results already written are kept".to_owned()
        }
    }
}

/// What an interruption leaves: no results, or the files written before it (kept).
fn written_words() -> String {
    let written = WRITTEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match kept() {
        Some(kept) if written.is_empty() => {
            format!("the results file was not written; {kept}")
        }
        None if written.is_empty() => "no results were written".to_owned(),
        _ => {
            let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
            format!(
                "nothing more was written; written before and kept: {}",
                names.join(", ")
            )
        }
    }
}

/// Why the Ctrl-C / SIGTERM handler could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    /// Its runtime could not be built.
    #[error("cannot build the signal-handling runtime")]
    Runtime(#[source] std::io::Error),
    /// Its thread could not be started.
    #[error("cannot start the signal thread")]
    Thread(#[source] std::io::Error),
    /// The handler itself could not be installed.
    #[error("cannot install the Ctrl-C handler: {0}")]
    Install(std::io::Error),
    /// The thread ended before it said whether the handler was installed.
    #[error("the signal thread stopped before installing its handler")]
    ThreadStopped,
}

/// The first stopping signal the run received (SIGINT or SIGTERM), 0 before any.
static STOPPED_BY: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The exit code of an interrupted run, by the shell's convention 128 + the signal's number:
/// 130 after Ctrl-C (SIGINT), 143 after SIGTERM.
pub fn interrupted_exit_code() -> u8 {
    match STOPPED_BY.load(Ordering::SeqCst) {
        libc::SIGTERM => 128 + libc::SIGTERM as u8,
        _ => 128 + libc::SIGINT as u8,
    }
}

/// The cancel flags of every run this process started (`--scenario all` runs several): one
/// handler sets them all.
static CANCELS: std::sync::Mutex<Vec<Arc<AtomicBool>>> = std::sync::Mutex::new(Vec::new());

/// Whether the handler's thread is installed (once per process).
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Installs the Ctrl-C / SIGTERM handler, once per process: it only sets `cancel` and the flags
/// of the runs before it (and remembers which signal came first, for the exit code), and says
/// once that the run stops; cells see it within ~50 ms, kill their workers and stop. A run that
/// starts after a stop is cancelled at once.
pub(crate) fn install_signal_handler(cancel: Arc<AtomicBool>) -> Result<(), SignalError> {
    if stopped_by_signal() {
        cancel.store(true, Ordering::SeqCst);
    }
    CANCELS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(cancel);
    if INSTALLED.load(Ordering::SeqCst) {
        return Ok(());
    }
    let installed = install_thread();
    if installed.is_ok() {
        INSTALLED.store(true, Ordering::SeqCst);
    }
    installed
}

/// Sets every run's cancel flag; true when one was not set yet.
fn cancel_all() -> bool {
    let cancels = CANCELS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut first = false;
    for c in cancels.iter() {
        first |= !c.swap(true, Ordering::SeqCst);
    }
    first
}

/// The handler's thread, on a runtime of its own.
fn install_thread() -> Result<(), SignalError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SignalError::Runtime)?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<std::io::Result<()>>();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            runtime.block_on(async move {
                use tokio::signal::unix::{signal, SignalKind};
                let mut int = match signal(SignalKind::interrupt()) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let mut term = match signal(SignalKind::terminate()) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                loop {
                    let signal = tokio::select! {
                        _ = int.recv() => libc::SIGINT,
                        _ = term.recv() => libc::SIGTERM,
                    };
                    let first =
                        STOPPED_BY.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
                    if cancel_all() && first.is_ok() {
                        eprintln!("\nrunner: interrupted: stopping; {}", stopping_words());
                    }
                }
            })
        })
        .map_err(SignalError::Thread)?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(SignalError::Install(e)),
        Err(_) => Err(SignalError::ThreadStopped),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_during_the_site_says_the_site_is_finished_first() {
        note_rendering(true);
        let during = stopping_words();
        note_rendering(false);
        assert!(
            during.contains("report site being rendered is finished first"),
            "{during}"
        );
        assert!(!stopping_words().contains("report site"));
    }
}

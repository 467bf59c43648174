//! Why a matrix cell's worker could not be run as designed. Each message becomes the cell's
//! HARNESS_ERROR text in the results file, worded as it always was.

use scenarios::billing_credit::ScenarioError;
use std::path::PathBuf;

/// What failed while running a cell's workers, and where.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CellError {
    /// A worker's stderr file could not be created.
    #[error("cannot create {path}: {source}")]
    CreateLog {
        /// The stderr file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A worker could not be started.
    #[error("cannot start the {name} worker {exe}: {source}")]
    Spawn {
        /// The worker (its phase, and for shared_cap its ticket).
        name: String,
        /// The runner binary.
        exe: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The runner's own reads or the outage failed while the worker was dead.
    #[error("the runner's reads or outage failed while the worker was dead: {0}")]
    WhileDead(#[source] ScenarioError),
    /// The decide worker ended without announcing its crash point.
    #[error("the decide worker closed its stdout without announcing a crash point")]
    NoCrashPoint,
    /// The decide worker ran past its time without reaching its crash point.
    #[error("the decide worker did not reach its crash point within {secs} s")]
    CrashPointTimeout {
        /// `--decide-timeout`, seconds.
        secs: u64,
    },
    /// The restart worker ran past its time.
    #[error("the restart worker did not finish within {secs} s and was killed")]
    RestartTimeout {
        /// `--restart-timeout`, seconds.
        secs: u64,
    },
    /// The restart worker's exit status could not be collected.
    #[error("could not collect the restart worker's exit: {0}")]
    RestartWait(#[source] std::io::Error),
    /// The restart worker did not end well.
    #[error("the restart worker {0}")]
    RestartExit(String),
    /// The restart worker ended well but printed nothing.
    #[error("the restart worker printed nothing")]
    RestartSilent,
    /// The restart worker's last line is not a restart report.
    #[error("the restart worker's last line is not a restart report ({source}): {line}")]
    RestartReport {
        /// Why it does not parse.
        source: serde_json::Error,
        /// The line, cut to 300 characters.
        line: String,
    },
    /// A shared_cap worker has no stdin to release it with.
    #[error("a worker has no stdin to start it with")]
    NoStdin,
    /// A shared_cap worker could not be released.
    #[error("cannot start a worker: {0}")]
    Go(#[source] std::io::Error),
    /// The thread watching a shared_cap worker panicked.
    #[error("a worker's watcher panicked")]
    WatcherPanicked,
    /// A shared_cap worker's end was not recorded.
    #[error("a worker's end went unrecorded")]
    Unrecorded,
}

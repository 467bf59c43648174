//! Why a pr_merge run could not start or finish.

use crate::run::{Interrupted, SetupError};
use std::path::PathBuf;

/// Why `runner --scenario pr_merge` failed.
#[derive(Debug, thiserror::Error)]
pub enum PrMergeError {
    /// The run's directory, key or signal handler.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The forge could not start.
    #[error("cannot start the git forge (a GitHub REST subset over git repositories): {0}")]
    Forge(#[source] forge::ForgeError),
    /// `--repeat 0` (or `--trials 0`).
    #[error("--repeat (or --trials) must be at least 1")]
    NoRepeat,
    /// `--nemesis` names a nemesis pr_merge does not have.
    #[error("--nemesis: pr_merge has no nemesis {got:?}; pass all or some of: {known}")]
    UnknownNemesis {
        /// The name given.
        got: String,
        /// The names it has.
        known: String,
    },
    /// `--jobs 0`.
    #[error("--jobs must be at least 1; pass --jobs 1 or more, or leave it out for the default")]
    NoJobs,
    /// `--out` cannot be written.
    #[error("cannot write into --out {}: {error}", dir.display())]
    Out {
        /// The directory.
        dir: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// `--site-out` is a folder a site build would not replace (checked before any cell runs).
    #[error("--site-out: {0}")]
    SiteFolder(site::SiteError),
    /// A cell could not even open its case.
    #[error("the run could not go on: {0}")]
    CouldNotContinue(String),
    /// Ctrl-C or SIGTERM.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    /// The results could not be signed.
    #[error("cannot sign the results: {0}")]
    Sign(#[source] verify::contract::SigningError),
    /// The results could not be serialized.
    #[error("cannot serialize the results: {0}")]
    Serialize(#[source] serde_json::Error),
    /// The results could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        error: std::io::Error,
    },
}

//! Why a shared_cap run (its matrix or a nemesis campaign) could not start or go on, or
//! [`Interrupted`]. Each message is the line the runner prints; a wrapped cause follows it.

use crate::run::{Interrupted, SetupError};
use std::path::PathBuf;
use verify::shared_cap::check::SigningError;

/// Why a shared_cap run could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum SharedCapError {
    /// Its setup failed.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// `--two-hosts`: the hosts could not be made.
    #[error(transparent)]
    Hosts(#[from] super::hosts::HostsError),
    /// `--repeat 0`.
    #[error("--repeat 0 runs no cell; pass --repeat 1 or more")]
    NoRepeat,
    /// `--jobs 0`.
    #[error("--jobs must be at least 1; pass --jobs 1 or more, or leave it out for the default")]
    NoJobs,
    /// `--out` cannot be written.
    #[error(
        "--out {}: cannot write the results there: {error}; pass a directory you can write",
        .dir.display()
    )]
    Out {
        /// The directory.
        dir: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// `--site-out` is a folder a site build would not replace.
    #[error("--site-out: {0}")]
    SiteFolder(site::SiteError),
    /// `--site-out` cannot be written.
    #[error(
        "--site-out {}: cannot write the report there: {error}; pass a directory you can \
         write, or --no-site",
        .dir.display()
    )]
    SiteOut {
        /// The directory.
        dir: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// `--out DIR/nemesis` cannot be written; `dir` is `--out`.
    #[error(
        "--out {}: cannot write the nemesis file there: {error}; pass a directory you can write",
        .dir.display()
    )]
    NemesisOut {
        /// `--out`.
        dir: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// `--nemesis` names a nemesis shared_cap does not have.
    #[error(
        "unknown shared_cap nemesis {name:?}; expected `all` or some of: {}",
        verify::shared_cap::nemesis::NEMESES.join(", ")
    )]
    UnknownNemesis {
        /// The name given.
        name: String,
    },
    /// `--nemesis` names none.
    #[error("--nemesis needs `all` or at least one name")]
    NoNemesis,
    /// A nemesis has nothing to draw in a column.
    #[error("nothing to draw for {nemesis} in {column}")]
    NothingToDraw {
        /// The nemesis.
        nemesis: String,
        /// The column.
        column: String,
    },
    /// A cell could not even open its order.
    #[error("the run could not continue: {0}")]
    CouldNotContinue(String),
    /// Ctrl-C or SIGTERM.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    /// The results file could not be signed.
    #[error("cannot sign the results file")]
    SignResults(#[source] SigningError),
    /// The nemesis file could not be signed.
    #[error("cannot sign the nemesis file")]
    SignNemesis(#[source] SigningError),
    /// The results could not be serialized.
    #[error("cannot serialize the results")]
    SerializeResults(#[source] serde_json::Error),
    /// The trials could not be serialized.
    #[error("cannot serialize the trials")]
    SerializeTrials(#[source] serde_json::Error),
    /// The file could not be written.
    #[error("cannot write {}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        error: std::io::Error,
    },
}

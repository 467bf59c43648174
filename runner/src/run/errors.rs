//! Why a run could not start or go on: what every run sets up ([`SetupError`]) and what a
//! billing_credit matrix run checks and writes ([`RunError`]). Each message is the line the
//! runner prints; a wrapped cause follows it after `: `.

use super::signals::{Interrupted, SignalError};
use std::path::PathBuf;

/// What can stop any run (matrix or campaign, of any scenario) while it sets up before its first
/// cell or trial, or while it reads back and deletes its signing key at the end.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// `--journal` is not a PostgreSQL URL; the URL is shown without its password.
    #[error(
        "--journal must be a PostgreSQL URL (postgres://user@host:port/db), got {0:?}; \
         without --journal each cell keeps a JSONL journal file"
    )]
    JournalNotPostgres(String),
    /// The journal's database could not be reached; the URL is shown without its password.
    #[error("--journal: cannot connect to {url}")]
    JournalConnect {
        /// The URL, without its password.
        url: String,
        /// Why.
        #[source]
        error: postgres::Error,
    },
    /// The run's schema could not be created.
    #[error("--journal: cannot create the schema {schema}")]
    JournalSchema {
        /// The schema's name.
        schema: String,
        /// Why.
        #[source]
        error: postgres::Error,
    },
    /// The run's temporary directory could not be created.
    #[error("cannot create the run's temporary directory")]
    RunDir(#[source] std::io::Error),
    /// The stable signing key could not be read.
    #[error(transparent)]
    Key(#[from] crate::keys::KeyError),
    /// The run's key could not be held in memory for its workers.
    #[error("cannot create the run's signing key")]
    RunKey(#[source] std::io::Error),
    /// The Ctrl-C / SIGTERM handler could not be installed.
    #[error(transparent)]
    Signals(#[from] SignalError),
    /// The backend could not be started or prepared.
    #[error(transparent)]
    Backend(#[from] crate::backend::BackendError),
    /// The runner's own binary (which the workers run) could not be found.
    #[error("cannot find the runner's own binary")]
    OwnBinary(#[source] std::io::Error),
}

/// Why a billing_credit matrix run could not start or go on, or [`Interrupted`].
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Its setup failed.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// `--cells` or `--repeat` plan nothing runnable.
    #[error(transparent)]
    Plan(#[from] crate::matrix::SpecError),
    /// `--jobs 0`.
    #[error("--jobs must be at least 1; pass --jobs 1 or more, or leave it out for the default")]
    NoJobs,
    /// The decider cannot be used (no API key).
    #[error(transparent)]
    Decider(#[from] crate::decider::DecideError),
    /// `--out` cannot be written.
    #[error(
        "--out {}: cannot write the results there: {error}; pass a directory you can write \
         (checked before any cell runs)",
        .dir.display()
    )]
    Out {
        /// The directory.
        dir: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// `--site-out` cannot be written.
    #[error(
        "--site-out {}: cannot write the report there: {error}; pass a directory you can write, \
         or --no-site (checked before any cell runs)",
        .dir.display()
    )]
    SiteOut {
        /// The directory.
        dir: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// `--site-out` is a folder a site build would not replace (checked before any cell runs).
    #[error("--site-out: {0}")]
    SiteFolder(site::SiteError),
    /// A cell could not even open its case.
    #[error("the run could not continue: {0}")]
    CouldNotContinue(String),
    /// Ctrl-C or SIGTERM.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    /// The manifest could not be signed.
    #[error("cannot sign the results file's manifest")]
    Manifest(#[source] verify::manifest::ManifestError),
    /// The results could not be serialized.
    #[error("cannot serialize the results")]
    Serialize(#[source] serde_json::Error),
    /// The results file could not be written.
    #[error("cannot write {}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        error: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use verify::cli::error_line;

    fn io(text: &str) -> std::io::Error {
        std::io::Error::other(text.to_owned())
    }

    #[test]
    fn a_wrapped_cause_follows_its_context_on_the_one_line() {
        let cases: [(Box<dyn std::error::Error>, &str); 5] = [
            (
                Box::new(RunError::from(SetupError::RunDir(io("gone")))),
                "cannot create the run's temporary directory: gone",
            ),
            (
                Box::new(RunError::Write {
                    path: PathBuf::from("/r/billing_credit.json"),
                    error: io("disk full"),
                }),
                "cannot write /r/billing_credit.json: disk full",
            ),
            (
                Box::new(SetupError::from(SignalError::Install(io("no")))),
                "cannot install the Ctrl-C handler: no",
            ),
            (
                Box::new(SetupError::OwnBinary(io("no /proc"))),
                "cannot find the runner's own binary: no /proc",
            ),
            (
                Box::new(RunError::CouldNotContinue("the emulator is gone".into())),
                "the run could not continue: the emulator is gone",
            ),
        ];
        for (error, want) in cases {
            assert_eq!(
                error_line("runner", error.as_ref()),
                format!("runner: error: {want}")
            );
        }
        // An interruption's words name what was written before it (other tests of this process
        // write files), so only its start is fixed.
        let interrupted = error_line("runner", &RunError::from(Interrupted));
        assert!(
            interrupted.starts_with("runner: error: interrupted: workers were stopped and "),
            "{interrupted}"
        );
    }
}

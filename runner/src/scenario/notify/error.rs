//! Why a notify run could not start or finish.

use crate::run::{Interrupted, SetupError};
use std::path::PathBuf;

/// How to get what the mail server needs, said with every failure to start it.
pub const POSTFIX_HINT: &str = "the notify scenario runs a private Postfix instance, which \
     needs Postfix 3.6 or later and root; on Debian or Ubuntu install it without configuring \
     the system's own instance: `echo \"postfix postfix/main_mailer_type select No \
     configuration\" | debconf-set-selections && DEBIAN_FRONTEND=noninteractive apt-get install \
     -y postfix`, then run the runner as root";

/// Why `runner --scenario notify` failed.
#[derive(Debug, thiserror::Error)]
pub enum NotifyRunError {
    /// The run's directory, key or signal handler.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The mail server could not start (Postfix missing, not root, ...).
    #[error("cannot start the mail server: {0} ({POSTFIX_HINT})")]
    MailHost(#[source] mailhost::MailError),
    /// The mail server's directory could not be made.
    #[error("cannot make the mail server's directory: {0}")]
    MailDir(#[source] std::io::Error),
    /// The Stripe emulator could not start.
    #[error("cannot start the Stripe emulator: {0}")]
    Emulator(#[source] stripe::emulator::EmulatorError),
    /// `--nemesis` names a nemesis the notify campaign does not have.
    #[error("unknown notify nemesis {got:?} (known: {known}, or all)")]
    UnknownNemesis {
        /// What was given.
        got: String,
        /// The nemeses there are.
        known: String,
    },
    /// `--repeat 0` or `--trials 0`.
    #[error("--repeat and --trials must be at least 1")]
    NoRepeat,
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
    SiteFolder(#[source] site::SiteError),
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

//! Why a worker (`runner worker`, `runner cap-worker`) could not do its phase. The worker prints
//! the message on stderr and exits 1, which the runner records as the cell's HARNESS_ERROR.

use crate::decider::{DecideError, DeciderKind};
use crate::keys::KeyError;
use crate::worker::STRIPE_KEY_ENV;
use scenarios::billing_credit::ScenarioError;
use std::path::PathBuf;

/// What failed in a worker, where, and (where the runner cannot fix it) how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The scenario's code (case, account, send, restart) failed.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The run's signing key could not be read.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The Stripe client could not be built.
    #[error(transparent)]
    Client(#[from] stripe::StripeError),
    /// The worker was started by hand, without the cell's Stripe key.
    #[error("{STRIPE_KEY_ENV} is not set (workers are started by the runner)")]
    NoStripeKey,
    /// `--kill-at` or `--pause-at` without `--crash every`.
    #[error("--kill-at and --pause-at need --crash every")]
    StepsNeedEvery,
    /// A resume was given a crash point other than `none` or `every`.
    #[error("--crash {0}: a resume takes `none` or `every`")]
    ResumeCrash(String),
    /// `--decision-from`'s file could not be read.
    #[error("cannot read {path}: {source}")]
    ReadDecision {
        /// The saved decision.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--decision-from`'s file is not a decision.
    #[error("{path} is not a decision: {source}")]
    NotADecision {
        /// The saved decision.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// `--decision-from` names a file with no directory (so no case beside it).
    #[error("{0} names no directory")]
    NoDirectory(PathBuf),
    /// The decider could not be built.
    #[error(transparent)]
    DeciderSetup(DecideError),
    /// The decider was asked and failed.
    #[error("the {} decider failed: {source}", kind.as_str())]
    Decider {
        /// Which decider.
        kind: DeciderKind,
        /// Why.
        source: DecideError,
    },
    /// A small JSON file or the report line could not be rendered.
    #[error(transparent)]
    Render(#[from] serde_json::Error),
    /// The report line could not be written to stdout.
    #[error(transparent)]
    Stdout(#[from] std::io::Error),
    /// A file in the cell's directory could not be created.
    #[error("cannot create {path}: {source}")]
    Create {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file in the cell's directory could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A shared_cap worker could not read the line that starts it with its twin.
    #[error("cannot read the start signal: {0}")]
    StartSignal(std::io::Error),
    /// A shared_cap worker's report could not be rendered.
    #[error("cannot render the report: {0}")]
    Report(serde_json::Error),
}

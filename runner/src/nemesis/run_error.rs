//! Why a billing_credit nemesis campaign or `--replay` could not start or go on, or
//! [`Interrupted`]. Each message is the line the runner prints; a wrapped cause follows it.

use super::storage::StorageError;
use super::trial_error::TrialError;
use super::NemesisListError;
use crate::run::{Interrupted, SetupError};
use std::path::PathBuf;

/// Why a campaign or a replay could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum NemesisRunError {
    /// Its setup failed.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// `--out DIR/nemesis` cannot be written.
    #[error(
        "--out {}: cannot write the results there: {error}; pass a directory you can write \
         (checked before any trial runs)",
        .dir.display()
    )]
    Out {
        /// The directory.
        dir: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// `--shard K/N` is not a slice of the campaign.
    #[error(
        "--shard {index}/{count}: a campaign of {trials} trials per nemesis and column is cut \
         into 1 to {trials} shards, numbered from 1; pass K/N with 1 <= K <= N <= --trials"
    )]
    Shard {
        /// K.
        index: u32,
        /// N.
        count: u32,
        /// `--trials`.
        trials: u32,
    },
    /// The machine cannot hold the storage nemeses' faults.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Ctrl-C or SIGTERM.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    /// A trial could not run at all.
    #[error("the run could not continue: {0}")]
    CouldNotContinue(TrialError),
    /// A trial's slot stayed empty.
    #[error("a trial did not run")]
    TrialDidNotRun,
    /// A sharded campaign with the exposure nemesis and no span given.
    #[error(
        "--shard with the exposure nemesis needs --exposure-span-ms: each shard runs apart and \
         would size its own span from its own calibration, so the shards of one campaign must \
         be given the same one (size it with a whole run of --nemesis exposure, which prints it)"
    )]
    ShardNeedsSpan,
    /// The calibration measured no path in some column.
    #[error(
        "the exposure calibration measured no path from decision_saved to the answer in some \
         column (its trials did not reach both steps); run again, or give --exposure-span-ms"
    )]
    NoCalibrationPath,
    /// The file could not be signed.
    #[error(transparent)]
    Sign(#[from] verify::nemesis::sign::SignError),
    /// The file could not be serialized.
    #[error("cannot serialize the results")]
    Serialize(#[source] serde_json::Error),
    /// The file could not be written.
    #[error("cannot write {}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// The disk filled: a trial or the results could not be written. The finished trials are
    /// kept in the campaign's partial file (exit 3).
    #[error(
        "the disk is full: cannot write {} (free space there before going on); {kept}",
        .path.display()
    )]
    DiskFull {
        /// The file that could not be written.
        path: PathBuf,
        /// Where the finished trials are kept and what to do next, as a clause.
        kept: String,
    },
    /// The campaign's partial file could not be created, resumed or kept.
    #[error(transparent)]
    Partial(#[from] crate::partial::PartialError),
    /// `--replay ID` is not a trial id.
    #[error("{0:?} is not a trial id (nemesis:column:14 hex)")]
    NotATrialId(String),
    /// A trial id's (or `--nemesis`'s) nemesis is not one.
    #[error(transparent)]
    Nemesis(#[from] NemesisListError),
    /// A trial id's column is not one.
    #[error("{0}")]
    Column(scenarios::billing_credit::ScenarioError),
    /// `--at STEP` is not a step.
    #[error(
        "--at {step:?} is not a step; expected one of: {}",
        super::steps::POSITIONS.join(", ")
    )]
    NotAStep {
        /// The step given.
        step: String,
    },
    /// The replayed trial could not run.
    #[error(transparent)]
    Trial(#[from] TrialError),
}

//! Why a trial could not be run as drawn. Most of these become the trial's HARNESS_ERROR text
//! (recorded in the results file, so each message is worded as it always was); the ones raised
//! before the case is open stop the run.

use super::storage::StorageError;
use crate::backend::BackendError;
use crate::worker::CONTINUE_LINE;
use scenarios::billing_credit::ScenarioError;

/// What failed in a trial, and where.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// `--replay ID --at STEP` names a position the trial cannot be killed at.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The draw has no plan for the trial's nemesis and column.
    #[error("nemesis {nemesis} draws nothing for column {column}")]
    NotDrawn {
        /// The nemesis.
        nemesis: &'static str,
        /// The column.
        column: &'static str,
    },
    /// The trial's directory or case could not be set up (`trial <id>: ...`).
    #[error("trial {id}: {source}")]
    Open {
        /// The trial.
        id: String,
        /// What failed.
        source: Box<TrialError>,
    },
    /// A file or directory could not be made.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The journal store's location could not be written into the trial's directory.
    #[error("name the journal store: {0}")]
    NameJournal(#[source] std::io::Error),
    /// The case could not be opened at the service.
    #[error("open the case: {0}")]
    OpenCase(#[source] ScenarioError),
    /// The backend could not give the trial a client or prices.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A storage fault (tmpfs, torn line) could not be made.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The scenario's code (clock, outage, case file) failed.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The emulator could not move the case's clock around the revocation.
    #[error(transparent)]
    EmulatorClock(stripe::emulator::NoSuchClock),
    /// The drawn nemesis needs the embedded emulator, and the run has none.
    #[error("{0} the embedded emulator")]
    NeedsEmulator(&'static str),
    /// dedup_expired without libfaketime.
    #[error("dedup_expired needs libfaketime (Debian's package `faketime`)")]
    NoFaketime,
    /// A torn journal entry's mark could not be taken back.
    #[error("cannot take back the torn entry's mark: {0}")]
    Unmark(#[source] interlock::JournalError),
    /// A pause was drawn with nothing to do while it lasts.
    #[error("a pause was drawn without a world fault")]
    NoWorldFault,
    /// The world change made while the worker was paused failed (the worker's side of it).
    #[error("the world fault failed")]
    WorldFaultFailed,
    /// The world change made while the worker was paused failed, and why.
    #[error("the world fault failed: {0}")]
    WorldFault(#[source] Box<TrialError>),
    /// The outage while the worker was dead failed.
    #[error("the outage failed: {0}")]
    Outage(#[source] ScenarioError),
    /// The outage recorded no clock time to revoke the approval at.
    #[error("the revocation failed: the outage recorded no clock time")]
    NoClockTime,
    /// The revocation during the outage failed.
    #[error("the revocation failed: {0}")]
    Revocation(#[source] Box<TrialError>),
    /// The truth could not be read from the service.
    #[error("ground truth: {0}")]
    GroundTruth(#[source] ScenarioError),
    /// A worker's stderr file could not be opened.
    #[error("cannot open {name}: {source}")]
    OpenLog {
        /// The stderr file's name.
        name: String,
        /// Why.
        source: std::io::Error,
    },
    /// A worker could not be started.
    #[error("cannot start a {phase} worker: {source}")]
    Spawn {
        /// Its phase.
        phase: String,
        /// Why.
        source: std::io::Error,
    },
    /// stop_holder's decide worker ended before it reached the step it is stopped at.
    #[error("the decide worker {exit} before its stop at {step}")]
    EndedBeforeStop {
        /// How it ended ("exited with code 1", ...).
        exit: String,
        /// The step.
        step: String,
    },
    /// stop_holder's decide worker could not be stopped.
    #[error("could not SIGSTOP the decide worker")]
    Sigstop,
    /// stop_holder's decide worker could not be told to go on once continued.
    #[error("could not queue `{CONTINUE_LINE}` for the stopped worker")]
    QueueContinue,
    /// The final restart ran past its time.
    #[error("the final restart did not finish in time")]
    FinalRestartTimeout,
    /// The final restart ended well but printed no report.
    #[error("the final restart printed nothing")]
    FinalRestartSilent,
    /// The final restart's report is not a restart report.
    #[error("the final restart's report does not parse: {0}")]
    FinalRestartReport(#[source] serde_json::Error),
}

impl TrialError {
    /// The error as the step of opening trial `id` that failed.
    pub(crate) fn opening(id: &str) -> impl FnOnce(TrialError) -> TrialError + '_ {
        move |e| TrialError::Open {
            id: id.to_owned(),
            source: Box::new(e),
        }
    }
}

/// Why `runner --replay ID --at STEP` cannot kill the trial there.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The position is not a step.
    #[error("--at {position:?} is not a step; expected one of: {expected}")]
    NotAStep {
        /// What was asked.
        position: String,
        /// The steps, comma-separated.
        expected: String,
    },
    /// The trial's decide worker is paused or killed at a fixed point already.
    #[error("--at applies to trials whose decide kill is timed or at a step; this trial's decide worker is paused or killed at a fixed point already")]
    FixedPoint,
    /// `request_held` asked of a trial whose POST is not held.
    #[error("--at request_held needs a trial whose credit POST is held")]
    NotHeld,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_error_reads_as_the_harness_error_text_it_always_was() {
        let malformed = ScenarioError::Malformed {
            what: "create the customer".into(),
            detail: "no id".into(),
        };
        let opening = TrialError::opening("t1")(TrialError::OpenCase(malformed));
        assert_eq!(
            opening.to_string(),
            "trial t1: open the case: create the customer: unexpected Stripe object: no id"
        );
        let revocation = TrialError::Revocation(Box::new(TrialError::NoWorldFault));
        assert_eq!(
            revocation.to_string(),
            "the revocation failed: a pause was drawn without a world fault"
        );
        assert_eq!(
            TrialError::NeedsEmulator("dedup_expired needs").to_string(),
            "dedup_expired needs the embedded emulator"
        );
        let world = TrialError::WorldFault(Box::new(TrialError::NoClockTime));
        assert_eq!(
            world.to_string(),
            "the world fault failed: the revocation failed: the outage recorded no clock time"
        );
    }
}

//! [`ScenarioError`]: everything that can go wrong in the scenario, saying what and where.

use std::path::{Path, PathBuf};

/// Everything that can go wrong in the scenario, saying what and where.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A Stripe call failed.
    #[error("{what}: {source}")]
    Stripe {
        /// What the scenario was doing, e.g. "create the test clock for case-0123456789".
        what: String,
        /// The client's error.
        #[source]
        source: Box<stripe::StripeError>,
    },
    /// Stripe answered with JSON that lacks a field the scenario needs.
    #[error("{what}: unexpected Stripe object: {detail}")]
    Malformed {
        /// What was being read.
        what: String,
        /// Which field was missing or of the wrong type.
        detail: String,
    },
    /// A file could not be read or written.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was done, e.g. "write" or "fsync".
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A file's JSON could not be parsed or produced.
    #[error("{}: invalid JSON: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// A name (column, crash point, outage) is not one of the known ones.
    #[error("unknown {what} {got:?}; expected one of: {expected}")]
    UnknownName {
        /// Which kind of name.
        what: &'static str,
        /// What was given.
        got: String,
        /// The accepted names.
        expected: String,
    },
    /// The test clock did not become ready in time.
    #[error("test clock {clock} still {status:?} after {polls} polls ({waited_ms} ms)")]
    ClockNotReady {
        /// The clock id.
        clock: String,
        /// Its last status.
        status: String,
        /// How many times it was read.
        polls: u32,
        /// How long the polling took.
        waited_ms: u64,
    },
    /// The gate failed.
    #[error("interlock gate ({what}): {source}")]
    Gate {
        /// What the scenario asked of the gate.
        what: String,
        /// The gate's error.
        #[source]
        source: Box<::interlock::GateError>,
    },
    /// The interlock restart could not bring the effect to a final state.
    #[error("effect {effect_id}: {detail}")]
    Unresolved {
        /// The effect id.
        effect_id: String,
        /// Why.
        detail: String,
    },
    /// The decision or case is not usable (amount outside the approval, wrong case, ...).
    #[error("{0}")]
    Invalid(String),
    /// A PostgreSQL call of a hand-written column failed (the `hand_pg_lock` column's lock).
    #[error("PostgreSQL ({what}): {source}")]
    Database {
        /// What the column was doing, e.g. "take the order's advisory lock".
        what: &'static str,
        /// The client's error.
        #[source]
        source: Box<postgres::Error>,
    },
}

impl ScenarioError {
    pub(crate) fn stripe(what: impl Into<String>) -> impl FnOnce(stripe::StripeError) -> Self {
        let what = what.into();
        move |source| ScenarioError::Stripe {
            what,
            source: Box::new(source),
        }
    }

    pub(crate) fn gate(what: impl Into<String>) -> impl FnOnce(::interlock::GateError) -> Self {
        let what = what.into();
        move |source| ScenarioError::Gate {
            what,
            source: Box::new(source),
        }
    }

    pub(crate) fn database(what: &'static str) -> impl FnOnce(postgres::Error) -> Self {
        move |source| ScenarioError::Database {
            what,
            source: Box::new(source),
        }
    }

    pub(crate) fn io(
        action: &'static str,
        path: &Path,
    ) -> impl FnOnce(std::io::Error) -> ScenarioError {
        let path = path.to_path_buf();
        move |source| ScenarioError::Io {
            action,
            path,
            source,
        }
    }
}

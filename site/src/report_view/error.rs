//! Why a verified results file cannot be shown: what a page would have to say untruly.

/// Something in a verified results file that a page could not present truthfully.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// A judged cell's worker did not end by SIGKILL, so the page would claim a crash that did
    /// not happen.
    #[error("cell {cell} is judged but its worker did not end by SIGKILL (signal {signal:?}, exit code {code:?}); the page would claim a crash that did not happen")]
    NotSigkilled {
        /// The cell's label.
        cell: String,
        /// The signal its worker ended by, if any.
        signal: Option<i32>,
        /// Its worker's exit code, if any.
        code: Option<i32>,
    },
    /// A cell names a column the file does not list.
    #[error("cell {cell} is in column {column:?}, which is not in `columns`")]
    UnknownColumn {
        /// The cell's label.
        cell: String,
        /// The column it names.
        column: String,
    },
    /// A cell's crash point and outage are no row of the file.
    #[error("cell {cell} is not in any of `rows`")]
    NotInRows {
        /// The cell's label.
        cell: String,
    },
    /// The summary `verify` derived has no entry for a column.
    #[error("summary has no column {0}")]
    NoSummary(String),
    /// The backend is not one the site knows.
    #[error("environment.backend {0:?} is neither `emulator` nor `stripe_test_mode`")]
    UnknownBackend(String),
    /// The decider is a model, but the file does not name it.
    #[error("environment.decider is `anthropic` but names no model")]
    ModelUnnamed,
    /// The decider is not one the site knows.
    #[error("environment.decider.kind {0:?} is neither `policy` nor `anthropic`")]
    UnknownDecider(String),
    /// The journal is not one the site knows.
    #[error("environment.journal {0:?} is not `postgresql` (absent means JSONL files)")]
    UnknownJournal(String),
    /// A receipt's effect id is not hex, so it cannot name a page.
    #[error("cell {cell}: receipt effect id {effect_id:?} is not hex")]
    EffectIdNotHex {
        /// The cell's label.
        cell: String,
        /// The effect id.
        effect_id: String,
    },
    /// Two cells carry a receipt of the same effect.
    #[error("effect id {0} appears in more than one cell")]
    DuplicateEffectId(String),
    /// A receipt has no report from verification.
    #[error("receipt {0} was not verified")]
    ReceiptUnverified(String),
    /// A receipt bundle could not be written out as JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

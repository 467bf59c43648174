//! Why a notify worker step failed.

use crate::billing_credit::ScenarioError;

/// A notify worker's failure: the shared scenario failures (files, the gate), the emulator's
/// answer to a read the column needed, or a send whose outcome the column cannot use.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// A failure the scenarios share (a file, the journal, the gate).
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The refund could not be read.
    #[error("read refund {refund}: {source}")]
    Refund {
        /// The refund.
        refund: String,
        /// The client's error.
        #[source]
        source: stripe::StripeError,
    },
    /// The refund's answer has no status.
    #[error("refund {0}: the answer has no status")]
    NoStatus(String),
    /// The email was not accepted, or its outcome is unknown.
    #[error("send the email of {case}: {source}")]
    Mail {
        /// The case.
        case: String,
        /// The client's error.
        #[source]
        source: mailhost::client::SendError,
    },
}

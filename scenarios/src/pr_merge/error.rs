//! Why a pr_merge worker step failed.

use crate::billing_credit::ScenarioError;

/// A pr_merge worker's failure: the shared scenario failures (files, the gate), or the forge's
/// answer to a read the column needed.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A failure the scenarios share (a file, the journal, the gate).
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The forge did not answer a read or a merge usably.
    #[error("{what}: {source}")]
    Forge {
        /// What the column was doing.
        what: String,
        /// The client's error.
        #[source]
        source: forge::client::ClientError,
    },
}

impl MergeError {
    /// A `map_err` adapter naming what the column was doing with the forge.
    pub(crate) fn forge(
        what: impl Into<String>,
    ) -> impl FnOnce(forge::client::ClientError) -> MergeError {
        let what = what.into();
        move |source| MergeError::Forge { what, source }
    }
}

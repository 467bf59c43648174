//! Why a scenario's run could not start or go on: its own run's error, or a skeleton's refusal.
//! [`ScenarioError::is_interrupted`] tells an interruption (exit 130 or 143) from the rest.

use super::shared_cap::SharedCapError;
use crate::nemesis::{NemesisListError, NemesisRunError};
use crate::run::RunError;

/// Why [`super::ScenarioRun::matrix`] or [`super::ScenarioRun::nemesis`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A billing_credit matrix run.
    #[error(transparent)]
    Matrix(#[from] RunError),
    /// A billing_credit nemesis campaign.
    #[error(transparent)]
    Nemesis(#[from] NemesisRunError),
    /// billing_credit's `--nemesis LIST`.
    #[error(transparent)]
    NemesisList(#[from] NemesisListError),
    /// A shared_cap run.
    #[error(transparent)]
    SharedCap(#[from] SharedCapError),
    /// A pr_merge run.
    #[error(transparent)]
    PrMerge(#[from] super::pr_merge::PrMergeError),
    /// A notify run.
    #[error(transparent)]
    Notify(#[from] super::notify::NotifyRunError),
    /// A scenario whose runs are not built yet.
    #[error("--scenario {name} cannot be run yet: {why}")]
    NotBuilt {
        /// The scenario.
        name: &'static str,
        /// Why.
        why: &'static str,
    },
}

impl ScenarioError {
    /// Whether the run was interrupted (Ctrl-C or SIGTERM) rather than failed.
    pub fn is_interrupted(&self) -> bool {
        matches!(
            self,
            ScenarioError::Matrix(RunError::Interrupted(_))
                | ScenarioError::Nemesis(NemesisRunError::Interrupted(_))
                | ScenarioError::SharedCap(SharedCapError::Interrupted(_))
                | ScenarioError::PrMerge(super::pr_merge::PrMergeError::Interrupted(_))
                | ScenarioError::Notify(super::notify::NotifyRunError::Interrupted(_))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{Interrupted, SetupError};

    #[test]
    fn an_interruption_is_told_from_a_failure_in_every_run() {
        assert!(ScenarioError::from(RunError::from(Interrupted)).is_interrupted());
        assert!(ScenarioError::from(NemesisRunError::from(Interrupted)).is_interrupted());
        assert!(ScenarioError::from(SharedCapError::from(Interrupted)).is_interrupted());
        assert!(!ScenarioError::from(RunError::NoJobs).is_interrupted());
        assert!(
            !ScenarioError::from(SharedCapError::from(SetupError::RunDir(
                std::io::Error::other("gone")
            )))
            .is_interrupted()
        );
    }

    #[test]
    fn a_skeleton_scenario_says_it_cannot_be_run_yet() {
        let e = ScenarioError::NotBuilt {
            name: "pr_merge",
            why: "its runs are not built yet",
        };
        assert_eq!(
            e.to_string(),
            "--scenario pr_merge cannot be run yet: its runs are not built yet"
        );
    }
}

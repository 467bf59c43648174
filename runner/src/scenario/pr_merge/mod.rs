//! `--scenario pr_merge` (DESIGN §4.9): the skeleton of the third scenario. Its rules are
//! verify's (`verify::scenarios::pr_merge`: plan, ground truth, want rule, judgement, summary)
//! and its pages the site's; its runs — a GitHub REST subset over a real git repository and the
//! workers of its columns — are not built yet, so the runner names it and refuses to run it.

use super::{RunKind, ScenarioError, ScenarioOption, ScenarioRun};
use crate::cli::RunArgs;
use crate::job::Outcome;
use crate::run::RunOutcome;
use verify::contract::Scenario;

/// The pr_merge scenario.
pub struct PrMerge;

impl PrMerge {
    /// The refusal of a run: its runs are not built yet.
    fn not_built(&self) -> ScenarioError {
        ScenarioError::NotBuilt {
            name: self.name(),
            why: NOT_BUILT,
        }
    }
}

/// Why pr_merge cannot be run yet.
const NOT_BUILT: &str = "its rules (verify) and pages (site) are in place; its runs (a git \
                         service and the workers of its columns) are not built yet";

impl ScenarioRun for PrMerge {
    fn name(&self) -> &'static str {
        verify::scenarios::pr_merge::PrMerge::NAME
    }

    fn takes(&self, _option: ScenarioOption, _kind: RunKind) -> bool {
        false
    }

    fn not_runnable(&self) -> Option<&'static str> {
        Some(NOT_BUILT)
    }

    fn matrix(&self, _args: &RunArgs) -> Result<RunOutcome, ScenarioError> {
        Err(self.not_built())
    }

    fn nemesis(&self, _args: &RunArgs, _list: &str) -> Result<Outcome, ScenarioError> {
        Err(self.not_built())
    }
}

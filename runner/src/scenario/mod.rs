//! The scenarios the runner runs, in one registry: `--scenario`'s accepted values, `all`, and
//! the dispatch to each scenario's matrix and nemesis runs come from [`SCENARIOS`] alone.
//!
//! A scenario is a folder here that implements [`ScenarioRun`], plus one line in [`SCENARIOS`].

pub mod billing_credit;
mod cells;
mod error;
pub mod notify;
pub mod pr_merge;
pub mod shared_cap;

use crate::cli::RunArgs;
use crate::job::Outcome;
use crate::run::RunOutcome;
pub use error::ScenarioError;

/// Every scenario, in the order `--scenario all` runs them.
pub const SCENARIOS: &[&dyn ScenarioRun] = &[
    // One line per scenario.
    &billing_credit::BillingCredit,
    &shared_cap::SharedCap,
    &pr_merge::PrMerge,
    &notify::Notify,
];

/// `--scenario all`: every scenario's matrix in turn, then one site over all of them.
pub const ALL: &str = "all";

/// What the runner knows of a scenario: its name, which options its runs take, and its runs.
pub trait ScenarioRun: Sync {
    /// The name on the command line and in the results (`--scenario NAME`).
    fn name(&self) -> &'static str;

    /// Whether a run of `kind` takes `option`. Every option of [`ScenarioOption`] is asked about.
    fn takes(&self, option: ScenarioOption, kind: RunKind) -> bool;

    /// Why a run of `kind` refuses `option` it does not take: one sentence that says how to fix
    /// the command. By default, which scenarios the option belongs to.
    fn refusal(&self, option: ScenarioOption, _kind: RunKind) -> String {
        option.belongs_elsewhere()
    }

    /// Why this scenario cannot be run yet, when its rules (verify) and pages (site) are in place
    /// before its runs are (a skeleton): `--scenario NAME` is refused with this sentence and
    /// `--scenario all` leaves the scenario out. `None`, the default: its runs are built.
    fn not_runnable(&self) -> Option<&'static str> {
        None
    }

    /// Runs the scenario's matrix into `args.out`.
    fn matrix(&self, args: &RunArgs) -> Result<RunOutcome, ScenarioError>;

    /// Runs a randomized campaign of the nemeses in `list` (`all` or comma-separated names).
    fn nemesis(&self, args: &RunArgs, list: &str) -> Result<Outcome, ScenarioError>;
}

/// A run of a scenario: its matrix, or a nemesis campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// The fixed matrix of cells.
    Matrix,
    /// `--nemesis LIST`: randomized trials.
    Nemesis,
}

/// An option that some scenario's runs take and others refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScenarioOption {
    /// `--two-hosts`.
    TwoHosts,
    /// `--every-step`.
    EveryStep,
    /// `--cells`.
    Cells,
    /// `--decider` other than the policy.
    Decider,
    /// `--decide`.
    Decide,
    /// `--outage-ms`.
    OutageMs,
    /// `--keep-emulator`.
    KeepEmulator,
    /// `--shard`.
    Shard,
    /// `--exposure-span-ms`.
    ExposureSpanMs,
}

impl ScenarioOption {
    /// Every option, in the order a command's options are checked.
    pub const ALL: [ScenarioOption; 9] = [
        ScenarioOption::TwoHosts,
        ScenarioOption::EveryStep,
        ScenarioOption::Cells,
        ScenarioOption::Decider,
        ScenarioOption::Decide,
        ScenarioOption::OutageMs,
        ScenarioOption::KeepEmulator,
        ScenarioOption::Shard,
        ScenarioOption::ExposureSpanMs,
    ];

    /// The option as it is written on the command line.
    pub fn flag(self) -> &'static str {
        match self {
            ScenarioOption::TwoHosts => "--two-hosts",
            ScenarioOption::EveryStep => "--every-step",
            ScenarioOption::Cells => "--cells",
            ScenarioOption::Decider => "--decider",
            ScenarioOption::Decide => "--decide",
            ScenarioOption::OutageMs => "--outage-ms",
            ScenarioOption::KeepEmulator => "--keep-emulator",
            ScenarioOption::Shard => "--shard",
            ScenarioOption::ExposureSpanMs => "--exposure-span-ms",
        }
    }

    /// Whether `args` give the option (a `--decider` is given when it is not the default).
    pub fn given(self, args: &RunArgs) -> bool {
        match self {
            ScenarioOption::TwoHosts => args.two_hosts,
            ScenarioOption::EveryStep => args.every_step,
            ScenarioOption::Cells => !args.cells.is_empty(),
            ScenarioOption::Decider => args.decider != crate::decider::DeciderKind::Policy,
            ScenarioOption::Decide => args.decide.is_some(),
            ScenarioOption::OutageMs => args.outage_ms.is_some(),
            ScenarioOption::KeepEmulator => args.keep_emulator,
            ScenarioOption::Shard => args.shard.is_some(),
            ScenarioOption::ExposureSpanMs => args.exposure_span_ms.is_some(),
        }
    }

    /// The refusal of an option that only other scenarios take: "`--x` belongs to --scenario
    /// NAME (pass that, or drop `--x`)", the names those that take it in some run.
    pub fn belongs_elsewhere(self) -> String {
        let owners: Vec<String> = SCENARIOS
            .iter()
            .filter(|s| {
                [RunKind::Matrix, RunKind::Nemesis]
                    .into_iter()
                    .any(|kind| s.takes(self, kind))
            })
            .map(|s| format!("--scenario {}", s.name()))
            .collect();
        let flag = self.flag();
        format!(
            "{flag} belongs to {} (pass that, or drop {flag})",
            owners.join(" or ")
        )
    }
}

/// The scenarios whose runs are built, in the order `--scenario all` runs them.
pub fn runnable() -> Vec<&'static dyn ScenarioRun> {
    SCENARIOS
        .iter()
        .copied()
        .filter(|s| s.not_runnable().is_none())
        .collect()
}

/// The scenario named `name`, if there is one.
pub fn find(name: &str) -> Option<&'static dyn ScenarioRun> {
    SCENARIOS.iter().copied().find(|s| s.name() == name)
}

/// `--scenario`'s accepted values: every scenario's name, then [`ALL`].
pub fn choices() -> Vec<&'static str> {
    SCENARIOS
        .iter()
        .map(|s| s.name())
        .chain(std::iter::once(ALL))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_all_is_not_a_scenario() {
        let names = choices();
        for (i, name) in names.iter().enumerate() {
            assert!(!names[i + 1..].contains(name), "{name} twice");
        }
        assert!(find(ALL).is_none());
        for s in SCENARIOS {
            assert_eq!(find(s.name()).map(|f| f.name()), Some(s.name()));
        }
    }

    #[test]
    fn an_option_no_scenario_refuses_is_not_an_option_of_this_list() {
        // Each option of the list is refused by some scenario's run, or it would not be here.
        for option in ScenarioOption::ALL {
            let refused = SCENARIOS.iter().any(|s| {
                [RunKind::Matrix, RunKind::Nemesis]
                    .into_iter()
                    .any(|kind| !s.takes(option, kind))
            });
            assert!(refused, "{} is refused by no scenario", option.flag());
        }
    }
}

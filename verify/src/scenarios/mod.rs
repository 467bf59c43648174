//! Each scenario's rules, one module per scenario: everything a results or nemesis file of that
//! scenario is judged by (the plan, the want rule, the invariant, the answer, each column's proof,
//! the ground truth's consistency, the summary, the nemesis's within-assumptions rule). The
//! runner judges with these functions, `verify` re-derives with them, the site renders what
//! `verify` derived.
//!
//! A second scenario gets a module beside [`billing_credit`] and a variant of [`Scenario`].

pub mod billing_credit;

/// The scenarios this verifier knows, by the name a results file states in `scenario`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// [`billing_credit`]: a support agent's goodwill credit, raced by billing's own credits.
    BillingCredit,
}

impl Scenario {
    /// Every known scenario.
    pub const ALL: [Scenario; 1] = [Scenario::BillingCredit];

    /// The name a results file and the runner's `--scenario` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Scenario::BillingCredit => "billing_credit",
        }
    }

    /// The scenario of this name, if this verifier knows it.
    pub fn named(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

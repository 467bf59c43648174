//! Each scenario's rules, one module per scenario: everything a results or nemesis file of that
//! scenario is judged by (the plan, the want rule, the invariant, the answer, each column's proof,
//! the ground truth's consistency, the summary, the nemesis's within-assumptions rule). The
//! runner judges with these functions, `verify` re-derives with them, the site renders what
//! `verify` derived.
//!
//! Two so far: [`billing_credit`] and [`shared_cap`].

pub mod billing_credit;
pub mod notify;
pub mod notify_nemesis;
pub mod pr_merge;
pub mod pr_merge_nemesis;
pub mod receipt_proof;
pub mod shared_cap;

use crate::contract::Registered;

/// The scenarios on the contract ([`crate::contract::Scenario`]), one line each:
/// `&crate::contract::Entry::<name::Scenario>::NEW`. The loader, the command line and the site
/// find a scenario here by the name its file states. billing_credit and shared_cap still have
/// formats of their own and are not listed yet.
pub static REGISTRY: &[&dyn Registered] = &[
    // One line per scenario on the contract.
    &crate::contract::Entry::<pr_merge::PrMerge>::NEW,
    &crate::contract::Entry::<pr_merge_nemesis::PrMergeNemesis>::NEW,
    &crate::contract::Entry::<notify::Notify>::NEW,
    &crate::contract::Entry::<notify_nemesis::NotifyNemesis>::NEW,
];

/// The registered scenario of this name.
pub fn registered(name: &str) -> Option<&'static dyn Registered> {
    REGISTRY.iter().copied().find(|s| s.name() == name)
}

/// The scenarios this verifier knows, by the name a results file states in `scenario`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// [`billing_credit`]: a support agent's goodwill credit, raced by billing's own credits.
    BillingCredit,
    /// [`shared_cap`]: two support bots refunding one order under one cap.
    SharedCap,
}

impl Scenario {
    /// Every known scenario.
    pub const ALL: [Scenario; 2] = [Scenario::BillingCredit, Scenario::SharedCap];

    /// The name a results file and the runner's `--scenario` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Scenario::BillingCredit => "billing_credit",
            Scenario::SharedCap => "shared_cap",
        }
    }

    /// The scenario of this name, if this verifier knows it.
    pub fn named(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

//! The shared_cap results file (`shared_cap.json`): what a run records, per cell and per ticket.

use super::summary::ColumnSummary;
use super::truth::OrderTruth;
use crate::entry::ReceiptBundle;
use crate::results::{Approval, FreeForm};
use serde::{Deserialize, Serialize};

/// The value of the file's `scenario` field.
pub const SCENARIO: &str = "shared_cap";

/// A whole shared_cap run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapResults {
    /// [`super::check::FORMAT`].
    pub format: String,
    /// [`SCENARIO`].
    pub scenario: String,
    /// When the run finished (RFC 3339, UTC).
    pub generated_at: String,
    /// Where and how it ran.
    pub environment: CapEnvironment,
    /// The invariant, in words.
    pub want: String,
    /// Every cell, in plan order.
    pub cells: Vec<CapCell>,
    /// Per column, derived from the cells by [`super::summary::summarize`].
    pub summary: Vec<ColumnSummary>,
    /// The run key's ed25519 signature (hex) over [`super::check::signing_message`]: every
    /// other member of the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// Where and how a run happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapEnvironment {
    /// `emulator` or `stripe`.
    pub backend: String,
    /// The `Stripe-Version` sent.
    pub stripe_api_version: String,
    /// Always `policy`: each bot refunds what its ticket's approval allows.
    pub decider: String,
    /// The runner's version.
    pub runner_version: String,
    /// The commit the runner was built from, if known.
    pub git_commit: Option<String>,
    /// The run's seed (order and ticket ids derive from it).
    pub seed: u64,
    /// The gate's public key (hex): every receipt must be signed by it.
    pub public_key: String,
    /// Where the gate's journal was: `file` (one JSONL file per cell) or `postgresql`.
    pub journal: String,
    /// The refund target's declared server-side in-flight bound.
    pub max_in_flight_ms: u64,
    /// The command that re-runs this run.
    pub command: String,
    /// How many hosts the workers ran on (`--two-hosts`: 2, worker `a` on one and `b` on the
    /// other, sharing only the emulator and the journal database over the network); absent
    /// when both ran on one host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<u32>,
}

/// The name a run's files and pages go by: `shared_cap` on one host, `shared_cap_two_hosts` when
/// the workers ran on two (`results/<name>.json`, `nemesis/<name>.json`, the site's `<name>/`).
pub fn run_name(env: &CapEnvironment) -> &'static str {
    match env.hosts {
        Some(2) => "shared_cap_two_hosts",
        _ => SCENARIO,
    }
}

/// One cell: one crash point of worker `a`, one overlap, one column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapCell {
    /// `before_send` or `after_send`: where worker `a` is SIGKILLed.
    pub crash_point: String,
    /// `sequential` or `concurrent`.
    pub overlap: String,
    /// One of [`super::plan::COLUMNS`].
    pub column: String,
    /// Repeat index.
    pub repeat: u32,
    /// The order both tickets refund against.
    pub order: OrderRecord,
    /// Ticket `a` (the one killed), then `b`.
    pub tickets: Vec<TicketRecord>,
    /// What Stripe holds after both settled.
    pub truth: OrderTruth,
    /// [`super::invariant_held`] of `truth`.
    pub invariant_held: bool,
    /// Every ticket's answer matches Stripe.
    pub answers_match: bool,
    /// Why the harness could not run the cell as designed (then nothing else is judged).
    pub harness_error: Option<String>,
    /// From the first worker's start to the ground truth read, milliseconds.
    pub wall_ms: u64,
}

impl CapCell {
    /// The cell (or trial) ran to a judgement: it is not a harness error. The one definition of
    /// "judged" for shared_cap.
    pub fn judged(&self) -> bool {
        self.harness_error.is_none()
    }

    /// Worker `a` was SIGKILLed at the row's crash point.
    pub fn a_killed(&self) -> bool {
        self.tickets
            .first()
            .and_then(|t| t.killed_at.as_deref())
            .is_some_and(|at| at == self.crash_point)
    }
}

/// The order of a cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrderRecord {
    /// `order-<10 hex>`: the gate's budget id.
    pub order_id: String,
    /// `pi_...`.
    pub payment_intent: String,
    /// `ch_...`.
    pub charge: String,
    /// The payment, cents.
    pub amount: i64,
    /// The policy cap, cents.
    pub cap_cents: i64,
}

/// One ticket's worker in a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TicketRecord {
    /// `a` or `b`.
    pub name: String,
    /// `TCK-<8 hex>`.
    pub ticket_id: String,
    /// The approval the ticket carries.
    pub approval: Approval,
    /// Cents the bot decided to refund (from its saved decision), if it got that far.
    pub amount: Option<i64>,
    /// The crash point the worker was SIGKILLed at, if it was.
    pub killed_at: Option<String>,
    /// How the first worker process ended, in words.
    pub first_exit: String,
    /// The final status: the first worker's own when it was not killed, else its restart's
    /// (`RESTART_FAILED` when the final restart ended in an error: the ticket is unresolved).
    pub status: String,
    /// For an unresolved ticket: how its final restart ended, with the tail of its stderr.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_error: Option<String>,
    /// `interlock` only: the effect id.
    pub effect_id: Option<String>,
    /// `interlock` only: the entry kinds of the effect's journal chain.
    pub journal_kinds: Vec<String>,
    /// `interlock` only: the effect's receipt bundle.
    pub receipt: Option<ReceiptBundle>,
    /// The hand-written columns: the ticket's plain log.
    pub log: Option<Vec<FreeForm>>,
    /// [`super::answer_matches`] for this ticket.
    pub answer_matches: bool,
    /// The column's record proves the ticket's outcome ([`super::proof`]).
    pub proof: bool,
}

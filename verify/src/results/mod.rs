//! The results file a run of the experiment matrix writes (`format: "interlock-results/1"`).
//!
//! These types are the contract between the runner (which writes the file), `verify` (which
//! re-derives every claim in it) and the site (which renders only verified files). Every derived
//! field in a cell (`want`, `invariant_held`, `answer_matches`, `proof`) and every number in
//! `summary` can be recomputed from the raw data in the same file; see
//! [`crate::scenarios::billing_credit`].

use crate::entry::ReceiptBundle;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod free_form;
mod truth;

pub use free_form::{FreeForm, FREE_FORM_MAX_BYTES};
pub use truth::{BalanceTxnTruth, CaseCredit, CreditNoteTruth, GroundTruth, InvoiceTruth};

/// The `format` value of a results file.
///
/// Version 2 added the run's plan (`repeats`, `selected`) and the signed [`Manifest`]; a version 1
/// file is refused as an unknown format, never read as something weaker.
pub const RESULTS_FORMAT: &str = "interlock-results/2";

/// A whole results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ResultsFile {
    /// Always [`RESULTS_FORMAT`].
    pub format: String,
    /// Scenario name, e.g. `billing_credit`.
    pub scenario: String,
    /// When the run finished, RFC 3339 UTC.
    pub generated: String,
    /// What the run ran against and with which settings.
    pub environment: Environment,
    /// The (crash, outage) rows of the matrix, in display order.
    pub rows: Vec<RowSpec>,
    /// The columns (`no_check`, `hand_check`, `interlock`), in display order.
    pub columns: Vec<String>,
    /// How many times each planned (row, column) pair ran (repeat indices `0..repeats`).
    pub repeats: u32,
    /// The (row, column) pairs the run selected (`--cells`), or empty when it ran every row in
    /// every column. The cells are exactly these pairs (or rows x columns) x `0..repeats`.
    pub selected: Vec<CellLabel>,
    /// One entry per cell run (row x column x repeat).
    pub cells: Vec<Cell>,
    /// Per column, keyed by column name: counts and medians over the column's cells.
    pub summary: BTreeMap<String, ColumnSummary>,
    /// The run's signature over the whole file ([`crate::manifest`]).
    pub manifest: Manifest,
}

/// One planned (row, column) pair.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CellLabel {
    /// Crash point.
    pub crash: String,
    /// Outage.
    pub outage: String,
    /// Column.
    pub column: String,
}

/// The run's signature over the whole results file: the canonical hash of every cell and of
/// everything else in the file, signed with the run's key (see [`crate::manifest`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Hex SHA-256 of the canonical JSON of everything in the file but `cells` and `manifest`.
    pub head: String,
    /// Hex SHA-256 of the canonical JSON of each cell, in file order.
    pub cells: Vec<String>,
    /// Hex ed25519 public key of the signer (the run's key, `environment.signer`).
    pub signer: String,
    /// Hex SHA-256 of the canonical JSON of `{v, head, cells, signer}`.
    pub hash: String,
    /// Hex ed25519 signature over `"interlock-manifest-v1:" + hash`.
    pub sig: String,
}

/// Where and how the run happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// `emulator` (the project's own Stripe emulator on loopback) or `stripe_test_mode`.
    pub backend: String,
    /// The `Stripe-Version` sent on every request.
    pub stripe_api_version: String,
    /// Which decider produced the decisions.
    pub decider: DeciderInfo,
    /// Version of the runner binary.
    pub runner_version: String,
    /// Git commit of the code that ran, if known; `-dirty` is appended when tracked files differed
    /// from it.
    pub git_commit: Option<String>,
    /// Seed of the run's random choices (case and incident ids, key generation).
    pub seed: u64,
    /// The gate's claim and recovery settings for this run.
    pub claim: ClaimSettings,
    /// Hex ed25519 public key that signed every journal entry of the run.
    pub signer: String,
    /// The command line that reproduces the run.
    pub command: String,
    /// Worker parallelism used.
    pub jobs: u32,
    /// Where the interlock column's journal was kept when not in one JSONL file per cell:
    /// `postgresql` (the runner's `--journal`, one schema per run). Absent: JSONL files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<String>,
    /// Where every case's test clock started, Unix seconds (`runner --clock-start`, by default
    /// [`crate::billing_credit::DEFAULT_CLOCK_START`]). Absent in runs made before clocks had a
    /// fixed start: those started each clock at the wall time the case was opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_start: Option<i64>,
    /// How long each outage's test-clock advance took on the emulator, ms (`runner
    /// --outage-ms`); absent: no time (the emulator's own advances are instant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage_ms: Option<u64>,
}

/// The decider that turned a case into an amount and a description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DeciderInfo {
    /// `policy` (deterministic, no model) or `anthropic` (a model through the Messages API).
    pub kind: String,
    /// The model name when `kind` is `anthropic`, else `null`.
    pub model: Option<String>,
}

/// Claim and recovery settings of the gate in this run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ClaimSettings {
    /// How long a request that left a dead sender can still land at the service.
    pub max_in_flight_ms: u64,
    /// Backstop for a hung but alive sender.
    pub claim_ttl_ms: u64,
    /// The service's idempotency window.
    pub dedup_window_ms: u64,
    /// How long before the end of the window a tier-1 dispatch is treated as tier 2.
    pub dedup_margin_ms: u64,
}

/// One row of the matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RowSpec {
    /// Crash point: `before_send` or `after_send`.
    pub crash: String,
    /// Outage: `renewal`, `billing_credit`, `proration` or `unrelated_credit`.
    pub outage: String,
}

/// One cell: one case run through one column with one crash point and one outage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Cell {
    /// Crash point.
    pub crash: String,
    /// Outage run while the worker was dead.
    pub outage: String,
    /// `no_check`, `hand_check` or `interlock`.
    pub column: String,
    /// Repeat index, from 0.
    pub repeat: u32,
    /// The case the cell opened.
    pub case: Case,
    /// Final status string of the column (as on the reference page), or `HARNESS_ERROR`.
    pub outcome: String,
    /// For interlock: the `via` of the COMMITTED entry, if any.
    pub via: Option<String>,
    /// Signal that ended the decide worker (9 when the runner's SIGKILL did it).
    pub worker_exit_signal: Option<i32>,
    /// Exit code of the decide worker when it exited by itself (never expected).
    pub worker_exit_code: Option<i32>,
    /// Why the cell is a HARNESS_ERROR, with the worker's stderr tail.
    pub harness_error: Option<String>,
    /// What the invariant allows, derived from `ground_truth` by the want rule.
    pub want: Want,
    /// What Stripe holds after the restart exited.
    pub ground_truth: GroundTruth,
    /// This case's credits in Stripe equal `want`.
    pub invariant_held: bool,
    /// The column's final status says "sent" exactly when a case credit exists.
    pub answer_matches: bool,
    /// The column's own record proves what happened (see the proof rule).
    pub proof: bool,
    /// `signed_chain` (interlock), `plain_log` (hand_check) or `none` (no_check).
    pub record: String,
    /// Wall-clock timings measured by the runner.
    pub timings: Option<Timings>,
    /// The decision the worker saved before sending, if it got that far.
    pub decision: Option<Decision>,
    /// Premise candidates read from Stripe at decision, right after the kill, and before restart.
    pub observations: Observations,
    /// What the outage did.
    pub outage_record: OutageRecord,
    /// Every Stripe id of the case, for checking in a dashboard.
    pub stripe_ids: StripeIds,
    /// Interlock only: the effect id (64 hex).
    pub effect_id: Option<String>,
    /// Interlock only: the kinds of the effect's journal entries, in order.
    pub journal_kinds: Vec<String>,
    /// Interlock only: the effect's full receipt bundle.
    #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Value>"))]
    pub receipt: Option<ReceiptBundle>,
    /// hand_check only: every line of its plain log.
    #[cfg_attr(feature = "schema", schemars(with = "Option<Vec<serde_json::Value>>"))]
    pub hand_check_log: Option<Vec<FreeForm>>,
    /// The restart worker's JSON output line.
    #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Value>"))]
    pub restart: Option<FreeForm>,
}

impl Cell {
    /// The cell ran to a judgement: it is not a harness error. The one definition of "judged"
    /// for a billing_credit cell.
    pub fn judged(&self) -> bool {
        !self.is_harness_error()
    }

    /// The cell is a harness error (its outcome is `HARNESS_ERROR`).
    pub fn is_harness_error(&self) -> bool {
        self.outcome == crate::scenarios::billing_credit::HARNESS_ERROR
    }

    /// The cell's `harness_error` is set exactly when its outcome is `HARNESS_ERROR`.
    pub fn harness_error_consistent(&self) -> bool {
        self.is_harness_error() == self.harness_error.is_some()
    }
}

/// The support case a cell opened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// `case-<10 hex>`.
    pub case_id: String,
    /// `INC-<6 hex>`.
    pub incident: String,
    /// The approval (the gate's lease).
    pub approval: Approval,
    /// The case text shown to the decider.
    pub text: String,
}

/// Support's approval of one goodwill credit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Approval {
    /// `approval-<case id>`.
    pub id: String,
    /// Who approved.
    pub approver: String,
    /// The cap, in cents.
    pub max_cents: i64,
    /// `null` unless revoked.
    pub revoked: Option<Revocation>,
}

/// Who revoked an approval, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Revocation {
    /// Who revoked it.
    pub by: String,
    /// The test-clock instant (seconds) it was revoked at, when the runner recorded one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_time: Option<i64>,
}

/// What the invariant allows this case to have credited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Want {
    /// Number of case credits allowed (0 or 1).
    pub count: u32,
    /// Their total in cents (positive).
    pub cents: i64,
}

/// Runner-measured wall-clock timings of a cell, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Timings {
    /// From the runner seeing the worker killed to the restart process exiting (includes the outage).
    pub crash_to_settled_ms: u64,
    /// From starting the restart process to its exit.
    pub restart_to_settled_ms: u64,
    /// The outage part of `crash_to_settled_ms` (observation reads and the outage itself).
    pub outage_ms: u64,
}

/// The decision a worker saved before sending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// Credit amount in cents (positive).
    pub amount: i64,
    /// Description the decider wrote.
    pub description: String,
    /// Which decider (and model) produced it.
    pub decider: DeciderInfo,
    /// The premises captured when deciding.
    pub premises: Premises,
    /// When the decider was asked once for the whole row (`runner --decide per-row`): the cell
    /// whose decision this one replays (`crash/outage/column`, `#repeat` when above 0), with that
    /// case's id and incident replaced by this case's in the description. Absent: decided here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed_from: Option<String>,
}

/// The premises of the billing_credit decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Premises {
    /// The subscription's `status` (must stay `active`).
    pub subscription_status: String,
    /// Cents credited for this incident by anyone other than this case.
    pub incident_compensation: i64,
}

/// The three premise candidates at the three instants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Observations {
    /// Read with the premises, when deciding (`null` if the worker never got that far).
    pub decision: Option<Candidates>,
    /// Read by the runner right after the kill.
    pub crash: Option<Candidates>,
    /// Read by the runner right before the restart.
    pub restart: Option<Candidates>,
}

/// Values of the premise candidates, cents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Candidates {
    /// The customer's balance (negative when the customer is owed).
    pub customer_balance: i64,
    /// Unscoped compensation by others.
    pub compensation_by_others: i64,
    /// Compensation by others for this case's incident.
    pub incident_compensation: i64,
}

/// What the runner did during the outage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct OutageRecord {
    /// The subscription_cycle invoice the renewal produced.
    pub renewal_invoice: Option<String>,
    /// The SLA credit note billing issued, if any.
    pub credit_note: Option<String>,
    /// The incident on that credit note.
    pub credit_note_incident: Option<String>,
    /// The price the subscription was downgraded to (proration outage).
    pub downgraded_to_price: Option<String>,
    /// The test clock's frozen time after the outage, once the runner advanced it one second past
    /// the outage's last event (so a credit sent by the restart is observed after it, never in
    /// the same second).
    pub clock_time: Option<i64>,
}

/// Every Stripe id of a case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StripeIds {
    /// Test clock.
    pub clock: String,
    /// Customer.
    pub customer: String,
    /// Subscription.
    pub subscription: String,
    /// Invoices, newest first.
    pub invoices: Vec<String>,
    /// Credit notes.
    pub credit_notes: Vec<String>,
    /// This case's credits (balance transactions).
    pub case_credits: Vec<String>,
}

/// Counts and medians of one column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ColumnSummary {
    /// Cells of the column that ran to a judgement (HARNESS_ERROR cells are counted apart).
    pub cells: u32,
    /// Cells with `outcome == "HARNESS_ERROR"`.
    pub harness_errors: u32,
    /// Cells whose invariant held.
    pub held: u32,
    /// Cells whose answer matched Stripe.
    pub answer_matches: u32,
    /// Cells whose record proves what happened.
    pub proof: u32,
    /// Median of `crash_to_settled_ms` over the judged cells ([`median_ms`]).
    pub median_crash_to_settled_ms: Option<u64>,
    /// Median of `restart_to_settled_ms` over the judged cells.
    pub median_restart_to_settled_ms: Option<u64>,
}

/// The median used everywhere in results files: the middle value of the sorted list, or for an
/// even count the mean of the two middle values rounded down; `None` for an empty list.
pub fn median_ms(values: &[u64]) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        Some(sorted[mid])
    } else {
        Some(sorted[mid - 1] / 2 + sorted[mid] / 2 + (sorted[mid - 1] % 2 + sorted[mid] % 2) / 2)
    }
}

/// The JSON Schema of a results file, for publishing beside it (feature `schema`).
#[cfg(feature = "schema")]
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(ResultsFile)).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_rule() {
        assert_eq!(median_ms(&[]), None);
        assert_eq!(median_ms(&[5]), Some(5));
        assert_eq!(median_ms(&[9, 1, 5]), Some(5));
        assert_eq!(median_ms(&[1, 2]), Some(1));
        assert_eq!(median_ms(&[3, 1, 4, 2]), Some(2));
        assert_eq!(median_ms(&[u64::MAX, u64::MAX]), Some(u64::MAX));
        assert_eq!(median_ms(&[3, 5]), Some(4));
    }

    #[cfg(feature = "schema")]
    #[test]
    fn schema_names_the_format_fields() {
        let schema = json_schema().to_string();
        assert!(schema.contains("worker_exit_signal"));
        assert!(schema.contains("median_restart_to_settled_ms"));
    }
}

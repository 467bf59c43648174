//! The billing_credit scenario (DESIGN §4): a subscriber on a $30/month plan, each case on its
//! own Stripe test clock; support approves ONE $10 goodwill credit; a worker decides and sends it
//! as a customer balance transaction, is SIGKILLed right before or right after the POST, an
//! outage (a renewal, billing's own SLA credit note, a proration) runs while it is dead, and a
//! restart finishes the job.
//!
//! What lives here:
//! * case opening ([`ensure_prices`], [`open_case`], [`CaseFile`]);
//! * the reads: premises ([`facts`]), the three premise candidates ([`observations`]),
//!   [`read_account`] (both at one instant) and [`ground_truth`], always reading every list page;
//! * the three columns behind [`decide_and_send`] and [`restart`]: `no_check`, `hand_check` and
//!   `interlock` (the gate over [`CreditTarget`] with the approval as [`ApprovalStore`]);
//! * the outages ([`run_outage`]);
//! * the matrix's axes ([`Column`], [`CrashPoint`], [`Outage`]; `matrix`), the cell's files
//!   ([`save_decision`], [`load_decision`]; `files`) and [`ScenarioError`] (`error`).
//!
//! What does not: the decider (amount and description), worker processes, SIGKILL, timing and
//! the results file belong to the runner; the want rule and the judgement belong to
//! `verify::scenarios::billing_credit`.

mod approval;
pub(crate) mod case;
mod error;
mod events;
mod files;
pub(crate) mod hand_check;
pub(crate) mod interlock;
mod matrix;
mod no_check;
mod outage;
pub(crate) mod reads;
pub(crate) mod target;

pub use approval::ApprovalStore;
pub use case::{ensure_prices, open_case, CaseFile, Prices};
pub use error::ScenarioError;
pub use events::{announce_events, announce_read, monotonic_us, stamp, EVENT_LINE_PREFIX, FACTS};
pub(crate) use files::{
    append_line_durably, read_json, write_json_durably, write_json_durably_timed,
};
pub use files::{load_decision, save_decision};
pub use hand_check::read_hand_check_log;
pub use matrix::{default_rows, Column, CrashPoint, Outage};
pub use outage::{advance_one_second, clock_time, run_outage, run_outage_timed, FactChange};
pub use reads::{
    facts, ground_truth, observations, read_account, read_ledger, stripe_ids, Account, Ledger,
};
pub use target::{post_credit, CreditPosted, CreditTarget, GateTags, ANCHOR_KEY};

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use verify::results::Decision;

/// The plan's monthly price, cents ($30).
pub const PLAN_CENTS: i64 = 3000;
/// The downgrade target of the proration outage, cents ($20).
pub const SMALL_PLAN_CENTS: i64 = 2000;
/// The approved goodwill credit and the approval's cap, cents ($10).
pub const CREDIT_CENTS: i64 = 1000;
/// The billing SLA automation's credit note amount, cents ($10).
pub const SLA_CREDIT_CENTS: i64 = 1000;
/// The agent name written into proposals and hand_check log lines.
pub const AGENT: &str = "billing-credit-agent";
/// Who approves the goodwill credit.
pub const APPROVER: &str = "support-lead";
/// `metadata[source]` of billing's SLA credit notes.
pub const SLA_SOURCE: &str = "billing-sla-automation";
/// How far past the subscription item's `current_period_end` the renewal advances the clock
/// (past Stripe's ~1 h draft window, so the renewal invoice is finalized and paid).
pub const RENEWAL_OVERSHOOT_SECS: i64 = 3 * 3600;
/// The service's idempotency window (Stripe keeps keys at least 24 h).
pub const DEDUP_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// File name of the case in a cell directory.
pub const CASE_FILE: &str = "case.json";
/// File name of the account the decide phase read (premises and candidates) in a cell directory.
pub const ACCOUNT_FILE: &str = "account.json";
/// File name of the saved decision in a cell directory.
pub const DECISION_FILE: &str = "decision.json";
/// File name of hand_check's plain JSONL log in a cell directory.
pub const HAND_CHECK_LOG: &str = "hand_check.log";
/// File name of the interlock gate's journal in a cell directory.
pub const JOURNAL_FILE: &str = "journal.jsonl";
/// Optional file in a cell directory naming the journal store the interlock column uses instead
/// of [`JOURNAL_FILE`]: a `postgres://` URL (the runner's `--journal`).
pub const JOURNAL_LOCATION_FILE: &str = "journal.location";
/// File name of the receipt bundle the interlock restart writes in a cell directory.
pub const RECEIPT_FILE: &str = "receipt.json";

/// Called right BEFORE the credit POST ([`CrashPoint::BeforeSend`]) and right AFTER its response
/// is parsed ([`CrashPoint::AfterSend`]), only at the point it was registered for — or, registered
/// at [`CrashPoint::Every`], at every step of the decide phase ([`CrashPoint::STEPS`]). The
/// worker's hook announces the point to the runner and blocks until it is SIGKILLed (or told to
/// go on); in-process tests use a hook that panics (unwinding drops every file handle and lock,
/// as a kill would). Restarts pass no hook.
pub type CrashHook = Arc<dyn Fn(CrashPoint) + Send + Sync>;

/// A crash hook and the point it fires at.
pub type Crash = (CrashPoint, CrashHook);

pub(crate) fn fire(crash: Option<&Crash>, at: CrashPoint) {
    if let Some((point, hook)) = crash {
        if *point == at || *point == CrashPoint::Every {
            hook(at);
        }
    }
}

/// Gate settings the scenario needs from the runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScenarioSettings {
    /// [`CreditTarget`]'s declared **server-side** in-flight bound: how long after a credit POST
    /// left its client it can still take effect at the service (a request keeps executing after
    /// its client gave up). The gate trusts a "not found" only once this much time has passed
    /// since recovery found the sender's claim free, and records it on every entry that rests on
    /// it. The runner states it per backend, with its justification.
    pub max_in_flight: Duration,
    /// The gate's claim TTL: backstop for a hung but alive sender. Every target call is bounded
    /// by the client's request timeout, so it covers a few of them.
    pub claim_ttl: Duration,
}

impl ScenarioSettings {
    /// Settings for a backend with this declared server-side bound, reached by a Stripe client
    /// with this request timeout: the claim TTL is twice the timeout plus 500 ms.
    pub fn new(server_bound: Duration, client_timeout: Duration) -> ScenarioSettings {
        ScenarioSettings {
            max_in_flight: server_bound,
            claim_ttl: (client_timeout + Duration::from_millis(500)) * 2,
        }
    }
}

impl Default for ScenarioSettings {
    /// For the stripe crate's default 30 s request timeout and a 30.5 s bound.
    fn default() -> ScenarioSettings {
        let timeout = stripe::client::DEFAULT_TIMEOUT;
        ScenarioSettings::new(timeout + Duration::from_millis(500), timeout)
    }
}

/// What a restart did, as the restart worker prints it (one JSON line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestartReport {
    /// The column's final status (as on the reference page), e.g. `CREDITED`,
    /// `FOUND_BY_LOOKUP`, `COMMITTED_BY_RETRY`, `REFUSED:stale_premise_at_recovery`.
    pub status: String,
    /// Interlock: the `via` of the effect's COMMITTED entry, if any.
    pub via: Option<String>,
    /// Interlock: the effect id (64 hex).
    pub effect_id: Option<String>,
    /// Interlock: the kinds of the effect's journal entries, in order.
    pub journal_kinds: Vec<String>,
    /// Interlock: the effect's receipt bundle (also written to `receipt.json`).
    pub receipt: Option<verify::entry::ReceiptBundle>,
    /// hand_check: every line of `hand_check.log` after the restart.
    pub hand_check_log: Option<Vec<serde_json::Value>>,
    /// Interlock: total time the restart slept waiting for `Blocked { until_ms }` instants.
    pub waited_ms: u64,
    /// Column-specific detail: no_check `{credit, replayed}`, hand_check `{credit}`, interlock
    /// `{recoveries: [...], verify: <verify::receipt::ReceiptReport>}` (every outcome recovery
    /// returned, in order, and the receipt verified against `gate_key`).
    pub detail: serde_json::Value,
}

impl RestartReport {
    /// A report with no gate record: a hand-written column's (its log, if it keeps one), or one
    /// the harness writes for a worker that has none (nothing decided, a restart that failed).
    pub fn without_gate(
        status: String,
        hand_check_log: Option<Vec<serde_json::Value>>,
        detail: serde_json::Value,
    ) -> RestartReport {
        RestartReport {
            status,
            via: None,
            effect_id: None,
            journal_kinds: Vec::new(),
            receipt: None,
            hand_check_log,
            waited_ms: 0,
            detail,
        }
    }
}

/// The decide phase: saves `decision.json` (fsync) in `cell_dir`, then sends the credit the
/// column's way and returns its status. `crash` fires the hook at its point (the worker passes
/// one; tests pass a panicking one); `gate_key` signs the interlock journal.
///
/// Statuses: no_check `CREDITED` | `REPLAYED_BY_STRIPE`; hand_check additionally
/// `FOUND_BY_LOOKUP`, `REFUSED:approval`, `REFUSED:stale_premise`; interlock the gate's status.
#[allow(clippy::too_many_arguments)]
pub fn decide_and_send(
    column: Column,
    client: &stripe::Client,
    cell_dir: &Path,
    case: &CaseFile,
    decision: &Decision,
    crash: Option<Crash>,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<String, ScenarioError> {
    save_decision(cell_dir, decision)?;
    fire(crash.as_ref(), CrashPoint::DecisionSaved);
    match column {
        Column::NoCheck => no_check::send(client, case, decision, crash.as_ref())
            .map(|(status, _)| status.to_owned()),
        Column::HandCheck => hand_check::send(
            client,
            cell_dir,
            case,
            decision,
            hand_check::Phase::Decide,
            crash.as_ref(),
        )
        .map(|(status, _)| status),
        Column::Interlock => {
            interlock::submit(client, cell_dir, case, decision, crash, gate_key, settings)
        }
    }
}

/// The restart phase (no crash hook): reloads `case.json` and `decision.json` from `cell_dir` and
/// finishes the column's job. no_check re-sends the saved decision under the same key;
/// hand_check re-runs its checks before any send; interlock loops the gate's recovery, sleeping
/// exactly until each `Blocked { until_ms }` instant, until the effect is resolved, then writes
/// `receipt.json`.
pub fn restart(
    column: Column,
    client: &stripe::Client,
    cell_dir: &Path,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<RestartReport, ScenarioError> {
    restart_with(column, client, cell_dir, gate_key, settings, None)
}

/// [`restart`] with a crash hook, fired at the restart's own steps (the nemesis kills restarts
/// there): no_check `before_send`, `after_send`; hand_check `lookup`, `approval`, `premises`,
/// `send_logged`, `before_send`, `after_send`, `sent_logged`; interlock the target's
/// `before_send` and `after_send` of a resend and the gate's `committed` (and `proposed`,
/// `authorized`, `dispatched` where recovery writes them).
pub fn restart_with(
    column: Column,
    client: &stripe::Client,
    cell_dir: &Path,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
    crash: Option<Crash>,
) -> Result<RestartReport, ScenarioError> {
    let case = CaseFile::load(cell_dir)?;
    let decision = load_decision(cell_dir)?;
    match column {
        Column::NoCheck => {
            let (status, posted) = no_check::send(client, &case, &decision, crash.as_ref())?;
            Ok(RestartReport::without_gate(
                status.to_owned(),
                None,
                serde_json::json!({"credit": posted.id, "replayed": posted.replayed}),
            ))
        }
        Column::HandCheck => {
            let (status, credit) = hand_check::send(
                client,
                cell_dir,
                &case,
                &decision,
                hand_check::Phase::Restart,
                crash.as_ref(),
            )?;
            // hand_check never reads its own log; only this report does. A line torn by a
            // crash mid-append and then glued to the next append is unreadable: the report
            // says so instead of failing the restart that already ran.
            let (log, detail) = match read_hand_check_log(cell_dir) {
                Ok(log) => (Some(log), serde_json::json!({ "credit": credit })),
                Err(e) => (
                    None,
                    serde_json::json!({ "credit": credit, "log_unreadable": e.to_string() }),
                ),
            };
            Ok(RestartReport::without_gate(status, log, detail))
        }
        Column::Interlock => interlock::restart(
            client, cell_dir, &case, &decision, gate_key, settings, crash,
        ),
    }
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_take_the_stated_bound_and_derive_the_ttl_from_the_timeout() {
        let s = ScenarioSettings::new(Duration::from_millis(2_500), Duration::from_secs(2));
        assert_eq!(s.max_in_flight, Duration::from_millis(2_500));
        assert_eq!(s.claim_ttl, Duration::from_secs(5));
    }
}

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
//! * the outages ([`run_outage`]).
//!
//! What does not: the decider (amount and description), worker processes, SIGKILL, timing and
//! the results file belong to the runner; the want rule and the judgement belong to
//! `verify::scenarios::billing_credit`.

mod approval;
pub(crate) mod case;
mod events;
pub(crate) mod hand_check;
pub(crate) mod interlock;
mod no_check;
mod outage;
pub(crate) mod reads;
pub(crate) mod target;

pub use approval::ApprovalStore;
pub use case::{ensure_prices, open_case, CaseFile, Prices};
pub use events::{announce_events, announce_read, monotonic_us, stamp, EVENT_LINE_PREFIX, FACTS};
pub use hand_check::read_hand_check_log;
pub use outage::{advance_one_second, clock_time, run_outage, run_outage_timed, FactChange};
pub use reads::{
    facts, ground_truth, observations, read_account, read_ledger, stripe_ids, Account, Ledger,
};
pub use target::{post_credit, CreditPosted, CreditTarget, GateTags, ANCHOR_KEY};

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
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

/// The three ways of sending the credit that the experiment compares (DESIGN §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Column {
    /// Save the decision, POST with a fixed idempotency key; the restart re-sends it.
    NoCheck,
    /// The idiomatic careful version: lookup, approval and premise checks before every send,
    /// with a plain JSONL log.
    HandCheck,
    /// The Interlock gate over [`CreditTarget`] with a signed journal.
    Interlock,
}

impl Column {
    /// Every column, in display order.
    pub const ALL: [Column; 3] = [Column::NoCheck, Column::HandCheck, Column::Interlock];

    /// `no_check`, `hand_check` or `interlock`.
    pub fn as_str(self) -> &'static str {
        match self {
            Column::NoCheck => "no_check",
            Column::HandCheck => "hand_check",
            Column::Interlock => "interlock",
        }
    }

    /// The kind of record the column leaves: `none`, `plain_log` or `signed_chain`.
    pub fn record(self) -> &'static str {
        verify::scenarios::billing_credit::proof::record_kind(self.as_str())
    }
}

/// Where the decide worker is killed (DESIGN §4.4), or, for the nemesis (DESIGN §5.1), any step
/// a column passes in its decide phase. The default matrix uses only [`CrashPoint::ALL`]
/// (`before_send`, `after_send`); [`CrashPoint::STEPS`] are every step a hook can fire at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CrashPoint {
    /// Right before the credit POST.
    BeforeSend,
    /// Right after the POST's response was parsed, before anything recorded it.
    AfterSend,
    /// The worker started; nothing read yet (fired by the worker itself).
    Started,
    /// `decision.json` is durable; the column has not started its send.
    DecisionSaved,
    /// hand_check: the lookup found no credit and its log line is durable.
    Lookup,
    /// hand_check: the approval check passed and its log line is durable.
    Approval,
    /// hand_check: the premise check passed and its log line is durable.
    Premises,
    /// hand_check: the `send` log line is durable (the POST is next).
    SendLogged,
    /// hand_check: the `sent` log line is durable.
    SentLogged,
    /// interlock: PROPOSED is durable.
    Proposed,
    /// interlock: AUTHORIZED is durable.
    Authorized,
    /// interlock: DISPATCHED is durable and the claim held (the send is next).
    Dispatched,
    /// interlock: COMMITTED is durable.
    Committed,
    /// Registered as a hook's point: the hook is called at every step (it decides what to do).
    Every,
}

impl CrashPoint {
    /// The default matrix's crash points; the only names [`CrashPoint::parse`] accepts.
    pub const ALL: [CrashPoint; 2] = [CrashPoint::BeforeSend, CrashPoint::AfterSend];

    /// Every step a hook registered at [`CrashPoint::Every`] is called at.
    pub const STEPS: [CrashPoint; 13] = [
        CrashPoint::Started,
        CrashPoint::DecisionSaved,
        CrashPoint::Lookup,
        CrashPoint::Approval,
        CrashPoint::Premises,
        CrashPoint::SendLogged,
        CrashPoint::Proposed,
        CrashPoint::Authorized,
        CrashPoint::Dispatched,
        CrashPoint::BeforeSend,
        CrashPoint::AfterSend,
        CrashPoint::SentLogged,
        CrashPoint::Committed,
    ];

    /// The point's name (`before_send`, `after_send`, `decision_saved`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            CrashPoint::BeforeSend => "before_send",
            CrashPoint::AfterSend => "after_send",
            CrashPoint::Started => "started",
            CrashPoint::DecisionSaved => "decision_saved",
            CrashPoint::Lookup => "lookup",
            CrashPoint::Approval => "approval",
            CrashPoint::Premises => "premises",
            CrashPoint::SendLogged => "send_logged",
            CrashPoint::SentLogged => "sent_logged",
            CrashPoint::Proposed => "proposed",
            CrashPoint::Authorized => "authorized",
            CrashPoint::Dispatched => "dispatched",
            CrashPoint::Committed => "committed",
            CrashPoint::Every => "every",
        }
    }

    /// A step by name (any of [`CrashPoint::STEPS`]).
    pub fn step(name: &str) -> Result<CrashPoint, ScenarioError> {
        CrashPoint::STEPS
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| ScenarioError::UnknownName {
                what: "step",
                got: name.to_owned(),
                expected: CrashPoint::STEPS.map(CrashPoint::as_str).join(", "),
            })
    }
}

/// What happens at Stripe while the worker is dead (DESIGN §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outage {
    /// The test clock advances through the renewal: Stripe invoices, applies the balance, charges.
    Renewal,
    /// The renewal, then billing's SLA automation credits the renewal invoice for the same incident.
    BillingCredit,
    /// A mid-cycle downgrade $30 → $20 with prorations, then the renewal.
    Proration,
    /// As [`Outage::BillingCredit`] but for a different incident.
    UnrelatedCredit,
}

impl Outage {
    /// Every outage.
    pub const ALL: [Outage; 4] = [
        Outage::Renewal,
        Outage::BillingCredit,
        Outage::Proration,
        Outage::UnrelatedCredit,
    ];

    /// `renewal`, `billing_credit`, `proration` or `unrelated_credit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outage::Renewal => "renewal",
            Outage::BillingCredit => "billing_credit",
            Outage::Proration => "proration",
            Outage::UnrelatedCredit => "unrelated_credit",
        }
    }

    /// One sentence saying what the outage does, for pages and logs.
    pub fn describe(self) -> &'static str {
        match self {
            Outage::Renewal => {
                "test clock advanced through the renewal: Stripe invoices, applies any customer \
                 balance, charges the card"
            }
            Outage::BillingCredit => {
                "renewal, then billing's SLA automation issues a $10 credit note on the renewal \
                 invoice for the same incident (credited to the customer balance)"
            }
            Outage::Proration => {
                "the customer downgrades $30 -> $20 with proration (credit line for unused time), \
                 then the renewal"
            }
            Outage::UnrelatedCredit => {
                "renewal, then billing's SLA automation issues a $10 credit note on the renewal \
                 invoice for a DIFFERENT incident"
            }
        }
    }
}

/// The reference page's six rows, in its order: verify's plan
/// ([`verify::scenarios::billing_credit::REFERENCE_ROWS`]) in this crate's typed names.
pub fn default_rows() -> Vec<(CrashPoint, Outage)> {
    verify::scenarios::billing_credit::REFERENCE_ROWS
        .iter()
        .filter_map(|(c, o)| Some((c.parse().ok()?, o.parse().ok()?)))
        .collect()
}

macro_rules! string_enum {
    ($t:ident, $what:literal) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $t {
            type Err = ScenarioError;

            fn from_str(s: &str) -> Result<Self, ScenarioError> {
                $t::ALL
                    .into_iter()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| ScenarioError::UnknownName {
                        what: $what,
                        got: s.to_owned(),
                        expected: $t::ALL
                            .iter()
                            .map(|v| v.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
            }
        }

        impl $t {
            /// Parses the name returned by `as_str`.
            pub fn parse(s: &str) -> Result<Self, ScenarioError> {
                s.parse()
            }
        }

        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

string_enum!(Column, "column");
string_enum!(CrashPoint, "crash point");
string_enum!(Outage, "outage");

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

/// Everything that can go wrong in the scenario, saying what and where.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A Stripe call failed.
    #[error("{what}: {source}")]
    Stripe {
        /// What the scenario was doing, e.g. "create the test clock for case-0123456789".
        what: String,
        /// The client's error.
        #[source]
        source: Box<stripe::StripeError>,
    },
    /// Stripe answered with JSON that lacks a field the scenario needs.
    #[error("{what}: unexpected Stripe object: {detail}")]
    Malformed {
        /// What was being read.
        what: String,
        /// Which field was missing or of the wrong type.
        detail: String,
    },
    /// A file could not be read or written.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was done, e.g. "write" or "fsync".
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A file's JSON could not be parsed or produced.
    #[error("{}: invalid JSON: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// A name (column, crash point, outage) is not one of the known ones.
    #[error("unknown {what} {got:?}; expected one of: {expected}")]
    UnknownName {
        /// Which kind of name.
        what: &'static str,
        /// What was given.
        got: String,
        /// The accepted names.
        expected: String,
    },
    /// The test clock did not become ready in time.
    #[error("test clock {clock} still {status:?} after {polls} polls ({waited_ms} ms)")]
    ClockNotReady {
        /// The clock id.
        clock: String,
        /// Its last status.
        status: String,
        /// How many times it was read.
        polls: u32,
        /// How long the polling took.
        waited_ms: u64,
    },
    /// The gate failed.
    #[error("interlock gate ({what}): {source}")]
    Gate {
        /// What the scenario asked of the gate.
        what: String,
        /// The gate's error.
        #[source]
        source: Box<::interlock::GateError>,
    },
    /// The interlock restart could not bring the effect to a final state.
    #[error("effect {effect_id}: {detail}")]
    Unresolved {
        /// The effect id.
        effect_id: String,
        /// Why.
        detail: String,
    },
    /// The decision or case is not usable (amount outside the approval, wrong case, ...).
    #[error("{0}")]
    Invalid(String),
}

impl ScenarioError {
    pub(crate) fn stripe(what: impl Into<String>) -> impl FnOnce(stripe::StripeError) -> Self {
        let what = what.into();
        move |source| ScenarioError::Stripe {
            what,
            source: Box::new(source),
        }
    }

    pub(crate) fn gate(what: impl Into<String>) -> impl FnOnce(::interlock::GateError) -> Self {
        let what = what.into();
        move |source| ScenarioError::Gate {
            what,
            source: Box::new(source),
        }
    }

    pub(crate) fn io(
        action: &'static str,
        path: &Path,
    ) -> impl FnOnce(std::io::Error) -> ScenarioError {
        let path = path.to_path_buf();
        move |source| ScenarioError::Io {
            action,
            path,
            source,
        }
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
            Ok(RestartReport {
                status: status.to_owned(),
                via: None,
                effect_id: None,
                journal_kinds: Vec::new(),
                receipt: None,
                hand_check_log: None,
                waited_ms: 0,
                detail: serde_json::json!({"credit": posted.id, "replayed": posted.replayed}),
            })
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
            Ok(RestartReport {
                status,
                via: None,
                effect_id: None,
                journal_kinds: Vec::new(),
                receipt: None,
                hand_check_log: log,
                waited_ms: 0,
                detail,
            })
        }
        Column::Interlock => interlock::restart(
            client, cell_dir, &case, &decision, gate_key, settings, crash,
        ),
    }
}

/// Writes `decision.json` into `cell_dir` durably (temp file, fsync, rename, directory fsync).
pub fn save_decision(cell_dir: &Path, decision: &Decision) -> Result<(), ScenarioError> {
    write_json_durably(&cell_dir.join(DECISION_FILE), decision)
}

/// Reads `decision.json` from `cell_dir`.
pub fn load_decision(cell_dir: &Path) -> Result<Decision, ScenarioError> {
    read_json(&cell_dir.join(DECISION_FILE))
}

pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ScenarioError> {
    let bytes = std::fs::read(path).map_err(ScenarioError::io("read", path))?;
    serde_json::from_slice(&bytes).map_err(|source| ScenarioError::Json {
        path: path.to_path_buf(),
        source,
    })
}

pub(crate) fn write_json_durably<T: Serialize>(
    path: &Path,
    value: &T,
) -> Result<(), ScenarioError> {
    write_json_durably_timed(path, value).map(|_| ())
}

/// [`write_json_durably`], returning when the new file became visible: just before and just
/// after the rename that puts it into place (a reader before sees the old file, after the new).
pub(crate) fn write_json_durably_timed<T: Serialize>(
    path: &Path,
    value: &T,
) -> Result<(std::time::Instant, std::time::Instant), ScenarioError> {
    use std::io::Write;
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|source| ScenarioError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp).map_err(ScenarioError::io("create", &tmp))?;
        f.write_all(&bytes)
            .map_err(ScenarioError::io("write", &tmp))?;
        f.sync_all().map_err(ScenarioError::io("fsync", &tmp))?;
    }
    let before = std::time::Instant::now();
    std::fs::rename(&tmp, path).map_err(ScenarioError::io("rename into place", path))?;
    let after = std::time::Instant::now();
    sync_dir(dir)?;
    Ok((before, after))
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), ScenarioError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(ScenarioError::io("fsync directory", dir))
}

/// Appends `value` as one JSON line to `path` (created if missing) and fsyncs it: the plain logs
/// the hand-written columns keep.
pub(crate) fn append_line_durably(
    path: &Path,
    value: &serde_json::Value,
) -> Result<(), ScenarioError> {
    use std::io::Write;
    let mut bytes = serde_json::to_vec(value).map_err(|source| ScenarioError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(ScenarioError::io("open for append", path))?;
    f.write_all(&bytes)
        .map_err(ScenarioError::io("append to", path))?;
    f.sync_data().map_err(ScenarioError::io("fsync", path))
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
    fn names_round_trip() {
        for c in Column::ALL {
            assert_eq!(Column::parse(c.as_str()).unwrap(), c);
        }
        for c in CrashPoint::ALL {
            assert_eq!(CrashPoint::parse(c.as_str()).unwrap(), c);
        }
        for o in Outage::ALL {
            assert_eq!(Outage::parse(o.as_str()).unwrap(), o);
        }
        let err = Outage::parse("renewl").unwrap_err().to_string();
        assert!(
            err.contains("renewl") && err.contains("unrelated_credit"),
            "{err}"
        );
        assert_eq!(
            serde_json::to_string(&CrashPoint::AfterSend).unwrap(),
            "\"after_send\""
        );
    }

    #[test]
    fn default_rows_follow_the_reference_page() {
        let names: Vec<String> = default_rows()
            .iter()
            .map(|(c, o)| format!("{c}/{o}"))
            .collect();
        // Every column of verify's plan is one of this crate's, in its order.
        let columns: Vec<&str> = Column::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            columns,
            verify::scenarios::billing_credit::REFERENCE_COLUMNS
        );
        assert_eq!(
            names,
            [
                "before_send/renewal",
                "before_send/billing_credit",
                "before_send/proration",
                "after_send/renewal",
                "after_send/proration",
                "before_send/unrelated_credit"
            ]
        );
    }

    #[test]
    fn settings_take_the_stated_bound_and_derive_the_ttl_from_the_timeout() {
        let s = ScenarioSettings::new(Duration::from_millis(2_500), Duration::from_secs(2));
        assert_eq!(s.max_in_flight, Duration::from_millis(2_500));
        assert_eq!(s.claim_ttl, Duration::from_secs(5));
    }

    #[test]
    fn decision_is_saved_durably_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let d = Decision {
            amount: 1000,
            description: "x".into(),
            decider: verify::results::DeciderInfo {
                kind: "policy".into(),
                model: None,
            },
            premises: verify::results::Premises {
                subscription_status: "active".into(),
                incident_compensation: 0,
            },
            replayed_from: None,
        };
        save_decision(dir.path(), &d).unwrap();
        assert_eq!(load_decision(dir.path()).unwrap(), d);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [DECISION_FILE]);
    }
}

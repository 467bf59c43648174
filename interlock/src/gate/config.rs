//! The gate's settings and its error type.

use crate::budget::BudgetError;
use crate::journal::JournalError;
use crate::lease::LeaseError;
use crate::target::TargetError;
use ed25519_dalek::VerifyingKey;
use std::time::Duration;
use verify::canonical::CanonicalError;

/// Settings of a gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateConfig {
    /// Backstop for a sender that is alive but hung: how long a claim is expected to be held at
    /// most. Every target call must return well inside it. Default 40 s. A SIGKILLed sender is
    /// never waited out: the kernel releases its claim at once.
    pub claim_ttl: Duration,
    /// A tier-1 dispatch older than the target's dedup window minus this margin is recovered as
    /// tier 2 (if queryable) or tier 3: the service may have forgotten the key. Default 10 min.
    /// The dispatch's age is this recoverer's wall clock minus the DISPATCHED entry's `ts_ms`,
    /// written on the sender's: the margin is also the clock skew between hosts the gate
    /// assumes, and a resend under the key records both (`dedup_age_ms`,
    /// `assumed_clock_skew_ms`).
    pub dedup_margin: Duration,
    /// When recovery cannot ask the lease store or the target now (an error), or a claim's TTL
    /// has passed while its holder still lives, it reports `Blocked` until now plus this.
    /// Default 1 s.
    pub retry_interval: Duration,
    /// The longest any call waits for another process's journal lock; past it `submit` fails
    /// with [`JournalError::Busy`] and `recover` reports the effect `Blocked` by the journal.
    /// Default 10 s.
    pub journal_lock_wait: Duration,
    /// After this many resends of one dispatch answered "unknown", recovery stops resending and
    /// settles the effect by lookup. Default 3.
    pub max_unknown_answers: u32,
    /// Signers, besides this gate's own key, whose journal entries the gate accepts (e.g. the
    /// keys of earlier runs writing the same journal). Lines signed by any other key make the
    /// journal corrupt at that line.
    pub trusted_signers: Vec<VerifyingKey>,
    /// The PostgreSQL store's send window L (DESIGN §2.4): a holder sends only before it
    /// confirmed its claim plus this, on its own monotonic clock, checked right before the
    /// request leaves; a recoverer that takes the claim over from a holder that may still live
    /// (its session was lost, not its process) waits this plus the target's in-flight bound
    /// before it trusts a "not found", and records it (`assumed_send_window_ms`). It must cover
    /// the time from confirming to the request leaving (a sender past it does not send, and
    /// recovery settles the dispatch). The file store has none: its claims are lost only with
    /// their holder. Default 2 s.
    pub send_window: Duration,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            claim_ttl: Duration::from_secs(40),
            dedup_margin: Duration::from_secs(600),
            retry_interval: Duration::from_secs(1),
            journal_lock_wait: Duration::from_secs(10),
            max_unknown_answers: 3,
            trusted_signers: Vec::new(),
            send_window: Duration::from_secs(2),
        }
    }
}

/// Why the gate could not do what was asked. The journal is left consistent in every case:
/// nothing is sent without a durable DISPATCHED, and an open dispatch is left for recovery.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// Reading or writing the journal or a claim file failed, or the journal is corrupt.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A proposal field cannot be recorded (a float or an integer beyond ±(2^53 − 1)).
    #[error("proposal for effect {effect_id}: field `{field}` cannot be recorded: {source}")]
    InvalidProposal {
        /// The effect.
        effect_id: String,
        /// `lease`, `premises` or `effect`.
        field: &'static str,
        /// Why.
        source: CanonicalError,
    },
    /// The lease store could not answer; nothing was dispatched.
    #[error("effect {effect_id}: checking the lease failed: {source}")]
    Lease {
        /// The effect.
        effect_id: String,
        /// The store's error.
        source: LeaseError,
    },
    /// The target could not check the premises; nothing was dispatched.
    #[error("effect {effect_id}: checking the premises failed: {source}")]
    PremiseCheck {
        /// The effect.
        effect_id: String,
        /// The target's error.
        source: TargetError,
    },
    /// No entry of this effect is in the journal.
    #[error("effect {effect_id} is not in the journal")]
    UnknownEffect {
        /// The effect.
        effect_id: String,
    },
    /// The dispatch this process was settling was closed by someone else while it held the
    /// claim; that breaks the claim protocol and is reported rather than papered over.
    #[error("effect {effect_id}: the dispatch this process holds was closed by another writer")]
    LostDispatch {
        /// The effect.
        effect_id: String,
    },
    /// This process's claim on the effect was lost (its database session ended) before it could
    /// write the entry that settles the dispatch: it writes nothing, and whoever holds the claim
    /// now settles it.
    #[error("effect {effect_id}: the claim was lost before the settling entry was written ({reason}); nothing was written")]
    ClaimLost {
        /// The effect.
        effect_id: String,
        /// Why the claim could not be confirmed.
        reason: String,
    },
    /// The proposal's budget cannot be checked: the gate has no budget store, the amount is not
    /// a recordable non-negative integer, or a total or cap leaves the exact range. Nothing was
    /// sent; an effect whose dispatch this stopped stays as it was.
    #[error("effect {effect_id}: budget {budget:?}: {reason}; nothing was sent")]
    Budget {
        /// The effect.
        effect_id: String,
        /// The budget it names.
        budget: String,
        /// Why.
        reason: String,
    },
    /// The budget store could not answer; nothing was dispatched.
    #[error("effect {effect_id}: reading the budget's cap failed: {source}")]
    BudgetStore {
        /// The effect.
        effect_id: String,
        /// The store's error.
        source: BudgetError,
    },
    /// The receipt's head could not be sealed (an entry holds a value with no canonical form).
    #[error("effect {effect_id}: the receipt cannot be sealed: {source}")]
    Seal {
        /// The effect.
        effect_id: String,
        /// Why.
        source: CanonicalError,
    },
}

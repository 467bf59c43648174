//! The target trait: the service an effect lands at, and what it can promise.

use serde_json::Value;
use std::time::Duration;

/// What a target can do to make a retried or lost send safe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tier {
    /// The service dedupes on the effect id (an idempotency key): a resend under the same id is
    /// safe inside the dedup window.
    One,
    /// The service does not dedupe, but the effect can be looked up by its id.
    Two,
    /// Neither: a send whose outcome was lost can only be reported as AMBIGUOUS.
    Three,
}

impl Tier {
    /// 1, 2 or 3.
    pub fn number(self) -> u8 {
        match self {
            Tier::One => 1,
            Tier::Two => 2,
            Tier::Three => 3,
        }
    }
}

/// Why a target call did not return a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// The service said no: the request is settled and did not take effect (as far as the service
    /// knows). Never resent; the gate looks the effect up once in case it landed anyway.
    #[error("the target rejected the request: {reason}")]
    Rejected {
        /// The service's answer, in words.
        reason: String,
    },
    /// The outcome is unknown (timeout, connection lost, 5xx, 409 "in progress"): the request may
    /// have landed or may still land.
    #[error("the target's answer is unknown: {reason}")]
    Unknown {
        /// What went wrong, in words.
        reason: String,
    },
}

impl TargetError {
    /// The reason text, whichever the variant.
    pub fn reason(&self) -> &str {
        match self {
            TargetError::Rejected { reason } | TargetError::Unknown { reason } => reason,
        }
    }
}

/// A service the gate sends effects to.
///
/// Every call must return (or time out) well inside the gate's claim TTL
/// ([`GateConfig::claim_ttl`](crate::GateConfig::claim_ttl)).
pub trait Target {
    /// What the service promises for retried sends.
    fn tier(&self) -> Tier;
    /// Whether [`Target::query`] works (tier 2 always; tier 1 may also be queryable).
    fn queryable(&self) -> bool;
    /// How long the service remembers an idempotency key; `None` = forever. Only meaningful for
    /// tier 1.
    fn dedup_window(&self) -> Option<Duration>;
    /// How long a request that left a sender (which then died) can still land at the service.
    /// A "not found" lookup is only trusted once this much time has passed since the last send.
    fn max_in_flight(&self) -> Duration;
    /// Re-check the premises an effect was decided on against the service's current state.
    /// Returns the violations in words (e.g. `"incident_compensation: was 0, now 1000"`); empty
    /// when every premise still holds.
    fn check_premises(&self, effect_id: &str, premises: &Value)
        -> Result<Vec<String>, TargetError>;
    /// Perform the effect, using `effect_id` as the idempotency key where the service has one.
    /// Returns evidence (e.g. the created object's id), recorded verbatim on COMMITTED.
    fn apply(&self, effect_id: &str, effect: &Value) -> Result<Value, TargetError>;
    /// Look the effect up by its id: `Some(evidence)` if it exists at the service.
    fn query(&self, effect_id: &str, effect: &Value) -> Result<Option<Value>, TargetError>;
}

/// A shared reference or an `Arc` to a target is a target (for gates that share theirs).
macro_rules! forward_target {
    ($($ptr:ty),*) => {$(
        impl<T: Target + ?Sized> Target for $ptr {
            fn tier(&self) -> Tier {
                (**self).tier()
            }
            fn queryable(&self) -> bool {
                (**self).queryable()
            }
            fn dedup_window(&self) -> Option<Duration> {
                (**self).dedup_window()
            }
            fn max_in_flight(&self) -> Duration {
                (**self).max_in_flight()
            }
            fn check_premises(
                &self,
                effect_id: &str,
                premises: &Value,
            ) -> Result<Vec<String>, TargetError> {
                (**self).check_premises(effect_id, premises)
            }
            fn apply(&self, effect_id: &str, effect: &Value) -> Result<Value, TargetError> {
                (**self).apply(effect_id, effect)
            }
            fn query(&self, effect_id: &str, effect: &Value) -> Result<Option<Value>, TargetError> {
                (**self).query(effect_id, effect)
            }
        }
    )*};
}
forward_target!(&T, std::sync::Arc<T>);

//! The target trait: the service an effect lands at, and what it can promise.

use serde_json::Value;
use std::time::{Duration, Instant};

/// What a target can do to make a retried or lost send safe, derived from its
/// [`Capabilities`] (never stated separately, so the two cannot disagree).
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

/// Everything the gate needs to know about a target, in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// `Some(window)` when the service dedupes on the effect id (an idempotency key) and for how
    /// long it remembers a key (`None` inside: forever). `None`: no dedupe.
    pub dedup: Option<Option<Duration>>,
    /// The effect can be looked up by its id ([`Target::query`] works).
    pub lookup: bool,
    /// The service's **server-side** in-flight bound: how long after a request left a client it
    /// can still take effect at the service (a request keeps executing after its client gave
    /// up). It is an assumption about the service, to be stated with its justification where the
    /// target is defined; every REFUSED or REAPPLIED that rests on a "not found" records it.
    /// `None`: the target cannot state one, and recovery never trusts a "not found" (it answers
    /// AMBIGUOUS where it would have had to).
    pub max_in_flight: Option<Duration>,
}

impl Capabilities {
    /// The tier these capabilities amount to: dedupe → 1; else lookup → 2; else 3.
    pub fn tier(&self) -> Tier {
        match (self.dedup, self.lookup) {
            (Some(_), _) => Tier::One,
            (None, true) => Tier::Two,
            (None, false) => Tier::Three,
        }
    }

    /// The dedup window (tier 1 only; `None` for "forever" and for targets without dedupe).
    pub fn dedup_window(&self) -> Option<Duration> {
        self.dedup.flatten()
    }
}

/// The instant by which a send must leave its client (DESIGN §2.4), on this host's monotonic
/// clock. A claim that can be lost while its holder lives (a database session ended by a restart,
/// an operator or a partition) lets its holder send only within the store's send window of
/// confirming it, so whoever takes the claim over knows by when every request of that holder had
/// left. A claim that cannot be lost while its holder lives (a file lock) sets none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendDeadline {
    by: Option<Instant>,
}

impl SendDeadline {
    /// No deadline: the claim cannot be lost while its holder lives.
    pub fn none() -> SendDeadline {
        SendDeadline { by: None }
    }

    /// The request must leave before `by`.
    pub fn by(by: Instant) -> SendDeadline {
        SendDeadline { by: Some(by) }
    }

    /// The instant, if there is a deadline.
    pub fn instant(&self) -> Option<Instant> {
        self.by
    }

    /// Whether a request may still leave now.
    pub fn allows_now(&self) -> bool {
        self.by.is_none_or(|by| Instant::now() < by)
    }

    /// `Ok` while a request may still leave; else the [`TargetError::NotSent`] to answer.
    pub fn check(&self) -> Result<(), TargetError> {
        if self.allows_now() {
            Ok(())
        } else {
            Err(TargetError::NotSent {
                reason: "the send deadline passed before the request left (the claim may have \
                         been lost since it was confirmed)"
                    .into(),
            })
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
    /// The outcome is unknown (timeout, connection lost, 5xx): the request may have landed or
    /// may still land.
    #[error("the target's answer is unknown: {reason}")]
    Unknown {
        /// What went wrong, in words.
        reason: String,
    },
    /// The service answered that an earlier request under the same idempotency key is still
    /// executing (Stripe's 409 `idempotency_key_in_use`): this request did nothing, and the
    /// earlier one was in flight when the answer was given, so it may still land. Recovery
    /// counts the in-flight bound from this answer and keeps probing under the key (DESIGN
    /// §4.10); it never counts it as an unknown answer.
    #[error("the target says an earlier request under this key is still executing: {reason}")]
    InFlight {
        /// The service's answer, in words.
        reason: String,
    },
    /// The service answered with the saved error of an earlier request under the same
    /// idempotency key (e.g. Stripe replays a saved 500): that request has finished executing,
    /// so nothing under this key can still land, but whether it took effect is unknown. Recovery
    /// settles such an effect by lookup and never resends the same key again.
    #[error("the target replayed a saved failure: {reason}")]
    Replayed {
        /// The replayed answer, in words.
        reason: String,
    },
    /// The request never left this client: its [`SendDeadline`] had passed. Nothing of it can
    /// land; the open dispatch is left to recovery.
    #[error("the request was not sent: {reason}")]
    NotSent {
        /// Why, in words.
        reason: String,
    },
}

impl TargetError {
    /// The reason text, whichever the variant.
    pub fn reason(&self) -> &str {
        match self {
            TargetError::Rejected { reason }
            | TargetError::Unknown { reason }
            | TargetError::InFlight { reason }
            | TargetError::Replayed { reason }
            | TargetError::NotSent { reason } => reason,
        }
    }
}

/// A service the gate sends effects to.
///
/// Every call must return (or time out) well inside the gate's claim TTL
/// ([`GateConfig::claim_ttl`](crate::GateConfig::claim_ttl)).
pub trait Target {
    /// What the service promises: dedupe, lookup, and its server-side in-flight bound.
    fn capabilities(&self) -> Capabilities;
    /// Re-check the premises an effect was decided on against the service's current state.
    /// Returns the violations in words (e.g. `"incident_compensation: was 0, now 1000"`); empty
    /// when every premise still holds.
    fn check_premises(&self, effect_id: &str, premises: &Value)
        -> Result<Vec<String>, TargetError>;
    /// Perform the effect, using `effect_id` as the idempotency key where the service has one.
    /// Returns evidence (e.g. the created object's id), recorded verbatim on COMMITTED.
    fn apply(&self, effect_id: &str, effect: &Value) -> Result<Value, TargetError>;
    /// Perform the effect as [`Target::apply`] does, handing the target the hash of the
    /// DISPATCHED entry this send belongs to: the anchor (DESIGN §3.4), which a target that can
    /// store data next to the effect writes there, so anyone who can read the service can match
    /// its object to the receipt. A resend of an open dispatch carries that same dispatch's
    /// hash. The default ignores the anchor.
    fn apply_dispatched(
        &self,
        effect_id: &str,
        effect: &Value,
        dispatch: &str,
    ) -> Result<Value, TargetError> {
        let _ = dispatch;
        self.apply(effect_id, effect)
    }
    /// Perform the effect as [`Target::apply_dispatched`] does, but only while `deadline`
    /// allows: a request that would leave after it is not sent, and the answer is
    /// [`TargetError::NotSent`]. The gate always sends through this method. The default checks
    /// the deadline, then calls `apply_dispatched`. A target whose client can check it later —
    /// right before the request is written to an open connection — should: a pause between the
    /// check and the request leaving is the one window the deadline cannot close.
    fn apply_before(
        &self,
        effect_id: &str,
        effect: &Value,
        dispatch: &str,
        deadline: SendDeadline,
    ) -> Result<Value, TargetError> {
        deadline.check()?;
        self.apply_dispatched(effect_id, effect, dispatch)
    }
    /// Look the effect up by its id: `Some(evidence)` if it exists at the service.
    fn query(&self, effect_id: &str, effect: &Value) -> Result<Option<Value>, TargetError>;
}

/// A shared reference or an `Arc` to a target is a target (for gates that share theirs).
macro_rules! forward_target {
    ($($ptr:ty),*) => {$(
        impl<T: Target + ?Sized> Target for $ptr {
            fn capabilities(&self) -> Capabilities {
                (**self).capabilities()
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
            fn apply_dispatched(
                &self,
                effect_id: &str,
                effect: &Value,
                dispatch: &str,
            ) -> Result<Value, TargetError> {
                (**self).apply_dispatched(effect_id, effect, dispatch)
            }
            fn apply_before(
                &self,
                effect_id: &str,
                effect: &Value,
                dispatch: &str,
                deadline: SendDeadline,
            ) -> Result<Value, TargetError> {
                (**self).apply_before(effect_id, effect, dispatch, deadline)
            }
            fn query(&self, effect_id: &str, effect: &Value) -> Result<Option<Value>, TargetError> {
                (**self).query(effect_id, effect)
            }
        }
    )*};
}
forward_target!(&T, std::sync::Arc<T>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tier_follows_from_what_the_target_can_do() {
        let caps = |dedup, lookup| Capabilities {
            dedup,
            lookup,
            max_in_flight: None,
        };
        assert_eq!(caps(Some(None), false).tier(), Tier::One);
        assert_eq!(
            caps(Some(Some(Duration::from_secs(1))), true).tier(),
            Tier::One
        );
        assert_eq!(caps(None, true).tier(), Tier::Two);
        assert_eq!(caps(None, false).tier(), Tier::Three);
    }

    #[test]
    fn a_passed_send_deadline_answers_not_sent_and_none_never_passes() {
        assert!(SendDeadline::none().check().is_ok());
        let later = Instant::now() + Duration::from_secs(3600);
        assert!(SendDeadline::by(later).check().is_ok());
        let passed = SendDeadline::by(Instant::now());
        assert!(matches!(passed.check(), Err(TargetError::NotSent { .. })));
    }
}

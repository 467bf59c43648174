//! The protocol's vocabulary, stated once (DESIGN §2.2, §2.3): the entry kinds and `via` values
//! (kept in the trusted core, which checks them, and re-exported here), the refusal codes, the
//! statuses `submit` and recovery answer, the status an effect's entries record ([`status_of`]),
//! and the observable steps of a submit. The gate (`interlock`) re-exports this module; the
//! verifier, the runner and the tests' fixtures read statuses through it.

use std::fmt;

pub use crate::trusted::entry::{Kind, Via};

/// Machine code of a refusal, as written in the REFUSED entry's `code` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefusalCode {
    /// The payload differs from the one the first PROPOSED of this effect fixed (I5).
    ConflictingPayload,
    /// The lease was not live or did not cover the effect at proposal/dispatch (I4).
    Lease,
    /// A premise no longer held right before dispatch (I3).
    StalePremise,
    /// The target rejected the send and a lookup did not find it: settled, never resent.
    TargetError,
    /// Recovery found a premise changed and a lookup proved the send never landed.
    StalePremiseAtRecovery,
    /// Recovery found the lease no longer live and a lookup proved the send never landed.
    LeaseAtRecovery,
    /// Recovery learned that the service finished the request without an answer the gate could
    /// use (a saved error replayed under the key, or resends answered "unknown" too often) and a
    /// lookup, trusted once the in-flight bound had passed, did not find it.
    TargetFailedAtRecovery,
    /// The budget the effect names cannot take it: its committed, open and ambiguous amounts
    /// plus this one pass its cap, or the budget store does not know it (at dispatch, or at
    /// recovery before a resend).
    OverBudget,
}

impl RefusalCode {
    /// The `code` string written on the REFUSED entry.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalCode::ConflictingPayload => "conflicting_payload",
            RefusalCode::Lease => "lease",
            RefusalCode::StalePremise => "stale_premise",
            RefusalCode::TargetError => "target_error",
            RefusalCode::StalePremiseAtRecovery => "stale_premise_at_recovery",
            RefusalCode::LeaseAtRecovery => "lease_at_recovery",
            RefusalCode::TargetFailedAtRecovery => "target_failed_at_recovery",
            RefusalCode::OverBudget => crate::budget::OVER_BUDGET,
        }
    }

    /// Parse a stored `code`.
    pub fn parse(s: &str) -> Option<RefusalCode> {
        [
            RefusalCode::ConflictingPayload,
            RefusalCode::Lease,
            RefusalCode::StalePremise,
            RefusalCode::TargetError,
            RefusalCode::StalePremiseAtRecovery,
            RefusalCode::LeaseAtRecovery,
            RefusalCode::TargetFailedAtRecovery,
            RefusalCode::OverBudget,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }
}

impl fmt::Display for RefusalCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `code` written on every AMBIGUOUS entry.
pub const AMBIGUOUS_CODE: &str = "ambiguous";

/// What the gate answers for one effect (`submit`, or recovery), and what its entries record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// `COMMITTED`: sent now, the service confirmed it.
    Committed,
    /// `DUPLICATE_IGNORED`: the effect was already committed; nothing was sent.
    DuplicateIgnored,
    /// `IN_FLIGHT`: a dispatch of this effect is open (another process is sending or recovering
    /// it, or a send's outcome was unknown); nothing was sent now. Run recovery to settle it.
    InFlight,
    /// `AMBIGUOUS`: nobody can know whether the effect happened; it is never sent again.
    Ambiguous,
    /// `COMMITTED_ON_QUERY`: a lookup found the effect at the target (from `submit`: the send was
    /// rejected but landed, via `failed-but-landed`; from recovery: via `recovery-query`).
    CommittedOnQuery,
    /// `COMMITTED_BY_RETRY`: recovery resent under the same idempotency key (tier 1).
    CommittedByRetry,
    /// `REAPPLIED_AFTER_QUERY`: recovery looked up, did not find, re-checked and resent.
    ReappliedAfterQuery,
    /// `REFUSED:<code>`: refused with this code; nothing of this attempt landed.
    Refused(RefusalCode),
}

impl Status {
    /// Exactly the status strings of the reference: `COMMITTED`, `DUPLICATE_IGNORED`,
    /// `IN_FLIGHT`, `AMBIGUOUS`, `COMMITTED_ON_QUERY`, `COMMITTED_BY_RETRY`,
    /// `REAPPLIED_AFTER_QUERY`, `REFUSED:<code>`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Committed => "COMMITTED",
            Status::DuplicateIgnored => "DUPLICATE_IGNORED",
            Status::InFlight => "IN_FLIGHT",
            Status::Ambiguous => "AMBIGUOUS",
            Status::CommittedOnQuery => "COMMITTED_ON_QUERY",
            Status::CommittedByRetry => "COMMITTED_BY_RETRY",
            Status::ReappliedAfterQuery => "REAPPLIED_AFTER_QUERY",
            Status::Refused(code) => match code {
                RefusalCode::ConflictingPayload => "REFUSED:conflicting_payload",
                RefusalCode::Lease => "REFUSED:lease",
                RefusalCode::StalePremise => "REFUSED:stale_premise",
                RefusalCode::TargetError => "REFUSED:target_error",
                RefusalCode::StalePremiseAtRecovery => "REFUSED:stale_premise_at_recovery",
                RefusalCode::LeaseAtRecovery => "REFUSED:lease_at_recovery",
                RefusalCode::TargetFailedAtRecovery => "REFUSED:target_failed_at_recovery",
                RefusalCode::OverBudget => "REFUSED:over_budget",
            },
        }
    }

    /// Parse a status string produced by [`Status::as_str`].
    pub fn parse(s: &str) -> Option<Status> {
        if let Some(code) = s.strip_prefix("REFUSED:") {
            return RefusalCode::parse(code).map(Status::Refused);
        }
        [
            Status::Committed,
            Status::DuplicateIgnored,
            Status::InFlight,
            Status::Ambiguous,
            Status::CommittedOnQuery,
            Status::CommittedByRetry,
            Status::ReappliedAfterQuery,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }

    /// The `via` of the COMMITTED entry this status reports, where the status alone decides it:
    /// `send` for `COMMITTED`, `retry-idempotent` for `COMMITTED_BY_RETRY`, `recovery-reapply`
    /// for `REAPPLIED_AFTER_QUERY`. `None` for statuses that wrote no COMMITTED now, and for
    /// `COMMITTED_ON_QUERY`, which is `failed-but-landed` when `submit` answers it and
    /// `recovery-query` (or `failed-but-landed` after a rejected resend) when recovery does.
    pub fn via(self) -> Option<Via> {
        match self {
            Status::Committed => Some(Via::Send),
            Status::CommittedByRetry => Some(Via::RetryIdempotent),
            Status::ReappliedAfterQuery => Some(Via::RecoveryReapply),
            _ => None,
        }
    }

    /// The status of an effect whose COMMITTED was written `via` this way: `send` →
    /// `COMMITTED`, `retry-idempotent` → `COMMITTED_BY_RETRY`, `recovery-reapply` →
    /// `REAPPLIED_AFTER_QUERY`, `recovery-query` and `failed-but-landed` → `COMMITTED_ON_QUERY`.
    pub fn committed_via(via: Via) -> Status {
        match via {
            Via::Send => Status::Committed,
            Via::RetryIdempotent => Status::CommittedByRetry,
            Via::RecoveryReapply => Status::ReappliedAfterQuery,
            Via::RecoveryQuery | Via::FailedButLanded => Status::CommittedOnQuery,
        }
    }

    /// The refusal code, for `REFUSED:*`.
    pub fn refusal(self) -> Option<RefusalCode> {
        match self {
            Status::Refused(code) => Some(code),
            _ => None,
        }
    }

    /// True when the journal now records the effect as having happened at the target (or, for
    /// `DUPLICATE_IGNORED`, as having happened earlier).
    pub fn is_committed(self) -> bool {
        matches!(
            self,
            Status::Committed
                | Status::DuplicateIgnored
                | Status::CommittedOnQuery
                | Status::CommittedByRetry
                | Status::ReappliedAfterQuery
        )
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The status an effect's entries record (the one place it is derived; the gate's `status` and
/// every caller use it): `IN_FLIGHT` while a dispatch is open; else
/// the COMMITTED's status by its `via` (`send` → `COMMITTED`, `retry-idempotent` →
/// `COMMITTED_BY_RETRY`, `recovery-reapply` → `REAPPLIED_AFTER_QUERY`, `recovery-query` and
/// `failed-but-landed` → `COMMITTED_ON_QUERY`); else `AMBIGUOUS`; else the last refusal
/// (`REFUSED:<code>`). `None` when nothing was decided yet (only PROPOSED/AUTHORIZED).
pub fn status_of(entries: &[serde_json::Value]) -> Option<Status> {
    use serde_json::Value;
    let mut open = false;
    let mut committed = None;
    let mut ambiguous = false;
    let mut refused = None;
    for e in entries {
        match e.get("kind").and_then(Value::as_str).and_then(Kind::parse) {
            Some(Kind::Dispatched) => open = true,
            Some(Kind::Committed) => {
                open = false;
                let via = e.get("via").and_then(Value::as_str).and_then(Via::parse);
                committed = Some(via.map_or(Status::Committed, Status::committed_via));
            }
            Some(Kind::Ambiguous) => {
                open = false;
                ambiguous = true;
            }
            Some(Kind::Refused) => {
                if e.get("resolves").and_then(Value::as_bool) == Some(true) {
                    open = false;
                }
                refused = e
                    .get("code")
                    .and_then(Value::as_str)
                    .and_then(RefusalCode::parse)
                    .map(Status::Refused)
                    .or(refused);
            }
            _ => {}
        }
    }
    if open {
        Some(Status::InFlight)
    } else if committed.is_some() {
        committed
    } else if ambiguous {
        Some(Status::Ambiguous)
    } else {
        refused
    }
}

/// A durable step of `submit` (or of a recovery resend), reported to the observer right after it
/// happened. Crash tests block in the observer and SIGKILL the process there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// PROPOSED is on disk.
    Proposed,
    /// AUTHORIZED is on disk.
    Authorized,
    /// DISPATCHED is on disk and the claim is held; the send has not started.
    Dispatched,
    /// The target's apply returned a result; COMMITTED is not written yet.
    Sent,
    /// COMMITTED is on disk.
    Committed,
}

impl Step {
    /// Every step in order.
    pub const ALL: [Step; 5] = [
        Step::Proposed,
        Step::Authorized,
        Step::Dispatched,
        Step::Sent,
        Step::Committed,
    ];

    /// Lowercase name: `proposed`, `authorized`, `dispatched`, `sent`, `committed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Proposed => "proposed",
            Step::Authorized => "authorized",
            Step::Dispatched => "dispatched",
            Step::Sent => "sent",
            Step::Committed => "committed",
        }
    }

    /// Parse a name produced by [`Step::as_str`].
    pub fn parse(s: &str) -> Option<Step> {
        Step::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_strings_are_exactly_the_reference_ones() {
        let expected = [
            (Status::Committed, "COMMITTED"),
            (Status::DuplicateIgnored, "DUPLICATE_IGNORED"),
            (Status::InFlight, "IN_FLIGHT"),
            (Status::Ambiguous, "AMBIGUOUS"),
            (
                Status::Refused(RefusalCode::ConflictingPayload),
                "REFUSED:conflicting_payload",
            ),
            (Status::Refused(RefusalCode::Lease), "REFUSED:lease"),
            (
                Status::Refused(RefusalCode::StalePremise),
                "REFUSED:stale_premise",
            ),
            (
                Status::Refused(RefusalCode::TargetError),
                "REFUSED:target_error",
            ),
            (Status::CommittedOnQuery, "COMMITTED_ON_QUERY"),
            (Status::CommittedByRetry, "COMMITTED_BY_RETRY"),
            (Status::ReappliedAfterQuery, "REAPPLIED_AFTER_QUERY"),
            (
                Status::Refused(RefusalCode::StalePremiseAtRecovery),
                "REFUSED:stale_premise_at_recovery",
            ),
            (
                Status::Refused(RefusalCode::LeaseAtRecovery),
                "REFUSED:lease_at_recovery",
            ),
            (
                Status::Refused(RefusalCode::TargetFailedAtRecovery),
                "REFUSED:target_failed_at_recovery",
            ),
            (
                Status::Refused(RefusalCode::OverBudget),
                "REFUSED:over_budget",
            ),
        ];
        for (status, text) in expected {
            assert_eq!(status.as_str(), text);
            assert_eq!(Status::parse(text), Some(status));
            if let Status::Refused(code) = status {
                assert_eq!(format!("REFUSED:{code}"), text);
            }
        }
        assert_eq!(Status::parse("REFUSED:nope"), None);
    }

    #[test]
    fn via_where_the_status_decides_it() {
        assert_eq!(Status::Committed.via(), Some(Via::Send));
        assert_eq!(
            Status::CommittedByRetry.via().map(Via::as_str),
            Some("retry-idempotent")
        );
        assert_eq!(
            Status::ReappliedAfterQuery.via().map(Via::as_str),
            Some("recovery-reapply")
        );
        assert_eq!(Status::CommittedOnQuery.via(), None);
        assert_eq!(Status::InFlight.via(), None);
    }

    #[test]
    fn steps_round_trip() {
        for s in Step::ALL {
            assert_eq!(Step::parse(s.as_str()), Some(s));
        }
    }
}

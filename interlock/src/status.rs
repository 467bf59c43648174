//! What `submit` and `recover` answer: statuses, refusal codes, `via` values, recovery outcomes
//! and the observable steps of a submit.

use std::fmt;

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
            RefusalCode::OverBudget => "over_budget",
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

/// How a COMMITTED entry came to be written (its `via` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Via {
    /// The sender's own apply returned.
    Send,
    /// Recovery resent under the same idempotency key (tier 1) and the service answered.
    RetryIdempotent,
    /// Recovery looked the effect up and found it.
    RecoveryQuery,
    /// Recovery looked the effect up, did not find it, and resent it (tier 2 or demoted tier 1).
    RecoveryReapply,
    /// The target rejected a send but a lookup found the effect anyway.
    FailedButLanded,
}

impl Via {
    /// The `via` string written on COMMITTED.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Send => "send",
            Via::RetryIdempotent => "retry-idempotent",
            Via::RecoveryQuery => "recovery-query",
            Via::RecoveryReapply => "recovery-reapply",
            Via::FailedButLanded => "failed-but-landed",
        }
    }
}

impl fmt::Display for Via {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The answer of [`Gate::submit`](crate::Gate::submit) or of recovery for one effect.
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

/// The answer of [`Gate::submit`](crate::Gate::submit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// The proposal's effect id (64 hex).
    pub effect_id: String,
    /// What happened.
    pub status: Status,
    /// One sentence on why, for every status except `COMMITTED` (e.g. the refusal reason, or the
    /// target's error when a send's outcome is unknown and the dispatch was left open).
    pub detail: Option<String>,
}

/// What recovery did (or could not yet do) for one open effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoveryOutcome {
    /// The open dispatch is settled: COMMITTED, REFUSED (resolving) or AMBIGUOUS was written.
    Resolved(Status),
    /// Recovery cannot settle the effect yet; nothing was sent and nothing was written.
    /// Try again at `until_ms` (Unix milliseconds); `recover` never skips an open effect silently.
    Blocked {
        /// Who or what it waits for.
        holder: Holder,
        /// When trying again makes sense (Unix milliseconds).
        until_ms: u64,
        /// One sentence on why.
        reason: String,
    },
}

impl RecoveryOutcome {
    /// The status, when resolved.
    pub fn status(&self) -> Option<Status> {
        match self {
            RecoveryOutcome::Resolved(s) => Some(*s),
            RecoveryOutcome::Blocked { .. } => None,
        }
    }
}

/// Who or what a blocked recovery waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// A live process holds the effect's claim for the open dispatch (sending, or recovering
    /// it). The owner is named only when its claim record is for this very dispatch, so a
    /// stale record (or a reused pid) is never named as the process to stop.
    Process(crate::claim::Owner),
    /// A live process holds the effect's claim but has not recorded itself for this dispatch
    /// yet (it took the lock a moment ago).
    UnnamedProcess,
    /// The target: a send that may still land within its in-flight bound, or a lookup, premise
    /// check or resend whose answer was unknown.
    Target,
    /// The lease store could not answer.
    LeaseStore,
    /// Another process holds the journal lock past the gate's lock wait.
    Journal,
}

impl fmt::Display for Holder {
    /// `target`, `lease_store`, `journal`, `unnamed_process`, or
    /// `process:<host>:<pid>:<start ticks>:<nonce>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Holder::Process(o) => write!(
                f,
                "process:{}:{}:{}:{:08x}",
                o.host, o.pid, o.start_ticks, o.nonce
            ),
            Holder::UnnamedProcess => f.write_str("unnamed_process"),
            Holder::Target => f.write_str("target"),
            Holder::LeaseStore => f.write_str("lease_store"),
            Holder::Journal => f.write_str("journal"),
        }
    }
}

impl serde::Serialize for Holder {
    /// As its [`Display`](fmt::Display) string.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The status an effect's entries record (the one place it is derived; [`Gate::status`]
/// (crate::Gate::status) and every caller use it): `IN_FLIGHT` while a dispatch is open; else
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
        match e.get("kind").and_then(Value::as_str) {
            Some("DISPATCHED") => open = true,
            Some("COMMITTED") => {
                open = false;
                committed = Some(match e.get("via").and_then(Value::as_str) {
                    Some("retry-idempotent") => Status::CommittedByRetry,
                    Some("recovery-reapply") => Status::ReappliedAfterQuery,
                    Some("recovery-query" | "failed-but-landed") => Status::CommittedOnQuery,
                    _ => Status::Committed,
                });
            }
            Some("AMBIGUOUS") => {
                open = false;
                ambiguous = true;
            }
            Some("REFUSED") => {
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

/// One entry of [`Gate::recover`](crate::Gate::recover)'s answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// The effect that had an open dispatch.
    pub effect_id: String,
    /// What recovery did about it.
    pub outcome: RecoveryOutcome,
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

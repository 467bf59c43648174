//! What `submit` and `recover` answer: the protocol's vocabulary (statuses, refusal codes, `via`
//! values, [`status_of`], the steps of a submit) is `verify::protocol`, re-exported here; this
//! module adds what only the gate answers: a submit's answer, recovery outcomes and who a
//! blocked recovery waits for.

use std::fmt;

pub use verify::protocol::{status_of, RefusalCode, Status, Step, Via, AMBIGUOUS_CODE};

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

/// One entry of [`Gate::recover`](crate::Gate::recover)'s answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// The effect that had an open dispatch.
    pub effect_id: String,
    /// What recovery did about it.
    pub outcome: RecoveryOutcome,
}

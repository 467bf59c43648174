//! Test helpers: targets and lease stores with injectable faults. Not for production use.
//!
//! - [`MemTarget`]: an in-memory target of any tier whose sends can be rejected, lost, or land
//!   while the answer is lost.
//! - [`FileTarget`]: a target whose state lives in a JSON file under `flock`, so it survives the
//!   SIGKILL of the process that called it (used by the `gate-crash-probe` binary).
//! - [`MemLeases`]: leases that can be granted and revoked.
//!
//! This module holds the faults and what the targets share; each target and the stores are in
//! a module of their own (`mem_target`, `file_target`, `stores`).

use crate::target::{Capabilities, TargetError, Tier};
use serde_json::{Map, Value};
use std::time::Duration;

mod file_target;
mod mem_target;
pub mod record;
mod stores;

pub use file_target::FileTarget;
pub use mem_target::MemTarget;
pub use stores::{AllLive, MemBudgets, MemLeases};

/// The PostgreSQL store's append statement (an entry's row and its mark), for the benchmark that
/// measures what the server commits of the gate's rows alone, without its locks and catch-ups.
#[cfg(feature = "postgres")]
pub const PG_APPEND_SQL: &str = crate::pg::APPEND_SQL;

/// What one `apply` call does at a fault-injecting target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Lands (or, at a deduping tier-1 target, replays the first result) and answers.
    Ok,
    /// Does not land; the service answers "no".
    Rejected,
    /// Does not land; the answer is lost (timeout).
    Unknown,
    /// Lands; the answer is lost.
    LandedButUnknown,
    /// Lands, yet the service answers "no" (a lying or confused service).
    RejectedButLanded,
    /// The client gives up (the answer is unknown) while the request is still executing at the
    /// service: it lands this many milliseconds later, by the target's clock
    /// ([`MemTarget::with_clock`]). Until then a tier-1 resend under the same key is answered
    /// "in progress" ([`TargetError::InFlight`]).
    LandsLate(u64),
    /// The request executes and fails at the service (an internal error, nothing lands); a
    /// tier-1 service saves that error under the key and replays it to every resend.
    FailsSaved,
    /// The request lands, then the service answers an internal error that a tier-1 service
    /// saves under the key and replays to every resend.
    LandsThenFailsSaved,
}

impl Fault {
    /// Every fault.
    pub const ALL: [Fault; 5] = [
        Fault::Ok,
        Fault::Rejected,
        Fault::Unknown,
        Fault::LandedButUnknown,
        Fault::RejectedButLanded,
    ];

    fn lands(self) -> bool {
        matches!(
            self,
            Fault::Ok
                | Fault::LandedButUnknown
                | Fault::RejectedButLanded
                | Fault::LandsThenFailsSaved
        )
    }

    fn saves_error(self) -> bool {
        matches!(self, Fault::FailsSaved | Fault::LandsThenFailsSaved)
    }

    fn answer(self, evidence: Value) -> Result<Value, TargetError> {
        match self {
            Fault::Ok => Ok(evidence),
            Fault::Rejected | Fault::RejectedButLanded => Err(TargetError::Rejected {
                reason: "injected rejection".into(),
            }),
            Fault::Unknown | Fault::LandedButUnknown | Fault::LandsLate(_) => {
                Err(TargetError::Unknown {
                    reason: "injected lost answer".into(),
                })
            }
            Fault::FailsSaved | Fault::LandsThenFailsSaved => Err(replayed_error(false)),
        }
    }

    /// Parse `ok`, `rejected`, `unknown`, `landed-but-unknown`, `rejected-but-landed`,
    /// `lands-late:<ms>`.
    pub fn parse(s: &str) -> Option<Fault> {
        if let Some(ms) = s.strip_prefix("lands-late:") {
            return ms.parse().ok().map(Fault::LandsLate);
        }
        Some(match s {
            "ok" => Fault::Ok,
            "rejected" => Fault::Rejected,
            "unknown" => Fault::Unknown,
            "landed-but-unknown" => Fault::LandedButUnknown,
            "rejected-but-landed" => Fault::RejectedButLanded,
            _ => return None,
        })
    }
}

fn premise_violations(premises: &Value, facts: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    if let Value::Object(p) = premises {
        for (k, was) in p {
            let now = facts.get(k).unwrap_or(&Value::Null);
            if now != was {
                out.push(format!("{k}: was {was}, now {now}"));
            }
        }
    }
    out
}

/// The answer of a service that failed a request with an internal error (`replayed`: the saved
/// answer of an earlier request under the same key).
fn replayed_error(replayed: bool) -> TargetError {
    if replayed {
        TargetError::Replayed {
            reason: "internal error (replayed under the idempotency key)".into(),
        }
    } else {
        TargetError::Unknown {
            reason: "internal error".into(),
        }
    }
}

/// The capabilities of a test target of `tier`.
fn caps(
    tier: Tier,
    queryable: bool,
    dedup_window: Option<Duration>,
    max_in_flight: Option<Duration>,
) -> Capabilities {
    Capabilities {
        dedup: (tier == Tier::One).then_some(dedup_window),
        lookup: queryable,
        max_in_flight,
    }
}

/// The advisory-lock namespace of a PostgreSQL journal kept in `schema`: the first key of its
/// two-key advisory locks, for tests that look at the locks a gate holds.
#[cfg(feature = "postgres")]
pub fn pg_journal_namespace(schema: &str) -> i32 {
    crate::pg::journal_namespace(schema)
}

/// The advisory-lock key of an effect's sections in a PostgreSQL journal kept in `schema`, for
/// tests that hold it from another session.
#[cfg(feature = "postgres")]
pub fn pg_effect_lock_key(schema: &str, effect_id: &str) -> i64 {
    crate::pg::effect_key(schema, effect_id)
}

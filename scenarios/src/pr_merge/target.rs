//! The merge as the gate's target ([`MergeTarget`], tier 2: no idempotency key, looked up by
//! the effect id in a trailer of the merge commit) and the approval as its lease store
//! ([`CaseApproval`]).

use super::case::{CaseFile, Decision};
use super::merge::{put_merge, trailer, BASE, DISPATCH_TRAILER, EFFECT_TRAILER, LOOKUP_PAGES};
use crate::billing_credit::target::premise_violations;
use crate::billing_credit::{fire, now_ms, Crash, CrashPoint};
use ::interlock::{Capabilities, LeaseCheck, LeaseError, LeaseStore, Target, TargetError};
use forge::client::{Client, ClientError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

/// The effect payload the gate proposes: merge pull request `pull` at head `sha`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MergeEffect {
    pub pull: u64,
    pub sha: String,
    pub merge_method: String,
    pub title: String,
}

impl MergeEffect {
    pub(crate) fn of(decision: &Decision) -> MergeEffect {
        MergeEffect {
            pull: decision.pull,
            sha: decision.sha.clone(),
            merge_method: "merge".into(),
            title: decision.title.clone(),
        }
    }
}

/// The premises a merge is decided on: the pull request's head is the reviewed one and it is
/// open.
pub(crate) fn premises(decision: &Decision) -> Value {
    json!({ "head": decision.sha, "state": "open" })
}

/// A client error in the gate's words: a refusal is a settled "no"; anything else may have
/// landed.
fn to_target_error(e: ClientError, what: &str) -> TargetError {
    match e {
        ClientError::Refused { status, message } => TargetError::Rejected {
            reason: format!("{what}: the service answered {status}: {message}"),
        },
        other => TargetError::Unknown {
            reason: format!("{what}: {other}"),
        },
    }
}

/// The merge endpoint for the gate: tier 2 (the service keeps no idempotency key; a merge is
/// found by the `Interlock-Effect` trailer of its commit on the base branch). Premises: the
/// pull request's head and state.
pub struct MergeTarget {
    client: Client,
    pull: u64,
    max_in_flight: Duration,
    crash: Option<Crash>,
}

impl std::fmt::Debug for MergeTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergeTarget")
            .field("pull", &self.pull)
            .field("max_in_flight", &self.max_in_flight)
            .finish()
    }
}

impl MergeTarget {
    /// A target for pull request `pull` of `client`'s repository; `crash` fires inside the
    /// send (after DISPATCHED), after each premise read (`premises`) and after each lookup
    /// (`lookup`): a restart killed there is killed inside the gate's recovery.
    pub fn new(
        client: Client,
        pull: u64,
        max_in_flight: Duration,
        crash: Option<Crash>,
    ) -> MergeTarget {
        MergeTarget {
            client,
            pull,
            max_in_flight,
            crash,
        }
    }
}

impl Target for MergeTarget {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            dedup: None,
            lookup: true,
            max_in_flight: Some(self.max_in_flight),
        }
    }

    fn check_premises(
        &self,
        _effect_id: &str,
        premises: &Value,
    ) -> Result<Vec<String>, TargetError> {
        let now = self
            .client
            .pull(self.pull)
            .map_err(|e| to_target_error(e, "read the pull request"))?;
        let state = if now.merged {
            "merged"
        } else {
            now.state.as_str()
        };
        let live = json!({ "head": now.head_sha, "state": state });
        let recorded = json!({
            "head": premises.get("head").cloned().unwrap_or(Value::Null),
            "state": premises.get("state").cloned().unwrap_or(Value::Null),
        });
        let violations = premise_violations(&recorded, &live);
        fire(self.crash.as_ref(), CrashPoint::Premises);
        Ok(violations)
    }

    fn apply(&self, effect_id: &str, _effect: &Value) -> Result<Value, TargetError> {
        Err(TargetError::Rejected {
            reason: format!(
                "effect {effect_id}: a merge is sent only with its DISPATCHED entry's hash"
            ),
        })
    }

    fn apply_dispatched(
        &self,
        effect_id: &str,
        effect: &Value,
        dispatch: &str,
    ) -> Result<Value, TargetError> {
        let effect: MergeEffect =
            serde_json::from_value(effect.clone()).map_err(|e| TargetError::Rejected {
                reason: format!("effect {effect_id} is not a merge payload: {e}"),
            })?;
        let decision = Decision {
            pull: effect.pull,
            sha: effect.sha.clone(),
            title: effect.title.clone(),
        };
        let merge = put_merge(
            &self.client,
            &decision,
            Some(&effect.sha),
            &[(EFFECT_TRAILER, effect_id), (DISPATCH_TRAILER, dispatch)],
            self.crash.as_ref(),
        )
        .map_err(|e| to_target_error(e, "merge"))?;
        Ok(json!({ "status": "merged", "merge_commit": merge }))
    }

    fn query(&self, effect_id: &str, _effect: &Value) -> Result<Option<Value>, TargetError> {
        let needle = trailer(EFFECT_TRAILER, effect_id);
        let found = self
            .client
            .find_commit(BASE, &needle, LOOKUP_PAGES)
            .map_err(|e| to_target_error(e, "look the merge up"))?;
        fire(self.crash.as_ref(), CrashPoint::Lookup);
        Ok(found.map(|c| {
            json!({
                "status": "found",
                "merge_commit": c.sha,
                "merged_head": c.parents.get(1),
            })
        }))
    }
}

/// The case's approval as the gate's lease store, re-read from `case.json` at every check (the
/// runner may revoke it while a worker runs): live when unrevoked, unexpired and naming the
/// effect's pull request. `crash` fires after each read (`approval`).
#[derive(Clone)]
pub(crate) struct CaseApproval {
    pub(crate) cell_dir: PathBuf,
    pub(crate) crash: Option<Crash>,
}

impl std::fmt::Debug for CaseApproval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaseApproval")
            .field("cell_dir", &self.cell_dir)
            .finish()
    }
}

impl LeaseStore for CaseApproval {
    fn check(&self, lease: &Value, effect: &Value) -> Result<LeaseCheck, LeaseError> {
        let case = CaseFile::load(&self.cell_dir).map_err(|e| LeaseError {
            reason: format!("cannot read the approval: {e}"),
        })?;
        let pull = effect.get("pull").and_then(Value::as_u64);
        let live = lease.as_str() == Some(case.approval.id.as_str())
            && pull.is_some_and(|p| case.approval.covers(p, now_ms()));
        let grant = serde_json::to_value(&case.approval).map_err(|e| LeaseError {
            reason: format!("cannot render the approval: {e}"),
        })?;
        fire(self.crash.as_ref(), CrashPoint::Approval);
        Ok(LeaseCheck {
            live,
            grant: Some(grant),
        })
    }
}

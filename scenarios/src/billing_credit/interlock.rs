//! The `interlock` column: the gate over [`CreditTarget`] with the approval as lease store and a
//! signed JSONL journal at `<cell dir>/journal.jsonl`.
//!
//! Decide: submit the proposal; the crash hook fires inside the target's apply, i.e. after the
//! DISPATCHED entry is durable. Restart: loop recovery for this effect; when the gate answers
//! `Blocked { until_ms }` (the dead sender's request may still land), sleep exactly until that
//! instant and ask again; when it is resolved, write the receipt bundle.

use super::approval::ApprovalStore;
use super::target::{CreditEffect, CreditTarget};
use super::{
    fire, now_ms, write_json_durably, CaseFile, Crash, CrashPoint, RestartReport, ScenarioError,
    ScenarioSettings, AGENT, JOURNAL_FILE, JOURNAL_LOCATION_FILE, RECEIPT_FILE,
};
use ::interlock::{effect_id, Gate, GateConfig, Location, Proposal, RecoveryOutcome, Step};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use verify::results::Decision;

/// Upper bound on recovery rounds in one restart (each round either resolves the effect or sleeps
/// until a stated instant, so this only guards against a gate that keeps answering "now").
const MAX_RECOVERY_ROUNDS: u32 = 10_000;

/// The proposal for the case's one credit: agent, the approval id as lease, the request id
/// `goodwill-credit:<case_id>`, the decision's premises and `{customer, amount, description}`.
pub(crate) fn proposal(case: &CaseFile, decision: &Decision) -> Result<Proposal, ScenarioError> {
    let effect = CreditEffect {
        customer: case.customer.clone(),
        amount: decision.amount,
        description: decision.description.clone(),
    };
    let render = |e: serde_json::Error| {
        ScenarioError::Invalid(format!(
            "cannot render the proposal for {}: {e}",
            case.case_id
        ))
    };
    Ok(Proposal {
        agent: AGENT.to_owned(),
        lease: json!(case.approval.id),
        premises: serde_json::to_value(&decision.premises).map_err(render)?,
        effect: serde_json::to_value(&effect).map_err(render)?,
        request_id: Some(case.request_id()),
        budget: None,
    })
}

fn open_gate(
    client: &stripe::Client,
    cell_dir: &Path,
    case: &CaseFile,
    crash: Option<Crash>,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<Gate<CreditTarget, ApprovalStore>, ScenarioError> {
    let steps = crash.clone();
    let target = CreditTarget::new(client.clone(), case.clone(), settings.max_in_flight, crash);
    let config = GateConfig {
        claim_ttl: settings.claim_ttl,
        ..GateConfig::default()
    };
    let (journal, shown) = journal_location(cell_dir, JOURNAL_LOCATION_FILE, JOURNAL_FILE);
    let mut gate = Gate::open_at(
        &journal,
        target,
        ApprovalStore::new(cell_dir),
        gate_key.clone(),
        config,
    )
    .map_err(ScenarioError::gate(format!("open the journal {shown}")))?;
    observe_steps(&mut gate, steps);
    Ok(gate)
}

/// The journal store named in the cell's `location_file` (the runner's `--journal`), else the
/// cell's JSONL `journal_file`; with how to name it in messages.
pub(crate) fn journal_location(
    cell_dir: &Path,
    location_file: &str,
    journal_file: &str,
) -> (Location, String) {
    let journal = match std::fs::read_to_string(cell_dir.join(location_file)) {
        Ok(text) => Location::parse(text.trim()),
        Err(_) => Location::File(cell_dir.join(journal_file)),
    };
    let shown = match &journal {
        Location::File(p) => p.display().to_string(),
        Location::Postgres(_) => "in PostgreSQL (the run's --journal)".to_owned(),
    };
    (journal, shown)
}

/// Fires the crash hook at the gate's durable steps; `sent` is the target's own `after_send`.
pub(crate) fn observe_steps<T: ::interlock::Target, L: ::interlock::LeaseStore>(
    gate: &mut Gate<T, L>,
    crash: Option<Crash>,
) {
    if let Some(crash) = crash {
        gate.set_observer(Box::new(move |step: Step| {
            let at = match step {
                Step::Proposed => CrashPoint::Proposed,
                Step::Authorized => CrashPoint::Authorized,
                Step::Dispatched => CrashPoint::Dispatched,
                Step::Committed => CrashPoint::Committed,
                Step::Sent => return,
            };
            fire(Some(&crash), at);
        }));
    }
}

/// Decide phase: submit through the gate and return its status string.
pub(crate) fn submit(
    client: &stripe::Client,
    cell_dir: &Path,
    case: &CaseFile,
    decision: &Decision,
    crash: Option<Crash>,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<String, ScenarioError> {
    let gate = open_gate(client, cell_dir, case, crash, gate_key, settings)?;
    let p = proposal(case, decision)?;
    let submitted = gate.submit(&p).map_err(ScenarioError::gate(format!(
        "submit the credit of {}",
        case.case_id
    )))?;
    Ok(submitted.status.as_str().to_owned())
}

fn via_of(entries: &[Value]) -> Option<String> {
    entries
        .iter()
        .find(|e| e.get("kind").and_then(Value::as_str) == Some("COMMITTED"))
        .and_then(|e| e.get("via"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Restart phase: recover the case's effect until it is resolved, then write `receipt.json`.
/// `crash` fires at the steps recovery passes (a resend's `before_send`/`after_send`, `committed`).
pub(crate) fn restart(
    client: &stripe::Client,
    cell_dir: &Path,
    case: &CaseFile,
    decision: &Decision,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
    crash: Option<Crash>,
) -> Result<RestartReport, ScenarioError> {
    let gate = open_gate(client, cell_dir, case, crash, gate_key, settings)?;
    let eid = effect_id(&proposal(case, decision)?);
    let shown = cell_dir.join(JOURNAL_FILE).display().to_string();
    settle(&gate, eid, &shown, &cell_dir.join(RECEIPT_FILE), gate_key)
}

/// Recovers effect `eid` until it is resolved, then writes its receipt bundle to `receipt_file`
/// (verified against `gate_key` right after) and reports. `journal` names the journal in
/// messages.
pub(crate) fn settle<T: ::interlock::Target, L: ::interlock::LeaseStore>(
    gate: &Gate<T, L>,
    eid: String,
    journal: &str,
    receipt_file: &Path,
    gate_key: &ed25519_dalek::SigningKey,
) -> Result<RestartReport, ScenarioError> {
    let recovery = recover(gate, &eid)?;
    let entries = gate
        .entries(&eid)
        .map_err(ScenarioError::gate(format!("read the journal of {eid}")))?;
    let status = final_status(recovery.status, &entries, &eid, journal, &recovery.rounds)?;
    describe(
        gate,
        eid,
        status,
        receipt_file,
        gate_key,
        json!({ "recoveries": recovery.rounds }),
        recovery.waited,
    )
}

/// What the recovery rounds of one restart saw.
struct Recovery {
    /// The effect's status, when a round resolved it or found it settled before.
    status: Option<String>,
    /// Every round's outcome, in order.
    rounds: Vec<Value>,
    /// Total time slept waiting for `Blocked { until_ms }` instants.
    waited: Duration,
}

/// Asks the gate to recover effect `eid`, round after round (at most [`MAX_RECOVERY_ROUNDS`]),
/// sleeping until each `Blocked { until_ms }` instant, until a round resolves it or finds nothing
/// open.
fn recover<T: ::interlock::Target, L: ::interlock::LeaseStore>(
    gate: &Gate<T, L>,
    eid: &str,
) -> Result<Recovery, ScenarioError> {
    let gate_err = |what: &str| ScenarioError::gate(format!("{what} {eid}"));
    let mut recovery = Recovery {
        status: None,
        rounds: Vec::new(),
        waited: Duration::ZERO,
    };
    for _ in 0..MAX_RECOVERY_ROUNDS {
        match gate
            .recover_effect(eid)
            .map_err(gate_err("recover effect"))?
        {
            Some(RecoveryOutcome::Resolved(s)) => {
                recovery.rounds.push(json!({"resolved": s.as_str()}));
                recovery.status = Some(s.as_str().to_owned());
                break;
            }
            Some(RecoveryOutcome::Blocked {
                holder,
                until_ms,
                reason,
            }) => {
                recovery.rounds.push(json!({
                    "blocked": {"holder": holder, "until_ms": until_ms, "reason": reason}
                }));
                recovery.waited += sleep_until(until_ms);
            }
            None => {
                // Nothing open: the effect was settled before (or never dispatched).
                let entries = gate.entries(eid).map_err(gate_err("read the journal of"))?;
                recovery.status = ::interlock::status_of(&entries).map(|s| s.as_str().to_owned());
                recovery
                    .rounds
                    .push(json!({"nothing_open": recovery.status}));
                break;
            }
        }
    }
    Ok(recovery)
}

/// Sleeps exactly until the stated instant `until_ms` (never a fixed poll interval), or only
/// yields when it has passed; returns the time slept.
fn sleep_until(until_ms: u64) -> Duration {
    let now = now_ms();
    if until_ms > now {
        let nap = Duration::from_millis(until_ms - now);
        let started = Instant::now();
        std::thread::sleep(nap);
        started.elapsed()
    } else {
        std::thread::yield_now();
        Duration::ZERO
    }
}

/// The status recovery ended with, or why there is none: the journal (`entries`, named
/// `journal` in messages) has nothing for effect `eid`, or it is still open after every round.
fn final_status(
    status: Option<String>,
    entries: &[Value],
    eid: &str,
    journal: &str,
    rounds: &[Value],
) -> Result<String, ScenarioError> {
    match status {
        Some(s) => Ok(s),
        None if entries.is_empty() => Err(ScenarioError::Unresolved {
            effect_id: eid.to_owned(),
            detail: format!(
                "the journal {journal} has no entry for it: the decide phase never proposed it"
            ),
        }),
        None => Err(ScenarioError::Unresolved {
            effect_id: eid.to_owned(),
            detail: format!(
                "still open after {MAX_RECOVERY_ROUNDS} recovery rounds: {}",
                json!(rounds)
            ),
        }),
    }
}

/// The report on effect `eid` as its journal now stands: writes its receipt bundle to
/// `receipt_file`, verifies it against `gate_key` right after, and adds the verification to
/// `detail`.
pub(crate) fn describe<T: ::interlock::Target, L: ::interlock::LeaseStore>(
    gate: &Gate<T, L>,
    eid: String,
    status: String,
    receipt_file: &Path,
    gate_key: &ed25519_dalek::SigningKey,
    mut detail: Value,
    waited: Duration,
) -> Result<RestartReport, ScenarioError> {
    let gate_err = |what: &str| ScenarioError::gate(format!("{what} {eid}"));
    let entries = gate
        .entries(&eid)
        .map_err(gate_err("read the journal of"))?;
    let receipt = gate
        .receipt(&eid)
        .map_err(gate_err("build the receipt of"))?;
    write_json_durably(receipt_file, &receipt)?;
    // Verify what was just written, against the key that signed it.
    let verified = verify::receipt::verify_bundle(
        &receipt,
        &verify::receipt::KeyCheck::Pinned(gate_key.verifying_key()),
    );
    let verified = serde_json::to_value(&verified).map_err(|e| {
        ScenarioError::Invalid(format!("cannot render the verification of {eid}: {e}"))
    })?;
    if let Value::Object(map) = &mut detail {
        map.insert("verify".into(), verified);
    }
    Ok(RestartReport {
        status,
        via: via_of(&entries),
        journal_kinds: entries
            .iter()
            .filter_map(|e| e.get("kind").and_then(Value::as_str).map(str::to_owned))
            .collect(),
        effect_id: Some(eid),
        receipt: Some(receipt),
        hand_check_log: None,
        waited_ms: waited.as_millis() as u64,
        detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_status_is_the_gates_own() {
        let e = |kind: &str, extra: Value| {
            let mut v = json!({"kind": kind});
            if let (Some(o), Value::Object(x)) = (v.as_object_mut(), extra) {
                o.extend(x);
            }
            v
        };
        let committed = vec![
            e("PROPOSED", json!({})),
            e("AUTHORIZED", json!({})),
            e("DISPATCHED", json!({})),
            e("COMMITTED", json!({"via": "retry-idempotent"})),
        ];
        let status = |entries: &[Value]| ::interlock::status_of(entries).map(|s| s.as_str());
        assert_eq!(status(&committed), Some("COMMITTED_BY_RETRY"));
        assert_eq!(via_of(&committed).as_deref(), Some("retry-idempotent"));
        let refused = vec![
            e("PROPOSED", json!({})),
            e("REFUSED", json!({"code": "stale_premise"})),
        ];
        assert_eq!(status(&refused), Some("REFUSED:stale_premise"));
        assert_eq!(status(&committed[..2]), None);
        assert_eq!(status(&committed[..3]), Some("IN_FLIGHT"));
        // A later, non-resolving refusal (a conflicting payload) does not undo the commit.
        let mut later = committed.clone();
        later.push(e("PROPOSED", json!({})));
        later.push(e("REFUSED", json!({"code": "conflicting_payload"})));
        assert_eq!(status(&later), Some("COMMITTED_BY_RETRY"));
    }
}

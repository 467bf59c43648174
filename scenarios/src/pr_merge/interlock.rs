//! The `interlock` column: the gate over [`MergeTarget`] (tier 2), the case's approval as its
//! lease, the pull request's head and state as premises, in one journal per case
//! (`journal.jsonl` in the cell directory, or the run's PostgreSQL journal).
//!
//! Decide: submit the proposal; the crash hook fires inside the target's send (after
//! DISPATCHED is durable). Restart: recover until resolved, then write `receipt.json`.

use super::case::{CaseFile, Decision};
use super::error::MergeError;
use super::target::{premises, CaseApproval, MergeEffect, MergeTarget};
use super::AGENT;
use crate::billing_credit::interlock::{describe, journal_location, observe_steps, settle};
use crate::billing_credit::{Crash, RestartReport, ScenarioError, ScenarioSettings};
use ::interlock::{effect_id, Gate, GateConfig, Proposal};
use forge::client::Client;
use serde_json::json;
use std::path::Path;

/// File name of the gate's journal in a cell directory.
pub const JOURNAL_FILE: &str = "journal.jsonl";
/// Optional file naming the journal store instead of [`JOURNAL_FILE`] (a `postgres://` URL).
pub const JOURNAL_LOCATION_FILE: &str = "journal.location";
/// The receipt bundle's file name in a cell directory.
pub const RECEIPT_FILE: &str = "receipt.json";

/// The case's proposal: request id `pr-merge:<repo>#<pull>`, the approval as lease, the head and
/// state as premises, the merge as effect.
pub(crate) fn proposal(case: &CaseFile, decision: &Decision) -> Proposal {
    Proposal {
        agent: AGENT.to_owned(),
        lease: json!(case.approval.id),
        premises: premises(decision),
        effect: json!(MergeEffect::of(decision)),
        request_id: Some(format!("pr-merge:{}#{}", case.repo, case.pull)),
        budget: None,
    }
}

fn open_gate(
    client: &Client,
    cell_dir: &Path,
    case: &CaseFile,
    crash: Option<Crash>,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<Gate<MergeTarget, CaseApproval>, ScenarioError> {
    let steps = crash.clone();
    let approval = CaseApproval {
        cell_dir: cell_dir.to_path_buf(),
        crash: crash.clone(),
    };
    let target = MergeTarget::new(client.clone(), case.pull, settings.max_in_flight, crash);
    let config = GateConfig {
        claim_ttl: settings.claim_ttl,
        ..GateConfig::default()
    };
    let (journal, shown) = journal_location(cell_dir, JOURNAL_LOCATION_FILE, JOURNAL_FILE);
    let mut gate = Gate::open_at(&journal, target, approval, gate_key.clone(), config)
        .map_err(ScenarioError::gate(format!("open the journal {shown}")))?;
    observe_steps(&mut gate, steps);
    Ok(gate)
}

/// Decide phase: submit through the gate and return its status string.
pub(crate) fn submit(
    client: &Client,
    cell_dir: &Path,
    decision: &Decision,
    crash: Option<Crash>,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<String, MergeError> {
    let case = CaseFile::load(cell_dir)?;
    let gate = open_gate(client, cell_dir, &case, crash, gate_key, settings)?;
    let submitted = gate
        .submit(&proposal(&case, decision))
        .map_err(ScenarioError::gate(format!(
            "submit the merge of {}",
            case.repo
        )))?;
    Ok(submitted.status.as_str().to_owned())
}

/// Restart phase: recover the case's effect until resolved (or submit it again when the kill
/// came before its dispatch was durable); write `receipt.json`.
pub(crate) fn restart(
    client: &Client,
    cell_dir: &Path,
    decision: &Decision,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
    crash: Option<Crash>,
) -> Result<RestartReport, MergeError> {
    let case = CaseFile::load(cell_dir)?;
    let gate = open_gate(client, cell_dir, &case, crash, gate_key, settings)?;
    let p = proposal(&case, decision);
    let eid = effect_id(&p);
    let (_, shown) = journal_location(cell_dir, JOURNAL_LOCATION_FILE, JOURNAL_FILE);
    let receipt = cell_dir.join(RECEIPT_FILE);
    let gate_err = |what: &str| ScenarioError::gate(format!("{what} {eid}"));
    let open = gate
        .open_effects()
        .map_err(gate_err("list the open effects for"))?
        .contains(&eid);
    let settled = gate.status(&eid).map_err(gate_err("read the status of"))?;
    if !open && settled.is_none() {
        // Killed before its dispatch was durable: nothing of it can have been sent; the
        // restarted worker submits the proposal again (the same effect id).
        let submitted = gate.submit(&p).map_err(gate_err("submit again"))?;
        let status = submitted.status.as_str().to_owned();
        return Ok(describe(
            &gate,
            eid,
            status,
            &receipt,
            gate_key,
            json!({ "submitted_again": true }),
            std::time::Duration::ZERO,
        )?);
    }
    Ok(settle(&gate, eid, &shown, &receipt, gate_key)?)
}

/// The report on the case's effect after a first phase that ended by itself with `status`: the
/// journal as it stands and the receipt, written as `receipt.json`.
pub(crate) fn finished(
    client: &Client,
    cell_dir: &Path,
    decision: &Decision,
    status: String,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<RestartReport, MergeError> {
    let case = CaseFile::load(cell_dir)?;
    let gate = open_gate(client, cell_dir, &case, None, gate_key, settings)?;
    let eid = effect_id(&proposal(&case, decision));
    Ok(describe(
        &gate,
        eid,
        status,
        &cell_dir.join(RECEIPT_FILE),
        gate_key,
        json!({}),
        std::time::Duration::ZERO,
    )?)
}

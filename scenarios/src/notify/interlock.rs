//! The `interlock` column: the gate over [`MailTarget`] (tier 3), the case's approval as its
//! lease, the refund's status as its premise, in one journal per case (`journal.jsonl` in the
//! cell directory).
//!
//! Decide: submit the proposal; the crash hook fires inside the target's send (after
//! DISPATCHED is durable). Restart: recover until resolved (a tier-3 dispatch that may have
//! been sent is settled AMBIGUOUS, never resent), then write `receipt.json`.

use super::case::{CaseFile, Decision};
use super::error::NotifyError;
use super::mail::{MailServer, MidData};
use super::target::{premises, CaseApproval, MailTarget};
use super::AGENT;
use crate::billing_credit::interlock::{describe, journal_location, observe_steps, settle};
use crate::billing_credit::{Crash, RestartReport, ScenarioError, ScenarioSettings};
use ::interlock::{effect_id, Gate, GateConfig, Proposal};
use serde_json::json;
use std::path::Path;

/// File name of the gate's journal in a cell directory.
pub const JOURNAL_FILE: &str = "journal.jsonl";
/// Optional file naming the journal store instead of [`JOURNAL_FILE`].
pub const JOURNAL_LOCATION_FILE: &str = "journal.location";
/// The receipt bundle's file name in a cell directory.
pub const RECEIPT_FILE: &str = "receipt.json";

/// The case's proposal: request id `notify:<case>`, the approval as lease, the refund's status
/// as premise, the email as effect.
pub(crate) fn proposal(case: &CaseFile, decision: &Decision) -> Result<Proposal, ScenarioError> {
    let effect = serde_json::to_value(decision)
        .map_err(|e| ScenarioError::Invalid(format!("cannot render the email: {e}")))?;
    Ok(Proposal {
        agent: AGENT.to_owned(),
        lease: json!(case.approval.id),
        premises: premises(),
        effect,
        request_id: Some(format!("notify:{}", case.case)),
        budget: None,
    })
}

/// What a gate of the case needs besides its files.
pub(crate) struct GateParts<'a> {
    pub(crate) stripe: &'a stripe::Client,
    pub(crate) server: &'a MailServer,
    pub(crate) gate_key: &'a ed25519_dalek::SigningKey,
    pub(crate) settings: &'a ScenarioSettings,
    pub(crate) mid_data: Option<MidData>,
}

fn open_gate(
    parts: &GateParts<'_>,
    cell_dir: &Path,
    case: &CaseFile,
    crash: Option<Crash>,
) -> Result<Gate<MailTarget, CaseApproval>, ScenarioError> {
    let steps = crash.clone();
    let approval = CaseApproval {
        cell_dir: cell_dir.to_path_buf(),
    };
    let target = MailTarget::new(
        parts.stripe.clone(),
        parts.server.clone(),
        case.refund.clone(),
        crash,
    )
    .with_mid_data(parts.mid_data.clone());
    let config = GateConfig {
        claim_ttl: parts.settings.claim_ttl,
        ..GateConfig::default()
    };
    let (journal, shown) = journal_location(cell_dir, JOURNAL_LOCATION_FILE, JOURNAL_FILE);
    let mut gate = Gate::open_at(&journal, target, approval, parts.gate_key.clone(), config)
        .map_err(ScenarioError::gate(format!("open the journal {shown}")))?;
    observe_steps(&mut gate, steps);
    Ok(gate)
}

/// Decide phase: submit through the gate and return its status string.
pub(crate) fn submit(
    parts: &GateParts<'_>,
    cell_dir: &Path,
    decision: &Decision,
    crash: Option<Crash>,
) -> Result<String, NotifyError> {
    let case = CaseFile::load(cell_dir)?;
    let gate = open_gate(parts, cell_dir, &case, crash)?;
    let submitted = gate
        .submit(&proposal(&case, decision)?)
        .map_err(ScenarioError::gate(format!(
            "submit the email of {}",
            case.case
        )))?;
    Ok(submitted.status.as_str().to_owned())
}

/// Restart phase: recover the case's effect until resolved (or submit it again when the kill
/// came before its proposal was durable); write `receipt.json`. `crash` fires at the steps the
/// restart passes (a nemesis kills restarts too).
pub(crate) fn restart(
    parts: &GateParts<'_>,
    cell_dir: &Path,
    decision: &Decision,
    crash: Option<Crash>,
) -> Result<RestartReport, NotifyError> {
    let case = CaseFile::load(cell_dir)?;
    let gate = open_gate(parts, cell_dir, &case, crash)?;
    let p = proposal(&case, decision)?;
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
            parts.gate_key,
            json!({ "submitted_again": true }),
            std::time::Duration::ZERO,
        )?);
    }
    Ok(settle(&gate, eid, &shown, &receipt, parts.gate_key)?)
}

/// The report on the case's effect after a first phase that ended by itself with `status`.
pub(crate) fn finished(
    parts: &GateParts<'_>,
    cell_dir: &Path,
    decision: &Decision,
    status: String,
) -> Result<RestartReport, NotifyError> {
    let case = CaseFile::load(cell_dir)?;
    let gate = open_gate(parts, cell_dir, &case, None)?;
    let eid = effect_id(&proposal(&case, decision)?);
    Ok(describe(
        &gate,
        eid,
        status,
        &cell_dir.join(RECEIPT_FILE),
        parts.gate_key,
        json!({}),
        std::time::Duration::ZERO,
    )?)
}

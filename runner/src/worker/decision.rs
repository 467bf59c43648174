//! Where a decide worker's decision comes from: the decider asked about the case, or (per-row
//! decisions) the row's decision another cell saved, replayed with this case's ids.

use super::WorkerArgs;
use crate::decider::{self, CaseBrief, DeciderSettings, ToolBox};
use crate::worker_error::WorkerError;
use scenarios::billing_credit as bc;
use serde_json::json;
use std::path::Path;

/// Per-row decisions: the row's decision (saved by the cell that asked the decider) with this
/// case's ids in its description, and this case's premises as read now.
pub(super) fn replayed_decision(
    path: &Path,
    label: Option<&str>,
    case: &bc::CaseFile,
    account: &bc::Account,
) -> Result<verify::results::Decision, WorkerError> {
    let bytes = std::fs::read(path).map_err(|source| WorkerError::ReadDecision {
        path: path.to_owned(),
        source,
    })?;
    let source: verify::results::Decision =
        serde_json::from_slice(&bytes).map_err(|source| WorkerError::NotADecision {
            path: path.to_owned(),
            source,
        })?;
    let source_dir = path
        .parent()
        .ok_or_else(|| WorkerError::NoDirectory(path.to_owned()))?;
    let source_case = bc::CaseFile::load(source_dir)?;
    Ok(verify::results::Decision {
        amount: source.amount,
        description: decider::replay_description(
            &source.description,
            (&source_case.case_id, &source_case.incident),
            (&case.case_id, &case.incident),
        ),
        decider: source.decider,
        premises: account.premises.clone(),
        replayed_from: Some(label.unwrap_or("another cell of the row").to_owned()),
    })
}

/// Asks the decider about this case.
pub(super) fn ask_decider(
    args: &WorkerArgs,
    case: &bc::CaseFile,
    account: &bc::Account,
) -> Result<verify::results::Decision, WorkerError> {
    let decider = decider::build(&DeciderSettings {
        kind: args.decider,
        model: args.model.clone(),
        base_url: args.anthropic_base_url.clone(),
    })
    .map_err(WorkerError::DeciderSetup)?;
    let brief = CaseBrief {
        case_id: case.case_id.clone(),
        incident: case.incident.clone(),
        text: case.text.clone(),
        max_cents: case.approval.max_cents,
    };
    let account_json = json!({
        "customer": account.customer,
        "plan_cents_per_month": account.plan_cents,
        "subscription_status": account.premises.subscription_status,
        "incident_compensation": account.premises.incident_compensation,
        "case_id": case.case_id,
        "incident": case.incident,
        "approval": case.approval,
    });
    let mut tools = ToolBox::new(account_json, case.approval.max_cents);
    let proposed = decider
        .decide(&brief, &mut tools)
        .map_err(|source| WorkerError::Decider {
            kind: args.decider,
            source,
        })?;
    Ok(verify::results::Decision {
        amount: proposed.amount,
        description: proposed.description,
        decider: proposed.decider,
        premises: account.premises.clone(),
        replayed_from: None,
    })
}

//! The approval as the gate's lease store, re-read from `case.json` on every check.

use super::{CaseFile, CASE_FILE};
use ::interlock::{LeaseCheck, LeaseError, LeaseStore};
use serde_json::Value;
use std::path::PathBuf;
use verify::results::Approval;

/// Whether `approval` is unrevoked and covers `amount` cents (`0 < amount <= max_cents`).
pub(crate) fn covers(approval: &Approval, amount: i64) -> bool {
    approval.revoked.is_none() && amount > 0 && amount <= approval.max_cents
}

/// Support's approval, read from the case file as the gate's lease store.
///
/// The file is re-read on every [`LeaseStore::check`], so an approval revoked (or edited) while
/// the worker was dead is seen by recovery. A lease is live iff it is the approval's id, the
/// approval is not revoked, and `0 < effect.amount <= max_cents`; the grant is the approval
/// object as read.
#[derive(Debug, Clone)]
pub struct ApprovalStore {
    cell_dir: PathBuf,
}

impl ApprovalStore {
    /// A store reading `<cell_dir>/case.json`.
    pub fn new(cell_dir: impl Into<PathBuf>) -> ApprovalStore {
        ApprovalStore {
            cell_dir: cell_dir.into(),
        }
    }

    /// The approval as currently saved.
    pub fn approval(&self) -> Result<Approval, super::ScenarioError> {
        CaseFile::load(&self.cell_dir).map(|c| c.approval)
    }
}

impl LeaseStore for ApprovalStore {
    fn check(&self, lease: &Value, effect: &Value) -> Result<LeaseCheck, LeaseError> {
        let started = super::events::monotonic_us();
        let approval = self.approval().map_err(|e| LeaseError {
            reason: format!(
                "cannot read the approval from {}: {e}",
                self.cell_dir.join(CASE_FILE).display()
            ),
        })?;
        super::events::announce_read("approval", started);
        let amount = effect.get("amount").and_then(Value::as_i64);
        let live = lease.as_str() == Some(approval.id.as_str())
            && amount.is_some_and(|a| covers(&approval, a));
        let grant = serde_json::to_value(&approval).map_err(|e| LeaseError {
            reason: format!("cannot render approval {}: {e}", approval.id),
        })?;
        Ok(LeaseCheck {
            live,
            grant: Some(grant),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_is_unrevoked_and_within_the_cap() {
        let mut a = Approval {
            id: "approval-case-1".into(),
            approver: "support-lead".into(),
            max_cents: 1000,
            revoked: None,
        };
        assert!(covers(&a, 1000));
        assert!(covers(&a, 1));
        assert!(!covers(&a, 1001));
        assert!(!covers(&a, 0));
        assert!(!covers(&a, -5));
        a.revoked = Some(verify::results::Revocation {
            by: "support-lead".into(),
            clock_time: None,
        });
        assert!(!covers(&a, 1000));
    }
}

//! A case's files in its cell directory: `case.json` (the refund, the customer, the approval)
//! written by the runner, and `decision.json` (the email the agent decided to send) written
//! durably by the worker before any send.

use crate::billing_credit::{read_json, write_json_durably, ScenarioError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// File name of the case in a cell directory.
pub const CASE_FILE: &str = "case.json";
/// File name of the saved decision in a cell directory.
pub const DECISION_FILE: &str = "decision.json";

/// The approval an email runs under: who approved it, until when, and whether it was revoked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    /// `ap_...`: the lease id the gate records.
    pub id: String,
    /// Who approved the email.
    pub approver: String,
    /// The case it covers.
    pub case: String,
    /// Until when it holds, ms since the Unix epoch (set by the runner when it opens the case).
    pub expires_at_ms: u64,
    /// Why it was revoked, once it is.
    pub revoked: Option<String>,
}

impl Approval {
    /// Whether the approval covers the email of `case` at `now_ms`.
    pub fn covers(&self, case: &str, now_ms: u64) -> bool {
        self.revoked.is_none() && self.case == case && now_ms < self.expires_at_ms
    }
}

/// One case: a refund the agent made at Stripe, the customer to tell, the approval to tell
/// them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// The case's name: the `X-Interlock-Case` header of its email.
    pub case: String,
    /// The refund (`re_...`) the email announces.
    pub refund: String,
    /// The refund's amount, cents.
    pub amount_cents: i64,
    /// The customer's address.
    pub customer: String,
    /// The approval to send the email.
    pub approval: Approval,
}

impl CaseFile {
    /// Reads `case.json` from `cell_dir`.
    pub fn load(cell_dir: &Path) -> Result<CaseFile, ScenarioError> {
        read_json(&cell_dir.join(CASE_FILE))
    }

    /// Writes `case.json` into `cell_dir` durably.
    pub fn save(&self, cell_dir: &Path) -> Result<(), ScenarioError> {
        write_json_durably(&cell_dir.join(CASE_FILE), self)
    }

    /// Revokes the approval in `case.json` of `cell_dir` (the runner, while the worker is dead).
    pub fn revoke(cell_dir: &Path, why: &str) -> Result<(), ScenarioError> {
        let mut case = CaseFile::load(cell_dir)?;
        case.approval.revoked = Some(why.to_owned());
        case.save(cell_dir)
    }
}

/// What the agent decided: tell the customer the refund is on the way, in this email.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// The case.
    pub case: String,
    /// The refund the email announces.
    pub refund: String,
    /// The recipient.
    pub to: String,
    /// The subject.
    pub subject: String,
    /// The text.
    pub body: String,
}

impl Decision {
    /// The policy's decision: the refund succeeded, so tell the customer it is on the way.
    pub fn policy(case: &CaseFile) -> Decision {
        let (dollars, cents) = (case.amount_cents / 100, case.amount_cents % 100);
        Decision {
            case: case.case.clone(),
            refund: case.refund.clone(),
            to: case.customer.clone(),
            subject: format!("Your refund of ${dollars}.{cents:02} is on the way"),
            body: format!(
                "Hello,\r\n\r\nwe have refunded ${dollars}.{cents:02} to your card (refund {}). \
                 It should reach you within 5 to 10 business days.\r\n",
                case.refund
            ),
        }
    }

    /// Writes `decision.json` into `cell_dir` durably.
    pub fn save(&self, cell_dir: &Path) -> Result<(), ScenarioError> {
        write_json_durably(&cell_dir.join(DECISION_FILE), self)
    }

    /// Reads `decision.json` from `cell_dir`.
    pub fn load(cell_dir: &Path) -> Result<Decision, ScenarioError> {
        read_json(&cell_dir.join(DECISION_FILE))
    }
}

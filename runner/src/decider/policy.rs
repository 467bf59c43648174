//! The deterministic policy decider: no model, same tools, same validation.

use super::{CaseBrief, DecideError, Decider, Proposed, ToolBox, ToolOutcome};
use serde_json::json;
use verify::results::DeciderInfo;

/// Looks the account up, then issues exactly the approved amount with a description naming the
/// incident and the case.
#[derive(Debug, Clone, Copy, Default)]
pub struct PolicyDecider;

impl Decider for PolicyDecider {
    fn info(&self) -> DeciderInfo {
        DeciderInfo {
            kind: "policy".into(),
            model: None,
        }
    }

    fn decide(&self, case: &CaseBrief, tools: &mut ToolBox) -> Result<Proposed, DecideError> {
        match tools.call("get_account", &json!({})) {
            ToolOutcome::Answer(_) => {}
            ToolOutcome::Error(e) => return Err(DecideError::Invalid(e)),
            ToolOutcome::Credit { .. } => {
                return Err(DecideError::Invalid("get_account issued a credit".into()))
            }
        }
        let dollars = case.max_cents / 100;
        let cents = case.max_cents % 100;
        let description = format!(
            "Goodwill credit of ${dollars}.{cents:02} for lost access during incident {} (support case {})",
            case.incident, case.case_id
        );
        let input = json!({"amount_cents": case.max_cents, "description": description});
        match tools.call("issue_credit", &input) {
            ToolOutcome::Credit {
                amount,
                description,
            } => Ok(Proposed {
                amount,
                description,
                decider: self.info(),
            }),
            ToolOutcome::Error(e) => Err(DecideError::Invalid(e)),
            ToolOutcome::Answer(_) => Err(DecideError::Invalid(
                "issue_credit answered without a credit".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_issues_the_approved_amount_and_names_incident_and_case() {
        let case = CaseBrief {
            case_id: "case-0123456789".into(),
            incident: "INC-abcdef".into(),
            text: "please credit".into(),
            max_cents: 1000,
        };
        let mut tools = ToolBox::new(json!({"customer": "cus_1"}), 1000);
        let p = PolicyDecider.decide(&case, &mut tools).unwrap();
        assert_eq!(p.amount, 1000);
        assert!(p.description.contains("INC-abcdef"));
        assert!(p.description.contains("case-0123456789"));
        assert!(p.description.contains("$10.00"));
        assert_eq!(tools.calls(), ["get_account", "issue_credit"]);
        assert_eq!(p.decider.kind, "policy");
        assert_eq!(p.decider.model, None);
    }
}

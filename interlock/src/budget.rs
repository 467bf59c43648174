//! TEMPORARY stand-in for the budget API (replaced when budgets land).
use serde::{Deserialize, Serialize};
/// A budget named by a proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// Budget id.
    pub id: String,
    /// Amount.
    pub amount: i64,
}
/// Why a cap could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{reason}")]
pub struct BudgetError {
    /// Why.
    pub reason: String,
}
/// Caps.
pub trait BudgetStore {
    /// The cap.
    fn cap(&self, id: &str) -> Result<Option<i64>, BudgetError>;
}

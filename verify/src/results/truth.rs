//! The ground truth of a cell: what Stripe holds for the case's customer, read back after the
//! restart exited.

use super::*;

/// What Stripe holds for the case's customer, read after the restart exited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GroundTruth {
    /// Every credit to the customer that billing did not make (negative `adjustment` balance
    /// transactions, whatever their tags): the judge's view of this case's credits.
    pub case_credits: Vec<CaseCredit>,
    /// `case_credits.len()`.
    pub case_credit_count: u32,
    /// Sum of `-amount` over `case_credits` (positive cents).
    pub case_credit_cents: i64,
    /// Every credit note of the customer.
    pub credit_notes: Vec<CreditNoteTruth>,
    /// Every customer balance transaction, newest first as Stripe lists them.
    pub balance_transactions: Vec<BalanceTxnTruth>,
    /// Every invoice of the customer, newest first.
    pub invoices: Vec<InvoiceTruth>,
    /// The customer's `balance` (negative = credit owed to the customer).
    pub customer_balance: i64,
    /// Unscoped compensation by others (credit notes + others' negative adjustments), cents.
    pub compensation_by_others: i64,
    /// Compensation by others for this case's incident, cents.
    pub incident_compensation: i64,
}

/// One of this case's credits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CaseCredit {
    /// `cbtxn_...`.
    pub id: String,
    /// Negative cents (a credit).
    pub amount: i64,
    /// Creation time in test-clock seconds.
    pub created: i64,
    /// `metadata.interlock_effect_id`, when the gate sent it.
    pub effect_id: Option<String>,
    /// `metadata.interlock_dispatch`, when the gate sent it: the hash of the DISPATCHED entry
    /// the send belonged to (the anchor, DESIGN §3.4). Absent from files written before anchors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch: Option<String>,
}

/// A credit note as read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CreditNoteTruth {
    /// `cn_...`.
    pub id: String,
    /// Total credited, cents.
    pub amount: i64,
    /// `issued` or `void`.
    pub status: String,
    /// `metadata.incident`, if any.
    pub incident: Option<String>,
    /// Creation time in test-clock seconds.
    pub created: i64,
    /// The invoice it credits.
    pub invoice: String,
}

/// A customer balance transaction as read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct BalanceTxnTruth {
    /// `cbtxn_...`.
    pub id: String,
    /// Stripe's `type` (`adjustment`, `applied_to_invoice`, `credit_note`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// Cents; negative is a credit to the customer.
    pub amount: i64,
    /// Creation time in test-clock seconds.
    pub created: i64,
    /// `metadata.case_id`, if any.
    pub case_id: Option<String>,
    /// `metadata.incident`, if any.
    pub incident: Option<String>,
    /// The credit note it came from, if any.
    pub credit_note: Option<String>,
    /// The invoice it relates to, if any.
    pub invoice: Option<String>,
}

/// An invoice as read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct InvoiceTruth {
    /// `in_...`.
    pub id: String,
    /// `subscription_create`, `subscription_cycle`, `subscription_update`, ...
    pub billing_reason: Option<String>,
    /// `draft`, `open`, `paid`, ...
    pub status: Option<String>,
    /// Cents.
    pub total: i64,
    /// Customer balance before finalization, cents.
    pub starting_balance: i64,
    /// Cents.
    pub amount_due: i64,
    /// Creation time in test-clock seconds.
    pub created: i64,
}

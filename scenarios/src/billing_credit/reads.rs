//! Reads from Stripe: the premises, the three premise candidates, and the ground truth. Every
//! list is read through `Client::list_all` (all pages, never just the first), and converted into
//! `verify::results` types so the premise arithmetic is `verify::scenarios::billing_credit`'s, stated once.

use super::case::{int_field, str_field};
use super::target::ANCHOR_KEY;
use super::{CaseFile, ScenarioError, PLAN_CENTS};
use serde_json::Value;
use stripe::{Client, Params};
use verify::results::{
    BalanceTxnTruth, Candidates, CaseCredit, CreditNoteTruth, GroundTruth, InvoiceTruth, Premises,
    StripeIds,
};
use verify::scenarios::billing_credit::{compensation_by_others, is_case_credit, is_judged_credit};

/// What the decider sees, read at one instant: the premises and the three candidates come from
/// the same set of reads.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Account {
    /// The customer id.
    pub customer: String,
    /// The plan's price per month, cents.
    pub plan_cents: i64,
    /// The premises the decision rests on.
    pub premises: Premises,
    /// The three premise candidates at the same instant.
    pub observed: Candidates,
}

impl Account {
    /// Writes `account.json` into `cell_dir` durably, so the runner can record the candidates
    /// the decide phase saw even though the worker is killed afterwards.
    pub fn save(&self, cell_dir: &std::path::Path) -> Result<(), ScenarioError> {
        super::write_json_durably(&cell_dir.join(super::ACCOUNT_FILE), self)
    }

    /// Reads `account.json` from `cell_dir`.
    pub fn load(cell_dir: &std::path::Path) -> Result<Account, ScenarioError> {
        super::read_json(&cell_dir.join(super::ACCOUNT_FILE))
    }
}

/// The customer's balance transactions and credit notes (all pages), converted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ledger {
    /// Every balance transaction, newest first.
    pub balance_transactions: Vec<BalanceTxnTruth>,
    /// Every credit note of the customer, newest first.
    pub credit_notes: Vec<CreditNoteTruth>,
    /// This case's own credits as the columns find them (adjustments with `metadata.case_id` =
    /// the case), newest first.
    pub case_credits: Vec<CaseCredit>,
    /// The judge's view: every credit to the customer billing did not make, whatever its tags
    /// (`verify::scenarios::billing_credit::is_judged_credit`), newest first.
    pub judged_credits: Vec<CaseCredit>,
}

impl Ledger {
    /// Unscoped compensation by others (any incident), cents.
    pub fn compensation_by_others(&self, case_id: &str) -> i64 {
        compensation_by_others(
            &self.credit_notes,
            &self.balance_transactions,
            case_id,
            None,
        )
    }

    /// Compensation by others for `incident`, cents: the premise.
    pub fn incident_compensation(&self, case_id: &str, incident: &str) -> i64 {
        compensation_by_others(
            &self.credit_notes,
            &self.balance_transactions,
            case_id,
            Some(incident),
        )
    }

    /// The candidates, given the customer's balance read at the same time.
    pub(crate) fn candidates(&self, case: &CaseFile, customer_balance: i64) -> Candidates {
        Candidates {
            customer_balance,
            compensation_by_others: self.compensation_by_others(&case.case_id),
            incident_compensation: self.incident_compensation(&case.case_id, &case.incident),
        }
    }
}

/// Reads every balance transaction and credit note of the case's customer.
pub fn read_ledger(client: &Client, case: &CaseFile) -> Result<Ledger, ScenarioError> {
    let txns_path = format!("/v1/customers/{}/balance_transactions", case.customer);
    let raw_txns = client
        .list_all(&txns_path, &Params::new())
        .map_err(ScenarioError::stripe(format!(
            "list the balance transactions of {}",
            case.customer
        )))?;
    let raw_notes = client
        .list_all(
            "/v1/credit_notes",
            &Params::new().set("customer", &case.customer),
        )
        .map_err(ScenarioError::stripe(format!(
            "list the credit notes of {}",
            case.customer
        )))?;
    let balance_transactions = raw_txns
        .iter()
        .map(balance_txn)
        .collect::<Result<Vec<_>, _>>()?;
    let credit_notes = raw_notes
        .iter()
        .map(credit_note)
        .collect::<Result<Vec<_>, _>>()?;
    let credits = |keep: &dyn Fn(&BalanceTxnTruth) -> bool| -> Vec<CaseCredit> {
        raw_txns
            .iter()
            .zip(&balance_transactions)
            .filter(|(_, t)| keep(t))
            .map(|(raw, t)| CaseCredit {
                id: t.id.clone(),
                amount: t.amount,
                created: t.created,
                effect_id: metadata(raw, "interlock_effect_id"),
                dispatch: metadata(raw, ANCHOR_KEY),
            })
            .collect()
    };
    let case_credits = credits(&|t| is_case_credit(t, &case.case_id));
    let judged_credits = credits(&is_judged_credit);
    Ok(Ledger {
        balance_transactions,
        credit_notes,
        case_credits,
        judged_credits,
    })
}

/// `GET /v1/subscriptions/{id}`.
pub(crate) fn subscription(client: &Client, case: &CaseFile) -> Result<Value, ScenarioError> {
    client
        .get(
            &format!("/v1/subscriptions/{}", case.subscription),
            &Params::new(),
        )
        .map(|r| r.body)
        .map_err(ScenarioError::stripe(format!(
            "read subscription {}",
            case.subscription
        )))
}

fn subscription_status(client: &Client, case: &CaseFile) -> Result<String, ScenarioError> {
    let sub = subscription(client, case)?;
    str_field(
        &sub,
        "status",
        &format!("subscription {}", case.subscription),
    )
}

fn customer_balance(client: &Client, case: &CaseFile) -> Result<i64, ScenarioError> {
    let customer = client
        .get(&format!("/v1/customers/{}", case.customer), &Params::new())
        .map_err(ScenarioError::stripe(format!(
            "read customer {}",
            case.customer
        )))?;
    int_field(
        &customer.body,
        "balance",
        &format!("customer {}", case.customer),
    )
}

/// The premises, read live: the subscription's status and the compensation by others for this
/// case's incident.
pub fn facts(client: &Client, case: &CaseFile) -> Result<Premises, ScenarioError> {
    let started = super::events::monotonic_us();
    let status = subscription_status(client, case)?;
    let ledger = read_ledger(client, case)?;
    announce_premise_reads(started);
    Ok(premises_from(case, status, &ledger))
}

/// Both premises were just read, in reads that began at `started`.
fn announce_premise_reads(started: u64) {
    super::events::announce_read("subscription_status", started);
    super::events::announce_read("incident_compensation", started);
}

pub(crate) fn premises_from(case: &CaseFile, status: String, ledger: &Ledger) -> Premises {
    Premises {
        subscription_status: status,
        incident_compensation: ledger.incident_compensation(&case.case_id, &case.incident),
    }
}

/// The three premise candidates, read live: the customer's balance, the unscoped compensation by
/// others, and the compensation by others for this case's incident.
pub fn observations(client: &Client, case: &CaseFile) -> Result<Candidates, ScenarioError> {
    let balance = customer_balance(client, case)?;
    let ledger = read_ledger(client, case)?;
    Ok(ledger.candidates(case, balance))
}

/// The premises and the candidates from one set of reads (what the decide phase records).
pub fn read_account(client: &Client, case: &CaseFile) -> Result<Account, ScenarioError> {
    let started = super::events::monotonic_us();
    let status = subscription_status(client, case)?;
    let balance = customer_balance(client, case)?;
    let ledger = read_ledger(client, case)?;
    announce_premise_reads(started);
    Ok(Account {
        customer: case.customer.clone(),
        plan_cents: PLAN_CENTS,
        observed: ledger.candidates(case, balance),
        premises: premises_from(case, status, &ledger),
    })
}

/// What Stripe holds for the case after the restart exited: every balance transaction, credit
/// note and invoice of the customer (all pages), this case's credits, the customer balance and
/// both compensation sums.
pub fn ground_truth(client: &Client, case: &CaseFile) -> Result<GroundTruth, ScenarioError> {
    let ledger = read_ledger(client, case)?;
    let raw_invoices = client
        .list_all(
            "/v1/invoices",
            &Params::new().set("customer", &case.customer),
        )
        .map_err(ScenarioError::stripe(format!(
            "list the invoices of {}",
            case.customer
        )))?;
    let invoices = raw_invoices
        .iter()
        .map(invoice)
        .collect::<Result<Vec<_>, _>>()?;
    let customer_balance = customer_balance(client, case)?;
    let compensation_by_others = ledger.compensation_by_others(&case.case_id);
    let incident_compensation = ledger.incident_compensation(&case.case_id, &case.incident);
    Ok(GroundTruth {
        case_credit_count: ledger.judged_credits.len() as u32,
        case_credit_cents: ledger.judged_credits.iter().map(|c| -c.amount).sum(),
        case_credits: ledger.judged_credits,
        credit_notes: ledger.credit_notes,
        balance_transactions: ledger.balance_transactions,
        invoices,
        customer_balance,
        compensation_by_others,
        incident_compensation,
    })
}

/// Every Stripe id of the case, for checking in a dashboard.
pub fn stripe_ids(case: &CaseFile, truth: &GroundTruth) -> StripeIds {
    StripeIds {
        clock: case.clock.clone(),
        customer: case.customer.clone(),
        subscription: case.subscription.clone(),
        invoices: truth.invoices.iter().map(|i| i.id.clone()).collect(),
        credit_notes: truth.credit_notes.iter().map(|n| n.id.clone()).collect(),
        case_credits: truth.case_credits.iter().map(|c| c.id.clone()).collect(),
    }
}

/// `metadata.<key>` as a string, if present and non-empty.
pub(crate) fn metadata(obj: &Value, key: &str) -> Option<String> {
    obj.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// An id-or-expanded-object field (`"in_1"` or `{"id": "in_1", ...}`), if set.
fn id_ref(obj: &Value, field: &str) -> Option<String> {
    match obj.get(field)? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("id").and_then(|i| i.as_str()).map(str::to_owned),
        _ => None,
    }
}

fn opt_str(obj: &Value, field: &str) -> Option<String> {
    obj.get(field).and_then(|v| v.as_str()).map(str::to_owned)
}

/// Converts a `customer_balance_transaction` object.
pub(crate) fn balance_txn(raw: &Value) -> Result<BalanceTxnTruth, ScenarioError> {
    let id = str_field(raw, "id", "a customer balance transaction")?;
    let what = format!("balance transaction {id}");
    Ok(BalanceTxnTruth {
        kind: str_field(raw, "type", &what)?,
        amount: int_field(raw, "amount", &what)?,
        created: int_field(raw, "created", &what)?,
        case_id: metadata(raw, "case_id"),
        incident: metadata(raw, "incident"),
        credit_note: id_ref(raw, "credit_note"),
        invoice: id_ref(raw, "invoice"),
        id,
    })
}

/// Converts a `credit_note` object.
pub(crate) fn credit_note(raw: &Value) -> Result<CreditNoteTruth, ScenarioError> {
    let id = str_field(raw, "id", "a credit note")?;
    let what = format!("credit note {id}");
    Ok(CreditNoteTruth {
        amount: int_field(raw, "amount", &what)?,
        status: str_field(raw, "status", &what)?,
        incident: metadata(raw, "incident"),
        created: int_field(raw, "created", &what)?,
        invoice: id_ref(raw, "invoice").ok_or_else(|| ScenarioError::Malformed {
            what: what.clone(),
            detail: "no `invoice`".into(),
        })?,
        id,
    })
}

/// Converts an `invoice` object.
pub(crate) fn invoice(raw: &Value) -> Result<InvoiceTruth, ScenarioError> {
    let id = str_field(raw, "id", "an invoice")?;
    let what = format!("invoice {id}");
    Ok(InvoiceTruth {
        billing_reason: opt_str(raw, "billing_reason"),
        status: opt_str(raw, "status"),
        total: int_field(raw, "total", &what)?,
        starting_balance: int_field(raw, "starting_balance", &what)?,
        amount_due: int_field(raw, "amount_due", &what)?,
        created: int_field(raw, "created", &what)?,
        id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conversions_read_metadata_and_expanded_refs() {
        let t = balance_txn(&json!({
            "id": "cbtxn_1", "object": "customer_balance_transaction", "type": "credit_note",
            "amount": -1000, "created": 5, "credit_note": {"id": "cn_1"}, "invoice": "in_1",
            "metadata": {"incident": "INC-1", "case_id": ""}
        }))
        .unwrap();
        assert_eq!(t.kind, "credit_note");
        assert_eq!(t.credit_note.as_deref(), Some("cn_1"));
        assert_eq!(t.invoice.as_deref(), Some("in_1"));
        assert_eq!(t.incident.as_deref(), Some("INC-1"));
        assert_eq!(t.case_id, None);

        let n = credit_note(&json!({
            "id": "cn_1", "amount": 1000, "status": "issued", "created": 9,
            "invoice": "in_1", "metadata": {"incident": "INC-1"}
        }))
        .unwrap();
        assert_eq!(n.incident.as_deref(), Some("INC-1"));

        let i = invoice(&json!({
            "id": "in_1", "billing_reason": "subscription_cycle", "status": "paid",
            "total": 3000, "starting_balance": -1000, "amount_due": 2000, "created": 3
        }))
        .unwrap();
        assert_eq!(i.amount_due, 2000);
    }

    #[test]
    fn a_malformed_object_names_what_and_which_field() {
        let err = balance_txn(&json!({"id": "cbtxn_9", "type": "adjustment"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("cbtxn_9") && err.contains("amount"), "{err}");
    }
}

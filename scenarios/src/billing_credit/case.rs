//! Case opening: prices, one test clock per case, a customer with a card that pays, the $30
//! subscription, the case and incident ids, the approval, and `case.json`.

use super::{
    read_json, write_json_durably, ScenarioError, APPROVER, CASE_FILE, CREDIT_CENTS, PLAN_CENTS,
    SMALL_PLAN_CENTS,
};
use serde::{Deserialize, Serialize};
use std::path::Path;
use stripe::{Client, Params};
use verify::results::Approval;

/// The two monthly prices the scenario uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// The $30/month plan (`price_...`).
    pub plan: String,
    /// The $20/month plan the proration outage downgrades to.
    pub small: String,
}

/// The lookup key of the scenario's monthly price of `cents`.
pub(crate) fn lookup_key(cents: i64) -> String {
    format!("interlock-sandbox-billing-credit-{cents}")
}

/// Finds the $30 and $20 monthly prices by lookup key (`interlock-sandbox-billing-credit-<cents>`),
/// creating each one that does not exist yet. Call once per Stripe account (per API key on the
/// emulator).
pub fn ensure_prices(client: &Client) -> Result<Prices, ScenarioError> {
    Ok(Prices {
        plan: ensure_price(client, PLAN_CENTS)?,
        small: ensure_price(client, SMALL_PLAN_CENTS)?,
    })
}

fn ensure_price(client: &Client, cents: i64) -> Result<String, ScenarioError> {
    let key = lookup_key(cents);
    let found = client
        .get(
            "/v1/prices",
            &Params::new().push("lookup_keys[]", &key).set("limit", 1),
        )
        .map_err(ScenarioError::stripe(format!("look up price {key}")))?;
    if let Some(id) = found
        .body
        .get("data")
        .and_then(|d| d.as_array())
        .and_then(|d| d.first())
        .and_then(|p| p.get("id"))
        .and_then(|i| i.as_str())
    {
        return Ok(id.to_owned());
    }
    let created = client
        .post(
            "/v1/prices",
            &Params::new()
                .set("unit_amount", cents)
                .set("currency", "usd")
                .set("recurring[interval]", "month")
                .set("lookup_key", &key)
                .set(
                    "product_data[name]",
                    format!("interlock-sandbox plan ${}/mo", cents / 100),
                ),
            None,
        )
        .map_err(ScenarioError::stripe(format!("create price {key}")))?;
    str_field(&created.body, "id", &format!("the created price {key}"))
}

/// One support case, saved as `case.json` in the cell directory. The approval in it is the
/// interlock lease and hand_check's authority; both re-read this file before every send, so an
/// approval revoked while the worker is dead is seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// `case-<10 hex>`.
    pub case_id: String,
    /// `INC-<6 hex>`: the incident the customer is compensated for.
    pub incident: String,
    /// The case's own test clock (`clock_...`).
    pub clock: String,
    /// The customer on that clock (`cus_...`).
    pub customer: String,
    /// The $30 subscription (`sub_...`).
    pub subscription: String,
    /// Support's approval of one credit of at most $10.
    pub approval: Approval,
    /// The support case as shown to the decider.
    pub text: String,
    /// The prices the case was opened with.
    pub prices: Prices,
}

impl CaseFile {
    /// Writes `case.json` into `cell_dir` durably (temp file, fsync, rename, directory fsync).
    pub fn save(&self, cell_dir: &Path) -> Result<(), ScenarioError> {
        write_json_durably(&cell_dir.join(CASE_FILE), self)
    }

    /// [`CaseFile::save`], returning when the new `case.json` became visible to readers (just
    /// before and just after the rename that puts it into place).
    pub fn save_timed(
        &self,
        cell_dir: &Path,
    ) -> Result<(std::time::Instant, std::time::Instant), ScenarioError> {
        super::write_json_durably_timed(&cell_dir.join(CASE_FILE), self)
    }

    /// Reads `case.json` from `cell_dir`.
    pub fn load(cell_dir: &Path) -> Result<CaseFile, ScenarioError> {
        read_json(&cell_dir.join(CASE_FILE))
    }

    /// The case as recorded in a results cell.
    pub fn to_results_case(&self) -> verify::results::Case {
        verify::results::Case {
            case_id: self.case_id.clone(),
            incident: self.incident.clone(),
            approval: self.approval.clone(),
            text: self.text.clone(),
        }
    }

    /// The request id of the one approved credit: `goodwill-credit:<case_id>` (the gate derives
    /// the effect id from it).
    pub fn request_id(&self) -> String {
        format!("goodwill-credit:{}", self.case_id)
    }

    /// The Idempotency-Key no_check and hand_check send: `goodwill-credit-<case_id>`.
    pub fn idempotency_key(&self) -> String {
        format!("goodwill-credit-{}", self.case_id)
    }
}

/// `case-` + 10 hex characters from `rng`.
pub(crate) fn new_case_id(rng: &mut impl rand::Rng) -> String {
    format!("case-{}", random_hex(rng, 10))
}

/// `INC-` + 6 hex characters from `rng`.
pub(crate) fn new_incident(rng: &mut impl rand::Rng) -> String {
    format!("INC-{}", random_hex(rng, 6))
}

pub(crate) fn random_hex(rng: &mut impl rand::Rng, chars: usize) -> String {
    let mut bytes = vec![0u8; chars.div_ceil(2)];
    rng.fill_bytes(&mut bytes);
    let mut s = hex::encode(bytes);
    s.truncate(chars);
    s
}

fn case_text(case_id: &str, incident: &str) -> String {
    format!(
        "Support case {case_id}. The customer is on the $30/month plan. During incident \
         {incident} they had no access to the product for three days. Support (support-lead) \
         approved ONE goodwill credit of $10, to be credited to the customer's account balance \
         against their next invoice. Please issue it."
    )
}

/// Opens a case: draws the case and incident ids from `rng`, creates a test clock frozen at
/// `clock_start` (Unix seconds; the run's recorded start, by default
/// [`verify::scenarios::billing_credit::DEFAULT_CLOCK_START`], never today's date), a customer on it paying
/// with `pm_card_visa`, and the $30 subscription (which creates and pays the first invoice).
/// `label` names the clock (e.g. `billing_credit before_send/renewal/interlock`). The caller
/// saves the case with [`CaseFile::save`].
pub fn open_case(
    client: &Client,
    prices: &Prices,
    label: &str,
    clock_start: i64,
    rng: &mut impl rand::Rng,
) -> Result<CaseFile, ScenarioError> {
    let case_id = new_case_id(rng);
    let incident = new_incident(rng);
    let name: String = format!("interlock-sandbox {label}")
        .chars()
        .take(300)
        .collect();
    let clock = client
        .post(
            "/v1/test_helpers/test_clocks",
            &Params::new()
                .set("frozen_time", clock_start)
                .set("name", &name),
            None,
        )
        .map_err(ScenarioError::stripe(format!(
            "create the test clock for {case_id}"
        )))?;
    let clock = str_field(&clock.body, "id", &format!("the test clock of {case_id}"))?;
    let customer = client
        .post(
            "/v1/customers",
            &Params::new()
                .set("test_clock", &clock)
                .set("name", format!("interlock-sandbox {case_id}"))
                .set("payment_method", "pm_card_visa")
                .set("invoice_settings[default_payment_method]", "pm_card_visa")
                .set("metadata[sandbox]", "interlock-sandbox"),
            None,
        )
        .map_err(ScenarioError::stripe(format!(
            "create the customer for {case_id}"
        )))?;
    let customer = str_field(&customer.body, "id", &format!("the customer of {case_id}"))?;
    let subscription = client
        .post(
            "/v1/subscriptions",
            &Params::new()
                .set("customer", &customer)
                .set("items[0][price]", &prices.plan),
            None,
        )
        .map_err(ScenarioError::stripe(format!(
            "create the subscription for {case_id}"
        )))?;
    let subscription = str_field(
        &subscription.body,
        "id",
        &format!("the subscription of {case_id}"),
    )?;
    Ok(CaseFile {
        approval: Approval {
            id: format!("approval-{case_id}"),
            approver: APPROVER.to_owned(),
            max_cents: CREDIT_CENTS,
            revoked: None,
        },
        text: case_text(&case_id, &incident),
        case_id,
        incident,
        clock,
        customer,
        subscription,
        prices: prices.clone(),
    })
}

/// A required string field of a Stripe object.
pub(crate) fn str_field(
    obj: &serde_json::Value,
    field: &str,
    what: &str,
) -> Result<String, ScenarioError> {
    obj.get(field)
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .ok_or_else(|| ScenarioError::Malformed {
            what: what.to_owned(),
            detail: format!("no string field `{field}`"),
        })
}

/// A required integer field of a Stripe object.
pub(crate) fn int_field(
    obj: &serde_json::Value,
    field: &str,
    what: &str,
) -> Result<i64, ScenarioError> {
    obj.get(field)
        .and_then(|v| v.as_i64())
        .ok_or_else(|| ScenarioError::Malformed {
            what: what.to_owned(),
            detail: format!("no integer field `{field}`"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn ids_have_the_stated_shapes_and_follow_the_rng() {
        let mut a = rand::rngs::StdRng::seed_from_u64(7);
        let mut b = rand::rngs::StdRng::seed_from_u64(7);
        let (c1, i1) = (new_case_id(&mut a), new_incident(&mut a));
        assert_eq!(
            (c1.clone(), i1.clone()),
            (new_case_id(&mut b), new_incident(&mut b))
        );
        assert_eq!(c1.len(), "case-".len() + 10);
        assert!(c1["case-".len()..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(i1.len(), "INC-".len() + 6);
        assert!(i1["INC-".len()..].chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn case_file_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let case = CaseFile {
            case_id: "case-0123456789".into(),
            incident: "INC-abcdef".into(),
            clock: "clock_1".into(),
            customer: "cus_1".into(),
            subscription: "sub_1".into(),
            approval: Approval {
                id: "approval-case-0123456789".into(),
                approver: APPROVER.into(),
                max_cents: 1000,
                revoked: None,
            },
            text: case_text("case-0123456789", "INC-abcdef"),
            prices: Prices {
                plan: "price_a".into(),
                small: "price_b".into(),
            },
        };
        case.save(dir.path()).unwrap();
        assert_eq!(CaseFile::load(dir.path()).unwrap(), case);
        assert_eq!(case.idempotency_key(), "goodwill-credit-case-0123456789");
        assert_eq!(case.request_id(), "goodwill-credit:case-0123456789");
        let text = std::fs::read_to_string(dir.path().join(CASE_FILE)).unwrap();
        assert!(text.contains("\"revoked\": null"), "{text}");
    }
}

//! The emulator's data: one [`Account`] per API key, holding every object.

use super::errors::ApiError;
use super::idempotency::IdempotencyStore;
use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

/// Ordered metadata (Stripe returns it as a JSON object).
pub(crate) type Metadata = BTreeMap<String, String>;

/// Applies a `metadata` update from a form: empty value unsets a key, an empty
/// `metadata=` clears all.
pub(crate) fn apply_metadata(target: &mut Metadata, update: Option<Option<Vec<(String, String)>>>) {
    match update {
        None => {}
        Some(None) => target.clear(),
        Some(Some(pairs)) => {
            for (k, v) in pairs {
                if v.is_empty() {
                    target.remove(&k);
                } else {
                    target.insert(k, v);
                }
            }
        }
    }
}

/// Wall-clock Unix seconds.
pub(crate) fn wall_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[derive(Debug, Clone)]
pub(crate) struct Clock {
    pub id: String,
    pub seq: u64,
    pub created: i64,
    pub name: Option<String>,
    pub frozen_time: i64,
    /// Set by an advance; the clock reports `advancing` in the advance answer
    /// only and `ready` from the next read on (the work is done synchronously).
    pub deletes_after: i64,
}

#[derive(Debug, Clone)]
pub(crate) struct Customer {
    pub id: String,
    pub seq: u64,
    pub created: i64,
    pub name: Option<String>,
    pub email: Option<String>,
    pub description: Option<String>,
    pub phone: Option<String>,
    pub metadata: Metadata,
    pub balance: i64,
    pub currency: Option<String>,
    pub test_clock: Option<String>,
    pub default_payment_method: Option<String>,
    pub invoice_prefix: String,
    pub next_invoice_sequence: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct Product {
    pub id: String,
    pub seq: u64,
    pub created: i64,
    pub name: String,
    pub description: Option<String>,
    pub active: bool,
    pub metadata: Metadata,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interval {
    Day,
    Week,
    Month,
    Year,
}

impl Interval {
    pub fn parse(s: &str) -> Option<Interval> {
        match s {
            "day" => Some(Interval::Day),
            "week" => Some(Interval::Week),
            "month" => Some(Interval::Month),
            "year" => Some(Interval::Year),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Interval::Day => "day",
            Interval::Week => "week",
            Interval::Month => "month",
            Interval::Year => "year",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Recurring {
    pub interval: Interval,
    pub interval_count: u32,
}

#[derive(Debug, Clone)]
pub(crate) struct Price {
    pub id: String,
    pub seq: u64,
    pub created: i64,
    pub product: String,
    pub currency: String,
    pub unit_amount: i64,
    pub recurring: Option<Recurring>,
    pub lookup_key: Option<String>,
    pub nickname: Option<String>,
    pub active: bool,
    pub metadata: Metadata,
}

#[derive(Debug, Clone)]
pub(crate) struct SubItem {
    pub id: String,
    pub created: i64,
    pub price: String,
    pub quantity: i64,
    pub period_start: i64,
    pub period_end: i64,
    pub metadata: Metadata,
}

#[derive(Debug, Clone)]
pub(crate) struct Subscription {
    pub id: String,
    pub seq: u64,
    pub created: i64,
    pub customer: String,
    pub status: &'static str,
    pub items: Vec<SubItem>,
    pub latest_invoice: Option<String>,
    pub billing_cycle_anchor: i64,
    pub start_date: i64,
    pub collection_method: &'static str,
    pub default_payment_method: Option<String>,
    pub description: Option<String>,
    pub metadata: Metadata,
    pub cancel_at_period_end: bool,
    pub canceled_at: Option<i64>,
    pub ended_at: Option<i64>,
    pub currency: String,
    pub test_clock: Option<String>,
    /// `billing_mode.type`: `flexible` (the default for new subscriptions
    /// since 2025-09-30.clover) or `classic`.
    pub billing_mode: &'static str,
    /// `billing_mode.flexible.proration_discounts` when flexible.
    pub proration_discounts: &'static str,
}

#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub id: String,
    pub amount: i64,
    pub currency: String,
    pub description: String,
    pub price: String,
    pub product: String,
    pub quantity: i64,
    pub period_start: i64,
    pub period_end: i64,
    pub proration: bool,
    pub subscription: Option<String>,
    pub subscription_item: Option<String>,
    pub invoice_item: Option<String>,
    /// For an unused-time credit: the invoice and line that billed that time.
    pub credited: Option<(String, Vec<String>)>,
    pub metadata: Metadata,
}

#[derive(Debug, Clone)]
pub(crate) struct Invoice {
    pub id: String,
    pub seq: u64,
    pub created: i64,
    pub customer: String,
    pub subscription: Option<String>,
    pub billing_reason: &'static str,
    pub status: &'static str,
    pub collection_method: &'static str,
    pub auto_advance: bool,
    pub currency: String,
    pub lines: Vec<Line>,
    pub number: Option<String>,
    pub period_start: i64,
    pub period_end: i64,
    pub subtotal: i64,
    pub total: i64,
    /// Set when finalized; before that the customer's current balance is shown.
    pub starting_balance: Option<i64>,
    pub ending_balance: Option<i64>,
    pub amount_due: i64,
    pub amount_paid: i64,
    pub amount_paid_off_stripe: i64,
    pub amount_remaining: i64,
    pub pre_payment_credit_notes_amount: i64,
    pub post_payment_credit_notes_amount: i64,
    pub attempted: bool,
    pub attempt_count: i64,
    pub finalized_at: Option<i64>,
    pub paid_at: Option<i64>,
    pub voided_at: Option<i64>,
    pub automatically_finalizes_at: Option<i64>,
    pub default_payment_method: Option<String>,
    pub test_clock: Option<String>,
    pub metadata: Metadata,
    pub description: Option<String>,
}

/// A pending invoice item (from a subscription change with `create_prorations`),
/// waiting for the subscription's next invoice.
#[derive(Debug, Clone)]
pub(crate) struct PendingItem {
    pub customer: String,
    pub subscription: String,
    pub line: Line,
}

#[derive(Debug, Clone)]
pub(crate) struct BalanceTxn {
    pub id: String,
    pub seq: u64,
    pub created: i64,
    pub customer: String,
    pub amount: i64,
    pub currency: String,
    pub ending_balance: i64,
    pub kind: &'static str,
    pub invoice: Option<String>,
    pub credit_note: Option<String>,
    pub description: Option<String>,
    pub metadata: Metadata,
}

#[derive(Debug, Clone)]
pub(crate) struct CreditNoteLine {
    pub id: String,
    pub amount: i64,
    pub description: Option<String>,
    pub invoice_line_item: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct CreditNote {
    pub id: String,
    pub seq: u64,
    pub created: i64,
    pub customer: String,
    pub invoice: String,
    pub currency: String,
    pub amount: i64,
    pub credit_amount: i64,
    pub out_of_band_amount: i64,
    pub pre_payment_amount: i64,
    pub post_payment_amount: i64,
    pub status: &'static str,
    pub kind: &'static str,
    pub memo: Option<String>,
    pub reason: Option<String>,
    pub metadata: Metadata,
    pub number: String,
    pub customer_balance_transaction: Option<String>,
    pub voided_at: Option<i64>,
    pub effective_at: i64,
    pub lines: Vec<CreditNoteLine>,
}

/// Everything one API key can see.
#[derive(Debug, Default)]
pub(crate) struct Account {
    seed: u64,
    counter: u64,
    pub clocks: BTreeMap<String, Clock>,
    pub customers: BTreeMap<String, Customer>,
    pub products: BTreeMap<String, Product>,
    pub prices: BTreeMap<String, Price>,
    pub subscriptions: BTreeMap<String, Subscription>,
    pub invoices: BTreeMap<String, Invoice>,
    pub pending_items: Vec<PendingItem>,
    pub balance_txns: BTreeMap<String, BalanceTxn>,
    pub credit_notes: BTreeMap<String, CreditNote>,
    pub payment_intents: BTreeMap<String, super::payments::PaymentIntent>,
    pub charges: BTreeMap<String, super::payments::Charge>,
    pub refunds: BTreeMap<String, super::payments::Refund>,
    pub idempotency: IdempotencyStore,
    /// Clocks whose last advance answer said `advancing`; they read `ready` next.
    pub advancing: BTreeMap<String, i64>,
    /// How long the next advance of this account takes (set by a
    /// [`crate::emulator::FaultAction::SlowAdvance`] rule for the advance request).
    pub next_advance_takes: Option<std::time::Duration>,
    /// Advances still under way: the clock's target and when it is reached. Until
    /// then the clock reads `advancing` and none of the advance's events has run.
    pub slow_advances: BTreeMap<String, (i64, std::time::Instant)>,
}

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fn base62(mut n: u64, width: usize) -> String {
    let mut out = vec![b'0'; width];
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(n % 62) as usize];
        n /= 62;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a, to derive a per-key seed for ids.
pub(crate) fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Account {
    pub fn new(api_key: &str) -> Account {
        Account {
            seed: fnv(api_key),
            ..Account::default()
        }
    }

    /// The next sequence number (orders objects created in the same second).
    pub fn next_seq(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    /// A new id with Stripe's prefix: deterministic per key, distinct across keys.
    pub fn new_id(&mut self, prefix: &str) -> String {
        let n = self.next_seq();
        format!(
            "{prefix}_{}{}",
            base62(mix(self.seed ^ mix(n)), 10),
            base62(n, 4)
        )
    }

    /// Random-looking but deterministic hex, e.g. for invoice prefixes.
    pub fn token(&mut self, len: usize) -> String {
        let n = self.next_seq();
        let text = format!("{:016X}", mix(self.seed.wrapping_add(n)));
        text.chars().take(len).collect()
    }

    /// "Now" for a customer: its test clock's frozen time, else the wall clock.
    pub fn now_for(&self, customer: &str) -> i64 {
        self.customers
            .get(customer)
            .and_then(|c| c.test_clock.as_ref())
            .and_then(|clock| self.clocks.get(clock))
            .map_or_else(wall_now, |clock| clock.frozen_time)
    }

    pub fn customer(&self, id: &str, param: &str) -> Result<&Customer, ApiError> {
        self.customers
            .get(id)
            .ok_or_else(|| ApiError::no_such("customer", id, param))
    }

    pub fn price(&self, id: &str, param: &str) -> Result<&Price, ApiError> {
        self.prices
            .get(id)
            .ok_or_else(|| ApiError::no_such("price", id, param))
    }

    pub fn invoice(&self, id: &str, param: &str) -> Result<&Invoice, ApiError> {
        self.invoices
            .get(id)
            .ok_or_else(|| ApiError::no_such("invoice", id, param))
    }

    pub fn subscription(&self, id: &str, param: &str) -> Result<&Subscription, ApiError> {
        self.subscriptions
            .get(id)
            .ok_or_else(|| ApiError::no_such("subscription", id, param))
    }

    pub fn clock(&self, id: &str, param: &str) -> Result<&Clock, ApiError> {
        self.clocks
            .get(id)
            .ok_or_else(|| ApiError::no_such("test_helpers.test_clock", id, param))
    }

    /// Records a customer balance transaction and moves the customer's balance.
    #[allow(clippy::too_many_arguments)]
    pub fn add_balance_txn(
        &mut self,
        customer: &str,
        amount: i64,
        currency: &str,
        kind: &'static str,
        created: i64,
        invoice: Option<String>,
        credit_note: Option<String>,
        description: Option<String>,
        metadata: Metadata,
    ) -> String {
        let id = self.new_id("cbtxn");
        let seq = self.next_seq();
        let ending_balance = match self.customers.get_mut(customer) {
            Some(c) => {
                c.balance += amount;
                if c.currency.is_none() {
                    c.currency = Some(currency.to_string());
                }
                c.balance
            }
            None => amount,
        };
        self.balance_txns.insert(
            id.clone(),
            BalanceTxn {
                id: id.clone(),
                seq,
                created,
                customer: customer.to_string(),
                amount,
                currency: currency.to_string(),
                ending_balance,
                kind,
                invoice,
                credit_note,
                description,
                metadata,
            },
        );
        id
    }
}

/// `req_...` for the `Request-Id` header: unique per emulator instance.
pub(crate) fn request_id(seed: u64, n: u64) -> String {
    format!("req_{}{}", base62(mix(seed ^ mix(n)), 10), base62(n, 4))
}

#[cfg(test)]
mod tests {
    use super::Account;

    #[test]
    fn ids_are_prefixed_unique_and_differ_by_key() {
        let mut a = Account::new("sk_test_a");
        let mut b = Account::new("sk_test_b");
        let (a1, a2, b1) = (a.new_id("cus"), a.new_id("cus"), b.new_id("cus"));
        assert!(a1.starts_with("cus_") && a1.len() == 18);
        assert_ne!(a1, a2);
        assert_ne!(a1, b1);
        assert_eq!(Account::new("sk_test_a").new_id("cus"), a1);
    }
}

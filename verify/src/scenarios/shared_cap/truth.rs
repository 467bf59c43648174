//! What Stripe holds for an order, and the two rules judged from it alone: the invariant and
//! each ticket's answer.

use super::{status_says_refunded, CAP_CENTS, REFUND_CENTS};
use serde::{Deserialize, Serialize};

/// One refund as Stripe holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RefundTruth {
    /// `re_...`.
    pub id: String,
    /// Cents refunded.
    pub amount: i64,
    /// `succeeded`, `pending`, `failed`, `canceled`.
    pub status: String,
    /// `metadata.ticket`, if any.
    pub ticket: Option<String>,
    /// `metadata.interlock_effect_id`, if any.
    pub effect_id: Option<String>,
    /// Stripe's `created`, Unix seconds.
    pub created: i64,
}

impl RefundTruth {
    /// A refund that moved money back (or may still: `pending`); `failed` and `canceled` did not.
    pub fn counts(&self) -> bool {
        self.status == "succeeded" || self.status == "pending"
    }
}

/// What Stripe holds for one order after both workers settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct OrderTruth {
    /// The payment (`pi_...`).
    pub payment_intent: String,
    /// Its charge (`ch_...`).
    pub charge: String,
    /// The charge's amount, cents.
    pub charge_amount: i64,
    /// The charge's `amount_refunded`, cents, as Stripe reports it.
    pub amount_refunded: i64,
    /// Every refund of the payment, newest first (every list page).
    pub refunds: Vec<RefundTruth>,
}

impl OrderTruth {
    /// Cents of every refund that counts ([`RefundTruth::counts`]), whatever its tags.
    pub fn refunded_cents(&self) -> i64 {
        self.refunds
            .iter()
            .filter(|r| r.counts())
            .fold(0i64, |sum, r| sum.saturating_add(r.amount))
    }

    /// The counting refunds tagged with `ticket`.
    pub fn of_ticket<'a>(&'a self, ticket: &'a str) -> impl Iterator<Item = &'a RefundTruth> {
        self.refunds
            .iter()
            .filter(move |r| r.counts() && r.ticket.as_deref() == Some(ticket))
    }

    /// Whether the refunds add up to the charge's `amount_refunded` (succeeded ones only: a
    /// pending refund is not yet in it). A mismatch means the reads were inconsistent.
    pub fn consistent(&self) -> bool {
        self.succeeded_cents() == self.amount_refunded
    }

    /// Cents of the succeeded refunds (saturating: a sum past `i64` cannot wrap).
    pub fn succeeded_cents(&self) -> i64 {
        self.refunds
            .iter()
            .filter(|r| r.status == "succeeded")
            .fold(0i64, |sum, r| sum.saturating_add(r.amount))
    }
}

/// The invariant: the refunds stay within the cap and exactly one $20 refund went out.
pub fn invariant_held(truth: &OrderTruth) -> bool {
    let counting: Vec<&RefundTruth> = truth.refunds.iter().filter(|r| r.counts()).collect();
    truth.refunded_cents() <= CAP_CENTS
        && counting.len() == 1
        && counting.iter().all(|r| r.amount == REFUND_CENTS)
}

/// Whether a ticket's final status agrees with Stripe: it says "refunded" iff a refund tagged
/// with the ticket exists.
pub fn answer_matches(status: &str, ticket: &str, truth: &OrderTruth) -> bool {
    status_says_refunded(status) == truth.of_ticket(ticket).next().is_some()
}

/// In words, what the invariant asks (for pages and summaries).
pub const WANT: &str = "refunds of the order stay within the $30 cap, and exactly one $20 \
                        refund goes out";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared_cap::PAYMENT_CENTS;

    fn refund(id: &str, amount: i64, ticket: Option<&str>, status: &str) -> RefundTruth {
        RefundTruth {
            id: id.into(),
            amount,
            status: status.into(),
            ticket: ticket.map(str::to_owned),
            effect_id: None,
            created: 1,
        }
    }

    fn truth(refunds: Vec<RefundTruth>) -> OrderTruth {
        let amount_refunded = refunds
            .iter()
            .filter(|r| r.status == "succeeded")
            .map(|r| r.amount)
            .sum();
        OrderTruth {
            payment_intent: "pi_1".into(),
            charge: "ch_1".into(),
            charge_amount: PAYMENT_CENTS,
            amount_refunded,
            refunds,
        }
    }

    #[test]
    fn one_twenty_dollar_refund_holds_two_do_not_and_none_does_not() {
        let one = truth(vec![refund("re_1", 2000, Some("t-a"), "succeeded")]);
        assert!(invariant_held(&one));
        let two = truth(vec![
            refund("re_2", 2000, Some("t-b"), "succeeded"),
            refund("re_1", 2000, Some("t-a"), "succeeded"),
        ]);
        assert!(!invariant_held(&two));
        assert!(!invariant_held(&truth(vec![])));
        // A refund that carries no ticket still counts.
        let untagged = truth(vec![
            refund("re_2", 2000, None, "succeeded"),
            refund("re_1", 2000, Some("t-a"), "succeeded"),
        ]);
        assert!(!invariant_held(&untagged));
        // A failed refund moved nothing.
        let failed = truth(vec![
            refund("re_2", 2000, Some("t-b"), "failed"),
            refund("re_1", 2000, Some("t-a"), "succeeded"),
        ]);
        assert!(invariant_held(&failed));
        // One refund of another amount is not the approved one.
        assert!(!invariant_held(&truth(vec![refund(
            "re_1",
            1000,
            Some("t-a"),
            "succeeded"
        )])));
    }

    #[test]
    fn answers_follow_the_tickets_own_refund() {
        let t = truth(vec![refund("re_1", 2000, Some("t-a"), "succeeded")]);
        assert!(answer_matches("REFUNDED", "t-a", &t));
        assert!(answer_matches("COMMITTED_BY_RETRY", "t-a", &t));
        assert!(!answer_matches("REFUSED:over_cap", "t-a", &t));
        assert!(answer_matches("REFUSED:over_budget", "t-b", &t));
        assert!(!answer_matches("FOUND_BY_LOOKUP", "t-b", &t));
    }

    #[test]
    fn consistency_compares_with_the_charge() {
        let mut t = truth(vec![refund("re_1", 2000, Some("t-a"), "succeeded")]);
        assert!(t.consistent());
        t.amount_refunded = 4000;
        assert!(!t.consistent());
    }
}

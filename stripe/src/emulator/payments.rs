//! Payments: PaymentIntents paid with Stripe's test cards, their charges, and
//! refunds of those charges, with the rules that decide them (which test card
//! succeeds or is declined, how much of a charge can still be refunded).
//! The endpoints live in `routes/payment_intents.rs` and `routes/refunds.rs`;
//! `docs/payments-and-refunds.md` says where each rule comes from.

use super::state::Metadata;

/// A test card: what a `pm_card_...` token stands for and how a payment with
/// it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TestCard {
    /// The token, such as `pm_card_visa`.
    pub token: &'static str,
    /// Card brand as Stripe names it (`visa`, `mastercard`).
    pub brand: &'static str,
    /// Last four digits of the test card number.
    pub last4: &'static str,
    /// `None` when a payment succeeds; else the decline.
    pub decline: Option<Decline>,
}

/// How a declined test card fails: the `decline_code` and message Stripe sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decline {
    /// `decline_code` of the error (the `code` is always `card_declined`).
    pub decline_code: &'static str,
    /// The error's message.
    pub message: &'static str,
}

/// The test cards the emulator knows. Any other `pm_...` is an unknown
/// PaymentMethod (404), as at Stripe for an id that does not exist.
pub(crate) const TEST_CARDS: [TestCard; 5] = [
    TestCard {
        token: "pm_card_visa",
        brand: "visa",
        last4: "4242",
        decline: None,
    },
    TestCard {
        token: "pm_card_mastercard",
        brand: "mastercard",
        last4: "4444",
        decline: None,
    },
    // Stripe's refund-failure card (4000 0000 0000 5126): the payment succeeds; its refunds are
    // `succeeded` when made and fail later ([`REFUND_FAILS`]).
    TestCard {
        token: REFUND_FAILS,
        brand: "visa",
        last4: "5126",
        decline: None,
    },
    TestCard {
        token: "pm_card_chargeDeclined",
        brand: "visa",
        last4: "0002",
        decline: Some(Decline {
            decline_code: "generic_decline",
            message: "Your card was declined.",
        }),
    },
    TestCard {
        token: "pm_card_chargeDeclinedInsufficientFunds",
        brand: "visa",
        last4: "9995",
        decline: Some(Decline {
            decline_code: "insufficient_funds",
            message: "Your card has insufficient funds.",
        }),
    },
];

/// The test card whose refunds fail after the fact: a refund of its payment is created
/// `succeeded`, and later (when the harness says, [`fail_refund`]) turns `failed` with
/// `failure_reason: expired_or_canceled_card`, as Stripe's does asynchronously.
pub(crate) const REFUND_FAILS: &str = "pm_card_refundFail";

/// The `failure_reason` a refund of the [`REFUND_FAILS`] card fails with.
pub(crate) const REFUND_FAILURE_REASON: &str = "expired_or_canceled_card";

/// The test card a token names, if the emulator knows it.
pub(crate) fn test_card(token: &str) -> Option<TestCard> {
    TEST_CARDS.iter().copied().find(|c| c.token == token)
}

/// A PaymentIntent.
#[derive(Debug, Clone)]
pub(crate) struct PaymentIntent {
    pub id: String,
    pub created: i64,
    pub amount: i64,
    pub currency: String,
    pub customer: Option<String>,
    pub description: Option<String>,
    pub metadata: Metadata,
    /// `requires_payment_method`, `requires_confirmation` or `succeeded`.
    pub status: &'static str,
    /// The PaymentMethod minted for the test card (`pm_...`), once given.
    pub payment_method: Option<String>,
    /// The test card behind `payment_method`.
    pub card: Option<TestCard>,
    /// `automatic_payment_methods`: `(enabled, allow_redirects)`, or `None`
    /// when the types were given explicitly.
    pub automatic: Option<(bool, &'static str)>,
    /// The charge of the last payment attempt.
    pub latest_charge: Option<String>,
    /// The error of the last failed attempt (Stripe's error object).
    pub last_payment_error: Option<serde_json::Value>,
    pub client_secret: String,
}

impl PaymentIntent {
    /// What was received: the amount once it succeeded.
    pub fn amount_received(&self) -> i64 {
        if self.status == "succeeded" {
            self.amount
        } else {
            0
        }
    }
}

/// A Charge: one payment attempt of a PaymentIntent.
#[derive(Debug, Clone)]
pub(crate) struct Charge {
    pub id: String,
    pub created: i64,
    pub amount: i64,
    pub currency: String,
    pub customer: Option<String>,
    pub description: Option<String>,
    pub metadata: Metadata,
    pub payment_intent: String,
    pub payment_method: String,
    pub card: TestCard,
    /// `txn_...` of a succeeded charge.
    pub balance_transaction: Option<String>,
    pub amount_refunded: i64,
}

impl Charge {
    /// A charge with no decline succeeded (and was captured: capture is
    /// automatic).
    pub fn succeeded(&self) -> bool {
        self.card.decline.is_none()
    }

    /// What a refund can still take back.
    pub fn refundable(&self) -> i64 {
        if self.succeeded() {
            self.amount - self.amount_refunded
        } else {
            0
        }
    }
}

/// A Refund of (part of) a charge.
#[derive(Debug, Clone)]
pub(crate) struct Refund {
    pub id: String,
    pub seq: u64,
    pub created: i64,
    pub amount: i64,
    pub currency: String,
    pub charge: String,
    pub payment_intent: String,
    pub reason: Option<String>,
    pub metadata: Metadata,
    pub balance_transaction: String,
    /// Once the refund failed: why (`status` is then `failed`, else `succeeded`).
    pub failure_reason: Option<&'static str>,
}

/// Why a refund cannot be made to fail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefundCannotFail {
    /// The account has no refund of that id.
    #[error("no refund {0} in this account")]
    NoSuchRefund(String),
    /// The refund's payment was not made with the refund-failure test card
    /// (`pm_card_refundFail`): its refunds do not fail.
    #[error("refund {0} is of a payment whose refunds do not fail (only pm_card_refundFail's do)")]
    NotFailingCard(String),
}

/// Makes refund `id` fail, as Stripe does some time after a refund of the refund-failure
/// card: its status becomes `failed` with [`REFUND_FAILURE_REASON`]. Failing a failed refund
/// again changes nothing. Only a refund of a [`REFUND_FAILS`] payment can fail.
pub(crate) fn fail_refund(
    refunds: &mut std::collections::BTreeMap<String, Refund>,
    charges: &std::collections::BTreeMap<String, Charge>,
    id: &str,
) -> Result<(), RefundCannotFail> {
    let refund = refunds
        .get_mut(id)
        .ok_or_else(|| RefundCannotFail::NoSuchRefund(id.to_owned()))?;
    let fails = charges
        .get(&refund.charge)
        .is_some_and(|c| c.card.token == REFUND_FAILS);
    if !fails {
        return Err(RefundCannotFail::NotFailingCard(id.to_owned()));
    }
    refund.failure_reason = Some(REFUND_FAILURE_REASON);
    Ok(())
}

/// Why a refund of a charge is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RefundRefused {
    /// The charge did not succeed: nothing to refund.
    NotPaid,
    /// The charge is refunded in full already.
    AlreadyRefunded,
    /// More than what remains refundable.
    ExceedsRemaining {
        /// The amount asked for.
        requested: i64,
        /// What remains refundable.
        remaining: i64,
    },
}

/// The amount a refund of `charge` takes: `requested`, or by default all that
/// remains; never more than remains (Stripe's only limit on refunds).
pub(crate) fn refund_amount(charge: &Charge, requested: Option<i64>) -> Result<i64, RefundRefused> {
    if !charge.succeeded() {
        return Err(RefundRefused::NotPaid);
    }
    let remaining = charge.refundable();
    if remaining <= 0 {
        return Err(RefundRefused::AlreadyRefunded);
    }
    match requested {
        Some(requested) if requested > remaining => Err(RefundRefused::ExceedsRemaining {
            requested,
            remaining,
        }),
        Some(requested) => Ok(requested),
        None => Ok(remaining),
    }
}

/// An amount in minor units as Stripe writes it in messages: `$20.00` for
/// dollars, the ISO code after the amount for other currencies.
pub(crate) fn money(amount: i64, currency: &str) -> String {
    let sign = if amount < 0 { "-" } else { "" };
    let (units, cents) = (amount.abs() / 100, amount.abs() % 100);
    if currency == "usd" {
        format!("{sign}${units}.{cents:02}")
    } else {
        format!("{sign}{units}.{cents:02} {}", currency.to_ascii_uppercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charge(amount: i64, refunded: i64, token: &str) -> Charge {
        Charge {
            id: "ch_1".into(),
            created: 0,
            amount,
            currency: "usd".into(),
            customer: None,
            description: None,
            metadata: Metadata::new(),
            payment_intent: "pi_1".into(),
            payment_method: "pm_1".into(),
            card: test_card(token).unwrap_or(TEST_CARDS[0]),
            balance_transaction: None,
            amount_refunded: refunded,
        }
    }

    #[test]
    fn a_refund_takes_what_is_asked_or_all_that_remains_but_never_more() {
        let c = charge(10_000, 2_000, "pm_card_visa");
        assert_eq!(refund_amount(&c, Some(2_000)), Ok(2_000));
        assert_eq!(refund_amount(&c, Some(8_000)), Ok(8_000));
        assert_eq!(refund_amount(&c, None), Ok(8_000));
        assert_eq!(
            refund_amount(&c, Some(8_001)),
            Err(RefundRefused::ExceedsRemaining {
                requested: 8_001,
                remaining: 8_000
            })
        );
        let full = charge(10_000, 10_000, "pm_card_visa");
        assert_eq!(
            refund_amount(&full, Some(1)),
            Err(RefundRefused::AlreadyRefunded)
        );
        let declined = charge(10_000, 0, "pm_card_chargeDeclined");
        assert_eq!(refund_amount(&declined, None), Err(RefundRefused::NotPaid));
    }

    #[test]
    fn amounts_are_written_as_stripe_writes_them() {
        assert_eq!(money(2_000, "usd"), "$20.00");
        assert_eq!(money(8_005, "usd"), "$80.05");
        assert_eq!(money(5, "usd"), "$0.05");
        assert_eq!(money(1_050, "eur"), "10.50 EUR");
    }

    #[test]
    fn only_the_known_test_cards_are_cards() {
        assert!(test_card("pm_card_visa").is_some_and(|c| c.decline.is_none()));
        assert!(test_card("pm_card_chargeDeclined").is_some_and(|c| c.decline.is_some()));
        assert!(test_card("pm_card_unknown").is_none());
    }
}

//! The shared_cap scenario's record and rules (DESIGN §4.7).
//!
//! Two support bots each decide a $20 goodwill refund on the same $100 payment; the policy caps
//! refunds at $30 per order. Stripe enforces only "refunds ≤ the charge". Every rule of the
//! scenario lives here, once: the invariant and each ticket's answer ([`truth`]), the proof
//! rule per column ([`proof`]), the per-column summary ([`summary`]), the results file's shape
//! ([`record`]) and the whole-file check ([`check`]). The runner judges by calling these, and
//! the site renders what they derived.

pub mod admissions;
pub mod bind;
pub mod check;
pub mod judge;
pub mod nemesis;
pub mod plan;
pub mod proof;
pub mod record;
pub mod summary;
pub mod truth;

pub use truth::{answer_matches, invariant_held, OrderTruth, RefundTruth, WANT};

/// The payment every order is made of, cents ($100).
pub const PAYMENT_CENTS: i64 = 10_000;
/// The policy cap on refunds per order, cents ($30).
pub const CAP_CENTS: i64 = 3_000;
/// The refund each ticket is approved for, cents ($20).
pub const REFUND_CENTS: i64 = 2_000;
/// The metadata key every column tags its refund with: the ticket id.
pub const TICKET_KEY: &str = "ticket";
/// The metadata key of the order.
pub const ORDER_KEY: &str = "order";

/// no_check and the hand-written columns: their POST created the refund.
pub const REFUNDED: &str = "REFUNDED";
/// The hand-written columns: the order's refunds plus this one would pass the cap.
pub const REFUSED_OVER_CAP: &str = "REFUSED:over_cap";

/// Whether a ticket's final status says its refund went out (or was already out): the
/// hand-written columns' own statuses (their words are billing_credit's but for the refund),
/// and every status of the gate that records the effect as committed.
pub fn status_says_refunded(status: &str) -> bool {
    use crate::scenarios::billing_credit::{FOUND_BY_LOOKUP, REPLAYED_BY_STRIPE};
    [REFUNDED, REPLAYED_BY_STRIPE, FOUND_BY_LOOKUP].contains(&status)
        || crate::protocol::Status::parse(status).is_some_and(crate::protocol::Status::is_committed)
}

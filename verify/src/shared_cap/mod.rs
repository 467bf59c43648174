//! The shared_cap scenario's record and rules (DESIGN §4.7).
//!
//! Two support bots each decide a $20 goodwill refund on the same $100 payment; the policy caps
//! refunds at $30 per order. Stripe enforces only "refunds ≤ the charge". Every rule of the
//! scenario lives here, once: the invariant and each ticket's answer ([`truth`]), the proof
//! rule per column ([`proof`]), the per-column summary ([`summary`]), the results file's shape
//! ([`record`]) and the whole-file check ([`check`]). The runner judges by calling these, and
//! the site renders what they derived.

pub mod admissions;
pub mod check;
pub mod judge;
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

/// Final statuses of the hand-written columns that mean "this ticket's refund went out".
pub const COLUMN_SENT_STATUSES: [&str; 3] = ["REFUNDED", "REPLAYED_BY_STRIPE", "FOUND_BY_LOOKUP"];

/// Final statuses of the gate that mean "the effect went out" (or was already out).
pub const GATE_SENT_STATUSES: [&str; 5] = [
    "COMMITTED",
    "COMMITTED_BY_RETRY",
    "COMMITTED_ON_QUERY",
    "REAPPLIED_AFTER_QUERY",
    "DUPLICATE_IGNORED",
];

/// Whether a ticket's final status says its refund went out.
pub fn status_says_refunded(status: &str) -> bool {
    COLUMN_SENT_STATUSES.contains(&status) || GATE_SENT_STATUSES.contains(&status)
}

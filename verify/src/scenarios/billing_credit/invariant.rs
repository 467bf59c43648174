//! The invariant: the case's credits in Stripe are exactly what the want rule allows.

use crate::results::{GroundTruth, Want};

/// The invariant: this case's credits in Stripe are exactly what the want rule allows.
pub fn invariant_held(truth: &GroundTruth, want: Want) -> bool {
    truth.case_credit_count == want.count && truth.case_credit_cents == want.cents
}

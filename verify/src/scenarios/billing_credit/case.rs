//! A case's identity: its request, its effect id, and where its test clock starts.

use serde_json::Value;
use sha2::Digest as _;

/// The effect id of the billing_credit case `case_id`: lowercase hex SHA-256 of the canonical JSON
/// of the request id `"goodwill-credit:<case_id>"`.
pub fn billing_credit_effect_id(case_id: &str) -> String {
    let request = Value::String(request_id(case_id));
    let bytes = crate::canonical::to_vec(&request).unwrap_or_default();
    hex::encode(sha2::Sha256::digest(&bytes))
}

/// The approved request of a billing_credit case: `goodwill-credit:<case_id>`.
pub fn request_id(case_id: &str) -> String {
    format!("goodwill-credit:{case_id}")
}

/// Where every case's test clock starts unless a run asks for another (`runner --clock-start`),
/// Unix seconds: 2026-09-13T22:40:00Z, the `generated` time of the original implementation's
/// published run on Stripe test mode, so a run's first billing period has the reference's length
/// (30 days). Never today's date: a run and every replay have one test-clock timeline (month
/// lengths, proration days) whatever day they run on. Stripe accepts a clock frozen in the past.
pub const DEFAULT_CLOCK_START: i64 = 1_789_339_200;

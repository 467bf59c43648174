//! The Stripe API versions the emulator answers: one table, read by the
//! `Stripe-Version` check, its refusal message and the endpoints whose
//! parameters differ between versions.
//!
//! A version is listed only after the shapes of every object the emulator
//! serves (customers, customer balance transactions, credit notes and their
//! lines, invoices and their lines, subscriptions and their items, products,
//! prices, test clocks, PaymentIntents, charges, refunds, errors) were compared
//! for it:
//!
//! * `2026-08-26.dahlia`: Stripe's OpenAPI spec of that version (pruned copy in
//!   `tests/data/`, checked field by field by `tests/it/shape.rs`) and Stripe's
//!   published example objects.
//! * `2026-10-28.endive`: the resource and parameter types of the official
//!   stripe-python 16.1.0 (generated from Stripe's spec of that version),
//!   compared with those of stripe-python 15.6.2 (`2026-08-26.dahlia`), and
//!   Stripe's changelog for 2026-09-30.endive. For these objects no response
//!   field was removed, renamed or retyped; the only breaking change is a
//!   request parameter, `billing_cycle_anchor` on a subscription update, which
//!   became an object with a `type` ([`AcceptedVersion::anchor_is_object`]).
//!   The fields endive adds are all nullable and absent from the emulator's
//!   answers (as are other fields it does not model): `status_details` on
//!   invoices and subscriptions, `current_trial` on subscription items,
//!   `tax_details` on products, `payment_record` on PaymentIntents. For
//!   payments, 2026-09-30.endive removed `payment_method_types` as a writable
//!   PaymentIntent parameter ([`AcceptedVersion::payment_method_types_writable`];
//!   Stripe's changelog entry of that version); a refund's transfer reversals
//!   only changed their type's name in the SDK.

/// One Stripe API version the emulator answers, and what differs in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceptedVersion {
    /// The `Stripe-Version` value, such as `2026-08-26.dahlia`.
    pub name: &'static str,
    /// Whether a subscription update takes `billing_cycle_anchor` as an object
    /// (`billing_cycle_anchor[type]=unchanged`, since 2026-09-30.endive) rather
    /// than a string (`billing_cycle_anchor=unchanged`).
    pub anchor_is_object: bool,
    /// Whether a PaymentIntent may be created with `payment_method_types`:
    /// until 2026-09-30.endive, which removed it as a writable parameter
    /// (400 `payment_method_types_no_longer_supported`) in favour of
    /// `allowed_payment_method_types`.
    pub payment_method_types_writable: bool,
}

/// Every Stripe API version the emulator answers, with the same object shapes.
/// The first is the account default (used when a request sends no
/// `Stripe-Version`) and is the version the crate's client pins,
/// [`crate::API_VERSION`].
pub const ACCEPTED_VERSIONS: [AcceptedVersion; 2] = [
    AcceptedVersion {
        name: crate::API_VERSION,
        anchor_is_object: false,
        payment_method_types_writable: true,
    },
    AcceptedVersion {
        // What stripe-python 16.1.0 and stripe-node 23.1.0 send by default.
        name: "2026-10-28.endive",
        anchor_is_object: true,
        payment_method_types_writable: false,
    },
];

/// The account default: the version a request without `Stripe-Version` gets.
pub(crate) fn default_version() -> AcceptedVersion {
    ACCEPTED_VERSIONS[0]
}

/// The accepted version with this name, if any.
pub(crate) fn accepted(name: &str) -> Option<AcceptedVersion> {
    ACCEPTED_VERSIONS.iter().copied().find(|v| v.name == name)
}

/// The accepted versions' names, for messages: `a, b`.
pub(crate) fn accepted_names() -> String {
    ACCEPTED_VERSIONS
        .iter()
        .map(|v| v.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_pinned_version_and_names_are_unique() {
        assert_eq!(default_version().name, crate::API_VERSION);
        for (i, v) in ACCEPTED_VERSIONS.iter().enumerate() {
            assert_eq!(accepted(v.name), Some(*v));
            assert!(ACCEPTED_VERSIONS[i + 1..].iter().all(|w| w.name != v.name));
        }
        assert_eq!(accepted("2020-08-27"), None);
    }
}

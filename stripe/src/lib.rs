//! A thin, synchronous Stripe client and a stateful Stripe emulator for the subset
//! of the API that Interlock's billing scenario uses.
//!
//! * [`Client`] talks to real Stripe (test mode only: live keys are refused) or to
//!   the emulator. It form-encodes parameters with Stripe's bracket syntax
//!   ([`Params`]), sends the pinned [`API_VERSION`] as `Stripe-Version` on every
//!   request, passes `Idempotency-Key`, surfaces `Idempotent-Replayed` and
//!   `Original-Request`, retries 429s and `Stripe-Should-Retry: true` inside the
//!   call's timeout ([`RetryPolicy`]), and turns failures into a [`StripeError`] that
//!   says whether the service *rejected* the request or whether the outcome is
//!   *unknown*.
//! * [`emulator`] is a loopback HTTP server (axum on its own tokio runtime) that
//!   keeps per-API-key state for products, prices, test clocks, customers and their
//!   balance, subscriptions, invoices, customer balance transactions, credit
//!   notes, and test-card PaymentIntents with their charges and refunds, with Stripe's idempotency rules (answers saved once the endpoint ran,
//!   errors included), an optional rate limit, and injectable faults.
//!
//! See `README.md` in this crate for what is modelled and what is not.

#![recursion_limit = "256"]

pub mod client;
pub mod emulator;
pub mod http;

pub use client::{
    ApiFailure, Client, ClientConfig, Params, Response, RetryPolicy, RetryRule, StripeError,
};

/// The Stripe API version this crate is written against.
///
/// The client sends it as `Stripe-Version` on every request and the emulator's
/// object shapes follow it: period fields live on subscription items, an invoice's
/// subscription is at `parent.subscription_details.subscription`, and a line's
/// proration flag is at `parent.subscription_item_details.proration`. The
/// emulator also answers the other versions in
/// [`emulator::ACCEPTED_VERSIONS`], whose shapes for its objects are the same.
pub const API_VERSION: &str = "2026-08-26.dahlia";

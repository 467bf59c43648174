//! Idempotency exactly as stripe-api.md §1.2: replay, parameter mismatch,
//! concurrent in-progress, failed validation not saved, retention, per-key scope.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use std::time::Duration;
use stripe::emulator::{Emulator, EmulatorConfig, FaultAction, FaultRule};
use stripe::Params;

#[test]
fn same_key_same_params_replays_the_saved_result() {
    let c = client();
    let case = open_case(&c);
    let first = credit(&c, &case, 1000, Some("goodwill-credit-case-1"));
    assert!(!first.replayed);
    let second = credit(&c, &case, 1000, Some("goodwill-credit-case-1"));
    assert!(second.replayed);
    assert_eq!(second.status, first.status);
    assert_eq!(second.body, first.body);
    assert_eq!(balance_txns(&c, &case).len(), 1);
    assert_eq!(balance(&c, &case), -1000);
}

#[test]
fn replay_survives_a_clock_advance_because_retention_is_wall_time() {
    // The original run saw REPLAYED_BY_STRIPE after a ~30-day test-clock advance.
    let c = client();
    let case = open_case(&c);
    credit(&c, &case, 1000, Some("k-after-send"));
    advance_through_renewal(&c, &case);
    assert!(credit(&c, &case, 1000, Some("k-after-send")).replayed);
}

#[test]
fn same_key_different_params_is_an_idempotency_error() {
    let c = client();
    let case = open_case(&c);
    credit(&c, &case, 1000, Some("k1"));
    let err = c
        .post(
            &format!("/v1/customers/{}/balance_transactions", case.customer),
            &Params::new().set("amount", -999).set("currency", "usd"),
            Some("k1"),
        )
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.error_type(), Some("idempotency_error"));
    assert!(err.message().contains("Try using a key other than 'k1'"));
    assert!(err.is_rejected());
    assert!(!err.outcome_unknown());
    assert_eq!(balance(&c, &case), -1000);
}

#[test]
fn bracket_forms_compare_equal() {
    let c = client();
    let a = c.post(
        "/v1/products",
        &Params::new()
            .set("name", "P")
            .push("expand[]", "x")
            .push("expand[]", "y"),
        Some("k-forms"),
    );
    // `x` cannot be expanded: a validation failure, so nothing is saved...
    assert!(a.is_err());
    // ...and the same key is free for the corrected request.
    let b = c
        .post(
            "/v1/products",
            &Params::new().set("name", "P"),
            Some("k-forms"),
        )
        .unwrap();
    assert!(!b.replayed);
    let again = c
        .post(
            "/v1/products",
            &Params::new().set("name", "P"),
            Some("k-forms"),
        )
        .unwrap();
    assert!(again.replayed);
    // `items[0][price]` and `items[][price]` are the same parameters.
    let case = open_case(&c);
    let p1 = Params::new()
        .set("customer", &case.customer)
        .set("items[0][price]", &case.price20);
    let p2 = Params::new()
        .set("customer", &case.customer)
        .set("items[][price]", &case.price20);
    let s1 = c.post("/v1/subscriptions", &p1, Some("k-sub")).unwrap();
    let s2 = c.post("/v1/subscriptions", &p2, Some("k-sub")).unwrap();
    assert!(s2.replayed);
    assert_eq!(s1.body["id"], s2.body["id"]);
}

#[test]
fn failed_validation_is_not_saved() {
    let c = client();
    let case = open_case(&c);
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);
    let err = c
        .post(&path, &Params::new().set("amount", -1000), Some("k-val"))
        .unwrap_err();
    assert_eq!(err.code(), Some("parameter_missing"));
    assert_eq!(err.param(), Some("currency"));
    let ok = credit(&c, &case, 1000, Some("k-val"));
    assert!(!ok.replayed);
}

#[test]
fn concurrent_request_with_the_same_key_gets_409_in_progress() {
    let emu = emulator();
    let c = client();
    let case = open_case(&c);
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);
    let fault = emu
        .faults()
        .add(FaultRule::new("POST", &path, FaultAction::Delay { ms: 600 }).times(1));
    let c2 = c.clone();
    let case2 = case.clone();
    let first = std::thread::spawn(move || credit(&c2, &case2, 1000, Some("k-busy")));
    // Wait until the first request is inside the emulator (its delay has begun), not a guess.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while emu.faults().fired(fault) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the first request never arrived"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let err = c
        .post(
            &path,
            &Params::new()
                .set("amount", -1000)
                .set("currency", "usd")
                .set("description", "Goodwill credit")
                .set("metadata[case_id]", "case-0123456789"),
            Some("k-busy"),
        )
        .unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert_eq!(err.code(), Some("idempotency_key_in_use"));
    assert!(err.outcome_unknown());
    assert!(!err.is_rejected());
    let first = first.join().unwrap();
    assert!(!first.replayed);
    assert_eq!(emu.faults().fired(fault), 1);
    // Once the first finished, the same request replays it.
    assert!(credit(&c, &case, 1000, Some("k-busy")).replayed);
    assert_eq!(balance_txns(&c, &case).len(), 1);
}

#[test]
fn keys_expire_after_the_retention_period() {
    let emu = Emulator::start(EmulatorConfig {
        idempotency_ttl: Duration::from_millis(300),
        ..EmulatorConfig::default()
    })
    .unwrap();
    let c = client_for(&emu);
    let case = open_case(&c);
    credit(&c, &case, 1000, Some("k-ttl"));
    assert!(credit(&c, &case, 1000, Some("k-ttl")).replayed);
    std::thread::sleep(Duration::from_millis(400));
    let after = credit(&c, &case, 1000, Some("k-ttl"));
    assert!(!after.replayed, "a pruned key makes a new request");
    assert_eq!(balance(&c, &case), -2000);
}

#[test]
fn keys_are_scoped_per_api_key() {
    let a = client();
    let b = client();
    let pa = a
        .post(
            "/v1/products",
            &Params::new().set("name", "A"),
            Some("shared"),
        )
        .unwrap();
    let pb = b
        .post(
            "/v1/products",
            &Params::new().set("name", "B"),
            Some("shared"),
        )
        .unwrap();
    assert!(!pb.replayed);
    assert_ne!(pa.body["id"], pb.body["id"]);
    // And the accounts cannot see each other's objects.
    let err = b
        .get(
            &format!("/v1/products/{}", pa.body["id"].as_str().unwrap()),
            &Params::new(),
        )
        .unwrap_err();
    assert_eq!(err.code(), Some("resource_missing"));
}

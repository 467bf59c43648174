//! Idempotency exactly as stripe-api.md §1.2: replay, parameter mismatch,
//! concurrent in-progress, failed validation not saved, retention, per-key scope.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use std::time::Duration;
use stripe::emulator::{Emulator, EmulatorConfig, FaultAction, FaultRule};
use stripe::{Client, ClientConfig, Params, RetryPolicy};

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

/// A fault rule for this key's credit POSTs.
fn credit_fault(key: &str, action: FaultAction) -> FaultRule {
    FaultRule::new("POST", "/v1/customers/*/balance_transactions", action).for_key(key)
}

#[test]
fn commit_then_500_is_the_saved_result_and_is_replayed_with_the_original_request() {
    let emu = emulator();
    let key = new_key();
    let c = keyed_client(emu, &key, Duration::from_secs(30));
    let case = open_case(&c);
    let rule = emu
        .faults()
        .add(credit_fault(&key, FaultAction::CommitThenError { status: 500 }).times(1));
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);
    let params = Params::new().set("amount", -1000).set("currency", "usd");
    let first = c.post(&path, &params, Some("k-500")).unwrap_err();
    // The service said a retry cannot help, so the client made one attempt.
    assert_eq!(emu.faults().fired(rule), 1);
    let f = first.api().expect("an API error").clone();
    assert_eq!((f.status, f.error_type.as_str()), (500, "api_error"));
    assert_eq!(f.should_retry, Some(false));
    assert!(!f.replayed && !first.is_replayed());
    assert!(first.outcome_unknown());
    // ...but the credit landed.
    assert_eq!(balance(&c, &case), -1000);
    // The same key answers the same 500, forever, naming the first request.
    for _ in 0..2 {
        let again = c.post(&path, &params, Some("k-500")).unwrap_err();
        let g = again.api().expect("an API error");
        assert_eq!(g.status, 500);
        assert!(g.replayed && again.is_replayed());
        assert_eq!(g.original_request, f.request_id);
        assert_ne!(g.request_id, f.request_id);
    }
    assert_eq!(balance_txns(&c, &case).len(), 1, "never applied twice");
    emu.faults().remove(rule);
}

#[test]
fn a_business_error_after_execution_began_is_saved_but_a_validation_error_is_not() {
    let c = client();
    let case = open_case(&c);
    let invoice = invoices(&c, &case)[0]["id"].as_str().unwrap().to_string();
    let pay = format!("/v1/invoices/{invoice}/pay");
    // The subscription_create invoice is paid already: the endpoint runs and says no.
    let first = c.post(&pay, &Params::new(), Some("k-pay")).unwrap_err();
    assert_eq!(first.status(), Some(400));
    assert!(!first.api().unwrap().replayed);
    let again = c.post(&pay, &Params::new(), Some("k-pay")).unwrap_err();
    assert!(again.api().unwrap().replayed, "{again}");
    assert_eq!(again.message(), first.message());
    // A parameter error is found before the endpoint runs: the key stays free.
    let bad = Params::new().set("paid_out_of_band", "maybe");
    assert_eq!(
        c.post(&pay, &bad, Some("k-pay-2")).unwrap_err().status(),
        Some(400)
    );
    let fresh = c.post(&pay, &Params::new(), Some("k-pay-2")).unwrap_err();
    assert!(!fresh.api().unwrap().replayed);
}

#[test]
fn a_key_reused_on_another_endpoint_names_both_endpoints() {
    let c = client();
    c.post(
        "/v1/products",
        &Params::new().set("name", "P"),
        Some("k-ep"),
    )
    .unwrap();
    let err = c
        .post(
            "/v1/test_helpers/test_clocks",
            &Params::new().set("frozen_time", START),
            Some("k-ep"),
        )
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.error_type(), Some("idempotency_error"));
    let m = err.message();
    assert!(
        m.contains("POST /v1/products") && m.contains("POST /v1/test_helpers/test_clocks"),
        "{m}"
    );
}

#[test]
fn a_rate_limited_request_saves_nothing_under_its_key() {
    let emu = emulator();
    let key = new_key();
    let c = Client::new(ClientConfig::new(emu.base_url(), &key).with_retry(RetryPolicy::none()))
        .unwrap();
    let case = open_case(&c);
    let rule = emu.faults().add(
        credit_fault(
            &key,
            FaultAction::RateLimit {
                retry_after_s: None,
            },
        )
        .times(1),
    );
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);
    let params = Params::new().set("amount", -1000).set("currency", "usd");
    let limited = c.post(&path, &params, Some("k-429")).unwrap_err();
    assert_eq!(limited.status(), Some(429));
    assert_eq!(limited.code(), Some("rate_limit"));
    assert!(limited.outcome_unknown());
    assert_eq!(balance(&c, &case), 0);
    let ok = c.post(&path, &params, Some("k-429")).unwrap();
    assert!(!ok.replayed, "the 429 was not saved: the request ran now");
    assert_eq!(emu.faults().fired(rule), 1);
    emu.faults().remove(rule);
}

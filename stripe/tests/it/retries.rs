//! The client's retries and the emulator's rate limit: 429 and
//! `Stripe-Should-Retry: true` are retried with backoff inside the call's
//! timeout under the same idempotency key; `Stripe-Should-Retry: false` and
//! plain errors are not; retries given up are an unknown outcome.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use std::time::{Duration, Instant};
use stripe::emulator::{Emulator, EmulatorConfig, FaultAction, FaultRule, RateLimit};
use stripe::{Client, ClientConfig, Params, RetryPolicy, StripeError};

const CREDITS: &str = "/v1/customers/*/balance_transactions";

fn credit_params() -> Params {
    Params::new().set("amount", -1000).set("currency", "usd")
}

#[test]
fn rate_limited_answers_are_retried_under_the_same_key_until_one_lands() {
    let emu = emulator();
    let key = new_key();
    let c = keyed_client(emu, &key, Duration::from_secs(30));
    let case = open_case(&c);
    let rule = emu.faults().add(
        FaultRule::new(
            "POST",
            CREDITS,
            FaultAction::RateLimit {
                retry_after_s: None,
            },
        )
        .for_key(&key)
        .times(2),
    );
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);
    let landed = c.post(&path, &credit_params(), Some("k-retry")).unwrap();
    assert_eq!(landed.attempts, 3);
    assert!(!landed.replayed);
    assert_eq!(emu.faults().fired(rule), 2);
    // The attempt that landed carried the key: the same call now replays it.
    let again = c.post(&path, &credit_params(), Some("k-retry")).unwrap();
    assert!(again.replayed);
    assert_eq!(again.original_request, landed.request_id);
    assert_eq!(balance_txns(&c, &case).len(), 1);
    emu.faults().remove(rule);
}

#[test]
fn should_retry_true_is_retried_and_plain_or_false_answers_are_not() {
    let emu = emulator();
    let key = new_key();
    let c = keyed_client(emu, &key, Duration::from_secs(30));
    let case = open_case(&c);
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);

    let retryable = emu.faults().add(
        FaultRule::new("POST", CREDITS, FaultAction::Retryable { status: 503 })
            .for_key(&key)
            .times(1),
    );
    let ok = c.post(&path, &credit_params(), Some("k-a")).unwrap();
    assert_eq!((ok.attempts, emu.faults().fired(retryable)), (2, 1));
    emu.faults().remove(retryable);

    let plain = emu.faults().add(
        FaultRule::new("POST", CREDITS, FaultAction::Error { status: 503 })
            .for_key(&key)
            .times(1),
    );
    let err = c.post(&path, &credit_params(), Some("k-b")).unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert!(matches!(err, StripeError::Api(_)), "not retried: {err}");
    emu.faults().remove(plain);

    let after_commit = emu.faults().add(
        FaultRule::new(
            "POST",
            CREDITS,
            FaultAction::CommitThenError { status: 500 },
        )
        .for_key(&key)
        .times(1),
    );
    let err = c.post(&path, &credit_params(), Some("k-c")).unwrap_err();
    assert_eq!(err.api().and_then(|f| f.should_retry), Some(false));
    assert_eq!(emu.faults().fired(after_commit), 1, "one attempt only");
    emu.faults().remove(after_commit);
    assert_eq!(balance(&c, &case), -2000, "k-a and k-c landed, k-b did not");
}

#[test]
fn retry_after_is_honoured() {
    let emu = emulator();
    let key = new_key();
    let c = keyed_client(emu, &key, Duration::from_secs(30));
    let rule = emu.faults().add(
        FaultRule::new(
            "GET",
            "/v1/customers",
            FaultAction::RateLimit {
                retry_after_s: Some(1),
            },
        )
        .for_key(&key)
        .times(1),
    );
    let started = Instant::now();
    let page = c.get("/v1/customers", &Params::new()).unwrap();
    assert_eq!(page.attempts, 2);
    assert!(started.elapsed() >= Duration::from_secs(1));
    emu.faults().remove(rule);
}

#[test]
fn retries_stop_at_the_overall_timeout_with_an_unknown_outcome() {
    let emu = emulator();
    let key = new_key();
    let budget = Duration::from_millis(800);
    let c = keyed_client(emu, &key, Duration::from_secs(30));
    let case = open_case(&c);
    let limited = keyed_client(emu, &key, budget);
    let rule = emu.faults().add(
        FaultRule::new(
            "POST",
            CREDITS,
            FaultAction::RateLimit {
                retry_after_s: None,
            },
        )
        .for_key(&key),
    );
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);
    let started = Instant::now();
    let err = limited
        .post(&path, &credit_params(), Some("k-out"))
        .unwrap_err();
    let StripeError::Exhausted { attempts, .. } = &err else {
        panic!("expected Exhausted, got {err}");
    };
    assert!(*attempts >= 2, "{err}");
    assert_eq!(emu.faults().fired(rule), *attempts);
    assert!(started.elapsed() < budget + Duration::from_millis(500));
    assert!(err.outcome_unknown() && !err.is_rejected());
    assert_eq!(err.code(), Some("rate_limit"));
    emu.faults().remove(rule);
    assert_eq!(balance(&c, &case), 0);
}

#[test]
fn the_emulator_rate_limit_is_off_by_default_and_shared_by_all_keys() {
    let emu = Emulator::start(EmulatorConfig {
        rate_limit: Some(RateLimit::per_second(1).with_burst(2)),
        ..EmulatorConfig::default()
    })
    .unwrap();
    let no_retry = |key: &str| {
        Client::new(ClientConfig::new(emu.base_url(), key).with_retry(RetryPolicy::none())).unwrap()
    };
    let (a, b) = (no_retry(&new_key()), no_retry(&new_key()));
    a.get("/v1/customers", &Params::new()).unwrap();
    b.get("/v1/customers", &Params::new()).unwrap();
    // The burst of two is spent by two different keys: one sandbox, one limit.
    let err = a.get("/v1/customers", &Params::new()).unwrap_err();
    assert_eq!(err.status(), Some(429));
    assert_eq!(err.code(), Some("rate_limit"));
    emu.set_rate_limit(None);
    a.get("/v1/customers", &Params::new()).unwrap();
}

#[test]
fn a_client_with_retries_gets_through_a_rate_limited_emulator() {
    let emu = Emulator::start(EmulatorConfig {
        rate_limit: Some(RateLimit::per_second(20).with_burst(2)),
        ..EmulatorConfig::default()
    })
    .unwrap();
    let c = keyed_client(&emu, &new_key(), Duration::from_secs(10));
    let attempts: u32 = (0..20)
        .map(|i| {
            c.post("/v1/products", &Params::new().set("name", i), None)
                .unwrap()
                .attempts
        })
        .sum();
    assert!(
        attempts > 20,
        "some requests met the limit and were retried"
    );
}

#[test]
fn the_sdk_policy_retries_a_409_until_the_held_request_under_its_key_has_landed() {
    let emu = emulator();
    let key = new_key();
    let c = keyed_client(emu, &key, Duration::from_secs(30));
    let case = open_case(&c);
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);
    let held = emu.faults().add(
        FaultRule::new("POST", CREDITS, FaultAction::Delay { ms: 600 })
            .for_key(&key)
            .times(1),
    );
    // The first request is held at the service, its client gone (as after a SIGKILL).
    let quick = keyed_client(emu, &key, Duration::from_millis(100));
    assert!(quick.post(&path, &credit_params(), Some("k-409")).is_err());
    // The default client takes the 409 as an unknown outcome and leaves it to its caller...
    let err = c.post(&path, &credit_params(), Some("k-409")).unwrap_err();
    assert_eq!(err.api().map(|f| f.status), Some(409));
    // ...the SDK's policy retries it and gets the first request's result.
    let sdk = Client::new(
        ClientConfig::new(emu.base_url(), &key)
            .with_timeout(Duration::from_secs(10))
            .with_retry(RetryPolicy::stripe_sdk()),
    )
    .unwrap();
    let landed = sdk.post(&path, &credit_params(), Some("k-409")).unwrap();
    assert!(
        landed.replayed,
        "the retry replays the held request's result"
    );
    assert!(landed.attempts >= 2);
    assert_eq!(balance_txns(&c, &case).len(), 1);
    emu.faults().remove(held);
}

#[test]
fn the_sdk_policy_gives_up_after_two_retries() {
    let emu = emulator();
    let key = new_key();
    let case = open_case(&keyed_client(emu, &key, Duration::from_secs(30)));
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);
    let failing = emu
        .faults()
        .add(FaultRule::new("POST", CREDITS, FaultAction::Error { status: 500 }).for_key(&key));
    let sdk = Client::new(
        ClientConfig::new(emu.base_url(), &key)
            .with_timeout(Duration::from_secs(30))
            .with_retry(RetryPolicy::stripe_sdk()),
    )
    .unwrap();
    let err = sdk
        .post(&path, &credit_params(), Some("k-500"))
        .unwrap_err();
    assert!(
        matches!(err, StripeError::Exhausted { attempts: 3, .. }),
        "{err}"
    );
    assert_eq!(emu.faults().fired(failing), 3);
    emu.faults().remove(failing);
}

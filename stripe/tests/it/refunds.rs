//! Payments and refunds as the shared_cap scenario uses them: a $100 payment
//! with the test card, $20 refunds on it, Stripe's refund-exceeds-charge error,
//! idempotent refunds, the refund list, and faults around `POST /v1/refunds`.
//! The facts behind them: `docs/payments-and-refunds.md`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use serde_json::Value;
use std::time::Duration;
use stripe::emulator::{FaultAction, FaultRule, ACCEPTED_VERSIONS};
use stripe::{Client, Params};

/// A $100 payment with the test card, confirmed at once.
fn pay(c: &Client, cents: i64) -> Value {
    c.post(
        "/v1/payment_intents",
        &Params::new()
            .set("amount", cents)
            .set("currency", "usd")
            .set("payment_method", "pm_card_visa")
            .set("confirm", "true")
            .set("automatic_payment_methods[enabled]", "true")
            .set("automatic_payment_methods[allow_redirects]", "never")
            .set("metadata[order]", "order-1"),
        None,
    )
    .unwrap()
    .body
}

fn refund_params(pi: &Value, cents: i64, ticket: &str) -> Params {
    Params::new()
        .set("payment_intent", pi["id"].as_str().unwrap())
        .set("amount", cents)
        .set("reason", "requested_by_customer")
        .set("metadata[ticket]", ticket)
}

fn refund(c: &Client, pi: &Value, cents: i64, ticket: &str, key: Option<&str>) -> stripe::Response {
    c.post("/v1/refunds", &refund_params(pi, cents, ticket), key)
        .unwrap()
}

fn charge_of(c: &Client, pi: &Value) -> Value {
    let pi = c
        .get(
            &format!("/v1/payment_intents/{}", pi["id"].as_str().unwrap()),
            &Params::new(),
        )
        .unwrap()
        .body;
    c.get(
        &format!("/v1/charges/{}", pi["latest_charge"].as_str().unwrap()),
        &Params::new(),
    )
    .unwrap()
    .body
}

fn refunds_of(c: &Client, pi: &Value) -> Vec<Value> {
    c.list_all(
        "/v1/refunds",
        &Params::new().set("payment_intent", pi["id"].as_str().unwrap()),
    )
    .unwrap()
}

/// A request straight over HTTP in API version `version`: status and body.
fn raw_post(key: &str, path: &str, form: &[(&str, &str)], version: &str) -> (u16, Value) {
    let http = stripe::http::client_builder().unwrap().build().unwrap();
    let body: Vec<String> = form.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let answer = http
        .post(format!("{}{path}", emulator().base_url()))
        .bearer_auth(key)
        .header("Stripe-Version", version)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body.join("&"))
        .send()
        .unwrap();
    (answer.status().as_u16(), answer.json().unwrap())
}

#[test]
fn a_payment_succeeds_at_once_and_a_refund_moves_its_charge() {
    let c = client();
    let pi = pay(&c, 10_000);
    assert_eq!(pi["object"], "payment_intent");
    assert_eq!(pi["status"], "succeeded");
    assert_eq!(pi["amount_received"], 10_000);
    assert!(pi["id"].as_str().unwrap().starts_with("pi_"));
    assert!(pi["payment_method"].as_str().unwrap().starts_with("pm_"));
    assert_eq!(pi["metadata"]["order"], "order-1");
    let charge = charge_of(&c, &pi);
    assert!(charge["id"].as_str().unwrap().starts_with("ch_"));
    assert_eq!(charge["payment_intent"], pi["id"]);
    assert_eq!(charge["paid"], true);
    assert_eq!(charge["captured"], true);
    assert_eq!(charge["status"], "succeeded");
    assert_eq!(charge["amount_captured"], 10_000);
    assert_eq!(charge["amount_refunded"], 0);
    assert_eq!(charge["refunded"], false);
    assert!(charge["balance_transaction"]
        .as_str()
        .unwrap()
        .starts_with("txn_"));

    let r = refund(&c, &pi, 2_000, "T-1", None).body;
    assert!(r["id"].as_str().unwrap().starts_with("re_"));
    assert_eq!(r["object"], "refund");
    assert_eq!(r["status"], "succeeded");
    assert_eq!(r["amount"], 2_000);
    assert_eq!(r["charge"], charge["id"]);
    assert_eq!(r["payment_intent"], pi["id"]);
    assert_eq!(r["reason"], "requested_by_customer");
    assert_eq!(r["metadata"]["ticket"], "T-1");
    let charge = charge_of(&c, &pi);
    assert_eq!(charge["amount_refunded"], 2_000);
    assert_eq!(charge["refunded"], false);
    assert_eq!(charge["refunds"]["data"][0]["id"], r["id"]);
    let fetched = c
        .get(
            &format!("/v1/refunds/{}", r["id"].as_str().unwrap()),
            &Params::new(),
        )
        .unwrap()
        .body;
    assert_eq!(fetched, r);
}

#[test]
fn two_20_dollar_refunds_on_a_100_dollar_payment_both_succeed() {
    // Stripe knows no per-order cap: only the charge bounds refunds.
    let c = client();
    let pi = pay(&c, 10_000);
    let first = refund(&c, &pi, 2_000, "T-1", Some("ticket-1"));
    let second = refund(&c, &pi, 2_000, "T-2", Some("ticket-2"));
    assert!(!first.replayed && !second.replayed);
    assert_ne!(first.body["id"], second.body["id"]);
    assert_eq!(charge_of(&c, &pi)["amount_refunded"], 4_000);
    assert_eq!(refunds_of(&c, &pi).len(), 2);
}

#[test]
fn a_refund_over_what_remains_is_refused_with_stripes_error_and_changes_nothing() {
    let c = client();
    let pi = pay(&c, 10_000);
    refund(&c, &pi, 2_000, "T-1", None);
    refund(&c, &pi, 2_000, "T-2", None);
    let err = c
        .post("/v1/refunds", &refund_params(&pi, 6_001, "T-3"), None)
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.error_type(), Some("invalid_request_error"));
    assert_eq!(
        err.message(),
        "Refund amount ($60.01) is greater than unrefunded amount on charge ($60.00)"
    );
    assert_eq!(err.param(), Some("amount"));
    assert_eq!(err.code(), None);
    assert!(err.is_rejected());
    assert_eq!(charge_of(&c, &pi)["amount_refunded"], 4_000);
    assert_eq!(refunds_of(&c, &pi).len(), 2);
    // Without an amount a refund takes all that remains; then nothing is left.
    let rest = c
        .post(
            "/v1/refunds",
            &Params::new().set("payment_intent", pi["id"].as_str().unwrap()),
            None,
        )
        .unwrap()
        .body;
    assert_eq!(rest["amount"], 6_000);
    let charge = charge_of(&c, &pi);
    assert_eq!(charge["refunded"], true);
    let again = c
        .post("/v1/refunds", &refund_params(&pi, 1, "T-4"), None)
        .unwrap_err();
    assert_eq!(again.code(), Some("charge_already_refunded"));
    assert_eq!(
        again.message(),
        format!(
            "Charge {} has already been refunded.",
            charge["id"].as_str().unwrap()
        )
    );
}

#[test]
fn an_idempotent_refund_replays_the_same_refund_and_creates_no_second_one() {
    let c = client();
    let pi = pay(&c, 10_000);
    let first = refund(&c, &pi, 2_000, "T-1", Some("refund-T-1"));
    let again = refund(&c, &pi, 2_000, "T-1", Some("refund-T-1"));
    assert!(!first.replayed);
    assert!(again.replayed);
    assert_eq!(again.body, first.body);
    assert_eq!(refunds_of(&c, &pi).len(), 1);
    assert_eq!(charge_of(&c, &pi)["amount_refunded"], 2_000);
}

#[test]
fn the_same_key_with_another_amount_is_an_idempotency_error() {
    let c = client();
    let pi = pay(&c, 10_000);
    refund(&c, &pi, 2_000, "T-1", Some("refund-T-1"));
    let err = c
        .post(
            "/v1/refunds",
            &refund_params(&pi, 2_500, "T-1"),
            Some("refund-T-1"),
        )
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.error_type(), Some("idempotency_error"));
    assert!(err.message().contains("'refund-T-1'"), "{}", err.message());
    assert_eq!(refunds_of(&c, &pi).len(), 1);
    assert_eq!(charge_of(&c, &pi)["amount_refunded"], 2_000);
}

#[test]
fn the_refund_list_pages_newest_first_and_names_every_refund_once() {
    let c = client();
    let pi = pay(&c, 10_000);
    let other = pay(&c, 5_000);
    refund(&c, &other, 100, "other", None);
    let made: Vec<String> = (1..=5)
        .map(|i| {
            refund(&c, &pi, 100 * i, &format!("T-{i}"), None).body["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let mut seen = Vec::new();
    let mut pages = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut params = Params::new()
            .set("payment_intent", pi["id"].as_str().unwrap())
            .set("limit", 2);
        if let Some(a) = &after {
            params = params.set("starting_after", a);
        }
        let page = c.get("/v1/refunds", &params).unwrap().body;
        assert_eq!(page["object"], "list");
        assert_eq!(page["url"], "/v1/refunds");
        let ids: Vec<String> = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect();
        pages.push((ids.len(), page["has_more"].as_bool().unwrap()));
        after = ids.last().cloned();
        seen.extend(ids);
        if !page["has_more"].as_bool().unwrap() {
            break;
        }
    }
    assert_eq!(pages, vec![(2, true), (2, true), (1, false)]);
    let newest_first: Vec<String> = made.iter().rev().cloned().collect();
    assert_eq!(seen, newest_first);
    // ending_before walks back towards the newest.
    let back = c
        .get(
            "/v1/refunds",
            &Params::new()
                .set("payment_intent", pi["id"].as_str().unwrap())
                .set("limit", 2)
                .set("ending_before", &made[1]),
        )
        .unwrap()
        .body;
    let back_ids: Vec<&str> = back["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(back_ids, vec![made[3].as_str(), made[2].as_str()]);
    assert_eq!(back["has_more"], true);
    // By charge: the same refunds; unfiltered: the other payment's too.
    let charge = charge_of(&c, &pi)["id"].as_str().unwrap().to_string();
    let by_charge = c
        .list_all("/v1/refunds", &Params::new().set("charge", &charge))
        .unwrap();
    assert_eq!(by_charge.len(), 5);
    assert_eq!(c.list_all("/v1/refunds", &Params::new()).unwrap().len(), 6);
}

#[test]
fn a_refund_survives_a_500_after_commit_and_the_retry_replays_the_saved_error() {
    let emu = emulator();
    let key = new_key();
    let c = keyed_client(emu, &key, Duration::from_secs(30));
    let pi = pay(&c, 10_000);
    let rule = emu.faults().add(
        FaultRule::new(
            "POST",
            "/v1/refunds",
            FaultAction::CommitThenError { status: 500 },
        )
        .for_key(&key)
        .times(1),
    );
    let params = refund_params(&pi, 2_000, "T-1");
    let first = c
        .post("/v1/refunds", &params, Some("refund-T-1"))
        .unwrap_err();
    assert_eq!(emu.faults().fired(rule), 1);
    assert_eq!(first.status(), Some(500));
    assert!(first.outcome_unknown());
    assert!(!first.is_replayed());
    // It landed.
    assert_eq!(refunds_of(&c, &pi).len(), 1);
    assert_eq!(charge_of(&c, &pi)["amount_refunded"], 2_000);
    // The worker's retry under the same key gets the saved 500, never a second refund.
    let retry = c
        .post("/v1/refunds", &params, Some("refund-T-1"))
        .unwrap_err();
    assert_eq!(retry.status(), Some(500));
    assert!(retry.is_replayed());
    assert_eq!(refunds_of(&c, &pi).len(), 1);
    assert_eq!(charge_of(&c, &pi)["amount_refunded"], 2_000);
    emu.faults().remove(rule);
}

#[test]
fn a_refund_whose_answer_is_dropped_landed_and_the_retry_replays_it() {
    let emu = emulator();
    let key = new_key();
    let c = keyed_client(emu, &key, Duration::from_secs(30));
    let pi = pay(&c, 10_000);
    let rule = emu.faults().add(
        FaultRule::new("POST", "/v1/refunds", FaultAction::CommitThenDrop)
            .for_key(&key)
            .times(1),
    );
    let params = refund_params(&pi, 2_000, "T-1");
    let lost = c
        .post("/v1/refunds", &params, Some("refund-T-1"))
        .unwrap_err();
    assert_eq!(emu.faults().fired(rule), 1);
    assert!(lost.outcome_unknown(), "{lost}");
    let listed = refunds_of(&c, &pi);
    assert_eq!(listed.len(), 1);
    let retry = c.post("/v1/refunds", &params, Some("refund-T-1")).unwrap();
    assert!(retry.replayed);
    assert_eq!(retry.body["id"], listed[0]["id"]);
    assert_eq!(refunds_of(&c, &pi).len(), 1);
    emu.faults().remove(rule);
}

#[test]
fn a_held_refund_makes_a_concurrent_retry_409_and_still_lands_once() {
    let emu = emulator();
    let key = new_key();
    let c = keyed_client(emu, &key, Duration::from_secs(30));
    let pi = pay(&c, 10_000);
    let rule = emu.faults().add(
        FaultRule::new("POST", "/v1/refunds", FaultAction::Delay { ms: 600 })
            .for_key(&key)
            .times(1),
    );
    let (c2, pi2) = (c.clone(), pi.clone());
    let first = std::thread::spawn(move || refund(&c2, &pi2, 2_000, "T-1", Some("refund-T-1")));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while emu.faults().fired(rule) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the refund never arrived"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let busy = c
        .post(
            "/v1/refunds",
            &refund_params(&pi, 2_000, "T-1"),
            Some("refund-T-1"),
        )
        .unwrap_err();
    assert_eq!(busy.status(), Some(409));
    assert_eq!(busy.code(), Some("idempotency_key_in_use"));
    assert!(!first.join().unwrap().replayed);
    assert_eq!(refunds_of(&c, &pi).len(), 1);
    emu.faults().remove(rule);
}

#[test]
fn a_held_refund_whose_client_gave_up_lands_and_only_then_counts_as_ended() {
    let emu = emulator();
    let key = new_key();
    // The client gives up after 200 ms; the refund is held 3 000 ms.
    let c = keyed_client(emu, &key, Duration::from_millis(200));
    let pi = pay(&c, 10_000);
    let rule = emu.faults().add(
        FaultRule::new("POST", "/v1/refunds", FaultAction::Delay { ms: 3_000 })
            .for_key(&key)
            .times(1),
    );
    let gave_up = c.post(
        "/v1/refunds",
        &refund_params(&pi, 2_000, "T-1"),
        Some("refund-T-1"),
    );
    assert!(
        gave_up.is_err(),
        "the client was answered within its timeout"
    );
    assert_eq!(emu.faults().fired(rule), 1);
    // Still held: affected, not ended.
    assert_eq!(emu.faults().ended(rule), 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while emu.faults().ended(rule) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the held refund never ended"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Once ended, the refund is there: the held request landed without its client.
    assert_eq!(refunds_of(&c, &pi).len(), 1);
    emu.faults().remove(rule);
}

#[test]
fn refunds_of_unknown_or_unpaid_payments_and_non_positive_amounts_are_refused() {
    let c = client();
    let err = c
        .post(
            "/v1/refunds",
            &Params::new().set("payment_intent", "pi_missing"),
            None,
        )
        .unwrap_err();
    assert_eq!(err.status(), Some(404));
    assert_eq!(err.code(), Some("resource_missing"));
    assert_eq!(err.param(), Some("payment_intent"));
    assert_eq!(err.message(), "No such payment_intent: 'pi_missing'");
    // Created but never confirmed: nothing was charged.
    let unpaid = c
        .post(
            "/v1/payment_intents",
            &Params::new()
                .set("amount", 10_000)
                .set("currency", "usd")
                .set("payment_method", "pm_card_visa"),
            None,
        )
        .unwrap()
        .body;
    assert_eq!(unpaid["status"], "requires_confirmation");
    assert!(unpaid["latest_charge"].is_null());
    let id = unpaid["id"].as_str().unwrap();
    let err = c
        .post(
            "/v1/refunds",
            &Params::new().set("payment_intent", id),
            None,
        )
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(
        err.message(),
        format!("This PaymentIntent ({id}) does not have a successful charge to refund.")
    );
    let paid = pay(&c, 10_000);
    for amount in [0, -5] {
        let err = c
            .post("/v1/refunds", &refund_params(&paid, amount, "T"), None)
            .unwrap_err();
        assert_eq!(err.status(), Some(400));
        assert_eq!(err.code(), Some("parameter_invalid_integer"));
        assert_eq!(err.param(), Some("amount"));
    }
    assert!(refunds_of(&c, &paid).is_empty());
}

#[test]
fn other_test_cards_and_missing_payment_methods_fail_as_stripe_fails_them() {
    let key = new_key();
    let c = keyed_client(emulator(), &key, Duration::from_secs(30));
    let base = || {
        Params::new()
            .set("amount", 10_000)
            .set("currency", "usd")
            .set("confirm", "true")
            .push("payment_method_types[]", "card")
    };
    // A declined card: 402 card_error, the PaymentIntent waits for another method.
    let declined = c
        .post(
            "/v1/payment_intents",
            &base().set("payment_method", "pm_card_chargeDeclined"),
            None,
        )
        .unwrap_err();
    assert_eq!(declined.status(), Some(402));
    assert_eq!(declined.error_type(), Some("card_error"));
    assert_eq!(declined.code(), Some("card_declined"));
    assert_eq!(declined.message(), "Your card was declined.");
    let form = [
        ("amount", "10000"),
        ("currency", "usd"),
        ("confirm", "true"),
        ("payment_method_types[]", "card"),
        ("payment_method", "pm_card_chargeDeclined"),
    ];
    let (status, body) = raw_post(&key, "/v1/payment_intents", &form, stripe::API_VERSION);
    assert_eq!(status, 402);
    let e = &body["error"];
    assert_eq!(e["decline_code"], "generic_decline");
    assert_eq!(e["payment_intent"]["status"], "requires_payment_method");
    assert_eq!(
        e["payment_intent"]["last_payment_error"]["code"],
        "card_declined"
    );
    assert_eq!(e["payment_intent"]["latest_charge"], e["charge"]);
    let failed = c
        .get(
            &format!("/v1/charges/{}", e["charge"].as_str().unwrap()),
            &Params::new(),
        )
        .unwrap()
        .body;
    assert_eq!(
        (failed["status"].as_str(), failed["paid"].as_bool()),
        (Some("failed"), Some(false))
    );
    // No payment method.
    let missing = c.post("/v1/payment_intents", &base(), None).unwrap_err();
    assert_eq!(missing.status(), Some(400));
    assert_eq!(missing.code(), Some("payment_intent_unexpected_state"));
    // An unknown payment method.
    let unknown = c
        .post(
            "/v1/payment_intents",
            &base().set("payment_method", "pm_nothing"),
            None,
        )
        .unwrap_err();
    assert_eq!(unknown.status(), Some(404));
    assert_eq!(unknown.param(), Some("payment_method"));
    // Dynamic payment methods that may redirect need a return_url.
    let redirects = c
        .post(
            "/v1/payment_intents",
            &Params::new()
                .set("amount", 10_000)
                .set("currency", "usd")
                .set("confirm", "true")
                .set("payment_method", "pm_card_visa"),
            None,
        )
        .unwrap_err();
    assert_eq!(redirects.status(), Some(400));
    assert!(redirects
        .message()
        .contains("you must provide a `return_url`"));
    let with_return = c
        .post(
            "/v1/payment_intents",
            &Params::new()
                .set("amount", 10_000)
                .set("currency", "usd")
                .set("confirm", "true")
                .set("payment_method", "pm_card_visa")
                .set("return_url", "https://example.invalid/back"),
            None,
        )
        .unwrap()
        .body;
    assert_eq!(with_return["status"], "succeeded");
}

#[test]
fn payment_method_types_is_writable_in_dahlia_only() {
    let key = new_key();
    let endive = ACCEPTED_VERSIONS
        .iter()
        .find(|v| !v.payment_method_types_writable)
        .expect("a version without payment_method_types");
    let pay_with = |types: &str, version: &str| {
        let form = [
            ("amount", "10000"),
            ("currency", "usd"),
            ("confirm", "true"),
            ("payment_method", "pm_card_visa"),
            (types, "card"),
        ];
        raw_post(&key, "/v1/payment_intents", &form, version)
    };
    let (status, body) = pay_with("payment_method_types[]", stripe::API_VERSION);
    assert_eq!((status, body["status"].as_str()), (200, Some("succeeded")));
    let (status, body) = pay_with("payment_method_types[]", endive.name);
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["code"],
        "payment_method_types_no_longer_supported"
    );
    for version in ACCEPTED_VERSIONS {
        let (status, body) = pay_with("allowed_payment_method_types[]", version.name);
        assert_eq!(
            (status, body["status"].as_str()),
            (200, Some("succeeded")),
            "{body}"
        );
    }
}

/// A payment with the refund-failure test card and a $20 refund of it, on a fresh key.
fn refund_on_failing_card() -> (String, Client, Value) {
    let key = new_key();
    let c = keyed_client(emulator(), &key, Duration::from_secs(30));
    let pi = c
        .post(
            "/v1/payment_intents",
            &Params::new()
                .set("amount", 2_000)
                .set("currency", "usd")
                .set("payment_method", "pm_card_refundFail")
                .set("confirm", "true")
                .set("automatic_payment_methods[enabled]", "true")
                .set("automatic_payment_methods[allow_redirects]", "never"),
            None,
        )
        .unwrap()
        .body;
    assert_eq!(pi["status"], "succeeded");
    let r = refund(&c, &pi, 2_000, "T-9", None).body;
    (key, c, r)
}

fn get_refund(c: &Client, r: &Value) -> Value {
    c.get(
        &format!("/v1/refunds/{}", r["id"].as_str().unwrap()),
        &Params::new(),
    )
    .unwrap()
    .body
}

#[test]
fn a_refund_of_the_refund_failure_card_succeeds_first_and_reads_failed_once_it_failed() {
    let (key, c, r) = refund_on_failing_card();
    assert_eq!(r["status"], "succeeded");
    assert!(r.get("failure_reason").is_none());
    assert_eq!(get_refund(&c, &r)["status"], "succeeded");
    let id = r["id"].as_str().unwrap();
    emulator().fail_refund(&key, id).unwrap();
    let failed = get_refund(&c, &r);
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["failure_reason"], "expired_or_canceled_card");
    assert_eq!(failed["amount"], 2_000);
    // Failing it again changes nothing.
    emulator().fail_refund(&key, id).unwrap();
    assert_eq!(get_refund(&c, &r), failed);
}

#[test]
fn only_a_refund_of_the_refund_failure_card_can_fail() {
    let key = new_key();
    let c = keyed_client(emulator(), &key, Duration::from_secs(30));
    let pi = pay(&c, 10_000);
    let r = refund(&c, &pi, 2_000, "T-1", None).body;
    let id = r["id"].as_str().unwrap();
    assert_eq!(
        emulator().fail_refund(&key, id),
        Err(stripe::emulator::RefundCannotFail::NotFailingCard(
            id.to_owned()
        ))
    );
    assert_eq!(get_refund(&c, &r)["status"], "succeeded");
    assert_eq!(
        emulator().fail_refund(&key, "re_missing"),
        Err(stripe::emulator::RefundCannotFail::NoSuchRefund(
            "re_missing".into()
        ))
    );
    // State is per key: another account's refund of that id is not this one's.
    let (_, _, other) = refund_on_failing_card();
    assert!(emulator()
        .fail_refund(&key, other["id"].as_str().unwrap())
        .is_err());
}

//! Transport-level behaviour: error envelopes, headers, pagination, live-key
//! refusal, fault injection.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use std::time::Duration;
use stripe::emulator::{FaultAction, FaultRule};
use stripe::{Client, ClientConfig, Params, StripeError};

/// Raw HTTP for checks the client hides (headers, bodies of errors).
fn raw(
    method: &str,
    path: &str,
    key: Option<&str>,
    body: &str,
) -> (u16, Vec<(String, String)>, serde_json::Value) {
    use std::io::{Read, Write};
    let emu = emulator();
    let mut s = std::net::TcpStream::connect(emu.addr()).unwrap();
    let auth = key
        .map(|k| format!("Authorization: Bearer {k}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .collect();
    (status, headers, serde_json::from_str(body).unwrap())
}

#[test]
fn every_error_is_a_stripe_envelope_with_a_request_id() {
    type Case<'a> = (
        &'a str,
        &'a str,
        Option<&'a str>,
        &'a str,
        u16,
        Option<&'a str>,
    );
    let cases: Vec<Case<'_>> = vec![
        ("GET", "/v1/nope", Some("sk_test_env"), "", 404, None),
        ("POST", "/", Some("sk_test_env"), "", 404, None),
        ("GET", "/v1/customers", None, "", 401, None),
        ("GET", "/v1/customers", Some("sk_live_abc"), "", 401, None),
        (
            "GET",
            "/v1/customers/cus_missing",
            Some("sk_test_env"),
            "",
            404,
            Some("resource_missing"),
        ),
        (
            "POST",
            "/v1/customers",
            Some("sk_test_env"),
            "bogus=1",
            400,
            Some("parameter_unknown"),
        ),
        (
            "POST",
            "/v1/customers",
            Some("sk_test_env"),
            "balance=abc",
            400,
            Some("parameter_invalid_integer"),
        ),
        (
            "POST",
            "/v1/products",
            Some("sk_test_env"),
            "",
            400,
            Some("parameter_missing"),
        ),
        (
            "GET",
            "/v1/invoices?limit=500",
            Some("sk_test_env"),
            "",
            400,
            None,
        ),
        (
            "POST",
            "/v1/customers",
            Some("sk_test_env"),
            "a[b=1",
            400,
            None,
        ),
    ];
    for (method, path, key, body, status, code) in cases {
        let (got, headers, json) = raw(method, path, key, body);
        assert_eq!(got, status, "{method} {path}: {json}");
        let err = &json["error"];
        assert!(err["type"].is_string(), "{method} {path}: {json}");
        assert!(err["message"].is_string());
        assert_eq!(err["code"].as_str(), code, "{method} {path}: {json}");
        let request_id = headers.iter().find(|(k, _)| k == "request-id").unwrap();
        assert!(request_id.1.starts_with("req_"));
        assert!(headers
            .iter()
            .any(|(k, v)| k == "content-type" && v == "application/json"));
    }
    let (_, _, json) = raw("DELETE", "/v1/foo", Some("sk_test_env"), "");
    assert_eq!(
        json["error"]["message"]
            .as_str()
            .unwrap()
            .split('.')
            .next()
            .unwrap(),
        "Unrecognized request URL (DELETE: /v1/foo)"
    );
    let (_, _, json) = raw("POST", "/v1/customers", Some("sk_test_env"), "bogus=1");
    assert_eq!(json["error"]["param"], "bogus");
    assert_eq!(
        json["error"]["message"],
        "Received unknown parameter: bogus"
    );
}

#[test]
fn headers_echo_the_version_and_idempotency_key() {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(emulator().addr()).unwrap();
    let body = "name=x";
    // "sk_test_hdr:" in base64
    let auth = "c2tfdGVzdF9oZHI6";
    write!(
        s,
        "POST /v1/products HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {auth}\r\nIdempotency-Key: abc\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let lower = text.to_ascii_lowercase();
    assert!(lower.starts_with("http/1.1 200"), "{text}");
    assert!(lower.contains(&format!("stripe-version: {}", stripe::API_VERSION)));
    assert!(lower.contains("idempotency-key: abc"));
}

#[test]
fn client_errors_carry_status_type_code_param() {
    let c = client();
    let err = c.get("/v1/customers/cus_nope", &Params::new()).unwrap_err();
    let f = err.api().expect("an API error");
    assert_eq!(f.status, 404);
    assert_eq!(f.error_type, "invalid_request_error");
    assert_eq!(f.code.as_deref(), Some("resource_missing"));
    assert_eq!(f.param.as_deref(), Some("id"));
    assert_eq!(f.message, "No such customer: 'cus_nope'");
    assert!(f.request_id.as_deref().unwrap().starts_with("req_"));
    assert!(err
        .to_string()
        .contains("HTTP 404 invalid_request_error (resource_missing)"));
    assert!(err.is_rejected());
    assert!(!err.outcome_unknown());
}

#[test]
fn list_all_pages_through_250_balance_transactions_newest_first() {
    let c = client();
    let case = open_case(&c);
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);
    for i in 0..250 {
        c.post(
            &path,
            &Params::new().set("amount", -(i + 1)).set("currency", "usd"),
            None,
        )
        .unwrap();
    }
    let first = c.get(&path, &Params::new()).unwrap().body;
    assert_eq!(first["object"], "list");
    assert_eq!(first["data"].as_array().unwrap().len(), 10, "default limit");
    assert_eq!(first["has_more"], true);
    assert_eq!(first["url"], path.as_str());
    let all = c.list_all(&path, &Params::new()).unwrap();
    assert_eq!(all.len(), 250);
    let amounts: Vec<i64> = all.iter().map(|t| t["amount"].as_i64().unwrap()).collect();
    let expected: Vec<i64> = (1..=250).rev().map(|i| -i).collect();
    assert_eq!(amounts, expected, "newest first, no gaps, no repeats");
    assert_eq!(all[0]["ending_balance"], -(250 * 251 / 2));
    // Pages of 7 give the same sequence.
    let small = c.list_all(&path, &Params::new().set("limit", 7)).unwrap();
    assert_eq!(small, all);
    // ending_before walks back towards newer objects.
    let id = all[20]["id"].as_str().unwrap();
    let before = c
        .get(
            &path,
            &Params::new().set("ending_before", id).set("limit", 5),
        )
        .unwrap()
        .body;
    let got: Vec<&serde_json::Value> = before["data"].as_array().unwrap().iter().collect();
    assert_eq!(got.len(), 5);
    assert_eq!(got[0]["id"], all[15]["id"]);
    assert_eq!(before["has_more"], true);
}

#[test]
fn live_keys_are_refused() {
    for key in ["sk_live_123", "rk_live_123"] {
        let err = Client::new(ClientConfig::new("http://127.0.0.1:1", key)).unwrap_err();
        assert!(matches!(err, StripeError::RefusedKey { .. }), "{err}");
        assert!(err.to_string().contains("live"));
        assert!(!err.to_string().contains("123"), "never print the key");
    }
    let err = Client::new(ClientConfig::stripe("pk_test_123")).unwrap_err();
    assert!(matches!(err, StripeError::RefusedKey { .. }));
    assert!(Client::new(ClientConfig::stripe("sk_test_123")).is_ok());
    assert!(Client::new(ClientConfig::new("ftp://x", "sk_test_1")).is_err());
    assert!(Client::new(ClientConfig::new("not a url", "sk_test_1")).is_err());
    assert!(Client::new(ClientConfig::new("http://127.0.0.1:1", "")).is_err());
}

#[test]
fn params_encode_brackets() {
    let p = Params::new()
        .set("amount", -1000)
        .set("metadata[case_id]", "case 1&2")
        .set("items[0][price]", "price_1")
        .push("expand[]", "a")
        .push("expand[]", "b")
        .set("amount", -500);
    assert_eq!(
        p.encode(),
        "amount=-500&metadata%5Bcase_id%5D=case%201%262&items%5B0%5D%5Bprice%5D=price_1&expand%5B%5D=a&expand%5B%5D=b"
    );
}

#[test]
fn commit_then_drop_is_an_unknown_outcome_and_the_change_exists() {
    let emu = emulator();
    let c = client();
    let case = open_case(&c);
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);
    let rule = emu
        .faults()
        .add(FaultRule::new("POST", &path, FaultAction::CommitThenDrop).times(1));
    let err = c
        .post(
            &path,
            &Params::new().set("amount", -1000).set("currency", "usd"),
            Some("k-drop"),
        )
        .unwrap_err();
    assert!(matches!(err, StripeError::Connection { .. }), "{err:?}");
    assert!(err.outcome_unknown());
    assert!(!err.is_rejected());
    assert_eq!(emu.faults().fired(rule), 1);
    assert_eq!(balance(&c, &case), -1000, "the change landed");
    // A retry under the same key is answered from the saved result.
    let retry = c
        .post(
            &path,
            &Params::new().set("amount", -1000).set("currency", "usd"),
            Some("k-drop"),
        )
        .unwrap();
    assert!(retry.replayed);
    assert_eq!(balance_txns(&c, &case).len(), 1);
}

#[test]
fn injected_5xx_is_unknown_and_applies_nothing() {
    let emu = emulator();
    let key = new_key();
    let c = keyed_client(emu, &key, Duration::from_secs(30));
    let case = open_case(&c);
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);
    let rule = emu.faults().add(
        FaultRule::new(
            "POST",
            "/v1/customers/*/balance_transactions",
            FaultAction::Error { status: 503 },
        )
        .for_key(&key)
        .times(1),
    );
    let params = Params::new().set("amount", -1000).set("currency", "usd");
    let err = c.post(&path, &params, Some("k-5xx")).unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert_eq!(err.error_type(), Some("api_error"));
    assert!(err.outcome_unknown());
    assert_eq!(balance(&c, &case), 0, "nothing applied");
    // Not saved under the key: the retry runs.
    let ok = c.post(&path, &params, Some("k-5xx")).unwrap();
    assert!(!ok.replayed);
    assert_eq!(emu.faults().fired(rule), 1);
    emu.faults().remove(rule);
}

#[test]
fn timeout_is_unknown_and_the_request_still_lands() {
    let emu = emulator();
    let key = new_key();
    let c = keyed_client(emu, &key, Duration::from_secs(30));
    let slow = keyed_client(emu, &key, Duration::from_millis(200));
    let case = open_case(&c);
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);
    emu.faults().add(
        FaultRule::new("POST", &path, FaultAction::Delay { ms: 700 })
            .for_key(&key)
            .times(1),
    );
    let err = slow
        .post(
            &path,
            &Params::new().set("amount", -1000).set("currency", "usd"),
            None,
        )
        .unwrap_err();
    assert!(matches!(err, StripeError::Timeout { .. }), "{err:?}");
    assert!(err.outcome_unknown());
    // The emulator finishes the delayed request after the client gave up: wait for it to land.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while balance(&c, &case) != -1000 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        balance(&c, &case),
        -1000,
        "the request landed after the client gave up"
    );
}

#[test]
fn client_debug_never_shows_the_whole_key() {
    let c = keyed_client(
        emulator(),
        "sk_test_supersecretvalue",
        Duration::from_secs(1),
    );
    let text = format!("{c:?}");
    assert!(!text.contains("supersecretvalue"), "{text}");
}

//! Runs the `stripe-behaviours` probe against the emulator started in-process and checks that
//! every behaviour it probes agrees with what Stripe documents, that the ones it cannot probe
//! say why, and that it refuses what it must (no key, a live key, nobody listening).
//!
//! The emulator answers in about a millisecond, so two requests 25 ms apart never overlap on
//! it; the test gives the credit endpoint a hold (the emulator's `Delay` fault, which has no
//! HTTP control) of the kind a Stripe write takes, so the 409 probe meets a request that is
//! still executing, as it would at Stripe.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::process::{Command, Output};
use stripe::emulator::{Emulator, EmulatorConfig, FaultAction, FaultRule};

const PROBE: &str = env!("CARGO_BIN_EXE_stripe-behaviours");

/// Every behaviour the probe reports, and whether it probes it.
const PROBED: [&str; 11] = [
    "idempotency_key_in_use",
    "idempotent_replay",
    "idempotent_replayed_header",
    "idempotency_params_mismatch",
    "idempotency_key_other_endpoint",
    "balance_transaction_no_precondition",
    "list_newest_first",
    "saved_error_replayed",
    "refund_over_remaining",
    "concurrent_refunds",
    "concurrent_refunds_over_remaining",
];
const UNPROBED: [&str; 3] = [
    "saved_5xx_replayed",
    "idempotency_key_expiry",
    "rate_limit_429",
];

fn probe(base_url: &str, key: Option<&str>) -> Output {
    let mut command = Command::new(PROBE);
    command.args(["--base-url", base_url, "--timeout", "10"]);
    command.env_remove("STRIPE_SECRET_KEY");
    if let Some(key) = key {
        command.env("STRIPE_SECRET_KEY", key);
    }
    command.output().expect("the probe binary runs")
}

/// The probe's lines by behaviour, each line checked to have the five fields.
fn lines(out: &Output) -> BTreeMap<String, Value> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut by_name = BTreeMap::new();
    for line in stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        for field in ["behaviour", "doc", "expected", "observed"] {
            assert!(v[field].is_string(), "{field} missing: {line}");
        }
        assert!(v["doc"].as_str().unwrap().starts_with("https://"), "{line}");
        assert!(v["agrees"].is_boolean() || v["agrees"].is_null(), "{line}");
        let name = v["behaviour"].as_str().unwrap().to_owned();
        assert!(
            by_name.insert(name, v).is_none(),
            "a behaviour twice: {line}"
        );
    }
    by_name
}

fn held_credits(emulator: &stripe::emulator::RunningEmulator, key: &str) {
    emulator.faults().add(
        FaultRule::new(
            "POST",
            "/v1/customers/*/balance_transactions",
            FaultAction::Delay { ms: 400 },
        )
        .for_key(key),
    );
}

#[test]
fn every_probed_behaviour_agrees_on_the_emulator_and_the_others_say_why() {
    let emulator = Emulator::start(EmulatorConfig::default()).unwrap();
    let key = "sk_test_behaviours";
    held_credits(&emulator, key);
    let out = probe(&emulator.base_url(), Some(key));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let by_name = lines(&out);
    let names: Vec<&str> = by_name.keys().map(String::as_str).collect();
    let mut all: Vec<&str> = PROBED.iter().chain(&UNPROBED).copied().collect();
    all.sort_unstable();
    assert_eq!(names, all, "stderr: {stderr}");
    for name in PROBED {
        let line = &by_name[name];
        assert_eq!(line["agrees"], Value::Bool(true), "{name}: {line}");
    }
    for name in UNPROBED {
        let line = &by_name[name];
        assert!(line["agrees"].is_null(), "{name}: {line}");
        let why = line["why"].as_str().unwrap_or_default();
        assert!(why.len() > 40, "{name} does not say why: {line}");
    }
    assert!(
        by_name["idempotency_key_in_use"]["observed"]
            .as_str()
            .unwrap()
            .contains("409 invalid_request_error/idempotency_key_in_use"),
        "{}",
        by_name["idempotency_key_in_use"]
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn without_a_hold_the_409_probe_says_it_saw_no_overlap_rather_than_agreeing() {
    let emulator = Emulator::start(EmulatorConfig::default()).unwrap();
    let out = probe(&emulator.base_url(), Some("sk_test_no_hold"));
    let line = &lines(&out)["idempotency_key_in_use"];
    // On a loaded machine the two may overlap after all (then it agrees); never a disagreement.
    if line["agrees"].is_null() {
        assert!(
            line["why"].as_str().unwrap().contains("no overlap"),
            "{line}"
        );
    } else {
        assert_eq!(line["agrees"], Value::Bool(true), "{line}");
    }
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_missing_or_live_key_and_an_absent_service_are_usage_errors() {
    let emulator = Emulator::start(EmulatorConfig::default()).unwrap();
    let url = emulator.base_url();
    for (key, says) in [
        (None, "STRIPE_SECRET_KEY is not set"),
        (Some("sk_live_abcdef"), "not a test-mode key"),
        (Some("pk_test_abcdef"), "not a test-mode key"),
    ] {
        let out = probe(&url, key);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(!stderr.contains("abcdef"), "the key was printed: {stderr}");
        assert!(out.stdout.is_empty());
    }
    // A port nobody listens on: a one-line error naming where, and exit 2.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let out = probe(&format!("http://127.0.0.1:{closed}"), Some("sk_test_x"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{closed}")), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    // A restricted key reads only, on the emulator: the setup is refused, and says how to fix.
    let out = probe(&url, Some("rk_test_behaviours"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("403"), "{stderr}");
}

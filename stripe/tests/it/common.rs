//! Helpers shared by the integration tests: an emulator, clients with their own
//! keys, and the billing scenario's set-up calls (original-behaviour §4.3, §4.6).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use stripe::emulator::{Emulator, EmulatorConfig, RunningEmulator};
use stripe::{Client, ClientConfig, Params};

/// Test-clock start used by every case: 2026-09-21T…Z.
pub const START: i64 = 1_790_000_000;

/// One emulator shared by the tests of a test binary (state is per key).
pub fn emulator() -> &'static RunningEmulator {
    static EMU: OnceLock<RunningEmulator> = OnceLock::new();
    EMU.get_or_init(|| Emulator::start(EmulatorConfig::default()).expect("emulator starts"))
}

/// A client with a fresh `sk_test_` key, so each test sees an empty account.
pub fn client() -> Client {
    client_for(emulator())
}

pub fn client_for(emu: &RunningEmulator) -> Client {
    keyed_client(emu, &new_key(), std::time::Duration::from_secs(30))
}

/// A fresh `sk_test_` key.
pub fn new_key() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "sk_test_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A client for this key and timeout.
pub fn keyed_client(emu: &RunningEmulator, key: &str, timeout: std::time::Duration) -> Client {
    Client::new(ClientConfig::new(emu.base_url(), key).with_timeout(timeout)).expect("client")
}

/// Finds the monthly price with this amount by lookup key, creating it if absent.
pub fn ensure_price(c: &Client, cents: i64) -> String {
    let key = format!("interlock-sandbox-billing-credit-{cents}");
    let found = c
        .get(
            "/v1/prices",
            &Params::new().push("lookup_keys[]", &key).set("limit", 1),
        )
        .unwrap();
    if let Some(id) = found.body["data"][0]["id"].as_str() {
        return id.to_string();
    }
    let created = c
        .post(
            "/v1/prices",
            &Params::new()
                .set("unit_amount", cents)
                .set("currency", "usd")
                .set("recurring[interval]", "month")
                .set("lookup_key", &key)
                .set(
                    "product_data[name]",
                    format!("interlock-sandbox plan ${}/mo", cents / 100),
                ),
            None,
        )
        .unwrap();
    created.body["id"].as_str().unwrap().to_string()
}

#[derive(Debug, Clone)]
pub struct Case {
    pub clock: String,
    pub customer: String,
    pub subscription: String,
    pub item: String,
    pub price30: String,
    pub price20: String,
    pub period_end: i64,
}

/// Clock at [`START`], customer with `pm_card_visa`, $30/month subscription.
pub fn open_case(c: &Client) -> Case {
    let price30 = ensure_price(c, 3000);
    let price20 = ensure_price(c, 2000);
    let clock = c
        .post(
            "/v1/test_helpers/test_clocks",
            &Params::new()
                .set("frozen_time", START)
                .set("name", "interlock-sandbox billing_credit test"),
            None,
        )
        .unwrap()
        .body;
    let clock = clock["id"].as_str().unwrap().to_string();
    let customer = c
        .post(
            "/v1/customers",
            &Params::new()
                .set("test_clock", &clock)
                .set("name", "Test customer")
                .set("payment_method", "pm_card_visa")
                .set("invoice_settings[default_payment_method]", "pm_card_visa")
                .set("metadata[sandbox]", "interlock-sandbox"),
            None,
        )
        .unwrap()
        .body;
    let customer = customer["id"].as_str().unwrap().to_string();
    let sub = c
        .post(
            "/v1/subscriptions",
            &Params::new()
                .set("customer", &customer)
                .set("items[0][price]", &price30),
            None,
        )
        .unwrap()
        .body;
    Case {
        clock,
        customer,
        subscription: sub["id"].as_str().unwrap().to_string(),
        item: sub["items"]["data"][0]["id"].as_str().unwrap().to_string(),
        price30,
        price20,
        period_end: sub["items"]["data"][0]["current_period_end"]
            .as_i64()
            .unwrap(),
    }
}

/// Advances the clock to the current period end + 3 h and polls until ready.
pub fn advance_through_renewal(c: &Client, case: &Case) {
    let sub = c
        .get(
            &format!("/v1/subscriptions/{}", case.subscription),
            &Params::new(),
        )
        .unwrap()
        .body;
    let end = sub["items"]["data"][0]["current_period_end"]
        .as_i64()
        .unwrap();
    let answer = c
        .post(
            &format!("/v1/test_helpers/test_clocks/{}/advance", case.clock),
            &Params::new().set("frozen_time", end + 3 * 3600),
            None,
        )
        .unwrap()
        .body;
    assert_eq!(answer["status"], "advancing");
    assert_eq!(
        answer["status_details"]["advancing"]["target_frozen_time"],
        end + 3 * 3600
    );
    for _ in 0..100 {
        let clock = c
            .get(
                &format!("/v1/test_helpers/test_clocks/{}", case.clock),
                &Params::new(),
            )
            .unwrap()
            .body;
        if clock["status"] == "ready" {
            assert_eq!(clock["frozen_time"], end + 3 * 3600);
            return;
        }
    }
    panic!("clock never became ready");
}

/// The goodwill credit: −`cents` with the case's metadata.
pub fn credit(c: &Client, case: &Case, cents: i64, key: Option<&str>) -> stripe::Response {
    c.post(
        &format!("/v1/customers/{}/balance_transactions", case.customer),
        &Params::new()
            .set("amount", -cents)
            .set("currency", "usd")
            .set("description", "Goodwill credit")
            .set("metadata[case_id]", "case-0123456789"),
        key,
    )
    .unwrap()
}

pub fn balance(c: &Client, case: &Case) -> i64 {
    c.get(&format!("/v1/customers/{}", case.customer), &Params::new())
        .unwrap()
        .body["balance"]
        .as_i64()
        .unwrap()
}

pub fn balance_txns(c: &Client, case: &Case) -> Vec<Value> {
    c.list_all(
        &format!("/v1/customers/{}/balance_transactions", case.customer),
        &Params::new(),
    )
    .unwrap()
}

pub fn invoices(c: &Client, case: &Case) -> Vec<Value> {
    c.list_all(
        "/v1/invoices",
        &Params::new().set("customer", &case.customer),
    )
    .unwrap()
}

/// The first (newest) `subscription_cycle` invoice.
pub fn renewal_invoice(c: &Client, case: &Case) -> Value {
    invoices(c, case)
        .into_iter()
        .find(|i| i["billing_reason"] == "subscription_cycle")
        .expect("a renewal invoice")
}

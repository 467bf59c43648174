//! What the emulator accepts as Stripe does: the requested API version,
//! lists that leave test-clock objects out unless asked, `created` filters,
//! restricted test keys, and the `billing_mode` of new subscriptions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use std::time::Duration;
use stripe::{Client, ClientConfig, Params};

/// `GET /v1/customers` with this `Stripe-Version` header (or none).
fn with_version(version: Option<&str>) -> (u16, serde_json::Value) {
    let http = stripe::http::client_builder().unwrap().build().unwrap();
    let mut request = http
        .get(format!("{}/v1/customers", emulator().base_url()))
        .bearer_auth(new_key());
    if let Some(v) = version {
        request = request.header("Stripe-Version", v);
    }
    let answer = request.send().unwrap();
    let status = answer.status().as_u16();
    (status, answer.json().unwrap())
}

#[test]
fn the_accepted_versions_or_none_are_served_and_other_versions_are_refused() {
    use stripe::emulator::ACCEPTED_VERSIONS;
    assert_eq!(with_version(None).0, 200);
    assert_eq!(ACCEPTED_VERSIONS[0].name, stripe::API_VERSION);
    let names: Vec<&str> = ACCEPTED_VERSIONS.iter().map(|v| v.name).collect();
    // The pinned version and the one the official SDKs send by default.
    assert!(names.contains(&"2026-10-28.endive"), "{names:?}");
    for name in &names {
        assert_eq!(with_version(Some(name)).0, 200, "{name}");
    }
    let (status, body) = with_version(Some("2020-08-27"));
    assert_eq!(status, 400);
    let message = body["error"]["message"].as_str().unwrap();
    for name in &names {
        assert!(message.contains(name), "{message}");
    }
    let (status, body) = with_version(Some("latest please"));
    assert_eq!(status, 400);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Invalid Stripe API version"));
}

#[test]
fn customer_and_subscription_lists_leave_test_clock_objects_out_unless_asked() {
    let c = client();
    let case = open_case(&c);
    let plain = c
        .post(
            "/v1/customers",
            &Params::new().set("name", "no clock"),
            None,
        )
        .unwrap()
        .body;
    let ids = |path: &str, params: Params| -> Vec<String> {
        c.list_all(path, &params)
            .unwrap()
            .iter()
            .map(|o| o["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids("/v1/customers", Params::new()),
        [plain["id"].as_str().unwrap()]
    );
    assert_eq!(
        ids(
            "/v1/customers",
            Params::new().set("test_clock", &case.clock)
        ),
        [case.customer.as_str()]
    );
    assert!(ids("/v1/subscriptions", Params::new()).is_empty());
    assert_eq!(
        ids(
            "/v1/subscriptions",
            Params::new().set("test_clock", &case.clock)
        ),
        [case.subscription.as_str()]
    );
    assert_eq!(
        ids(
            "/v1/subscriptions",
            Params::new().set("customer", &case.customer)
        ),
        [case.subscription.as_str()]
    );
}

#[test]
fn balance_transactions_filter_by_created() {
    let c = client();
    let case = open_case(&c);
    credit(&c, &case, 1000, None);
    advance_through_renewal(&c, &case);
    credit(&c, &case, 500, None);
    let path = format!("/v1/customers/{}/balance_transactions", case.customer);
    let amounts = |params: Params| -> Vec<i64> {
        c.list_all(&path, &params)
            .unwrap()
            .iter()
            .map(|t| t["amount"].as_i64().unwrap())
            .collect()
    };
    // Newest first: the second credit, the renewal consuming the first, the first.
    assert_eq!(amounts(Params::new()), [-500, 1000, -1000]);
    assert_eq!(
        amounts(Params::new().set("created[gt]", case.period_end)),
        [-500, 1000]
    );
    assert_eq!(amounts(Params::new().set("created[lte]", START)), [-1000]);
    assert_eq!(amounts(Params::new().set("created", START)), [-1000]);
    let err = c
        .get(&path, &Params::new().set("created[after]", START))
        .unwrap_err();
    assert_eq!(err.code(), Some("parameter_unknown"));
}

#[test]
fn a_restricted_key_reads_its_secret_keys_account_and_cannot_write() {
    let secret = new_key();
    let restricted = format!("rk_test_{}", secret.trim_start_matches("sk_test_"));
    let client = |key: &str| {
        Client::new(
            ClientConfig::new(emulator().base_url(), key).with_timeout(Duration::from_secs(10)),
        )
        .unwrap()
    };
    let writer = client(&secret);
    let reader = client(&restricted);
    let id = writer
        .post("/v1/customers", &Params::new(), None)
        .unwrap()
        .body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let read = reader
        .get(&format!("/v1/customers/{id}"), &Params::new())
        .unwrap();
    assert_eq!(read.body["id"], id.as_str());
    let err = reader
        .post("/v1/customers", &Params::new(), None)
        .unwrap_err();
    assert_eq!(err.api().map(|f| f.status), Some(403));
    assert!(err.to_string().contains("permission_error"), "{err}");
}

#[test]
fn new_subscriptions_are_flexible_unless_classic_is_asked_for() {
    let c = client();
    let case = open_case(&c);
    let sub = c
        .get(
            &format!("/v1/subscriptions/{}", case.subscription),
            &Params::new(),
        )
        .unwrap()
        .body;
    assert_eq!(sub["billing_mode"]["type"], "flexible");
    assert_eq!(
        sub["billing_mode"]["flexible"]["proration_discounts"],
        "included"
    );
    let classic = c
        .post(
            "/v1/subscriptions",
            &Params::new()
                .set("customer", &case.customer)
                .set("items[0][price]", &case.price20)
                .set("billing_mode[type]", "classic"),
            None,
        )
        .unwrap()
        .body;
    assert_eq!(classic["billing_mode"]["type"], "classic");
    assert!(classic["billing_mode"]["flexible"].is_null());
}

/// `billing_cycle_anchor` on a subscription update: a string in
/// 2026-08-26.dahlia, an object with a `type` since 2026-09-30.endive; each
/// version refuses the other's form.
#[test]
fn billing_cycle_anchor_takes_each_versions_form() {
    let key = new_key();
    let c = stripe::Client::new(ClientConfig::new(emulator().base_url(), &key)).unwrap();
    let case = open_case(&c);
    let update = |version: &str, body: &str| -> (u16, serde_json::Value) {
        let answer = stripe::http::client_builder()
            .unwrap()
            .build()
            .unwrap()
            .post(format!(
                "{}/v1/subscriptions/{}",
                emulator().base_url(),
                case.subscription
            ))
            .bearer_auth(&key)
            .header("Stripe-Version", version)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body.to_string())
            .send()
            .unwrap();
        (answer.status().as_u16(), answer.json().unwrap())
    };
    let dahlia = "2026-08-26.dahlia";
    let endive = "2026-10-28.endive";
    assert_eq!(update(dahlia, "billing_cycle_anchor=unchanged").0, 200);
    assert_eq!(
        update(endive, "billing_cycle_anchor%5Btype%5D=unchanged").0,
        200
    );
    let (status, body) = update(dahlia, "billing_cycle_anchor%5Btype%5D=unchanged");
    assert_eq!(
        (status, &body["error"]["param"]),
        (400, &"billing_cycle_anchor".into())
    );
    let (status, body) = update(endive, "billing_cycle_anchor=unchanged");
    assert_eq!(
        (status, &body["error"]["param"]),
        (400, &"billing_cycle_anchor".into())
    );
    let (status, body) = update(endive, "billing_cycle_anchor%5Btype%5D=now");
    assert_eq!(status, 400);
    assert_eq!(body["error"]["param"], "billing_cycle_anchor[type]");
}

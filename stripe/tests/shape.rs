//! Shape check: every kind of object the emulator emits validates against
//! Stripe's published OpenAPI schemas (`2026-08-26.dahlia`, pruned copy in
//! `tests/data/`). The validator covers the subset of OpenAPI 3.0 the pruned
//! schemas use: `$ref`, `type`, `properties`, `required`, `nullable`, `anyOf`,
//! `enum`, `items`, `maxLength`, `additionalProperties`. It is stricter than the
//! spec in one way: a field that the schema does not define is reported, so the
//! emulator cannot drift into fields of another API version.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Map, Value};
use stripe::Params;

struct Spec {
    schemas: Map<String, Value>,
}

impl Spec {
    fn load() -> Spec {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/stripe-openapi-pruned.json"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let spec: Value = serde_json::from_str(&text).unwrap();
        Spec {
            schemas: spec["components"]["schemas"].as_object().unwrap().clone(),
        }
    }

    fn check(&self, schema_name: &str, value: &Value) -> Vec<String> {
        let mut errors = Vec::new();
        let schema = json_ref(schema_name);
        self.validate(&schema, value, schema_name, &mut errors);
        errors
    }

    fn validate(&self, schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
        if schema.get("x-pruned").is_some() {
            return;
        }
        if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
            let name = r.rsplit('/').next().unwrap();
            let Some(target) = self.schemas.get(name) else {
                errors.push(format!("{at}: schema {name} missing from the pruned spec"));
                return;
            };
            return self.validate(target, v, at, errors);
        }
        if v.is_null() {
            if schema.get("nullable") != Some(&Value::Bool(true)) {
                errors.push(format!("{at}: null but not nullable"));
            }
            return;
        }
        if let Some(any) = schema.get("anyOf").and_then(Value::as_array) {
            let mut all = Vec::new();
            for option in any {
                let mut e = Vec::new();
                self.validate(option, v, at, &mut e);
                if e.is_empty() {
                    return;
                }
                all.extend(e);
            }
            errors.push(format!(
                "{at}: matches no anyOf option ({})",
                all.join("; ")
            ));
            return;
        }
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
            if !allowed.contains(v) {
                errors.push(format!("{at}: {v} not in enum {allowed:?}"));
            }
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("string") => match v.as_str() {
                Some(s) => {
                    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
                        if s.chars().count() as u64 > max {
                            errors.push(format!("{at}: longer than {max}"));
                        }
                    }
                }
                None => errors.push(format!("{at}: {} is not a string", short(v))),
            },
            Some("integer") if !(v.is_i64() || v.is_u64()) => {
                errors.push(format!("{at}: {v} is not an integer"));
            }
            Some("number") if !v.is_number() => {
                errors.push(format!("{at}: {v} is not a number"));
            }
            Some("boolean") if !v.is_boolean() => {
                errors.push(format!("{at}: {v} is not a boolean"));
            }
            Some("integer" | "number" | "boolean") => {}
            Some("array") => match v.as_array() {
                Some(items) => {
                    if let Some(item_schema) = schema.get("items") {
                        for (i, item) in items.iter().enumerate() {
                            self.validate(item_schema, item, &format!("{at}[{i}]"), errors);
                        }
                    }
                }
                None => errors.push(format!("{at}: {v} is not an array")),
            },
            Some("object") => match v.as_object() {
                Some(obj) => self.validate_object(schema, obj, at, errors),
                None => errors.push(format!("{at}: {v} is not an object")),
            },
            Some(other) => errors.push(format!("{at}: unsupported schema type {other}")),
            None => {}
        }
    }

    fn validate_object(
        &self,
        schema: &Value,
        obj: &Map<String, Value>,
        at: &str,
        errors: &mut Vec<String>,
    ) {
        let empty = Map::new();
        let props = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        for required in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = required.as_str().unwrap();
            if !obj.contains_key(name) {
                errors.push(format!("{at}: required field {name} missing"));
            }
        }
        for (key, value) in obj {
            let path = format!("{at}.{key}");
            match (props.get(key), schema.get("additionalProperties")) {
                (Some(s), _) => self.validate(s, value, &path, errors),
                (None, Some(extra)) if extra.is_object() => {
                    self.validate(extra, value, &path, errors)
                }
                (None, Some(Value::Bool(true))) => {}
                (None, _) => errors.push(format!("{path}: field not in the schema")),
            }
        }
    }
}

fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.len() > 80 {
        format!("{}...", &text[..80])
    } else {
        text
    }
}

fn json_ref(name: &str) -> Value {
    serde_json::json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// Runs the scenario's calls and collects one or more samples of every object
/// kind the emulator emits, with the schema each must match.
fn samples() -> Vec<(&'static str, String, Value)> {
    let c = client();
    let mut out: Vec<(&'static str, String, Value)> = Vec::new();
    let mut add =
        |schema: &'static str, label: &str, v: Value| out.push((schema, label.to_string(), v));

    let case = open_case(&c);
    let get = |path: &str| c.get(path, &Params::new()).unwrap().body;
    let clock_path = format!("/v1/test_helpers/test_clocks/{}", case.clock);
    add("test_helpers.test_clock", "clock ready", get(&clock_path));
    let product = c
        .post(
            "/v1/products",
            &Params::new().set("name", "Plan").set("metadata[a]", "b"),
            None,
        )
        .unwrap()
        .body;
    add("product", "product", product);
    let price = get(&format!("/v1/prices/{}", case.price30));
    add(
        "product",
        "product of a price",
        get(&format!(
            "/v1/products/{}",
            price["product"].as_str().unwrap()
        )),
    );
    add("price", "recurring price", price);
    let one_time = c
        .post(
            "/v1/prices",
            &Params::new()
                .set("unit_amount", 500)
                .set("currency", "usd")
                .set("product_data[name]", "Once"),
            None,
        )
        .unwrap()
        .body;
    add("price", "one-time price", one_time);
    add(
        "customer",
        "customer",
        get(&format!("/v1/customers/{}", case.customer)),
    );
    let credit = credit(&c, &case, 1000, Some("k-shape"));
    add("customer_balance_transaction", "adjustment", credit.body);

    // Downgrade, then renew: proration lines, applied_to_invoice.
    let sub = c
        .post(
            &format!("/v1/subscriptions/{}", case.subscription),
            &Params::new()
                .set("items[0][id]", &case.item)
                .set("items[0][price]", &case.price20)
                .set("metadata[k]", "v"),
            None,
        )
        .unwrap()
        .body;
    add("subscription", "subscription after update", sub.clone());
    add(
        "subscription_item",
        "subscription item",
        sub["items"]["data"][0].clone(),
    );
    let advancing = c
        .post(
            &format!("{clock_path}/advance"),
            &Params::new().set("frozen_time", case.period_end + 3 * 3600),
            None,
        )
        .unwrap()
        .body;
    add("test_helpers.test_clock", "clock advancing", advancing);
    add(
        "test_helpers.test_clock",
        "clock after advance",
        get(&clock_path),
    );
    for inv in invoices(&c, &case) {
        for line in inv["lines"]["data"].as_array().unwrap() {
            add("line_item", "invoice line", line.clone());
        }
        add(
            "invoice",
            &format!("invoice {}", inv["billing_reason"]),
            inv,
        );
    }
    for t in balance_txns(&c, &case) {
        add(
            "customer_balance_transaction",
            &format!("txn {}", t["type"]),
            t,
        );
    }
    let renewal = renewal_invoice(&c, &case);
    let note = c
        .post(
            "/v1/credit_notes",
            &Params::new()
                .set("invoice", renewal["id"].as_str().unwrap())
                .set("amount", 500)
                .set("credit_amount", 500)
                .set("memo", "SLA")
                .set("metadata[incident]", "INC-1"),
            None,
        )
        .unwrap()
        .body;
    for line in note["lines"]["data"].as_array().unwrap() {
        add("credit_note_line_item", "credit note line", line.clone());
    }
    let line_id = renewal["lines"]["data"][0]["id"].as_str().unwrap();
    let by_line = c
        .post(
            "/v1/credit_notes",
            &Params::new()
                .set("invoice", renewal["id"].as_str().unwrap())
                .set("lines[0][type]", "invoice_line_item")
                .set("lines[0][invoice_line_item]", line_id)
                .set("lines[0][amount]", 100)
                .set("out_of_band_amount", 100),
            None,
        )
        .unwrap()
        .body;
    add(
        "credit_note_line_item",
        "credit note line on an invoice line",
        by_line["lines"]["data"][0].clone(),
    );
    add("credit_note", "credit note by line", by_line);
    add("credit_note", "credit note issued", note.clone());
    let void = c
        .post(
            &format!("/v1/credit_notes/{}/void", note["id"].as_str().unwrap()),
            &Params::new(),
            None,
        )
        .unwrap()
        .body;
    add("credit_note", "credit note void", void);
    for t in balance_txns(&c, &case) {
        add(
            "customer_balance_transaction",
            &format!("txn {}", t["type"]),
            t,
        );
    }
    // Expanded forms.
    let expanded = c
        .get(
            &format!("/v1/subscriptions/{}", case.subscription),
            &Params::new()
                .push("expand[]", "latest_invoice")
                .push("expand[]", "customer")
                .push("expand[]", "test_clock"),
        )
        .unwrap()
        .body;
    add("subscription", "subscription expanded", expanded);
    let txn = c
        .get(
            &format!("/v1/customers/{}/balance_transactions", case.customer),
            &Params::new()
                .push("expand[]", "data.invoice")
                .push("expand[]", "data.credit_note"),
        )
        .unwrap()
        .body;
    for t in txn["data"].as_array().unwrap() {
        add("customer_balance_transaction", "txn expanded", t.clone());
    }
    // Cancel, draft invoice, customer with debit, open invoice paid out of band.
    let canceled = c
        .delete(&format!("/v1/subscriptions/{}", case.subscription))
        .unwrap()
        .body;
    add("subscription", "subscription canceled", canceled);
    // Errors, including an injected 5xx.
    for (method, path) in [
        ("GET", "/v1/customers/cus_missing"),
        ("POST", "/v1/nowhere"),
    ] {
        let key = "sk_test_shape_errors";
        let ec = keyed_client(emulator(), key, std::time::Duration::from_secs(5));
        let err = if method == "GET" {
            ec.get(path, &Params::new())
        } else {
            ec.post(path, &Params::new(), None)
        }
        .unwrap_err();
        let body = serde_json::json!({ "error": {
            "type": err.error_type().unwrap(),
            "message": err.message(),
            "code": err.code(),
            "param": err.param(),
        }});
        let mut b = body;
        b["error"]
            .as_object_mut()
            .unwrap()
            .retain(|_, v| !v.is_null());
        add("error", path, b);
    }
    out
}

#[test]
fn every_emitted_object_matches_the_published_schema() {
    let spec = Spec::load();
    let samples = samples();
    let mut kinds: Vec<&str> = samples.iter().map(|(k, _, _)| *k).collect();
    kinds.sort();
    kinds.dedup();
    assert_eq!(
        kinds,
        vec![
            "credit_note",
            "credit_note_line_item",
            "customer",
            "customer_balance_transaction",
            "error",
            "invoice",
            "line_item",
            "price",
            "product",
            "subscription",
            "subscription_item",
            "test_helpers.test_clock",
        ]
    );
    let mut failures = Vec::new();
    for (schema, label, value) in &samples {
        for e in spec.check(schema, value) {
            failures.push(format!("{label}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_validator_catches_problems() {
    let spec = Spec::load();
    let good = serde_json::json!({
        "id": "cbtxn_1", "object": "customer_balance_transaction", "amount": -5,
        "created": 1, "currency": "usd", "customer": "cus_1", "ending_balance": -5,
        "livemode": false, "type": "adjustment", "invoice": null
    });
    assert!(spec.check("customer_balance_transaction", &good).is_empty());
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("ending_balance");
    assert!(!spec
        .check("customer_balance_transaction", &missing)
        .is_empty());
    let mut bad_enum = good.clone();
    bad_enum["type"] = "gift".into();
    assert!(!spec
        .check("customer_balance_transaction", &bad_enum)
        .is_empty());
    let mut bad_null = good.clone();
    bad_null["amount"] = Value::Null;
    assert!(!spec
        .check("customer_balance_transaction", &bad_null)
        .is_empty());
    let mut extra = good;
    extra["current_period_end"] = 1.into();
    assert!(!spec
        .check("customer_balance_transaction", &extra)
        .is_empty());
}

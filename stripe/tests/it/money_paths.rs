//! The billing scenario's money paths, end to end through the client.
//! Expected numbers follow Stripe's documented semantics (stripe-api.md §1.5–1.8)
//! and the values observed against real Stripe test mode in the original run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use stripe::Params;

#[test]
fn subscription_create_invoice_is_finalized_and_paid() {
    let c = client();
    let case = open_case(&c);
    let invs = invoices(&c, &case);
    assert_eq!(invs.len(), 1);
    let inv = &invs[0];
    assert_eq!(inv["billing_reason"], "subscription_create");
    assert_eq!(inv["status"], "paid");
    assert_eq!(inv["total"], 3000);
    assert_eq!(inv["amount_due"], 3000);
    assert_eq!(inv["amount_paid"], 3000);
    assert_eq!(inv["starting_balance"], 0);
    assert_eq!(inv["created"], START);
    assert_eq!(
        inv["parent"]["subscription_details"]["subscription"],
        case.subscription.as_str()
    );
    let sub = c
        .get(
            &format!("/v1/subscriptions/{}", case.subscription),
            &Params::new(),
        )
        .unwrap()
        .body;
    assert_eq!(sub["status"], "active");
    assert_eq!(sub["created"], START);
    assert_eq!(sub["items"]["data"][0]["current_period_start"], START);
    // 2026-09-21 + one month = 2026-10-21, same time of day.
    assert_eq!(case.period_end, START + 30 * 86_400);
    assert_eq!(sub["latest_invoice"], inv["id"]);
}

#[test]
fn credit_before_renewal_is_consumed_by_the_renewal() {
    let c = client();
    let case = open_case(&c);
    let credit = credit(&c, &case, 1000, Some("goodwill-credit-case-1")).body;
    assert_eq!(credit["type"], "adjustment");
    assert_eq!(credit["amount"], -1000);
    assert_eq!(credit["ending_balance"], -1000);
    assert_eq!(credit["created"], START, "created in test-clock time");
    assert_eq!(balance(&c, &case), -1000);

    advance_through_renewal(&c, &case);

    let renewal = renewal_invoice(&c, &case);
    assert_eq!(renewal["status"], "paid");
    assert_eq!(renewal["total"], 3000);
    assert_eq!(renewal["starting_balance"], -1000);
    assert_eq!(renewal["ending_balance"], 0);
    assert_eq!(renewal["amount_due"], 2000);
    assert_eq!(renewal["amount_paid"], 2000);
    assert_eq!(renewal["created"], case.period_end);
    assert_eq!(
        renewal["status_transitions"]["finalized_at"],
        case.period_end + 3600
    );

    let txns = balance_txns(&c, &case);
    let kinds: Vec<(&str, i64)> = txns
        .iter()
        .map(|t| (t["type"].as_str().unwrap(), t["amount"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        vec![("applied_to_invoice", 1000), ("adjustment", -1000)]
    );
    assert_eq!(txns[0]["invoice"], renewal["id"]);
    assert_eq!(txns[0]["ending_balance"], 0);
    assert_eq!(txns[0]["created"], case.period_end + 3600);
    assert_eq!(balance(&c, &case), 0);
}

#[test]
fn credit_after_renewal_stays_on_the_balance() {
    let c = client();
    let case = open_case(&c);
    advance_through_renewal(&c, &case);
    let credit = credit(&c, &case, 1000, None).body;
    assert_eq!(credit["created"], case.period_end + 3 * 3600);
    let renewal = renewal_invoice(&c, &case);
    assert_eq!(renewal["starting_balance"], 0);
    assert_eq!(renewal["amount_due"], 3000);
    assert_eq!(renewal["status"], "paid");
    assert_eq!(balance(&c, &case), -1000);
    let txns = balance_txns(&c, &case);
    assert_eq!(txns.len(), 1);
    assert_eq!(txns[0]["type"], "adjustment");
}

#[test]
fn credit_note_with_credit_amount_on_the_paid_renewal() {
    let c = client();
    let case = open_case(&c);
    advance_through_renewal(&c, &case);
    let renewal = renewal_invoice(&c, &case);
    let note = c
        .post(
            "/v1/credit_notes",
            &Params::new()
                .set("invoice", renewal["id"].as_str().unwrap())
                .set("amount", 1000)
                .set("credit_amount", 1000)
                .set("memo", "SLA credit for INC-abcdef")
                .set("metadata[incident]", "INC-abcdef")
                .set("metadata[source]", "billing-sla-automation"),
            Some("sla-credit-1"),
        )
        .unwrap()
        .body;
    assert_eq!(note["status"], "issued");
    assert_eq!(note["type"], "post_payment");
    assert_eq!(note["amount"], 1000);
    assert_eq!(note["pre_payment_amount"], 0);
    assert_eq!(note["post_payment_amount"], 1000);
    assert_eq!(note["metadata"]["incident"], "INC-abcdef");
    let txn_id = note["customer_balance_transaction"].as_str().unwrap();

    let txns = balance_txns(&c, &case);
    assert_eq!(txns.len(), 1);
    assert_eq!(txns[0]["id"], txn_id);
    assert_eq!(txns[0]["type"], "credit_note");
    assert_eq!(txns[0]["amount"], -1000);
    assert_eq!(txns[0]["credit_note"], note["id"]);
    assert_eq!(txns[0]["invoice"], renewal["id"]);
    assert_eq!(balance(&c, &case), -1000);

    let inv = c
        .get(
            &format!("/v1/invoices/{}", renewal["id"].as_str().unwrap()),
            &Params::new(),
        )
        .unwrap()
        .body;
    assert_eq!(inv["post_payment_credit_notes_amount"], 1000);
    assert_eq!(inv["pre_payment_credit_notes_amount"], 0);

    let notes = c
        .list_all(
            "/v1/credit_notes",
            &Params::new().set("customer", &case.customer),
        )
        .unwrap();
    assert_eq!(notes.len(), 1);

    // Then the case's own credit: the balance holds both (−2000), as observed.
    credit(&c, &case, 1000, None);
    assert_eq!(balance(&c, &case), -2000);

    // Voiding the note takes its credit back.
    let voided = c
        .post(
            &format!("/v1/credit_notes/{}/void", note["id"].as_str().unwrap()),
            &Params::new(),
            None,
        )
        .unwrap()
        .body;
    assert_eq!(voided["status"], "void");
    assert_eq!(balance(&c, &case), -1000);
}

#[test]
fn credit_note_amounts_must_add_up() {
    let c = client();
    let case = open_case(&c);
    let inv = &invoices(&c, &case)[0];
    let id = inv["id"].as_str().unwrap();
    // Paid invoice: credit_amount must equal the post-payment amount.
    let err = c
        .post(
            "/v1/credit_notes",
            &Params::new()
                .set("invoice", id)
                .set("amount", 1000)
                .set("credit_amount", 500),
            None,
        )
        .unwrap_err();
    assert!(err.is_rejected());
    assert_eq!(err.status(), Some(400));
    // More than the invoice total.
    let err = c
        .post(
            "/v1/credit_notes",
            &Params::new()
                .set("invoice", id)
                .set("amount", 5000)
                .set("credit_amount", 5000),
            None,
        )
        .unwrap_err();
    assert_eq!(err.param(), Some("amount"));
}

#[test]
fn downgrade_with_create_prorations_at_period_start_gives_a_renewal_of_ten_dollars() {
    // At the very start of the period the whole period is unused:
    //   unused time on $30  = −3000 × 30d/30d = −3000
    //   remaining time on $20 = +2000 × 30d/30d = +2000
    //   next period at $20  = +2000
    //   renewal total        =  1000  ($10)
    let c = client();
    let case = open_case(&c);
    let sub = c
        .post(
            &format!("/v1/subscriptions/{}", case.subscription),
            &Params::new()
                .set("items[0][id]", &case.item)
                .set("items[0][price]", &case.price20)
                .set("proration_behavior", "create_prorations"),
            None,
        )
        .unwrap()
        .body;
    assert_eq!(
        sub["items"]["data"][0]["price"]["id"],
        case.price20.as_str()
    );
    assert_eq!(
        sub["items"]["data"][0]["current_period_end"],
        case.period_end
    );
    // Prorations are pending, not invoiced and not balance transactions.
    assert_eq!(invoices(&c, &case).len(), 1);
    assert!(balance_txns(&c, &case).is_empty());

    advance_through_renewal(&c, &case);
    let renewal = renewal_invoice(&c, &case);
    assert_eq!(renewal["total"], 1000);
    assert_eq!(renewal["amount_due"], 1000);
    assert_eq!(renewal["status"], "paid");
    let lines = renewal["lines"]["data"].as_array().unwrap();
    let mut amounts: Vec<(i64, bool)> = lines
        .iter()
        .map(|l| {
            (
                l["amount"].as_i64().unwrap(),
                l["parent"]["subscription_item_details"]["proration"]
                    .as_bool()
                    .unwrap(),
            )
        })
        .collect();
    amounts.sort();
    assert_eq!(amounts, vec![(-3000, true), (2000, false), (2000, true)]);
    let unused = lines.iter().find(|l| l["amount"] == -3000).unwrap();
    assert_eq!(
        unused["pricing"]["price_details"]["price"],
        case.price30.as_str()
    );
    assert!(
        unused["parent"]["subscription_item_details"]["proration_details"]["credited_items"]
            ["invoice"]
            .is_string()
    );
}

#[test]
fn credit_before_a_prorated_renewal_covers_it() {
    // Observed in the original run: total 1000, starting_balance −1000, amount_due 0.
    let c = client();
    let case = open_case(&c);
    credit(&c, &case, 1000, None);
    c.post(
        &format!("/v1/subscriptions/{}", case.subscription),
        &Params::new()
            .set("items[0][id]", &case.item)
            .set("items[0][price]", &case.price20)
            .set("proration_behavior", "create_prorations"),
        None,
    )
    .unwrap();
    advance_through_renewal(&c, &case);
    let renewal = renewal_invoice(&c, &case);
    assert_eq!(renewal["total"], 1000);
    assert_eq!(renewal["starting_balance"], -1000);
    assert_eq!(renewal["amount_due"], 0);
    assert_eq!(renewal["ending_balance"], 0);
    assert_eq!(renewal["status"], "paid");
    assert_eq!(balance(&c, &case), 0);
}

#[test]
fn always_invoice_bills_an_upgrade_at_once_and_none_does_not_prorate() {
    let c = client();
    let case = open_case(&c);
    let price40 = ensure_price(&c, 4000);
    // Half-way through the period.
    c.post(
        &format!("/v1/test_helpers/test_clocks/{}/advance", case.clock),
        &Params::new().set("frozen_time", START + 15 * 86_400),
        None,
    )
    .unwrap();
    c.post(
        &format!("/v1/subscriptions/{}", case.subscription),
        &Params::new()
            .set("items[0][id]", &case.item)
            .set("items[0][price]", &price40)
            .set("proration_behavior", "always_invoice"),
        None,
    )
    .unwrap();
    let invs = invoices(&c, &case);
    assert_eq!(invs[0]["billing_reason"], "subscription_update");
    // −3000/2 + 4000/2 = 500
    assert_eq!(invs[0]["total"], 500);
    assert_eq!(invs[0]["status"], "paid");

    c.post(
        &format!("/v1/subscriptions/{}", case.subscription),
        &Params::new()
            .set("items[0][id]", &case.item)
            .set("items[0][price]", &case.price30)
            .set("proration_behavior", "none"),
        None,
    )
    .unwrap();
    advance_through_renewal(&c, &case);
    assert_eq!(renewal_invoice(&c, &case)["total"], 3000);
}

#[test]
fn clock_advance_is_forward_only_and_limited_to_two_intervals() {
    let c = client();
    let case = open_case(&c);
    let path = format!("/v1/test_helpers/test_clocks/{}/advance", case.clock);
    let back = c
        .post(&path, &Params::new().set("frozen_time", START - 1), None)
        .unwrap_err();
    assert_eq!(back.status(), Some(400));
    assert_eq!(back.param(), Some("frozen_time"));
    let too_far = c
        .post(
            &path,
            &Params::new().set("frozen_time", START + 62 * 86_400),
            None,
        )
        .unwrap_err();
    assert_eq!(too_far.status(), Some(400));
    // Exactly two months ahead (2026-11-21) is allowed and renews twice.
    let two = START + (30 + 31) * 86_400;
    c.post(&path, &Params::new().set("frozen_time", two), None)
        .unwrap();
    let cycles = invoices(&c, &case)
        .iter()
        .filter(|i| i["billing_reason"] == "subscription_cycle")
        .count();
    // The second renewal's draft is created at `two` and finalizes an hour later.
    assert_eq!(cycles, 2);
    let newest = &invoices(&c, &case)[0];
    assert_eq!(newest["status"], "draft");
    assert_eq!(newest["starting_balance"], 0);
    assert!(newest["ending_balance"].is_null());

    // A clock without subscriptions may move two years, not more.
    let lone = c
        .post(
            "/v1/test_helpers/test_clocks",
            &Params::new().set("frozen_time", START),
            None,
        )
        .unwrap()
        .body;
    let lone_path = format!(
        "/v1/test_helpers/test_clocks/{}/advance",
        lone["id"].as_str().unwrap()
    );
    assert!(c
        .post(
            &lone_path,
            &Params::new().set("frozen_time", START + 800 * 86_400),
            None
        )
        .is_err());
    assert!(c
        .post(
            &lone_path,
            &Params::new().set("frozen_time", START + 700 * 86_400),
            None
        )
        .is_ok());
}

#[test]
fn expand_returns_objects_in_place_of_ids() {
    let c = client();
    let case = open_case(&c);
    let sub = c
        .get(
            &format!("/v1/subscriptions/{}", case.subscription),
            &Params::new()
                .push("expand[]", "latest_invoice")
                .push("expand[]", "customer")
                .push("expand[]", "test_clock"),
        )
        .unwrap()
        .body;
    assert_eq!(sub["latest_invoice"]["object"], "invoice");
    assert_eq!(sub["customer"]["object"], "customer");
    assert_eq!(sub["test_clock"]["object"], "test_helpers.test_clock");
    let list = c
        .get(
            "/v1/invoices",
            &Params::new()
                .set("customer", &case.customer)
                .push("expand[]", "data.customer"),
        )
        .unwrap()
        .body;
    assert_eq!(list["data"][0]["customer"]["id"], case.customer.as_str());
    let bad = c
        .get(
            &format!("/v1/customers/{}", case.customer),
            &Params::new().push("expand[]", "nonsense"),
        )
        .unwrap_err();
    assert_eq!(bad.status(), Some(400));
}

//! A test-clock advance that takes time, as Stripe's take seconds: the clock reads `advancing`
//! and nothing of the advance has happened until its time is up; the next read of the clock runs
//! it and reads `ready`. A request landing meanwhile is created before the advance's events.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use std::time::{Duration, Instant};
use stripe::emulator::{FaultAction, FaultRule};
use stripe::Params;

#[test]
fn a_slow_advance_reads_advancing_until_its_time_and_renews_only_then() {
    let emu = emulator();
    let key = new_key();
    let c = keyed_client(emu, &key, Duration::from_secs(30));
    let case = open_case(&c);
    let rule = emu.faults().add(
        FaultRule::new(
            "POST",
            "/v1/test_helpers/test_clocks/*/advance",
            FaultAction::SlowAdvance { ms: 400 },
        )
        .for_key(&key)
        .times(1),
    );
    let clock_path = format!("/v1/test_helpers/test_clocks/{}", case.clock);
    let invoices = |c: &stripe::Client| {
        c.list_all(
            "/v1/invoices",
            &Params::new().set("customer", &case.customer),
        )
        .unwrap()
        .len()
    };
    let asked = Instant::now();
    let target = case.period_end + 3 * 3600;
    let answer = c
        .post(
            &format!("{clock_path}/advance"),
            &Params::new().set("frozen_time", target),
            None,
        )
        .unwrap()
        .body;
    assert_eq!(answer["status"], "advancing");
    // Meanwhile: still advancing, still one invoice, and a credit lands before the renewal.
    let during = c.get(&clock_path, &Params::new()).unwrap().body;
    assert_eq!(during["status"], "advancing");
    assert_eq!(invoices(&c), 1);
    credit(&c, &case, 1000, Some("k-during"));
    let ready = loop {
        let clock = c.get(&clock_path, &Params::new()).unwrap().body;
        if clock["status"] == "ready" {
            break clock;
        }
        assert!(asked.elapsed() < Duration::from_secs(10), "never ready");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(asked.elapsed() >= Duration::from_millis(400));
    assert_eq!(ready["frozen_time"], target);
    assert_eq!(invoices(&c), 2);
    // The credit landed before the renewal, so the renewal invoice used it.
    let renewal = c
        .list_all(
            "/v1/invoices",
            &Params::new().set("customer", &case.customer),
        )
        .unwrap()
        .into_iter()
        .find(|i| i["billing_reason"] == "subscription_cycle")
        .unwrap();
    assert_eq!(renewal["starting_balance"], -1000);
    assert_eq!(emu.faults().fired(rule), 1);
    // The next advance takes no time.
    let next = c
        .post(
            &format!("{clock_path}/advance"),
            &Params::new().set("frozen_time", target + 1),
            None,
        )
        .unwrap();
    assert_eq!(next.status, 200);
    let clock = c.get(&clock_path, &Params::new()).unwrap().body;
    assert_eq!(clock["status"], "ready");
    emu.faults().remove(rule);
}

#[test]
fn a_clock_step_around_a_world_change_orders_every_object_by_its_second() {
    let emu = emulator();
    let key = new_key();
    let c = keyed_client(emu, &key, Duration::from_secs(30));
    let case = open_case(&c);
    let before = credit(&c, &case, 100, None).body["created"]
        .as_i64()
        .unwrap();
    // A request of the account sent while the change runs is served after the step.
    let (seen, at) = emu
        .step_clock_around(&key, &case.clock, |_| {
            let waiting = std::thread::spawn({
                let c = c.clone();
                let customer = case.customer.clone();
                move || {
                    c.post(
                        &format!("/v1/customers/{customer}/balance_transactions"),
                        &Params::new().set("amount", -200).set("currency", "usd"),
                        None,
                    )
                    .unwrap()
                    .body["created"]
                        .as_i64()
                        .unwrap()
                }
            });
            waiting
        })
        .unwrap();
    assert_eq!(at, before, "the step starts from the clock's time");
    assert_eq!(
        seen.join().unwrap(),
        at + 1,
        "a request sent during the change is after it"
    );
    let clock = c
        .get(
            &format!("/v1/test_helpers/test_clocks/{}", case.clock),
            &Params::new(),
        )
        .unwrap();
    assert_eq!(clock.body["frozen_time"], at + 1);
    assert_eq!(clock.body["status"], "ready");
    assert!(emu.step_clock_around(&key, "clock_nope", |_| ()).is_err());
}

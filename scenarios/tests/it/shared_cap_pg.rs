//! `hand_pg_lock` against a real PostgreSQL: the column checks and sends only while it holds the
//! order's advisory lock in the journal's database, and releases it after the send's answer.
//! Needs `INTERLOCK_TEST_PG_URL` (`.ci/pg-cluster start`); without it the test says it was
//! skipped — and fails when `CI` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use rand::SeedableRng;
use scenarios::shared_cap::{self as cap, Column};
use std::time::{Duration, Instant};

/// The test cluster's URL; `None` (the test says it was skipped) when unset outside CI.
fn pg_url() -> Option<String> {
    let url = std::env::var("INTERLOCK_TEST_PG_URL").ok();
    if url.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "INTERLOCK_TEST_PG_URL is not set under CI (.ci/run starts a cluster)"
        );
        eprintln!("skipped: INTERLOCK_TEST_PG_URL is not set (see .ci/pg-cluster)");
    }
    url
}

/// The column's key for an order, written out independently of the column's code.
const KEY: &str = "hashtextextended('hand_pg_lock ' || current_schema() || ' ' || $1, 0)";

/// Sessions of the column (by its application name) waiting for an advisory lock.
fn waiting(client: &mut postgres::Client) -> i64 {
    client
        .query_one(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND NOT l.granted \
             AND a.application_name = 'hand_pg_lock'",
            &[],
        )
        .unwrap()
        .get(0)
}

#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn hand_pg_lock_checks_and_sends_only_while_it_holds_the_orders_advisory_lock() {
    let Some(url) = pg_url() else { return };
    let env = common::Env::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64(35);
    let order = cap::open_order(&env.client, &mut rng).unwrap();
    let dir = env.dir.path().to_path_buf();
    order.save(&dir).unwrap();
    std::fs::write(dir.join(cap::JOURNAL_LOCATION_FILE), &url).unwrap();

    // Another session holds the order's lock: the column must wait for it before its lookup.
    let mut holder = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    holder
        .execute(
            &format!("SELECT pg_advisory_lock({KEY})"),
            &[&order.order_id],
        )
        .unwrap();
    let (client, key, settings) = (env.client.clone(), env.key.clone(), env.settings);
    let a_dir = dir.clone();
    let a = std::thread::spawn(move || {
        cap::send(
            Column::HandPgLock,
            &client,
            &a_dir,
            "a",
            None,
            &key,
            &settings,
        )
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while waiting(&mut holder) == 0 {
        assert!(
            Instant::now() < deadline,
            "the column never waited for the lock"
        );
        assert!(!a.is_finished(), "the column ran without the lock");
        std::thread::sleep(Duration::from_millis(10));
    }
    // While it waits it has read and sent nothing: no log line, no refund.
    assert!(cap::read_log(&dir, "a").unwrap_or_default().is_empty());
    assert!(cap::ground_truth(&env.client, &order)
        .unwrap()
        .refunds
        .is_empty());
    let released: bool = holder
        .query_one(
            &format!("SELECT pg_advisory_unlock({KEY})"),
            &[&order.order_id],
        )
        .unwrap()
        .get(0);
    assert!(released);
    assert_eq!(a.join().unwrap().unwrap(), "REFUNDED");

    // b checks under the same lock after a: it sees a's refund and refuses.
    let b = cap::send(
        Column::HandPgLock,
        &env.client,
        &dir,
        "b",
        None,
        &env.key,
        &env.settings,
    )
    .unwrap();
    assert_eq!(b, "REFUSED:over_cap");
    let truth = cap::ground_truth(&env.client, &order).unwrap();
    assert_eq!(truth.refunded_cents(), 2_000);
    // Both released the lock after their answer: another session takes it at once.
    let free: bool = holder
        .query_one(
            &format!("SELECT pg_try_advisory_lock({KEY})"),
            &[&order.order_id],
        )
        .unwrap()
        .get(0);
    assert!(free, "a column's session still holds the order's lock");
}

#[test]
fn hand_pg_lock_without_a_database_journal_fails_and_sends_nothing() {
    let env = common::Env::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64(36);
    let order = cap::open_order(&env.client, &mut rng).unwrap();
    let dir = env.dir.path();
    order.save(dir).unwrap();
    let err = cap::send(
        Column::HandPgLock,
        &env.client,
        dir,
        "a",
        None,
        &env.key,
        &env.settings,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("hand_pg_lock needs the run's PostgreSQL"),
        "{err}"
    );
    assert!(cap::ground_truth(&env.client, &order)
        .unwrap()
        .refunds
        .is_empty());
}

//! The model checked exhaustively: every correct configuration holds every property (and
//! reaches what it should), and every broken variant yields a counterexample, printed as a
//! readable trace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use model::{expected_failure, left_alone, narrate, Bug, GateModel};
use stateright::{Checker, HasDiscoveries, Model};
use std::io::Write;
use std::time::Instant;

/// Write past the test harness's capture, so the traces and counts show in `cargo test`.
fn show(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

struct Run {
    unique: usize,
    secs: f64,
    failures: Vec<(&'static str, String)>,
    reached: Vec<&'static str>,
}

fn run(name: &str, m: GateModel, stop_at: Option<&'static str>) -> Run {
    let props = m.properties();
    let start = Instant::now();
    let mut builder = m.clone().checker();
    if let Some(p) = stop_at {
        builder = builder.finish_when(HasDiscoveries::AnyOf([p].into_iter().collect()));
    }
    let checker = builder.spawn_bfs().join();
    let secs = start.elapsed().as_secs_f64();
    let mut failures = Vec::new();
    let mut reached = Vec::new();
    for p in &props {
        let Some(path) = checker.discovery(p.name) else {
            continue;
        };
        if p.expectation == stateright::Expectation::Sometimes {
            reached.push(p.name);
        } else {
            let last = path.last_state().clone();
            let mut trace = narrate(&m, &path.into_vec());
            trace.push_str(&left_alone(&m, &last));
            failures.push((p.name, trace));
        }
    }
    show(&format!(
        "model {name}: {} unique states ({} generated), max depth {}, {secs:.1} s\n",
        checker.unique_state_count(),
        checker.state_count(),
        checker.max_depth()
    ));
    Run {
        unique: checker.unique_state_count(),
        secs,
        failures,
        reached,
    }
}

fn holds(name: &str, m: GateModel) {
    let r = run(name, m, None);
    for (prop, trace) in &r.failures {
        show(&format!("\nmodel {name}: `{prop}` fails:\n{trace}"));
    }
    assert!(
        r.failures.is_empty(),
        "{name}: {:?}",
        r.failures.iter().map(|f| f.0).collect::<Vec<_>>()
    );
    assert!(r.unique > 1_000, "{name}: only {} states", r.unique);
    assert!(r.secs >= 0.0);
    for p in [
        model::properties::REACH_RETRY,
        model::properties::REACH_REFUSED,
    ] {
        assert!(r.reached.contains(&p), "{name}: never {p}");
    }
}

fn breaks(name: &str, m: GateModel, bug: Bug) {
    let expected = expected_failure(bug);
    let r = run(name, m.with_bug(bug), Some(expected));
    let trace = r
        .failures
        .iter()
        .find(|(p, _)| *p == expected)
        .map(|(_, t)| t.clone());
    let Some(trace) = trace else {
        panic!(
            "{name}: {bug:?} produced no counterexample to `{expected}` (found: {:?})",
            r.failures.iter().map(|f| f.0).collect::<Vec<_>>()
        );
    };
    show(&format!(
        "\nmodel {name}: {bug:?} breaks `{expected}`; counterexample:\n{trace}"
    ));
}

/// Tier 2 (lookup, no dedupe) with everything the nemesis can do.
fn tier_two() -> GateModel {
    let mut m = GateModel::new(false, true);
    m.revocations = 1;
    m.premise_changes = 1;
    m
}

/// Tier 1 (dedupe on the key, lookup).
fn tier_one() -> GateModel {
    let mut m = GateModel::new(true, true);
    m.revocations = 1;
    m
}

#[test]
fn tier_two_holds() {
    holds("tier 2", tier_two());
}

#[test]
fn tier_one_holds() {
    holds("tier 1", tier_one());
}

#[test]
fn broken_lease_check_only_before_the_premise_reads() {
    breaks("tier 2", tier_two(), Bug::LeaseOnlyBeforePremises);
}

#[test]
fn broken_in_flight_wait_counted_from_dispatched() {
    breaks("tier 2", tier_two(), Bug::InFlightFromDispatched);
}

#[test]
fn broken_journal_lines_trusted_without_the_hash_prev_check() {
    let mut m = tier_two();
    m.replayed_lines = 1;
    breaks("tier 2 + replayed line", m, Bug::UncheckedJournalLines);
}

#[test]
fn broken_tier_one_resend_loop_without_lookup() {
    breaks("tier 1", tier_one(), Bug::ResendWithoutLookup);
}

#[test]
fn broken_recovery_takes_over_a_live_holder() {
    breaks("tier 2", tier_two(), Bug::TakeOverLiveHolder);
}

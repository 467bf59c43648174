//! The nemesis rules, stated once: trial seeds and ids, a trial's judgement, whether it stayed
//! within the column's assumptions, the Clopper–Pearson bound, percentiles and the per nemesis ×
//! column summary. The runner writes with these and `verify` re-derives with them.

use super::{Event, NemesisPlan, NemesisSummary, Trial};
use crate::results::{Approval, GroundTruth, Want};
use crate::scenarios::billing_credit::{answer_matches, invariant_held, want_for_decision};

/// Largest trial seed: 2^53 - 1, so every seed is an integer any JSON reader holds exactly.
pub const MAX_TRIAL_SEED: u64 = (1 << 53) - 1;

/// SplitMix64's finalizer: a fixed bijection that spreads every input bit.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xCBF2_9CE4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3)
    })
}

/// The seed of trial `index` of `nemesis` × `column` in a run seeded `run_seed`.
pub fn trial_seed(run_seed: u64, nemesis: &str, column: &str, index: u32) -> u64 {
    let z = mix(run_seed ^ mix(name_hash(nemesis) ^ mix(name_hash(column) ^ u64::from(index))));
    z & MAX_TRIAL_SEED
}

/// A trial's id: `<nemesis>:<column>:<seed as 14 lowercase hex digits>`.
pub fn trial_id(nemesis: &str, column: &str, seed: u64) -> String {
    format!("{nemesis}:{column}:{seed:014x}")
}

/// Splits a trial id into nemesis, column and seed; `None` if it is not one.
pub fn parse_trial_id(id: &str) -> Option<(&str, &str, u64)> {
    let mut parts = id.split(':');
    let (nemesis, column, seed) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || nemesis.is_empty() || column.is_empty() || seed.len() != 14 {
        return None;
    }
    if !seed
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let seed = u64::from_str_radix(seed, 16).ok()?;
    (seed <= MAX_TRIAL_SEED).then_some((nemesis, column, seed))
}

/// The final status of a trial killed before any decision existed: nothing to recover.
pub const NOT_DECIDED: &str = "NOT_DECIDED";

/// The final status of a trial whose final restart ended in an error: unresolved.
pub const RESTART_FAILED: &str = "RESTART_FAILED";

pub use crate::scenarios::billing_credit::assumptions::{
    assumption_broken, began_during_a_hold, unguarded_window_at_us, unguarded_window_us,
    AFTER_LAST_READ, BEYOND_BOUND, REPLAYED, WORLD,
};

/// A trial's interleaving, as 16 hex digits: a hash of its timeline's events in order (who did
/// what to which fact or step), times left out. Two trials with one fingerprint ran the same
/// interleaving, however long each step took; the summary counts distinct ones beside runs.
pub fn interleaving(timeline: &[Event]) -> String {
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    for e in timeline {
        for part in [&e.actor, &e.kind, &e.what] {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
        h.update([1u8]);
    }
    hex::encode(&h.finalize()[..8])
}

/// The judgement of a trial, derived from what Stripe holds and the final status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judgement {
    /// What the want rule allows.
    pub want: Want,
    /// Credits equal `want`.
    pub invariant_held: bool,
    /// Credits exceed `want` in count or cents.
    pub violation: bool,
    /// Credits fall short of `want` in count or cents, exceeding it in neither
    /// ([`under_credit`]).
    pub under_credit: bool,
    /// The status says "sent" exactly when a case credit exists.
    pub answer_matches: bool,
    /// The status is `AMBIGUOUS`.
    pub ambiguous: bool,
    /// The status is [`RESTART_FAILED`]: the column left the case unresolved.
    pub unresolved: bool,
}

/// Judges a trial by the same want rule as a matrix cell (with the approval's revocation, when a
/// world nemesis revoked it).
pub fn judge(
    truth: &GroundTruth,
    case_id: &str,
    incident: &str,
    approval: &Approval,
    decided: Option<i64>,
    outcome: &str,
) -> Judgement {
    let w = want_for_decision(truth, case_id, incident, approval, decided);
    Judgement {
        want: w,
        invariant_held: invariant_held(truth, w),
        violation: over_credit(truth, w),
        under_credit: under_credit(truth, w),
        answer_matches: answer_matches(outcome, truth),
        ambiguous: outcome == "AMBIGUOUS",
        unresolved: outcome == RESTART_FAILED,
    }
}

/// The case's credits exceed what the want rule allows, in count or cents: a violation, a
/// breach of safety.
pub fn over_credit(truth: &GroundTruth, w: Want) -> bool {
    truth.case_credit_count > w.count || truth.case_credit_cents > w.cents
}

/// The case's credits fall short of what the want rule allows, in count or cents, and exceed it
/// in neither: the approved credit was never issued, or a smaller one was. A failure of the
/// column as surely as a violation (the customer was promised the credit), counted beside
/// violations rather than in them: the bounds on the violation rate are bounds on safety.
pub fn under_credit(truth: &GroundTruth, w: Want) -> bool {
    !over_credit(truth, w)
        && (truth.case_credit_count < w.count || truth.case_credit_cents < w.cents)
}

/// ln C(n, k).
fn ln_choose(n: u32, k: u32) -> f64 {
    let (n, k) = (f64::from(n), f64::from(k));
    ln_gamma(n + 1.0) - ln_gamma(k + 1.0) - ln_gamma(n - k + 1.0)
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine terms: relative error below 1e-13).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// P(X <= x) for X ~ Binomial(n, p).
fn binomial_cdf(x: u32, n: u32, p: f64) -> f64 {
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return if x >= n { 1.0 } else { 0.0 };
    }
    (0..=x.min(n))
        .map(|k| {
            (ln_choose(n, k) + f64::from(k) * p.ln() + f64::from(n - k) * (1.0 - p).ln()).exp()
        })
        .sum()
}

/// The one-sided 95% Clopper–Pearson upper bound on a rate after `x` events in `n` trials, in
/// parts per million rounded up: the p at which P(X <= x) = 0.05. With x = 0 it is
/// 1 - 0.05^(1/n) (n = 200: 14 868 ppm, about 1.5%); with n = 0 nothing is bounded (1 000 000).
pub fn clopper_pearson_upper95_ppm(x: u32, n: u32) -> u32 {
    clopper_pearson_upper_ppm(x, n, 0.05)
}

/// The two-sided 95% Clopper–Pearson interval on a rate after `x` events in `n` trials, in parts
/// per million: each end the one-sided bound at 2.5% (the lower end rounded down, the upper
/// up). With n = 0 nothing is bounded (0 to 1 000 000).
pub fn clopper_pearson_interval95_ppm(x: u32, n: u32) -> (u32, u32) {
    let x = x.min(n);
    let upper = clopper_pearson_upper_ppm(x, n, 0.025);
    let lower = 1_000_000 - clopper_pearson_upper_ppm(n - x, n, 0.025);
    (lower, upper)
}

/// The one-sided Clopper–Pearson upper bound with `tail` left above it: the p at which
/// P(X <= x) = tail, in ppm rounded up.
fn clopper_pearson_upper_ppm(x: u32, n: u32, tail: f64) -> u32 {
    if n == 0 || x >= n {
        return 1_000_000;
    }
    let upper = if x == 0 {
        1.0 - tail.powf(1.0 / f64::from(n))
    } else {
        // The cdf falls as p rises: bisect for the p where it crosses the tail.
        let (mut lo, mut hi) = (f64::from(x) / f64::from(n), 1.0f64);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if binomial_cdf(x, n, mid) > tail {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    };
    let ppm = (upper * 1_000_000.0).ceil();
    if ppm >= 1_000_000.0 {
        1_000_000
    } else {
        ppm as u32
    }
}

/// The nearest-rank percentile `pct` (1..=100) of `sorted` (ascending); `None` if empty.
pub fn percentile(sorted: &[u64], pct: u32) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (u64::from(pct) * sorted.len() as u64).div_ceil(100).max(1);
    sorted.get(usize::try_from(rank - 1).ok()?).copied()
}

/// The per nemesis × column summary of `trials`, in the plan's order.
pub fn summarize(plan: &NemesisPlan, trials: &[Trial]) -> Vec<NemesisSummary> {
    let refs: Vec<&Trial> = trials.iter().collect();
    summarize_refs(plan, &refs)
}

/// [`summarize`] over some of a file's trials.
pub fn summarize_refs(plan: &NemesisPlan, trials: &[&Trial]) -> Vec<NemesisSummary> {
    let mut out = Vec::new();
    for nemesis in &plan.nemeses {
        for column in &plan.columns {
            let these: Vec<&Trial> = trials
                .iter()
                .copied()
                .filter(|t| &t.nemesis == nemesis && &t.column == column)
                .collect();
            let count = |f: &dyn Fn(&Trial) -> bool| these.iter().filter(|t| f(t)).count() as u32;
            // A trial with nothing decided had nothing to recover, and a harness error measured
            // nothing: neither is a pass of the column, so neither is in a rate.
            let judged = |t: &Trial| t.judged();
            let n = count(&|t| judged(t));
            let violations = count(&|t| judged(t) && t.violation);
            let within = count(&|t| judged(t) && t.assumption.is_none());
            let violations_within = count(&|t| judged(t) && t.violation && t.assumption.is_none());
            let distinct = |f: &dyn Fn(&Trial) -> bool| {
                these
                    .iter()
                    .filter(|t| judged(t) && f(t))
                    .map(|t| t.interleaving.as_str())
                    .collect::<std::collections::BTreeSet<_>>()
                    .len() as u32
            };
            let distinct_within = distinct(&|t| t.assumption.is_none());
            let distinct_violating_within = distinct(&|t| t.assumption.is_none() && t.violation);
            let mut settle: Vec<u64> = these.iter().filter_map(|t| t.settle_ms).collect();
            settle.sort_unstable();
            out.push(NemesisSummary {
                nemesis: nemesis.clone(),
                column: column.clone(),
                trials: these.len() as u32,
                nothing_decided: count(&|t| t.outcome == NOT_DECIDED),
                judged: n,
                within_assumptions: within,
                violations,
                violation_upper95_ppm: clopper_pearson_upper95_ppm(violations, n),
                violations_within,
                within_upper95_ppm: clopper_pearson_upper95_ppm(violations_within, within),
                distinct: distinct(&|_| true),
                distinct_within,
                distinct_violating_within,
                within_distinct_upper95_ppm: clopper_pearson_upper95_ppm(
                    distinct_violating_within,
                    distinct_within,
                ),
                wrong_answers: count(&|t| judged(t) && !t.answer_matches && !t.unresolved),
                unresolved: count(&|t| judged(t) && t.unresolved),
                ambiguous: count(&|t| t.ambiguous),
                harness_errors: count(&|t| t.is_harness_error()),
                settle_p50_ms: percentile(&settle, 50),
                settle_p95_ms: percentile(&settle, 95),
                settle_max_ms: settle.last().copied(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nemesis::Fault;

    #[test]
    fn trial_ids_round_trip_and_reject_other_shapes() {
        let seed = trial_seed(42, "kill_random", "interlock", 7);
        assert!(seed <= MAX_TRIAL_SEED);
        let id = trial_id("kill_random", "interlock", seed);
        assert_eq!(
            parse_trial_id(&id),
            Some(("kill_random", "interlock", seed))
        );
        assert_eq!(parse_trial_id("kill_random:interlock:12"), None);
        assert_eq!(parse_trial_id("a:b:c:00000000000000"), None);
        assert_eq!(parse_trial_id("a:b:ABCDEF00000000"), None);
        assert_eq!(parse_trial_id("a:b:ffffffffffffff"), None);
        assert_ne!(seed, trial_seed(42, "kill_random", "interlock", 8));
        assert_ne!(seed, trial_seed(42, "kill_random", "hand_check", 7));
        assert_ne!(seed, trial_seed(43, "kill_random", "interlock", 7));
    }

    #[test]
    fn credits_are_compared_with_the_want_in_both_directions() {
        let truth = |count: u32, cents: i64| GroundTruth {
            case_credits: Vec::new(),
            case_credit_count: count,
            case_credit_cents: cents,
            credit_notes: Vec::new(),
            balance_transactions: Vec::new(),
            invoices: Vec::new(),
            customer_balance: 0,
            compensation_by_others: 0,
            incident_compensation: 0,
        };
        let want = Want {
            count: 1,
            cents: 1000,
        };
        let none = Want { count: 0, cents: 0 };
        // (credits, want) -> (over, under)
        let cases = [
            ((1, 1000), want, (false, false)),
            ((0, 0), want, (false, true)),
            ((1, 830), want, (false, true)),
            ((2, 2000), want, (true, false)),
            ((1, 1200), want, (true, false)),
            // Two credits summing to less: more credits than allowed is a violation, not an
            // under-credit.
            ((2, 900), want, (true, false)),
            ((0, 0), none, (false, false)),
            ((1, 1000), none, (true, false)),
        ];
        for ((count, cents), w, expected) in cases {
            let t = truth(count, cents);
            assert_eq!(
                (over_credit(&t, w), under_credit(&t, w)),
                expected,
                "{count} credit(s) of {cents} against {w:?}"
            );
        }
    }

    #[test]
    fn the_two_sided_interval_matches_known_values() {
        // 17 of 20: 0.6210732 to 0.9679291 (exact binomial interval, tables).
        let (lo, hi) = clopper_pearson_interval95_ppm(17, 20);
        assert!((621_072..=621_074).contains(&lo), "{lo}");
        assert!((967_929..=967_930).contains(&hi), "{hi}");
        // 20 of 20: 0.8315665 to 1.
        let (lo, hi) = clopper_pearson_interval95_ppm(20, 20);
        assert!((831_565..=831_567).contains(&lo), "{lo}");
        assert_eq!(hi, 1_000_000);
        assert_eq!(clopper_pearson_interval95_ppm(0, 5).0, 0);
        assert_eq!(clopper_pearson_interval95_ppm(0, 0), (0, 1_000_000));
        // The overlap the referee pointed at: 17/20 and 20/20 cannot be told apart.
        assert!(
            clopper_pearson_interval95_ppm(17, 20).1 > clopper_pearson_interval95_ppm(20, 20).0
        );
    }

    #[test]
    fn clopper_pearson_matches_known_values() {
        // x = 0: 1 - 0.05^(1/n).
        assert_eq!(clopper_pearson_upper95_ppm(0, 1), 950_000);
        assert_eq!(clopper_pearson_upper95_ppm(0, 200), 14_867 + 1);
        assert_eq!(clopper_pearson_upper95_ppm(0, 0), 1_000_000);
        assert_eq!(clopper_pearson_upper95_ppm(5, 5), 1_000_000);
        // x = 1, n = 10: 0.3941633 (tables of the exact binomial bound).
        let b = clopper_pearson_upper95_ppm(1, 10);
        assert!((394_160..=394_170).contains(&b), "{b}");
        // x = 10, n = 100: 0.1637176 (exact binomial bound, computed independently).
        let b = clopper_pearson_upper95_ppm(10, 100);
        assert!((163_717..=163_719).contains(&b), "{b}");
        // x = 5, n = 20: 0.4555824.
        let b = clopper_pearson_upper95_ppm(5, 20);
        assert!((455_582..=455_584).contains(&b), "{b}");
        assert!(clopper_pearson_upper95_ppm(2, 10) > clopper_pearson_upper95_ppm(1, 10));
    }

    fn ev(at_us: u64, actor: &str, kind: &str, what: &str, until_us: Option<u64>) -> Event {
        Event {
            at_us,
            actor: actor.into(),
            kind: kind.into(),
            what: what.into(),
            until_us,
        }
    }

    fn change(at: u64, until: u64, fact: &str) -> Event {
        ev(at, WORLD, "change", fact, Some(until))
    }

    fn read(at: u64, actor: &str, fact: &str) -> Event {
        ev(at, actor, "read", fact, None)
    }

    fn post(at: u64, actor: &str) -> Event {
        ev(at, actor, "post", "", None)
    }

    #[test]
    fn a_change_after_the_last_read_of_its_fact_and_before_the_post_is_beyond() {
        let t = [
            read(10, "decide", "approval"),
            read(20, "decide", "incident_compensation"),
            change(30, 40, "approval"),
            post(50, "decide"),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), Some(AFTER_LAST_READ));
    }

    #[test]
    fn a_change_the_column_reads_again_before_posting_is_within() {
        let t = [
            read(10, "decide", "approval"),
            change(30, 40, "approval"),
            read(45, "decide", "approval"),
            post(50, "decide"),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), None);
        // A read of another fact does not count.
        let t = [
            read(10, "decide", "approval"),
            change(30, 40, "approval"),
            read(45, "decide", "incident_compensation"),
            post(50, "decide"),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), Some(AFTER_LAST_READ));
    }

    #[test]
    fn a_read_that_overlaps_the_change_counts_as_seeing_it() {
        let t = [
            read(30, "decide", "approval"),
            change(30, 40, "approval"),
            post(50, "decide"),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), None);
    }

    #[test]
    fn a_change_while_the_post_is_held_is_beyond_and_one_after_it_landed_is_not() {
        let held = [
            read(10, "decide", "incident_compensation"),
            ev(20, "decide", "post", "", Some(2_000)),
            change(500, 900, "incident_compensation"),
        ];
        assert_eq!(assumption_broken(&[], &held, 5_500), Some(AFTER_LAST_READ));
        let landed = [
            read(10, "decide", "incident_compensation"),
            ev(20, "decide", "post", "", Some(400)),
            ev(401, "decide", "answered", "", None),
            change(500, 900, "incident_compensation"),
        ];
        assert_eq!(assumption_broken(&[], &landed, 5_500), None);
    }

    #[test]
    fn the_unguarded_window_runs_from_the_last_read_the_post_rests_on_to_its_application() {
        let t = [
            ev(10, "decide", "read", "approval", Some(12)),
            ev(40, "decide", "read", "approval", Some(45)),
            post(50, "decide"),
            ev(58, "decide", "answered", "", None),
        ];
        assert_eq!(unguarded_window_us(&t, "approval", 5_500), Some(13));
        assert_eq!(
            unguarded_window_us(&t, "incident_compensation", 5_500),
            None
        );
        assert_eq!(unguarded_window_us(&t[..2], "approval", 5_500), None);
    }

    #[test]
    fn a_restart_that_began_while_its_predecessors_post_was_held_is_found() {
        let held = [
            ev(20, "decide", "post", "", Some(1_300)),
            ev(30, WORLD, "kill", "decide", None),
            ev(900, "restart", "read", "approval", Some(905)),
        ];
        assert!(began_during_a_hold(&held));
        let after = [
            ev(20, "decide", "post", "", Some(1_300)),
            ev(30, WORLD, "kill", "decide", None),
            ev(1_400, "restart", "read", "approval", Some(1_405)),
        ];
        assert!(!began_during_a_hold(&after));
        let unheld = [
            post(20, "decide"),
            ev(30, WORLD, "kill", "decide", None),
            ev(900, "restart", "read", "approval", Some(905)),
        ];
        assert!(!began_during_a_hold(&unheld));
        assert_eq!(
            unguarded_window_at_us(
                &[
                    ev(10, "decide", "read", "approval", Some(12)),
                    post(50, "decide"),
                    ev(58, "decide", "answered", "", None)
                ],
                "approval",
                5_500
            ),
            Some((12, 58))
        );
    }

    #[test]
    fn a_held_post_whose_sender_died_was_applied_when_its_hold_ended() {
        let t = [
            read(10, "decide", "incident_compensation"),
            ev(20, "decide", "post", "", Some(1_300)),
            ev(30, WORLD, "kill", "decide", None),
            change(2_600, 2_700, "incident_compensation"),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), None);
        let mut during = t.to_vec();
        during[3] = change(1_000, 1_100, "incident_compensation");
        assert_eq!(
            assumption_broken(&[], &during, 5_500),
            Some(AFTER_LAST_READ)
        );
    }

    #[test]
    fn a_change_that_begins_while_the_post_awaits_its_answer_is_beyond() {
        let t = [
            read(10, "decide", "incident_compensation"),
            post(20, "decide"),
            change(25, 60, "incident_compensation"),
            ev(30, "decide", "answered", "", None),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), Some(AFTER_LAST_READ));
        let t = [
            read(10, "decide", "incident_compensation"),
            post(20, "decide"),
            ev(24, "decide", "answered", "", None),
            change(25, 60, "incident_compensation"),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), None);
    }

    #[test]
    fn a_post_whose_sender_died_before_its_answer_may_land_until_the_bound() {
        let t = [
            read(10, "decide", "incident_compensation"),
            post(20, "decide"),
            ev(21, WORLD, "kill", "decide", None),
            change(3_000, 3_100, "incident_compensation"),
        ];
        assert_eq!(assumption_broken(&[], &t, 5), Some(AFTER_LAST_READ));
        assert_eq!(assumption_broken(&[], &t, 2), None);
    }

    #[test]
    fn a_change_followed_by_no_post_excuses_nothing() {
        let t = [read(10, "decide", "approval"), change(30, 40, "approval")];
        assert_eq!(assumption_broken(&[], &t, 5_500), None);
    }

    #[test]
    fn a_resend_that_reads_nothing_rests_on_the_decisions_read() {
        // no_check: the decision read the approval, the restart resends without reading.
        let t = [
            read(10, "decide", "approval"),
            change(30, 40, "approval"),
            post(50, "restart"),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), Some(AFTER_LAST_READ));
        // hand_check: the restart reads it again first.
        let t = [
            read(10, "decide", "approval"),
            change(30, 40, "approval"),
            read(45, "restart", "approval"),
            post(50, "restart"),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), None);
        // The world's own events are never the column's reads.
        let t = [
            read(10, "decide", "approval"),
            change(30, 40, "approval"),
            read(45, WORLD, "approval"),
            post(50, "restart"),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), Some(AFTER_LAST_READ));
    }

    #[test]
    fn a_resend_answered_from_the_idempotency_cache_applied_nothing() {
        let t = [
            read(10, "decide", "incident_compensation"),
            post(20, "decide"),
            ev(25, "decide", "answered", "", None),
            change(30, 40, "incident_compensation"),
            post(50, "restart"),
            ev(55, "restart", "answered", REPLAYED, None),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), None);
        let mut applied = t.to_vec();
        applied[5].what = String::new();
        assert_eq!(
            assumption_broken(&[], &applied, 5_500),
            Some(AFTER_LAST_READ)
        );
    }

    #[test]
    fn a_post_rests_only_on_reads_of_its_own_process_and_of_those_it_took_over_from() {
        // A stopped sender read before the change; a restart ran (and read) while it was
        // stopped; the sender then posts: the restart's read says nothing about the sender.
        let t = [
            read(10, "decide", "incident_compensation"),
            change(30, 40, "incident_compensation"),
            read(50, "restart", "incident_compensation"),
            ev(60, "restart", "answered", "", None),
            post(70, "decide"),
            ev(80, "decide", "answered", "", None),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), Some(AFTER_LAST_READ));
        // Two workers at once: neither vouches for the other.
        let t = [
            read(10, "decide", "approval"),
            read(12, "decide-2", "approval"),
            change(30, 40, "approval"),
            read(45, "decide", "approval"),
            post(50, "decide-2"),
            post(55, "decide"),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), Some(AFTER_LAST_READ));
        // A restart that began after the killed sender's last event takes over its reads.
        let t = [
            read(10, "decide", "approval"),
            ev(20, WORLD, "kill", "decide", None),
            read(25, "restart-1", "approval"),
            ev(26, WORLD, "kill", "restart-1", None),
            change(30, 40, "approval"),
            post(50, "restart"),
        ];
        assert_eq!(assumption_broken(&[], &t, 5_500), Some(AFTER_LAST_READ));
        // ... and so does one that read after the change and was killed before it began.
        let mut t = t.to_vec();
        t.insert(5, read(45, "restart-2", "approval"));
        t.insert(6, ev(46, WORLD, "kill", "restart-2", None));
        assert_eq!(assumption_broken(&[], &t, 5_500), None);
    }

    #[test]
    fn a_hold_past_the_declared_bound_breaks_the_bound_and_one_inside_does_not() {
        let fault = |held_ms: u64, fired: u32| Fault {
            kind: "delay".into(),
            detail: String::new(),
            fired,
            held_ms: Some(held_ms),
        };
        assert_eq!(
            assumption_broken(&[fault(7_000, 1)], &[], 5_500),
            Some(BEYOND_BOUND)
        );
        assert_eq!(assumption_broken(&[fault(5_400, 1)], &[], 5_500), None);
        // A rule that never fired held nothing.
        assert_eq!(assumption_broken(&[fault(7_000, 0)], &[], 5_500), None);
    }

    #[test]
    fn the_fingerprint_is_the_order_of_events_not_their_times() {
        let a = [read(10, "decide", "approval"), post(20, "decide")];
        let b = [read(15, "decide", "approval"), post(90, "decide")];
        let c = [post(10, "decide"), read(20, "decide", "approval")];
        assert_eq!(interleaving(&a), interleaving(&b));
        assert_ne!(interleaving(&a), interleaving(&c));
        assert_eq!(interleaving(&a).len(), 16);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!(percentile(&v, 50), Some(10));
        assert_eq!(percentile(&v, 95), Some(19));
        assert_eq!(percentile(&[7], 95), Some(7));
        assert_eq!(percentile(&[], 50), None);
    }
}

//! The nemesis rules, stated once: trial seeds and ids, a trial's judgement, the Clopper–Pearson
//! bound, percentiles and the per nemesis × column summary. The runner writes with these and
//! `verify` re-derives with them.

use super::{NemesisPlan, NemesisSummary, Trial};
use crate::billing_credit::{answer_matches, invariant_held, want_for_decision, HARNESS_ERROR};
use crate::results::{Approval, GroundTruth, Want};

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

/// The judgement of a trial, derived from what Stripe holds and the final status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judgement {
    /// What the want rule allows.
    pub want: Want,
    /// Credits equal `want`.
    pub invariant_held: bool,
    /// Credits exceed `want` in count or cents.
    pub violation: bool,
    /// The status says "sent" exactly when a case credit exists.
    pub answer_matches: bool,
    /// The status is `AMBIGUOUS`.
    pub ambiguous: bool,
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
        violation: truth.case_credit_count > w.count || truth.case_credit_cents > w.cents,
        answer_matches: answer_matches(outcome, truth),
        ambiguous: outcome == "AMBIGUOUS",
    }
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
    if n == 0 || x >= n {
        return 1_000_000;
    }
    let upper = if x == 0 {
        1.0 - 0.05f64.powf(1.0 / f64::from(n))
    } else {
        // The cdf falls as p rises: bisect for the p where it crosses 0.05.
        let (mut lo, mut hi) = (f64::from(x) / f64::from(n), 1.0f64);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if binomial_cdf(x, n, mid) > 0.05 {
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
    let mut out = Vec::new();
    for nemesis in &plan.nemeses {
        for column in &plan.columns {
            let these: Vec<&Trial> = trials
                .iter()
                .filter(|t| &t.nemesis == nemesis && &t.column == column)
                .collect();
            let count = |f: &dyn Fn(&Trial) -> bool| these.iter().filter(|t| f(t)).count() as u32;
            let n = these.len() as u32;
            let violations = count(&|t| t.violation);
            let within = count(&|t| t.assumption.is_none());
            let violations_within = count(&|t| t.violation && t.assumption.is_none());
            let mut settle: Vec<u64> = these.iter().filter_map(|t| t.settle_ms).collect();
            settle.sort_unstable();
            out.push(NemesisSummary {
                nemesis: nemesis.clone(),
                column: column.clone(),
                trials: n,
                within_assumptions: within,
                violations,
                violation_upper95_ppm: clopper_pearson_upper95_ppm(violations, n),
                violations_within,
                within_upper95_ppm: clopper_pearson_upper95_ppm(violations_within, within),
                wrong_answers: count(&|t| !t.answer_matches),
                ambiguous: count(&|t| t.ambiguous),
                harness_errors: count(&|t| t.outcome == HARNESS_ERROR),
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

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!(percentile(&v, 50), Some(10));
        assert_eq!(percentile(&v, 95), Some(19));
        assert_eq!(percentile(&[7], 95), Some(7));
        assert_eq!(percentile(&[], 50), None);
    }
}

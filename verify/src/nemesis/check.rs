//! Re-deriving a nemesis results file: signature, plan completeness, every trial's judgement,
//! every receipt, every summary. Each disagreement is a [`Finding`] naming its path.

use super::rules::{
    assumption_broken, interleaving, judge, parse_trial_id, summarize, trial_id, trial_seed,
};
use super::{sign, NemesisFile, NemesisPlan, Trial, NEMESIS_FORMAT};
use crate::billing_credit::is_judged_credit;
use crate::finding::Finding;
use crate::receipt::{verify_bundle, KeyCheck, ReceiptReport};
use serde::Serialize;
use std::collections::BTreeSet;

/// Finding codes of the nemesis checks.
pub mod code {
    /// The file is not of the nemesis format or its plan is unusable.
    pub const FORMAT: &str = "nemesis_format";
    /// The signature does not hold (or is not by the pinned key).
    pub const SIGNATURE: &str = "nemesis_signature";
    /// The trial list is not exactly the plan (missing, extra, reordered or renamed trials).
    pub const TRIALS_INCOMPLETE: &str = "nemesis_trials_incomplete";
    /// A trial's ground truth contradicts itself.
    pub const GROUND_TRUTH: &str = "nemesis_ground_truth_inconsistent";
    /// A trial's stated judgement is not the one its data gives.
    pub const JUDGEMENT: &str = "nemesis_judgement_mismatch";
    /// A trial's receipt does not verify, or disagrees with Stripe.
    pub const RECEIPT: &str = "nemesis_receipt";
    /// The summary is not the one the trials give.
    pub const SUMMARY: &str = "nemesis_summary_mismatch";
}

/// What checking a nemesis file found.
#[derive(Debug, Clone, Serialize)]
pub struct NemesisReport {
    /// Every check held.
    pub ok: bool,
    /// Trials checked.
    pub trials: usize,
    /// Receipts verified.
    pub receipts: usize,
    /// Violations over all trials (as re-derived).
    pub violations: usize,
    /// `pinned` or `self-attested`.
    pub key: &'static str,
    /// [`crate::fingerprint`] of the key the file was checked against: the pinned key, or the one
    /// whose signature it carries (self-attested); `None` when it names no valid key.
    pub fingerprint: Option<String>,
    /// Every disagreement, in file order.
    pub findings: Vec<Finding>,
}

/// Checks `file`: under `KeyCheck::Pinned`, the file and every receipt must be signed by that key;
/// self-attested, by the file's own `environment.signer`.
///
/// In stages, each on what the one before accepted: the signature (under a pin, a file whose
/// signature fails is not read further: nothing is derived from it); the plan's size against
/// the trials the file holds (a plan larger than its trials could fill is refused before
/// anything is built from it); then each trial, its receipt and its binding, the trial list
/// against the plan, and the summary.
pub fn verify_nemesis(file: &NemesisFile, key: &KeyCheck) -> NemesisReport {
    let mut f = Vec::new();
    if file.format != NEMESIS_FORMAT {
        f.push(Finding::new(
            "format",
            code::FORMAT,
            format!("not an {NEMESIS_FORMAT} file"),
        ));
    }
    let signer = check_signature(file, key, &mut f);
    let mut report = NemesisReport {
        ok: false,
        trials: file.trials.len(),
        receipts: 0,
        violations: file.trials.iter().filter(|t| t.violation).count(),
        key: match key {
            KeyCheck::Pinned(_) => "pinned",
            KeyCheck::SelfAttested => "self-attested",
        },
        fingerprint: checked_against(file, key, signer).map(|k| crate::fingerprint(&k)),
        findings: Vec::new(),
    };
    if matches!(key, KeyCheck::Pinned(_)) && !f.is_empty() {
        report.findings = f;
        return report;
    }
    let (well_formed, fits) = check_plan_size(file, &mut f);
    let receipt_key = match (key, signer) {
        (KeyCheck::Pinned(k), _) => KeyCheck::Pinned(*k),
        (KeyCheck::SelfAttested, Some(k)) => KeyCheck::Pinned(k),
        (KeyCheck::SelfAttested, None) => KeyCheck::SelfAttested,
    };
    for (i, t) in file.trials.iter().enumerate() {
        let base = format!("trials[{i}]");
        check_ground_truth(&base, t, &mut f);
        check_judgement(&base, t, file.environment.claim.max_in_flight_ms, &mut f);
        let receipt = check_receipt(&base, t, &receipt_key, &mut f);
        report.receipts += usize::from(receipt.is_some());
        super::bind::check_trial_record(&base, t, receipt.as_ref(), &mut f);
    }
    if well_formed {
        check_plan(file, &mut f);
    }
    if fits {
        check_summary(file, &mut f);
    }
    report.ok = f.is_empty();
    report.findings = f;
    report
}

/// The plan must name each nemesis and column once and at least one trial each (well formed:
/// the trial list can be walked against it, stopping at the first trial out of place, so within
/// the trials the file holds), and exactly as many trials in all as the file holds (it fits: the
/// summary, one entry per nemesis × column, is no larger than the trials). Returns both.
fn check_plan_size(file: &NemesisFile, f: &mut Vec<Finding>) -> (bool, bool) {
    let plan = &file.plan;
    let unique = |v: &[String]| v.iter().collect::<BTreeSet<_>>().len() == v.len();
    if plan.nemeses.is_empty()
        || plan.columns.is_empty()
        || plan.trials == 0
        || !unique(&plan.nemeses)
        || !unique(&plan.columns)
    {
        f.push(Finding::new(
            "plan",
            code::FORMAT,
            "the plan names no nemesis or column, or one twice, or runs no trial",
        ));
        return (false, false);
    }
    let expected = (plan.nemeses.len() as u128)
        .saturating_mul(plan.columns.len() as u128)
        .saturating_mul(u128::from(plan.trials));
    if expected != file.trials.len() as u128 {
        f.push(Finding::mismatch(
            "trials",
            code::TRIALS_INCOMPLETE,
            "the number of trials is not nemeses x columns x trials of the plan",
            expected.to_string(),
            file.trials.len().to_string(),
        ));
        return (true, false);
    }
    (true, true)
}

/// The summary, by the one summary rule ([`summarize`]), one nemesis × column at a time over
/// that pair's run of trials (the trial list is in plan order): linear in the trials.
fn check_summary(file: &NemesisFile, f: &mut Vec<Finding>) {
    let plan = &file.plan;
    let per = plan.trials as usize;
    let pairs = plan
        .nemeses
        .iter()
        .flat_map(|n| plan.columns.iter().map(move |c| (n, c)));
    let mut derived = Vec::with_capacity(file.summary.len());
    for (k, (nemesis, column)) in pairs.enumerate() {
        let one = NemesisPlan {
            nemeses: vec![nemesis.clone()],
            columns: vec![column.clone()],
            trials: plan.trials,
            seed: plan.seed,
        };
        let run = file.trials.get(k * per..(k + 1) * per).unwrap_or_default();
        derived.extend(summarize(&one, run));
    }
    if derived != file.summary {
        let first = derived
            .iter()
            .zip(&file.summary)
            .position(|(a, b)| a != b)
            .unwrap_or(derived.len().min(file.summary.len()));
        f.push(Finding::mismatch(
            format!("summary[{first}]"),
            code::SUMMARY,
            "the summary is not the one the trials give",
            serde_json::to_string(&derived.get(first)).unwrap_or_default(),
            serde_json::to_string(&file.summary.get(first)).unwrap_or_default(),
        ));
    }
}

/// The key a verdict names: the pinned key, or the one that signed the file, or (its signature
/// failing) the one it names as its signer.
fn checked_against(
    file: &NemesisFile,
    key: &KeyCheck,
    signer: Option<ed25519_dalek::VerifyingKey>,
) -> Option<ed25519_dalek::VerifyingKey> {
    match key {
        KeyCheck::Pinned(k) => Some(*k),
        KeyCheck::SelfAttested => signer.or_else(|| {
            crate::entry::decode_lower_hex::<32>(&file.signature.signer)
                .and_then(|b| ed25519_dalek::VerifyingKey::from_bytes(&b).ok())
        }),
    }
}

fn check_signature(
    file: &NemesisFile,
    key: &KeyCheck,
    f: &mut Vec<Finding>,
) -> Option<ed25519_dalek::VerifyingKey> {
    match sign::check(file) {
        Ok(signer) => {
            let published = crate::entry::lower_hex(signer.as_bytes());
            if published != file.environment.signer {
                f.push(Finding::new(
                    "signature.signer",
                    code::SIGNATURE,
                    "the file is not signed by the run's published signer",
                ));
            }
            if let KeyCheck::Pinned(pinned) = key {
                if pinned != &signer {
                    f.push(Finding::new(
                        "signature.signer",
                        code::SIGNATURE,
                        "the file is not signed by the pinned key",
                    ));
                }
            }
            Some(signer)
        }
        Err(e) => {
            f.push(Finding::new("signature", code::SIGNATURE, e.to_string()));
            None
        }
    }
}

/// The trials must be exactly the plan: for each nemesis, each column, indices 0..trials, each
/// with the seed the run's seed gives and the id that names it. The plan is well formed
/// ([`check_plan_size`]): every step visits a trial, and the walk stops at the first one out of
/// place, so it is linear in the trials whatever the plan says.
fn check_plan(file: &NemesisFile, f: &mut Vec<Finding>) {
    let plan = &file.plan;
    let mut k = 0usize;
    for nemesis in &plan.nemeses {
        for column in &plan.columns {
            for index in 0..plan.trials {
                let seed = trial_seed(plan.seed, nemesis, column, index);
                let id = trial_id(nemesis, column, seed);
                let Some(t) = file.trials.get(k) else {
                    f.push(Finding::new(
                        format!("trials[{k}]"),
                        code::TRIALS_INCOMPLETE,
                        format!("trial {id} is missing"),
                    ));
                    return;
                };
                let parsed = parse_trial_id(&t.id);
                if t.id != id
                    || t.nemesis != *nemesis
                    || t.column != *column
                    || t.index != index
                    || t.seed != seed
                    || parsed != Some((nemesis.as_str(), column.as_str(), seed))
                {
                    f.push(Finding::mismatch(
                        format!("trials[{k}].id"),
                        code::TRIALS_INCOMPLETE,
                        "the trial is not the one the plan puts here",
                        id,
                        t.id.clone(),
                    ));
                    return;
                }
                k += 1;
            }
        }
    }
}

fn check_ground_truth(base: &str, t: &Trial, f: &mut Vec<Finding>) {
    let gt = &t.ground_truth;
    let from_txns: BTreeSet<(&str, i64, i64)> = gt
        .balance_transactions
        .iter()
        .filter(|x| is_judged_credit(x))
        .map(|x| (x.id.as_str(), x.amount, x.created))
        .collect();
    let stated: BTreeSet<(&str, i64, i64)> = gt
        .case_credits
        .iter()
        .map(|c| (c.id.as_str(), c.amount, c.created))
        .collect();
    let cents: i128 = gt.case_credits.iter().map(|c| -i128::from(c.amount)).sum();
    if from_txns != stated
        || stated.len() != gt.case_credits.len()
        || gt.case_credit_count as usize != gt.case_credits.len()
        || i128::from(gt.case_credit_cents) != cents
    {
        f.push(Finding::new(
            format!("{base}.ground_truth.case_credits"),
            code::GROUND_TRUTH,
            format!(
                "trial {}: case_credits, their count or their cents are not the credits billing did not make",
                t.id
            ),
        ));
    }
}

fn check_judgement(base: &str, t: &Trial, max_in_flight_ms: u64, f: &mut Vec<Finding>) {
    let j = judge(
        &t.ground_truth,
        &t.case.case_id,
        &t.case.incident,
        &t.case.approval,
        t.decision.as_ref().map(|d| d.amount),
        &t.outcome,
    );
    let stated = (
        t.want,
        t.invariant_held,
        t.violation,
        t.answer_matches,
        t.ambiguous,
        t.unresolved,
    );
    let derived = (
        j.want,
        j.invariant_held,
        j.violation,
        j.answer_matches,
        j.ambiguous,
        j.unresolved,
    );
    if stated != derived {
        f.push(Finding::mismatch(
            base.to_string(),
            code::JUDGEMENT,
            format!(
                "trial {}: (want, invariant_held, violation, answer_matches, ambiguous, unresolved) is not what its data gives",
                t.id
            ),
            format!("{derived:?}"),
            format!("{stated:?}"),
        ));
    }
    let fingerprint = interleaving(&t.timeline);
    if t.interleaving != fingerprint {
        f.push(Finding::mismatch(
            format!("{base}.interleaving"),
            code::JUDGEMENT,
            format!(
                "trial {}: the interleaving fingerprint is not its timeline's",
                t.id
            ),
            fingerprint,
            t.interleaving.clone(),
        ));
    }
    let assumption = assumption_broken(&t.faults, &t.timeline, max_in_flight_ms);
    if t.assumption.as_deref() != assumption {
        f.push(Finding::mismatch(
            format!("{base}.assumption"),
            code::JUDGEMENT,
            format!(
                "trial {}: the within-assumptions label is not the one its timeline and faults give",
                t.id
            ),
            format!("{assumption:?}"),
            format!("{:?}", t.assumption),
        ));
    }
    let decide_killed = t.kills.iter().any(|k| k.worker == "decide" && k.delivered);
    if t.replay_at.is_some() && !decide_killed {
        f.push(Finding::new(
            format!("{base}.replay_at"),
            code::JUDGEMENT,
            format!(
                "trial {}: a replay position is named but no decide kill was delivered",
                t.id
            ),
        ));
    }
}

/// An interlock trial that reached the gate carries a receipt: it must verify under the key (what
/// it says happened is the trial's measured outcome, judged against Stripe by the want rule).
/// Returns the receipt's report, when the trial carries one.
fn check_receipt(
    base: &str,
    t: &Trial,
    key: &KeyCheck,
    f: &mut Vec<Finding>,
) -> Option<ReceiptReport> {
    let bundle = t.receipt.as_ref()?;
    let report = verify_bundle(bundle, key);
    // Sealed (complete) and anchored: every credit the receipt's sends made carries its
    // DISPATCHED hash at Stripe.
    crate::binding::check_record(&format!("trial {}", t.id), base, &t.ground_truth, bundle, f);
    if !report.valid {
        f.push(Finding::new(
            format!("{base}.receipt"),
            code::RECEIPT,
            format!("trial {}: the receipt does not verify", t.id),
        ));
    } else if report.signed != Some(true) && matches!(key, KeyCheck::Pinned(_)) {
        f.push(Finding::new(
            format!("{base}.receipt"),
            code::RECEIPT,
            format!("trial {}: the receipt is not signed by the key", t.id),
        ));
    }
    Some(report)
}

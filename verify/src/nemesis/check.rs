//! Re-deriving a nemesis results file: signature, plan completeness, every trial's judgement,
//! every receipt, every summary. Each disagreement is a [`Finding`] naming its path.

use super::plan::{check_plan_size, compare_summary, PairSummaries, PlanWalk};
use super::rules::{assumption_broken, interleaving, judge};
use super::shards::MergedCheck;
use super::{sign, NemesisFile, Shard, Trial, NEMESIS_FORMAT};
use crate::finding::Finding;
use crate::load::{ElementGroup, LoadError, NemesisText, TRIALS_PER_GROUP};
use crate::receipt::{verify_group_views, KeyCheck, ReceiptReport, SignerRule, Vetted};
use crate::view::BundleView;
use ed25519_dalek::VerifyingKey;
use rayon::prelude::*;
use serde::Serialize;
use std::borrow::Cow;
use std::convert::Infallible;
use std::ops::Range;

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
    /// A shard file's slice, or a merged file's shards, are not every slice of one campaign
    /// once ([`crate::nemesis::shards`]).
    pub const SHARDS: &str = "nemesis_shards";
    /// A trial's recorded faults (outage, service fault, kills, fault parameters) are not the
    /// ones its seed draws ([`crate::nemesis::drawn`]).
    pub const DRAW: &str = "nemesis_draw_mismatch";
}

/// What checking a nemesis file found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NemesisReport {
    /// Every check held.
    pub ok: bool,
    /// Trials checked; `None` when nothing was derived from the file (under a pin, its signature
    /// failed), as for the two counts below.
    pub trials: Option<usize>,
    /// Receipts verified.
    pub receipts: Option<usize>,
    /// Violations over all trials, as the trials state them (each stated judgement is checked
    /// against its data: one that differs is a finding).
    pub violations: Option<usize>,
    /// Judged trials whose credits fall short of their want ([`crate::nemesis::Trial::under_credit`]):
    /// a failure of the column counted beside violations, re-derived from each trial's data.
    pub under_credits: Option<usize>,
    /// `pinned` or `self-attested`.
    pub key: &'static str,
    /// [`crate::fingerprint`] of the key the file was checked against: the pinned key, or the one
    /// whose signature it carries (self-attested); `None` when it names no valid key.
    pub fingerprint: Option<String>,
    /// Every disagreement, in file order.
    pub findings: Vec<Finding>,
    /// On a shard file: the slice it holds (one part of a campaign, not the whole of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// On a merged file: the fingerprint of each shard's signer, in slice order (each shard's
    /// signature was checked over its slice of the trials).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Vec<String>>,
}

/// A trial as it is checked: typed, and its receipt as a view (read apart from the file's
/// text, or a view of the typed trial's own receipt).
struct Apart<'t> {
    trial: Cow<'t, Trial>,
    receipt: Option<BundleView<'t>>,
}

impl<'t> Apart<'t> {
    /// A typed trial and a view of its own receipt.
    fn of(t: &'t Trial) -> Apart<'t> {
        Apart {
            receipt: t.receipt.as_ref().map(BundleView::of),
            trial: Cow::Borrowed(t),
        }
    }
}

/// Checks `file`: under `KeyCheck::Pinned`, the file and every receipt must be signed by that key;
/// self-attested, by the file's own `environment.signer`. A merged file's shards must be signed
/// by the pinned key too ([`verify_nemesis_pinning`] allows others), and each trial's receipt by
/// its shard's signer.
///
/// In stages, each on what the one before accepted: the signature (under a pin, a file whose
/// signature fails is not read further: nothing is derived from it); the plan's size against
/// the trials the file holds (a plan larger than its trials could fill is refused before
/// anything is built from it); then each trial, its receipt and its binding, the trial list
/// against the plan, and the summary.
pub fn verify_nemesis(file: &NemesisFile, key: &KeyCheck) -> NemesisReport {
    verify_nemesis_pinning(file, key, &[])
}

/// [`verify_nemesis`], where under a pin the shards of a merged file may also be signed by any of
/// `allowed` (the keys of an allowed-signers file); the merged file itself must be signed by the
/// pinned key.
pub fn verify_nemesis_pinning(
    file: &NemesisFile,
    key: &KeyCheck,
    allowed: &[VerifyingKey],
) -> NemesisReport {
    let read = |range: Range<usize>| -> Result<Vec<Apart<'_>>, Infallible> {
        let trials = file.trials.get(range).unwrap_or_default();
        Ok(trials.iter().map(Apart::of).collect())
    };
    // The file is held whole already: its groups' values are not counted.
    let count = file.trials.len();
    let groups = (0..count)
        .step_by(TRIALS_PER_GROUP)
        .map(|start| ElementGroup {
            elements: start..(start + TRIALS_PER_GROUP).min(count),
            values: 0,
        })
        .collect();
    let Ok(report) = verify_parts(file, count, (groups, usize::MAX), read, key, allowed);
    report
}

/// [`verify_nemesis`] over a file whose trials are still text ([`crate::load::load_for_check`]):
/// a group of trials is read, checked and dropped at a time, so the file is never held as typed
/// data all at once. The checks and the report are those of [`verify_nemesis`]. `Err` when a
/// trial cannot be read; the caller then reads the whole file strictly
/// ([`crate::load::load_document`]) to name where it went wrong.
pub fn verify_nemesis_text(
    file: &NemesisText<'_>,
    key: &KeyCheck,
) -> Result<NemesisReport, LoadError> {
    verify_nemesis_text_pinning(file, key, &[])
}

/// [`verify_nemesis_text`] with the keys a merged file's shards may also be signed by under a
/// pin ([`verify_nemesis_pinning`]).
pub fn verify_nemesis_text_pinning(
    file: &NemesisText<'_>,
    key: &KeyCheck,
    allowed: &[VerifyingKey],
) -> Result<NemesisReport, LoadError> {
    // Each trial typed with its receipt apart, as a view of the file's text: its entries are
    // never built as trees of values.
    let read = |range: Range<usize>| -> Result<Vec<Apart<'_>>, LoadError> {
        let start = range.start;
        let texts = file.trials.get(range).unwrap_or_default();
        texts
            .iter()
            .enumerate()
            .map(|(k, text)| {
                let (trial, receipt) = crate::load::read_trial_apart(start + k, text)?;
                Ok(Apart {
                    trial: Cow::Owned(trial),
                    receipt,
                })
            })
            .collect()
    };
    // The groups found as the file was read: no more values than a thread should hold at once;
    // on no more threads than the file's budget holds such groups, and no more values in those
    // held together than the budget.
    let bytes = file.trials.iter().map(|t| t.get().len()).sum();
    let threads = crate::in_flight::threads_for(&file.groups, bytes);
    let groups = (file.groups.clone(), crate::in_flight::budget(bytes));
    let count = file.trials.len();
    crate::in_flight::on_threads(threads, || {
        verify_parts(&file.head, count, groups, read, key, allowed)
    })
}

/// Every check of a nemesis file whose `count` trials `read` gives a group (of `groups`, in
/// order, covering `0..count`) at a time (`head`'s own `trials` are not read); the groups held
/// together (a window of them) hold at most `held` values, or a single group.
fn verify_parts<'t, E: Send>(
    head: &NemesisFile,
    count: usize,
    (groups, held): (Vec<ElementGroup>, usize),
    read: impl Fn(Range<usize>) -> Result<Vec<Apart<'t>>, E> + Sync,
    key: &KeyCheck,
    allowed: &[VerifyingKey],
) -> Result<NemesisReport, E> {
    let mut f = Vec::new();
    if head.format != NEMESIS_FORMAT {
        f.push(Finding::new(
            "format",
            code::FORMAT,
            format!("not an {NEMESIS_FORMAT} file"),
        ));
    }
    // A merged file's shards: each shard's signature covers its slice of the trials.
    let mut merged = MergedCheck::new(head, key, allowed, &mut f);
    let first = first_pass(head, &groups, &read, merged.as_mut(), &mut f)?;
    if let Some(m) = merged.as_mut() {
        m.finish(head, &mut f);
    }
    let signer = check_signature(head, first.hash, key, &mut f);
    let mut report = NemesisReport {
        ok: false,
        trials: None,
        receipts: None,
        violations: None,
        under_credits: None,
        key: match key {
            KeyCheck::Pinned(_) => "pinned",
            KeyCheck::SelfAttested => "self-attested",
        },
        fingerprint: checked_against(head, key, signer).map(|k| crate::fingerprint(&k)),
        findings: Vec::new(),
        shard: head.plan.shard,
        merged_from: merged.as_ref().map(MergedCheck::signers),
    };
    if matches!(key, KeyCheck::Pinned(_)) && !f.is_empty() {
        report.findings = f;
        return Ok(report);
    }
    let rules = TrialRules {
        clock_start: head.environment.clock_start,
        max_in_flight_ms: head.environment.claim.max_in_flight_ms,
        span_ms: head.plan.exposure_span_ms(),
        receipt_key: match (key, signer) {
            (KeyCheck::Pinned(k), _) => KeyCheck::Pinned(*k),
            (KeyCheck::SelfAttested, Some(k)) => KeyCheck::Pinned(k),
            (KeyCheck::SelfAttested, None) => KeyCheck::SelfAttested,
        },
        merged: merged.as_ref(),
    };
    let receipts = second_pass(head, count, (&groups, held), &read, &rules, &mut f)?;
    report.trials = Some(count);
    report.receipts = Some(receipts);
    report.violations = Some(first.violations);
    report.under_credits = Some(first.under_credits);
    report.ok = f.is_empty();
    report.findings = f;
    Ok(report)
}

/// What the first pass over the trials gives: the file's hash (or why it has none) and the
/// counts stated by the trials.
struct FirstPass {
    hash: Result<String, sign::SignError>,
    violations: usize,
    under_credits: usize,
}

/// The first pass: each group of trials read, each trial hashed for the file's signature (and
/// its shard's, fed to `merged`), counted, and dropped.
fn first_pass<'t, E>(
    head: &NemesisFile,
    groups: &[ElementGroup],
    read: &impl Fn(Range<usize>) -> Result<Vec<Apart<'t>>, E>,
    mut merged: Option<&mut MergedCheck>,
    f: &mut Vec<Finding>,
) -> Result<FirstPass, E> {
    let (mut violations, mut under_credits) = (0, 0);
    let mut hasher = sign::FileHasher::new(head);
    let mut hashed = Ok(());
    for group in groups {
        let trials = read(group.elements.clone())?;
        violations += trials.iter().filter(|a| a.trial.violation).count();
        under_credits += trials.iter().filter(|a| a.trial.under_credit()).count();
        for a in &trials {
            // Written once for the file's hash and its shard's.
            let canonical = sign::trial_canonical(&a.trial, a.receipt.as_ref());
            if let Ok(h) = hasher.as_mut() {
                match &canonical {
                    Ok(text) if hashed.is_ok() => h.add(text),
                    Ok(_) => {}
                    Err(e) => hashed = hashed.and(Err(e.clone())),
                }
            }
            if let Some(m) = merged.as_deref_mut() {
                m.trial(&a.trial, &canonical, f);
            }
        }
    }
    Ok(FirstPass {
        hash: hasher.and_then(|h| hashed.map(|()| h.finish())),
        violations,
        under_credits,
    })
}

/// What each trial is checked against, fixed by the file's head and its signature.
struct TrialRules<'m> {
    clock_start: Option<i64>,
    max_in_flight_ms: u64,
    span_ms: u64,
    /// The key every receipt must be signed by (on a merged file, its shard's instead).
    receipt_key: KeyCheck,
    merged: Option<&'m MergedCheck>,
}

impl TrialRules<'_> {
    /// Every check of trial `index` on its own: its ground truth, clock, judgement, draw,
    /// receipt and binding. Whether its receipt verified.
    fn check(&self, index: usize, a: &Apart<'_>, found: &mut Vec<Finding>) -> bool {
        let t = &*a.trial;
        let base = format!("trials[{index}]");
        check_ground_truth(&base, t, found);
        check_clock_start(&base, t, self.clock_start, found);
        check_judgement(&base, t, self.max_in_flight_ms, found);
        super::drawn::check_drawn(&base, t, self.span_ms, found);
        // A merged file's trial was run, and its receipt signed, by its shard.
        let shard_key = self.merged.map(|m| m.key_for(t));
        let receipt_key = shard_key.as_ref().unwrap_or(&self.receipt_key);
        let bundle = a.receipt.as_ref();
        let receipt = check_receipt(&base, t, bundle, receipt_key, found);
        super::bind::check_trial_record(&base, t, bundle, receipt.as_ref(), found);
        receipt.is_some()
    }
}

/// The second pass: the plan's size, then each trial checked by `rules`, walked against the plan
/// and added to its summary, then the trial list and the summary against what the trials give.
/// The receipts verified.
///
/// A window of groups at a time, spread over threads; then, in file order, each group's
/// findings are kept, its trials walked against the plan and added to their nemesis x column's
/// summary, and the group is dropped (a pair's trials are summarized as soon as they are all
/// in, so what is kept is at most one pair's summary views). A window's trials are all held
/// until it is done: together they hold no more values than `held` allows.
fn second_pass<'t, E: Send>(
    head: &NemesisFile,
    count: usize,
    (groups, held): (&[ElementGroup], usize),
    read: &(impl Fn(Range<usize>) -> Result<Vec<Apart<'t>>, E> + Sync),
    rules: &TrialRules<'_>,
    f: &mut Vec<Finding>,
) -> Result<usize, E> {
    let (well_formed, fits) = check_plan_size(head, count, f);
    super::exposure_span::check(&head.plan, f);
    let mut walk = well_formed.then(|| PlanWalk::new(&head.plan));
    let mut summaries = fits.then(|| PairSummaries::new(&head.plan, count));
    let mut receipts_verified = 0;
    let most = 2 * rayon::current_num_threads().max(1);
    for batch in windows(groups, most, held) {
        type Checked<'a> = (Vec<Finding>, usize, Vec<Apart<'a>>);
        let checked: Vec<Result<Checked<'t>, E>> = batch
            .par_iter()
            .map(|group| {
                let start = group.elements.start;
                let trials = read(group.elements.clone())?;
                let (mut found, mut receipts) = (Vec::new(), 0);
                for (k, a) in trials.iter().enumerate() {
                    receipts += usize::from(rules.check(start + k, a, &mut found));
                }
                Ok((found, receipts, trials))
            })
            .collect();
        for group in checked {
            let (mut found, receipts, trials) = group?;
            f.append(&mut found);
            receipts_verified += receipts;
            for a in &trials {
                if let Some(w) = walk.as_mut() {
                    w.visit(&a.trial);
                }
                if let Some(s) = summaries.as_mut() {
                    s.push(&a.trial);
                }
            }
        }
    }
    f.extend(walk.and_then(PlanWalk::finish));
    if let Some(s) = summaries {
        f.extend(compare_summary(&head.summary, &s.derived));
    }
    Ok(receipts_verified)
}

/// Consecutive runs of `groups`, together covering them in order, each of at most `most` groups
/// holding at most `values` values together (or a single group).
fn windows(groups: &[ElementGroup], most: usize, values: usize) -> Vec<&[ElementGroup]> {
    let mut windows = Vec::new();
    let (mut start, mut held) = (0, 0);
    for (i, group) in groups.iter().enumerate() {
        let full = i - start == most || held + group.values > values;
        if i > start && full {
            windows.extend(groups.get(start..i));
            (start, held) = (i, 0);
        }
        held += group.values;
    }
    windows.extend(groups.get(start..).filter(|w| !w.is_empty()));
    windows
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

/// The file's signature, given its hash (or why it has none).
fn check_signature(
    file: &NemesisFile,
    hash: Result<String, sign::SignError>,
    key: &KeyCheck,
    f: &mut Vec<Finding>,
) -> Option<ed25519_dalek::VerifyingKey> {
    match hash.and_then(|h| sign::check_hash(file, &h)) {
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

fn check_ground_truth(base: &str, t: &Trial, f: &mut Vec<Finding>) {
    if !crate::scenarios::billing_credit::case_credits(&t.ground_truth).consistent() {
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

/// A trial recorded as killed before any decision ([`crate::nemesis::rules::NOT_DECIDED`]) is in no count: its own
/// record must agree (a forger's review relabelled under-credits so, and they left every
/// count). Nothing decided means no saved decision, no `decision_saved` step, no credit POST and
/// no case credit at the service.
fn check_not_decided(base: &str, t: &Trial, f: &mut Vec<Finding>) {
    if t.outcome != crate::nemesis::rules::NOT_DECIDED {
        return;
    }
    let contradictions: Vec<&str> = [
        (t.decision.is_some(), "a saved decision"),
        (
            t.timeline
                .iter()
                .any(|e| e.kind == "step" && e.what == "decision_saved"),
            "a decision_saved step",
        ),
        (t.timeline.iter().any(|e| e.kind == "post"), "a credit POST"),
        (
            t.ground_truth.case_credit_count > 0,
            "a case credit at the service",
        ),
    ]
    .into_iter()
    .filter(|(present, _)| *present)
    .map(|(_, what)| what)
    .collect();
    if !contradictions.is_empty() {
        f.push(Finding::new(
            format!("{base}.outcome"),
            code::JUDGEMENT,
            format!(
                "trial {}: NOT_DECIDED (killed before any decision, in no count), but its record has {}",
                t.id,
                contradictions.join(", ")
            ),
        ));
    }
}

fn check_judgement(base: &str, t: &Trial, max_in_flight_ms: u64, f: &mut Vec<Finding>) {
    check_not_decided(base, t, f);
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
    bundle: Option<&BundleView<'_>>,
    key: &KeyCheck,
    f: &mut Vec<Finding>,
) -> Option<ReceiptReport> {
    let bundle = bundle?;
    let vetted = Vetted::default();
    let report = verify_group_views(&[bundle], &SignerRule::from(key), &vetted).pop()?;
    // Sealed (complete) and anchored: every credit the receipt's sends made carries its
    // DISPATCHED hash at Stripe.
    let what = format!("trial {}", t.id);
    crate::binding::check_record_view(&what, base, &t.ground_truth, bundle, f);
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

/// A recorded clock start is where every trial's clock started: its first invoice
/// (`subscription_create`) was created at that instant of its clock.
fn check_clock_start(base: &str, t: &Trial, start: Option<i64>, f: &mut Vec<Finding>) {
    let Some(start) = start else {
        return;
    };
    let first = t
        .ground_truth
        .invoices
        .iter()
        .filter(|i| i.billing_reason.as_deref() == Some("subscription_create"))
        .map(|i| i.created)
        .min();
    if let Some(first) = first.filter(|t0| *t0 != start) {
        f.push(Finding::mismatch(
            format!("{base}.ground_truth.invoices"),
            code::GROUND_TRUTH,
            format!(
                "trial {}: its first invoice was not created at the recorded clock start (environment.clock_start)",
                t.id
            ),
            start.to_string(),
            first.to_string(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows cover the groups once, in order, each of at most `most` groups and `values`
    /// values together, or a single group larger than that.
    #[test]
    fn windows_cover_the_groups_in_order_within_their_count_and_values() {
        let sizes = [5, 70, 1, 1, 1, 1, 1, 200, 30, 30, 30, 0, 0];
        let groups: Vec<ElementGroup> = sizes
            .iter()
            .enumerate()
            .map(|(i, &values)| ElementGroup {
                elements: i..i + 1,
                values,
            })
            .collect();
        let found = windows(&groups, 3, 100);
        let covered: Vec<ElementGroup> = found.iter().flat_map(|w| w.to_vec()).collect();
        assert_eq!(covered, groups);
        for window in &found {
            let values: usize = window.iter().map(|g| g.values).sum();
            assert!(!window.is_empty() && window.len() <= 3, "{window:?}");
            assert!(values <= 100 || window.len() == 1, "{window:?}");
        }
        let counts: Vec<usize> = found.iter().map(|w| w.len()).collect();
        assert_eq!(counts, [3, 3, 1, 1, 3, 2]);
        assert!(windows(&[], 3, 100).is_empty());
    }
}

//! A trial's record: the blank one a trial starts from, its judgement against what Stripe holds,
//! its timeline and within-assumptions label, and the HARNESS_ERROR record of a trial that
//! could not run as designed.

use super::faults::{describe, Draw, ServiceFault};
use super::opening::Opened;
use super::timeline::Timeline;
use super::trial::{ms, TrialContext, TrialSpec};
use crate::cell::{empty_truth, stderr_tail};
use scenarios::billing_credit as bc;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};
use verify::nemesis::rules::{assumption_broken, judge};
use verify::nemesis::{Fault, Trial};
use verify::results::{GroundTruth, Want};
use verify::scenarios::billing_credit::HARNESS_ERROR;

/// The trial's timeline, and the within-assumptions label verify's rule derives from it.
/// `held_from`: when the runner saw the service hold the credit POST, if it did.
pub(super) fn label(
    trial: &mut Trial,
    timeline: &Timeline,
    ctx: &TrialContext<'_>,
    held_from: Option<Instant>,
) {
    let hold = trial
        .faults
        .iter()
        .find(|f| f.fired > 0 && f.held_ms.is_some_and(|h| h > 0))
        .and_then(|f| f.held_ms)
        .map(Duration::from_millis);
    trial.timeline = timeline.events(hold, held_from);
    trial.interleaving = verify::nemesis::rules::interleaving(&trial.timeline);
    let bound = ms(ctx.backend.scenario_settings().max_in_flight);
    trial.assumption = assumption_broken(&trial.faults, &trial.timeline, bound).map(str::to_owned);
}

/// The last non-empty line of a worker's stderr.
pub(super) fn last_line(path: &Path) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.chars().take(500).collect())
}

/// The trial's record before it runs: its drawn service fault unfired, a HARNESS_ERROR outcome
/// until the trial says otherwise.
pub(super) fn blank_trial(id: &str, spec: TrialSpec, plan: &Draw, case: &bc::CaseFile) -> Trial {
    Trial {
        id: id.to_owned(),
        nemesis: spec.nemesis.as_str().into(),
        column: spec.column.as_str().into(),
        index: spec.index,
        seed: spec.seed,
        outage: plan.outage.into(),
        faults: plan
            .service
            .iter()
            .map(|a| {
                let (kind, detail) = describe(*a);
                Fault {
                    kind,
                    detail,
                    fired: 0,
                    held_ms: match a {
                        ServiceFault::Delay { ms } => Some(*ms),
                        _ => None,
                    },
                }
            })
            .collect(),
        kills: Vec::new(),
        // Derived from the timeline once the trial has run.
        assumption: None,
        case: case.to_results_case(),
        decision: None,
        outcome: HARNESS_ERROR.into(),
        harness_error: None,
        ground_truth: empty_truth(),
        want: Want { count: 0, cents: 0 },
        invariant_held: false,
        violation: false,
        answer_matches: false,
        ambiguous: false,
        unresolved: false,
        timeline: Vec::new(),
        interleaving: String::new(),
        settle_ms: None,
        receipt: None,
        journal_kinds: Vec::new(),
        replay_at: None,
        restart_error: None,
    }
}

/// Judges the trial against `truth`, what Stripe holds, and records the judgement.
pub(super) fn finish(trial: &mut Trial, truth: GroundTruth) {
    let j = judge(
        &truth,
        &trial.case.case_id,
        &trial.case.incident,
        &trial.case.approval,
        trial.decision.as_ref().map(|d| d.amount),
        &trial.outcome,
    );
    trial.ground_truth = truth;
    trial.want = j.want;
    trial.invariant_held = j.invariant_held;
    trial.violation = j.violation;
    trial.answer_matches = j.answer_matches;
    trial.ambiguous = j.ambiguous;
    trial.unresolved = j.unresolved;
}

/// A HARNESS_ERROR trial: still reads and judges what Stripe holds, with the timeline so far.
pub(super) fn harness(
    mut trial: Trial,
    o: &Opened,
    (timeline, ctx): (&Timeline, &TrialContext<'_>),
    why: String,
) -> Trial {
    let mut text = why;
    for file in ["decide.stderr", "restart.stderr"] {
        let tail = stderr_tail(&o.logs.join(file));
        if !tail.trim().is_empty() {
            text.push_str(&format!("\n--- {file} (tail) ---\n{tail}"));
        }
    }
    trial.outcome = HARNESS_ERROR.into();
    trial.harness_error = Some(text);
    let truth = bc::ground_truth(&o.client, &o.case).unwrap_or_else(|_| empty_truth());
    finish(&mut trial, truth);
    label(&mut trial, timeline, ctx, None);
    trial
}

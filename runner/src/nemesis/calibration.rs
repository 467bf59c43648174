//! The exposure span, sized from this run's own paths ([`verify::nemesis::exposure_span`]):
//! before the campaign's trials, calibration trials (exposure trials with no change in the
//! world) run under the same number of jobs, each column's side by side, and the span is drawn
//! from their measured paths, `decision_saved` to the POST's answer.

use super::run_error::NemesisRunError;
use super::trial::TrialSpec;
use super::Nemesis;
use scenarios::billing_credit::{Column, CrashPoint};
use verify::nemesis::exposure_span::{
    span_from, ColumnPaths, ExposureSpan, CALIBRATION_SEED_NAME, CALIBRATION_TRIALS,
};
use verify::nemesis::rules::trial_seed;
use verify::nemesis::{NemesisPlan, Trial};

/// Refuses, before anything runs, a sharded campaign with the exposure nemesis and no span.
pub(super) fn check_given(plan: &NemesisPlan, given: Option<u64>) -> Result<(), NemesisRunError> {
    let exposure = plan.nemeses.iter().any(|n| n == Nemesis::Exposure.as_str());
    if exposure && given.is_none() && plan.shard.is_some() {
        return Err(NemesisRunError::ShardNeedsSpan);
    }
    Ok(())
}

/// The plan's exposure record: `None` without the exposure nemesis; the span given
/// (`--exposure-span-ms`); or sized from calibration trials run now (slots from `first_slot`
/// on, after every planned trial's). A sharded campaign must give its span: shards run apart
/// and would size different ones.
pub(super) fn exposure_span(
    plan: &NemesisPlan,
    given: Option<u64>,
    first_slot: usize,
    run: &dyn Fn(&[TrialSpec]) -> super::run::Slots,
) -> Result<Option<ExposureSpan>, NemesisRunError> {
    if !plan.nemeses.iter().any(|n| n == Nemesis::Exposure.as_str()) {
        return Ok(None);
    }
    if let Some(span_ms) = given {
        return Ok(Some(ExposureSpan {
            span_ms,
            calibration: None,
        }));
    }
    check_given(plan, given)?;
    let specs = calibration_specs(plan.seed, first_slot);
    eprintln!(
        "runner: sizing the exposure span: {} calibration trials per column (no change in the world)",
        CALIBRATION_TRIALS
    );
    let mut trials = Vec::with_capacity(specs.len());
    for slot in run(&specs) {
        match slot {
            Some(Ok(t)) => trials.push(t),
            Some(Err(e)) => return Err(NemesisRunError::CouldNotContinue(e)),
            None => return Err(NemesisRunError::TrialDidNotRun),
        }
    }
    let calibration: Vec<ColumnPaths> = Column::ALL
        .iter()
        .map(|c| ColumnPaths {
            column: c.as_str().to_owned(),
            paths_us: trials
                .iter()
                .filter(|t| t.column == c.as_str())
                .filter_map(path_us)
                .collect(),
        })
        .collect();
    let span_ms = span_from(&calibration).ok_or(NemesisRunError::NoCalibrationPath)?;
    let p95s: Vec<String> = calibration
        .iter()
        .map(|c| {
            let p95 = verify::nemesis::exposure_span::p95_us(c).unwrap_or_default();
            format!("{} {:.1} ms", c.column, p95 as f64 / 1_000.0)
        })
        .collect();
    eprintln!(
        "runner: exposure span {span_ms} ms (p95 from decision_saved to the answer: {})",
        p95s.join(", ")
    );
    Ok(Some(ExposureSpan {
        span_ms,
        calibration: Some(calibration),
    }))
}

/// The calibration trials: [`CALIBRATION_TRIALS`] per column, seeds of their own.
fn calibration_specs(seed: u64, first_slot: usize) -> Vec<TrialSpec> {
    let mut specs = Vec::new();
    for column in Column::ALL {
        for index in 0..CALIBRATION_TRIALS {
            specs.push(TrialSpec {
                nemesis: Nemesis::Exposure,
                column,
                index,
                seed: trial_seed(seed, CALIBRATION_SEED_NAME, column.as_str(), index),
                slot: first_slot + specs.len(),
                at: None,
                calibration: true,
            });
        }
    }
    specs
}

/// A trial's path from the decide worker's `decision_saved` to its `after_send`, µs.
fn path_us(t: &Trial) -> Option<u64> {
    let at = |step: &str| {
        t.timeline
            .iter()
            .find(|e| e.actor == "decide" && e.kind == "step" && e.what == step)
            .map(|e| e.at_us)
    };
    at(CrashPoint::AfterSend.as_str())?.checked_sub(at(CrashPoint::DecisionSaved.as_str())?)
}

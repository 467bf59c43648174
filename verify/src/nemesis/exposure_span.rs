//! The exposure nemesis's span, sized from the run's own measured paths: before its exposure
//! trials start, a run without a given span runs [`CALIBRATION_TRIALS`] calibration trials per
//! column (an exposure trial with no change in the world) under the same load, measures each
//! decide worker's path from its `decision_saved` step to its POST's answer (`after_send`), and
//! draws every exposure change over [`span_from`] of those paths: the slowest column's 95th
//! percentile, with a quarter more. The plan records the span and the paths, and this checker
//! derives the span from the paths again; a span given on the command line (`runner
//! --exposure-span-ms`, which every shard of a campaign must share) is recorded without paths.

use super::check::code;
use super::rules::percentile;
use super::NemesisPlan;
use crate::finding::Finding;
use serde::{Deserialize, Serialize};

/// Calibration trials per column.
pub const CALIBRATION_TRIALS: u32 = 10;

/// The largest span a plan may record, ms (a decide worker gives up long before).
pub const MAX_SPAN_MS: u64 = 60_000;

/// The nemesis name calibration trials' seeds are derived under (they are not trials of the
/// plan: their seeds never meet a planned trial's).
pub const CALIBRATION_SEED_NAME: &str = "exposure_calibration";

/// How a run's exposure span was sized.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExposureSpan {
    /// The span, ms after `decision_saved`, every column's changes are drawn over.
    pub span_ms: u64,
    /// The calibration it was sized from, one entry per planned column in plan order; absent
    /// when the span was given (`--exposure-span-ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Vec<ColumnPaths>>,
}

/// One column's measured paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnPaths {
    /// The column.
    pub column: String,
    /// Each calibration trial's path from `decision_saved` to `after_send`, µs, in trial order
    /// (a trial whose timeline lacks either step measured nothing and is left out).
    pub paths_us: Vec<u64>,
}

/// A column's 95th-percentile path, µs.
pub fn p95_us(c: &ColumnPaths) -> Option<u64> {
    let mut sorted = c.paths_us.clone();
    sorted.sort_unstable();
    percentile(&sorted, 95)
}

/// The span sized from `calibration`: the slowest column's 95th-percentile path, a quarter
/// more, rounded up to whole ms (at least 1). `None` when a column measured no path.
pub fn span_from(calibration: &[ColumnPaths]) -> Option<u64> {
    let mut slowest = 0;
    for c in calibration {
        slowest = slowest.max(p95_us(c)?);
    }
    if calibration.is_empty() {
        return None;
    }
    Some(
        (slowest.saturating_mul(5).div_ceil(4))
            .div_ceil(1_000)
            .max(1),
    )
}

/// The plan's exposure record, checked: a span in 1..=[`MAX_SPAN_MS`], and a calibration (when
/// recorded) with one entry per planned column, in plan order, that gives that span.
pub fn check(plan: &NemesisPlan, f: &mut Vec<Finding>) {
    let Some(e) = &plan.exposure else {
        return;
    };
    let mut wrong = |what: String| f.push(Finding::new("plan.exposure", code::DRAW, what));
    if !(1..=MAX_SPAN_MS).contains(&e.span_ms) {
        wrong(format!(
            "the exposure span {} ms is not within 1..={MAX_SPAN_MS} ms",
            e.span_ms
        ));
        return;
    }
    let Some(calibration) = &e.calibration else {
        return;
    };
    let columns: Vec<&str> = calibration.iter().map(|c| c.column.as_str()).collect();
    if columns != plan.columns.iter().map(String::as_str).collect::<Vec<_>>() {
        wrong(format!(
            "the calibration measured columns {columns:?}, the plan has {:?}",
            plan.columns
        ));
        return;
    }
    match span_from(calibration) {
        Some(span) if span == e.span_ms => {}
        Some(span) => wrong(format!(
            "the exposure span is {} ms, its calibration gives {span} ms",
            e.span_ms
        )),
        None => wrong("a column of the calibration measured no path".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(column: &str, ms: &[u64]) -> ColumnPaths {
        ColumnPaths {
            column: column.into(),
            paths_us: ms.iter().map(|m| m * 1_000).collect(),
        }
    }

    #[test]
    fn the_span_is_the_slowest_columns_p95_and_a_quarter() {
        let one: Vec<u64> = (1..=20).collect();
        let cal = [paths("no_check", &[1, 2, 3]), paths("interlock", &one)];
        // p95 of 1..=20 ms is 19 ms; 19 × 1.25 = 23.75, up to 24.
        assert_eq!(span_from(&cal), Some(24));
        assert_eq!(span_from(&[paths("a", &[])]), None);
        assert_eq!(span_from(&[]), None);
        assert_eq!(span_from(&[paths("a", &[0])]), Some(1));
    }

    #[test]
    fn a_span_its_calibration_does_not_give_is_a_finding() {
        let columns = ["no_check", "interlock"];
        let mut plan = NemesisPlan {
            nemeses: vec!["exposure".into()],
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            trials: 1,
            seed: 1,
            shard: None,
            merged: None,
            exposure: Some(ExposureSpan {
                span_ms: 5,
                calibration: Some(vec![paths("no_check", &[2]), paths("interlock", &[4])]),
            }),
        };
        let mut f = Vec::new();
        check(&plan, &mut f);
        assert!(f.is_empty(), "{f:?}");
        for (span, cal) in [
            (
                6,
                Some(vec![paths("no_check", &[2]), paths("interlock", &[4])]),
            ),
            (
                5,
                Some(vec![paths("interlock", &[4]), paths("no_check", &[2])]),
            ),
            (
                5,
                Some(vec![paths("no_check", &[]), paths("interlock", &[4])]),
            ),
            (0, None),
        ] {
            plan.exposure = Some(ExposureSpan {
                span_ms: span,
                calibration: cal,
            });
            let mut f = Vec::new();
            check(&plan, &mut f);
            assert_eq!(f.len(), 1, "{span}: {f:?}");
        }
    }
}

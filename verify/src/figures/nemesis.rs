//! The figures of a billing_credit nemesis campaign (`interlock-nemesis/1`): per column, its
//! judged trials within and beyond its assumptions and their findings, what its summaries say
//! (nothing decided, distinct interleavings, the exposure nemesis), its unguarded windows, and
//! the same per nemesis; each with the definitions the published Nemesis page uses. Every figure
//! counts the trials whose fault fired ([`Trial::counted`]); a judged trial whose fault never
//! fired is counted apart ([`SummaryRow::not_fired`], [`ColumnFigures::not_fired`]), never as
//! judged and passed. The file's own summary (every judged trial) is checked by
//! [`verify_nemesis`]; the pages show [`SummaryRow::shown`].

use crate::nemesis::check::{verify_nemesis, NemesisReport};
use crate::nemesis::rules::{
    began_during_a_hold, percentile, summarize_refs, unguarded_window_at_us, unguarded_window_us,
};
use crate::nemesis::{NemesisFile, NemesisSummary, Trial};
use crate::receipt::KeyCheck;
use std::collections::BTreeMap;

/// A nemesis campaign checked by [`verify_nemesis`]: its report and its figures. A renderer
/// shows the figures only when the report has no finding.
#[derive(Debug, Clone)]
pub struct Checked {
    /// What the check found.
    pub report: NemesisReport,
    /// The figures of the campaign.
    pub figures: NemesisFigures,
}

/// Check `file` under `key` with [`verify_nemesis`] and derive its figures.
pub fn check(file: &NemesisFile, key: &KeyCheck) -> Checked {
    let report = verify_nemesis(file, key);
    Checked {
        report,
        figures: NemesisFigures::derive(file),
    }
}

/// What `verify` derived from a nemesis campaign, beside its report.
#[derive(Debug, Clone)]
pub struct NemesisFigures {
    trials: u32,
    nemeses: u32,
    harness_errors: u32,
    judged: u32,
    not_fired: u32,
    columns: BTreeMap<String, ColumnFigures>,
    listed: Vec<(usize, Listed)>,
    summary_rows: Vec<SummaryRow>,
}

/// What a judged trial is when it is not a plain pass, the first that applies in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed {
    /// Judged, but its fault never fired ([`Trial::fault_fired`]): counted apart, in no rate,
    /// and listed whatever its outcome, so a violation there is seen.
    NotFired,
    /// Credits exceeded the want: a violation.
    Violation,
    /// Credits fell short of the want ([`Trial::under_credit`]).
    UnderCredit,
    /// The final restart ended in an error.
    Unresolved,
    /// The answer was AMBIGUOUS.
    Ambiguous,
    /// The answer did not match Stripe.
    WrongAnswer,
}

/// What trial `t` is when it is not a plain pass; `None` for a pass and for a trial not judged.
pub fn listed(t: &Trial) -> Option<Listed> {
    if !t.judged() {
        return None;
    }
    if !t.fault_fired() {
        Some(Listed::NotFired)
    } else if t.violation {
        Some(Listed::Violation)
    } else if t.under_credit() {
        Some(Listed::UnderCredit)
    } else if t.unresolved {
        Some(Listed::Unresolved)
    } else if t.ambiguous {
        Some(Listed::Ambiguous)
    } else if !t.answer_matches {
        Some(Listed::WrongAnswer)
    } else {
        None
    }
}

/// Violations within assumptions per million trials within them (rounded down); `None` when
/// no trial was within them.
pub fn within_violation_rate_ppm(s: &NemesisSummary) -> Option<u64> {
    (s.within_assumptions > 0)
        .then(|| u64::from(s.violations_within) * 1_000_000 / u64::from(s.within_assumptions))
}

/// One row of the file's summary (a nemesis and a column): its trials that are not a plain
/// pass and its violation rate within assumptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryRow {
    /// The indices, in file order, of the row's trials that are not a plain pass, and what
    /// each is.
    pub listed: Vec<(usize, Listed)>,
    /// [`within_violation_rate_ppm`] of the row.
    pub within_rate_ppm: Option<u64>,
    /// The row's under-credits ([`Trial::under_credit`]) among its counted trials.
    pub under_credits: u32,
    /// The row's summary over the trials the pages count: by the file's own rule
    /// ([`crate::nemesis::rules::summarize`]), without the judged trials whose fault never
    /// fired.
    pub shown: NemesisSummary,
    /// Judged trials of the row whose fault never fired ([`Trial::fault_fired`]).
    pub not_fired: u32,
}

/// The exposure nemesis's figures of one column, from its summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exposure {
    /// Judged trials.
    pub judged: u32,
    /// Of those, violations.
    pub violations: u32,
    /// The 95% upper bound on the violation rate, parts per million.
    pub violation_upper95_ppm: u32,
}

/// One nemesis's figures of one column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NemesisColumn {
    /// The nemesis.
    pub nemesis: String,
    /// Judged trials (within and beyond the column's assumptions).
    pub judged: u32,
    /// Of those, violations.
    pub violations: u32,
    /// Of those, under-credits ([`Trial::under_credit`]).
    pub under_credits: u32,
    /// Of those, wrong answers (unresolved ones excluded: they gave none).
    pub wrong: u32,
    /// Of those, restarts that ended in an error.
    pub unresolved: u32,
    /// Judged trials within the column's assumptions.
    pub within: u32,
    /// Of those, violations.
    pub violations_within: u32,
    /// Of those, under-credits.
    pub under_credits_within: u32,
}

/// One column's figures over its judged trials (neither harness errors nor trials with nothing
/// decided).
#[derive(Debug, Clone)]
pub struct ColumnFigures {
    not_fired: u32,
    within: u32,
    beyond: u32,
    violations_within: u32,
    under_credits_within: u32,
    wrong_within: u32,
    ambiguous_within: u32,
    ambiguous: u32,
    unresolved: u32,
    violations_beyond: u32,
    under_credits_beyond: u32,
    wrong_beyond: u32,
    nothing_decided: u32,
    distinct_within: u32,
    exposure: Option<Exposure>,
    windows: u32,
    window_p50_us: Option<u64>,
    window_p95_us: Option<u64>,
    exposure_phase: ExposurePhase,
    within_began_in_hold: u32,
    nemeses: Vec<NemesisColumn>,
}

/// Where a column's exposure trials stood when the world changed: how long the decision phase
/// (identical code in every column: from the decide worker's `started` step to its
/// `decision_saved` step) took, and how many changes landed after `decision_saved`, where the
/// columns' code differs. Equal load shows as decision phases of about one length in every
/// column; a change before `decision_saved` measures no column's check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExposurePhase {
    /// Exposure trials whose timeline has both steps.
    pub timed: u32,
    /// The decision phase's median, µs.
    pub decision_p50_us: Option<u64>,
    /// Its 95th percentile, µs.
    pub decision_p95_us: Option<u64>,
    /// Exposure trials with a world change and a `decision_saved` step.
    pub changed: u32,
    /// Of those, the ones whose change began at or after `decision_saved`.
    pub changed_after_saved: u32,
    /// Exposure trials with an unguarded window for the approval and a `decision_saved` step.
    pub windowed: u32,
    /// Of those, the ones whose window opened before `decision_saved`, where the draw begins: a
    /// part of the window no drawn change can land in.
    pub opened_before_saved: u32,
    /// The median, over the windowed trials, of the part of the window before
    /// `decision_saved`, µs (0 where the window opened after it).
    pub undrawn_p50_us: Option<u64>,
}

/// The instant (µs into the trial) the decide worker passed `step`, if its timeline says.
fn decide_step_at(t: &Trial, step: &str) -> Option<u64> {
    t.timeline
        .iter()
        .find(|e| e.actor == "decide" && e.kind == "step" && e.what == step)
        .map(|e| e.at_us)
}

impl ExposurePhase {
    fn derive(trials: &[&Trial], max_in_flight_ms: u64) -> ExposurePhase {
        let mut phases: Vec<u64> = trials
            .iter()
            .filter_map(|t| {
                let (start, saved) = (
                    decide_step_at(t, "started")?,
                    decide_step_at(t, "decision_saved")?,
                );
                saved.checked_sub(start)
            })
            .collect();
        phases.sort_unstable();
        let changes: Vec<bool> = trials
            .iter()
            .filter_map(|t| {
                let saved = decide_step_at(t, "decision_saved")?;
                let change = t
                    .timeline
                    .iter()
                    .find(|e| e.actor == "world" && e.kind == "change")?;
                Some(change.at_us >= saved)
            })
            .collect();
        let mut undrawn: Vec<u64> = trials
            .iter()
            .filter_map(|t| {
                let saved = decide_step_at(t, "decision_saved")?;
                let (opened, _) =
                    unguarded_window_at_us(&t.timeline, "approval", max_in_flight_ms)?;
                Some(saved.saturating_sub(opened))
            })
            .collect();
        undrawn.sort_unstable();
        ExposurePhase {
            windowed: count(undrawn.len()),
            opened_before_saved: count(undrawn.iter().filter(|u| **u > 0).count()),
            undrawn_p50_us: percentile(&undrawn, 50),
            timed: count(phases.len()),
            decision_p50_us: percentile(&phases, 50),
            decision_p95_us: percentile(&phases, 95),
            changed: count(changes.len()),
            changed_after_saved: count(changes.iter().filter(|after| **after).count()),
        }
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn how_many(v: &[&Trial], p: fn(&Trial) -> bool) -> u32 {
    count(v.iter().filter(|t| p(t)).count())
}

fn wrong(t: &Trial) -> bool {
    !t.answer_matches && !t.unresolved
}

impl NemesisFigures {
    fn derive(file: &NemesisFile) -> NemesisFigures {
        let counted: Vec<&Trial> = file
            .trials
            .iter()
            .filter(|t| !t.judged() || t.fault_fired())
            .collect();
        let shown = summarize_refs(&file.plan, &counted);
        let columns: Vec<(String, ColumnFigures)> = file
            .plan
            .columns
            .iter()
            .map(|c| (c.clone(), ColumnFigures::derive(file, &shown, c)))
            .collect();
        let listed: Vec<(usize, Listed)> = file
            .trials
            .iter()
            .enumerate()
            .filter_map(|(i, t)| listed(t).map(|k| (i, k)))
            .collect();
        let summary_rows = shown
            .into_iter()
            .map(|s| SummaryRow {
                listed: listed
                    .iter()
                    .copied()
                    .filter(|(i, _)| {
                        file.trials
                            .get(*i)
                            .is_some_and(|t| t.nemesis == s.nemesis && t.column == s.column)
                    })
                    .collect(),
                within_rate_ppm: within_violation_rate_ppm(&s),
                under_credits: count(
                    file.trials
                        .iter()
                        .filter(|t| t.nemesis == s.nemesis && t.column == s.column)
                        .filter(|t| t.counted() && t.under_credit())
                        .count(),
                ),
                not_fired: count(
                    file.trials
                        .iter()
                        .filter(|t| t.nemesis == s.nemesis && t.column == s.column)
                        .filter(|t| t.judged() && !t.fault_fired())
                        .count(),
                ),
                shown: s,
            })
            .collect();
        NemesisFigures {
            trials: count(file.trials.len()),
            nemeses: count(file.plan.nemeses.len()),
            harness_errors: count(file.trials.iter().filter(|t| t.is_harness_error()).count()),
            judged: columns.iter().map(|(_, c)| c.within + c.beyond).sum(),
            not_fired: columns.iter().map(|(_, c)| c.not_fired).sum(),
            columns: columns.into_iter().collect(),
            listed,
            summary_rows,
        }
    }

    /// Trials in the file.
    pub fn trials(&self) -> u32 {
        self.trials
    }

    /// Nemeses the plan ran.
    pub fn nemeses(&self) -> u32 {
        self.nemeses
    }

    /// HARNESS_ERROR trials.
    pub fn harness_errors(&self) -> u32 {
        self.harness_errors
    }

    /// Per column of the plan, its figures.
    pub fn columns(&self) -> &BTreeMap<String, ColumnFigures> {
        &self.columns
    }

    /// Counted trials of the plan's columns (judged, their fault fired; within and beyond
    /// their assumptions).
    pub fn judged(&self) -> u32 {
        self.judged
    }

    /// Judged trials whose fault never fired, counted apart.
    pub fn not_fired(&self) -> u32 {
        self.not_fired
    }

    /// The indices, in file order, of the trials that are not a plain pass, and what each is.
    pub fn listed(&self) -> &[(usize, Listed)] {
        &self.listed
    }

    /// Per row of the file's summary, in its order, its listed trials and rate.
    pub fn summary_rows(&self) -> &[SummaryRow] {
        &self.summary_rows
    }
}

impl ColumnFigures {
    fn derive(file: &NemesisFile, shown: &[NemesisSummary], column: &str) -> ColumnFigures {
        let judged: Vec<&Trial> = file
            .trials
            .iter()
            .filter(|t| t.column == column && t.counted())
            .collect();
        let not_fired = count(
            file.trials
                .iter()
                .filter(|t| t.column == column && t.judged() && !t.fault_fired())
                .count(),
        );
        let (within, beyond): (Vec<&Trial>, Vec<&Trial>) =
            judged.iter().partition(|t| t.assumption.is_none());
        let (mut nothing_decided, mut distinct_within, mut exposure) = (0u32, 0u32, None);
        for s in shown.iter().filter(|s| s.column == column) {
            nothing_decided += s.nothing_decided;
            distinct_within += s.distinct_within;
            if s.nemesis == "exposure" {
                exposure = Some(Exposure {
                    judged: s.judged,
                    violations: s.violations,
                    violation_upper95_ppm: s.violation_upper95_ppm,
                });
            }
        }
        let mut windows: Vec<u64> = judged
            .iter()
            .filter(|t| t.nemesis == "exposure")
            .filter_map(|t| {
                unguarded_window_us(
                    &t.timeline,
                    "approval",
                    file.environment.claim.max_in_flight_ms,
                )
            })
            .collect();
        windows.sort_unstable();
        let exposed: Vec<&Trial> = judged
            .iter()
            .copied()
            .filter(|t| t.nemesis == "exposure")
            .collect();
        ColumnFigures {
            not_fired,
            within: count(within.len()),
            beyond: count(beyond.len()),
            violations_within: how_many(&within, |t| t.violation),
            under_credits_within: how_many(&within, Trial::under_credit),
            wrong_within: how_many(&within, wrong),
            ambiguous_within: how_many(&within, |t| t.ambiguous),
            ambiguous: how_many(&judged, |t| t.ambiguous),
            unresolved: how_many(&judged, |t| t.unresolved),
            violations_beyond: how_many(&beyond, |t| t.violation),
            under_credits_beyond: how_many(&beyond, Trial::under_credit),
            wrong_beyond: how_many(&beyond, wrong),
            nothing_decided,
            distinct_within,
            exposure,
            windows: count(windows.len()),
            window_p50_us: percentile(&windows, 50),
            window_p95_us: percentile(&windows, 95),
            exposure_phase: ExposurePhase::derive(
                &exposed,
                file.environment.claim.max_in_flight_ms,
            ),
            within_began_in_hold: how_many(&within, |t| began_during_a_hold(&t.timeline)),
            nemeses: file
                .plan
                .nemeses
                .iter()
                .map(|n| {
                    let of: Vec<&Trial> =
                        judged.iter().copied().filter(|t| &t.nemesis == n).collect();
                    let within: Vec<&Trial> =
                        within.iter().copied().filter(|t| &t.nemesis == n).collect();
                    NemesisColumn {
                        nemesis: n.clone(),
                        judged: count(of.len()),
                        violations: how_many(&of, |t| t.violation),
                        under_credits: how_many(&of, Trial::under_credit),
                        wrong: how_many(&of, wrong),
                        unresolved: how_many(&of, |t| t.unresolved),
                        within: count(within.len()),
                        violations_within: how_many(&within, |t| t.violation),
                        under_credits_within: how_many(&within, Trial::under_credit),
                    }
                })
                .collect(),
        }
    }

    /// Judged trials whose fault never fired ([`Trial::fault_fired`]): counted apart, in no
    /// figure below.
    pub fn not_fired(&self) -> u32 {
        self.not_fired
    }

    /// Counted trials within the column's assumptions.
    pub fn within(&self) -> u32 {
        self.within
    }

    /// Judged trials beyond them.
    pub fn beyond(&self) -> u32 {
        self.beyond
    }

    /// Violations within assumptions.
    pub fn violations_within(&self) -> u32 {
        self.violations_within
    }

    /// Under-credits within assumptions.
    pub fn under_credits_within(&self) -> u32 {
        self.under_credits_within
    }

    /// Under-credits beyond assumptions.
    pub fn under_credits_beyond(&self) -> u32 {
        self.under_credits_beyond
    }

    /// The nemeses, in plan order, with under-credits (within or beyond assumptions), and how
    /// many.
    pub fn under_crediting(&self) -> Vec<(&str, u32)> {
        self.nemeses
            .iter()
            .filter(|n| n.under_credits > 0)
            .map(|n| (n.nemesis.as_str(), n.under_credits))
            .collect()
    }

    /// Wrong answers within assumptions (unresolved trials gave none).
    pub fn wrong_within(&self) -> u32 {
        self.wrong_within
    }

    /// AMBIGUOUS answers within assumptions.
    pub fn ambiguous_within(&self) -> u32 {
        self.ambiguous_within
    }

    /// AMBIGUOUS answers among all the judged trials.
    pub fn ambiguous(&self) -> u32 {
        self.ambiguous
    }

    /// Judged trials whose restart ended in an error.
    pub fn unresolved(&self) -> u32 {
        self.unresolved
    }

    /// Violations beyond assumptions.
    pub fn violations_beyond(&self) -> u32 {
        self.violations_beyond
    }

    /// Wrong answers beyond assumptions.
    pub fn wrong_beyond(&self) -> u32 {
        self.wrong_beyond
    }

    /// Trials killed before any decision (not judged), summed over the column's summaries.
    pub fn nothing_decided(&self) -> u32 {
        self.nothing_decided
    }

    /// Distinct interleavings within assumptions, summed over the column's summaries.
    pub fn distinct_within(&self) -> u32 {
        self.distinct_within
    }

    /// The exposure nemesis's summary figures, when it ran on the column.
    pub fn exposure(&self) -> Option<Exposure> {
        self.exposure
    }

    /// The column's exposure trials with an unguarded window for the approval.
    pub fn windows(&self) -> u32 {
        self.windows
    }

    /// The median of those windows, microseconds.
    pub fn window_p50_us(&self) -> Option<u64> {
        self.window_p50_us
    }

    /// Their 95th percentile, microseconds.
    pub fn window_p95_us(&self) -> Option<u64> {
        self.window_p95_us
    }

    /// Where the column's exposure trials stood when the world changed.
    pub fn exposure_phase(&self) -> ExposurePhase {
        self.exposure_phase
    }

    /// Trials within assumptions in which a worker process began while another's credit POST
    /// was still held at the service: the within-assumptions trials that test a restart meeting
    /// its predecessor's request in flight.
    pub fn within_began_in_hold(&self) -> u32 {
        self.within_began_in_hold
    }

    /// Per nemesis of the plan, in plan order, the column's figures under it.
    pub fn nemeses(&self) -> &[NemesisColumn] {
        &self.nemeses
    }

    /// The fewest trials within assumptions the column had under one nemesis that has any (0
    /// when none has).
    pub fn min_within(&self) -> u32 {
        self.nemeses
            .iter()
            .map(|n| n.within)
            .filter(|w| *w > 0)
            .min()
            .unwrap_or(0)
    }

    /// The nemeses, in plan order, none of whose judged trials for the column lie within its
    /// assumptions.
    pub fn wholly_beyond(&self) -> Vec<&str> {
        self.nemeses
            .iter()
            .filter(|n| n.within == 0)
            .map(|n| n.nemesis.as_str())
            .collect()
    }

    /// The nemeses, in plan order, with violations within assumptions, and how many.
    pub fn violating(&self) -> Vec<(&str, u32)> {
        self.nemeses
            .iter()
            .filter(|n| n.violations_within > 0)
            .map(|n| (n.nemesis.as_str(), n.violations_within))
            .collect()
    }

    /// The nemeses under which the column credited less than wanted within its assumptions,
    /// with how many times, in plan order.
    pub fn under_crediting_within(&self) -> Vec<(&str, u32)> {
        self.nemeses
            .iter()
            .filter(|n| n.under_credits_within > 0)
            .map(|n| (n.nemesis.as_str(), n.under_credits_within))
            .collect()
    }
}

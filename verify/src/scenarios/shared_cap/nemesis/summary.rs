//! Per nemesis and column: how often the cap held, and the 95% bound on the violation rate.

use super::record::CapTrial;
use crate::nemesis::rules::clopper_pearson_upper95_ppm;
use crate::shared_cap::CAP_CENTS;
use serde::{Deserialize, Serialize};

/// One nemesis and column's counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NemesisSummary {
    /// The nemesis.
    pub nemesis: String,
    /// The column.
    pub column: String,
    /// Trials run (harness errors included).
    pub trials: u32,
    /// Trials judged.
    pub judged: u32,
    /// Judged trials whose invariant held.
    pub held: u32,
    /// Judged trials where refunds went over the cap.
    pub over_cap: u32,
    /// Judged trials in which every drawn kill landed (none ended by itself first).
    pub all_kills_landed: u32,
    /// Judged trials where every ticket's answer matched Stripe.
    pub answers_matched: u32,
    /// Trials the harness could not run as designed.
    pub harness_errors: u32,
    /// One-sided 95% Clopper–Pearson upper bound on the violation rate over the judged
    /// trials, parts per million.
    pub violation_upper95_ppm: u32,
}

/// Whether every kill `t` drew landed.
pub fn all_kills_landed(t: &CapTrial) -> bool {
    let drawn = [&t.draw.kill_a, &t.draw.kill_b, &t.draw.kill_restart]
        .iter()
        .filter(|k| k.is_some())
        .count() as u32;
    t.kills_landed() == drawn
}

/// The summary of `trials`, per nemesis then column, in the orders given.
pub fn summarize(
    trials: &[CapTrial],
    nemeses: &[String],
    columns: &[String],
) -> Vec<NemesisSummary> {
    let mut out = Vec::new();
    for nemesis in nemeses {
        for column in columns {
            let mut s = NemesisSummary {
                nemesis: nemesis.clone(),
                column: column.clone(),
                trials: 0,
                judged: 0,
                held: 0,
                over_cap: 0,
                all_kills_landed: 0,
                answers_matched: 0,
                harness_errors: 0,
                violation_upper95_ppm: 0,
            };
            for t in trials
                .iter()
                .filter(|t| t.nemesis == *nemesis && t.cell.column == *column)
            {
                s.trials += 1;
                if !t.cell.judged() {
                    s.harness_errors += 1;
                    continue;
                }
                s.judged += 1;
                s.held += u32::from(t.cell.invariant_held);
                s.over_cap += u32::from(t.cell.truth.refunded_cents() > CAP_CENTS);
                s.all_kills_landed += u32::from(all_kills_landed(t));
                s.answers_matched += u32::from(t.cell.answers_match);
            }
            s.violation_upper95_ppm = clopper_pearson_upper95_ppm(s.judged - s.held, s.judged);
            out.push(s);
        }
    }
    out
}

/// [`summarize`] of trials given one at a time, none of them held: every count of a nemesis
/// and column's summary is a sum over its trials, and its bound is derived from two of them.
#[derive(Debug)]
pub(crate) struct Tally {
    /// One summary per nemesis and column of the plan, in the plan's order.
    pairs: Vec<NemesisSummary>,
}

impl Tally {
    /// Empty summaries of every nemesis and column given, in that order.
    pub(crate) fn new(nemeses: &[String], columns: &[String]) -> Tally {
        Tally {
            pairs: summarize(&[], nemeses, columns),
        }
    }

    /// Counts trial `t` in its nemesis and column's summary (in none if the plan has neither).
    pub(crate) fn add(&mut self, t: &CapTrial) {
        let at = self
            .pairs
            .iter()
            .position(|s| s.nemesis == t.nemesis && s.column == t.cell.column);
        let Some(at) = at else {
            return;
        };
        let one = summarize(
            std::slice::from_ref(t),
            std::slice::from_ref(&t.nemesis),
            std::slice::from_ref(&t.cell.column),
        );
        if let (Some(s), Some(one)) = (self.pairs.get_mut(at), one.into_iter().next()) {
            s.absorb(one);
        }
    }

    /// [`summarize`] of every trial added, over the nemeses and columns given to [`Tally::new`].
    pub(crate) fn finish(mut self) -> Vec<NemesisSummary> {
        for s in &mut self.pairs {
            s.violation_upper95_ppm = clopper_pearson_upper95_ppm(s.judged - s.held, s.judged);
        }
        self.pairs
    }
}

impl NemesisSummary {
    /// Adds `other`'s counts (of the same nemesis and column) to these; the bound is derived
    /// again at the end ([`Tally::finish`]).
    fn absorb(&mut self, other: NemesisSummary) {
        // Every field named: a count added to the summary must be added here too.
        let NemesisSummary {
            nemesis: _,
            column: _,
            trials,
            judged,
            held,
            over_cap,
            all_kills_landed,
            answers_matched,
            harness_errors,
            violation_upper95_ppm: _,
        } = other;
        self.trials += trials;
        self.judged += judged;
        self.held += held;
        self.over_cap += over_cap;
        self.all_kills_landed += all_kills_landed;
        self.answers_matched += answers_matched;
        self.harness_errors += harness_errors;
    }
}

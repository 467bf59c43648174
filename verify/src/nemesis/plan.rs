//! The plan stage of a nemesis file: whether the plan fits the trials the file holds
//! ([`check_plan_size`]), the trials walked against it one at a time ([`PlanWalk`]), and the
//! summary derived one nemesis x column at a time ([`PairSummaries`]). Nothing here is as large as
//! the plan: a plan larger than its trials could fill is reported, never enumerated.

use super::check::code;
use super::rules::{parse_trial_id, summarize, trial_id, trial_seed};
use super::shards::{slice_len, well_formed};
use super::{NemesisFile, NemesisPlan, NemesisSummary, Shard, Trial};
use crate::finding::Finding;
use crate::results::{Approval, Case, GroundTruth};
use std::collections::BTreeSet;

/// The trials must be exactly the plan: for each nemesis, each column, indices 0..trials (on a
/// shard file, those of its slice), each with the seed the run's seed gives and the id that
/// names it, walked one trial at a time in file order. The plan is well formed ([`check_plan_size`]): every step visits a trial, and the
/// walk stops at the first one out of place, so it is linear in the trials whatever the plan
/// says. The first trial out of place (or the first missing) is the finding.
pub(super) struct PlanWalk<'p> {
    plan: &'p NemesisPlan,
    /// The next planned (nemesis, column, index), by position in the plan's lists.
    next: Option<(usize, usize, u32)>,
    /// Trials visited.
    k: usize,
    finding: Option<Finding>,
    /// The first index of each nemesis x column, and the step to the next (a shard's slice).
    first: u32,
    step: u32,
}

impl<'p> PlanWalk<'p> {
    pub(super) fn new(plan: &'p NemesisPlan) -> PlanWalk<'p> {
        let (first, step) = plan
            .shard
            .map_or((0, 1), |s| (s.index.saturating_sub(1), s.count.max(1)));
        let start = (!plan.nemeses.is_empty() && !plan.columns.is_empty() && first < plan.trials)
            .then_some((0, 0, first));
        PlanWalk {
            plan,
            next: start,
            k: 0,
            finding: None,
            first,
            step,
        }
    }

    /// The planned trial at the walk's position: its nemesis, column, index, seed and id.
    fn planned(&self) -> Option<(&'p str, &'p str, u32, u64, String)> {
        let (n, c, index) = self.next?;
        let nemesis = self.plan.nemeses.get(n)?;
        let column = self.plan.columns.get(c)?;
        let seed = trial_seed(self.plan.seed, nemesis, column, index);
        Some((
            nemesis,
            column,
            index,
            seed,
            trial_id(nemesis, column, seed),
        ))
    }

    fn advance(&mut self) {
        self.k += 1;
        let (first, step) = (self.first, self.step);
        self.next = self.next.and_then(|(n, c, index)| {
            if index.saturating_add(step) < self.plan.trials {
                Some((n, c, index + step))
            } else if c + 1 < self.plan.columns.len() {
                Some((n, c + 1, first))
            } else if n + 1 < self.plan.nemeses.len() {
                Some((n + 1, 0, first))
            } else {
                None
            }
        });
    }

    pub(super) fn visit(&mut self, t: &Trial) {
        if self.finding.is_some() {
            return;
        }
        // Trials past the plan's end are the count's finding ([`check_plan_size`]).
        let Some((nemesis, column, index, seed, id)) = self.planned() else {
            return;
        };
        let parsed = parse_trial_id(&t.id);
        if t.id != id
            || t.nemesis != nemesis
            || t.column != column
            || t.index != index
            || t.seed != seed
            || parsed != Some((nemesis, column, seed))
        {
            self.finding = Some(Finding::mismatch(
                format!("trials[{}].id", self.k),
                code::TRIALS_INCOMPLETE,
                "the trial is not the one the plan puts here",
                id,
                t.id.clone(),
            ));
            return;
        }
        self.advance();
    }

    /// The walk's finding: the first trial out of place, or the first planned trial missing.
    pub(super) fn finish(self) -> Option<Finding> {
        if self.finding.is_some() {
            return self.finding;
        }
        let (_, _, _, _, id) = self.planned()?;
        Some(Finding::new(
            format!("trials[{}]", self.k),
            code::TRIALS_INCOMPLETE,
            format!("trial {id} is missing"),
        ))
    }
}

/// The summary, by the one summary rule ([`summarize`]), one nemesis x column at a time over
/// that pair's run of trials (the trial list is in plan order, and the plan fits the trials:
/// [`check_plan_size`]), each run summarized as soon as it is complete.
pub(super) struct PairSummaries<'p> {
    plan: &'p NemesisPlan,
    /// The pairs in plan order.
    pairs: Vec<(&'p String, &'p String)>,
    /// What the summary reads of the trials of the pair being filled ([`summary_view`]).
    pending: Vec<Trial>,
    /// Trials of one pair in the file: the plan's, or its slice's on a shard file.
    per_pair: usize,
    pub(super) derived: Vec<NemesisSummary>,
}

impl<'p> PairSummaries<'p> {
    /// For a file of `count` trials (a pair never holds more).
    pub(super) fn new(plan: &'p NemesisPlan, count: usize) -> PairSummaries<'p> {
        let pairs = plan
            .nemeses
            .iter()
            .flat_map(|n| plan.columns.iter().map(move |c| (n, c)))
            .collect();
        let per_pair = per_pair(plan) as usize;
        PairSummaries {
            plan,
            pairs,
            pending: Vec::with_capacity(per_pair.min(count)),
            per_pair,
            derived: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, t: &Trial) {
        self.pending.push(summary_view(t));
        if self.pending.len() < self.per_pair {
            return;
        }
        if let Some((nemesis, column)) = self.pairs.get(self.derived.len()) {
            let one = NemesisPlan {
                nemeses: vec![(*nemesis).clone()],
                columns: vec![(*column).clone()],
                trials: self.plan.trials,
                seed: self.plan.seed,
                shard: self.plan.shard,
                merged: None,
                exposure: None,
            };
            self.derived.extend(summarize(&one, &self.pending));
        }
        self.pending.clear();
    }
}

/// The stated summary against the derived one: the first entry that differs is the finding.
pub(super) fn compare_summary(
    stated: &[NemesisSummary],
    derived: &[NemesisSummary],
) -> Option<Finding> {
    if derived == stated {
        return None;
    }
    let first = derived
        .iter()
        .zip(stated)
        .position(|(a, b)| a != b)
        .unwrap_or(derived.len().min(stated.len()));
    Some(Finding::mismatch(
        format!("summary[{first}]"),
        code::SUMMARY,
        "the summary is not the one the trials give",
        serde_json::to_string(&derived.get(first)).unwrap_or_default(),
        serde_json::to_string(&stated.get(first)).unwrap_or_default(),
    ))
}

/// What the plan walk and the summary ([`summarize`]) read of a trial; everything else is left
/// empty, so a trial's receipt, ground truth and timeline are dropped with it.
fn summary_view(t: &Trial) -> Trial {
    Trial {
        id: t.id.clone(),
        nemesis: t.nemesis.clone(),
        column: t.column.clone(),
        index: t.index,
        seed: t.seed,
        outage: String::new(),
        faults: Vec::new(),
        kills: Vec::new(),
        assumption: t.assumption.clone(),
        case: Case {
            case_id: String::new(),
            incident: String::new(),
            approval: Approval {
                id: String::new(),
                approver: String::new(),
                max_cents: 0,
                revoked: None,
            },
            text: String::new(),
        },
        decision: None,
        outcome: t.outcome.clone(),
        harness_error: None,
        ground_truth: GroundTruth {
            case_credits: Vec::new(),
            case_credit_count: 0,
            case_credit_cents: 0,
            credit_notes: Vec::new(),
            balance_transactions: Vec::new(),
            invoices: Vec::new(),
            customer_balance: 0,
            compensation_by_others: 0,
            incident_compensation: 0,
        },
        want: t.want,
        invariant_held: t.invariant_held,
        violation: t.violation,
        answer_matches: t.answer_matches,
        ambiguous: t.ambiguous,
        unresolved: t.unresolved,
        timeline: Vec::new(),
        interleaving: t.interleaving.clone(),
        settle_ms: t.settle_ms,
        receipt: None,
        journal_kinds: Vec::new(),
        replay_at: None,
        restart_error: None,
    }
}

/// Trials of one nemesis and column the file holds: the plan's, or on a shard file its slice's.
fn per_pair(plan: &NemesisPlan) -> u32 {
    plan.shard
        .map_or(plan.trials, |s: Shard| slice_len(plan.trials, s))
}

/// The plan must name each nemesis and column once and at least one trial each, and a shard's
/// slice must be one the plan can be cut into (well formed: the trial list can be walked against
/// it, stopping at the first trial out of place, so within the trials the file holds), and
/// exactly as many trials in all as the file holds (it fits: the summary, one entry per nemesis ×
/// column, is no larger than the trials). Returns both.
pub(super) fn check_plan_size(
    file: &NemesisFile,
    count: usize,
    f: &mut Vec<Finding>,
) -> (bool, bool) {
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
    if let Some(shard) = plan.shard.filter(|s| !well_formed(*s, plan.trials)) {
        f.push(Finding::mismatch(
            "plan.shard",
            code::SHARDS,
            "the shard is not one slice of the plan (1 <= index <= count <= trials)",
            format!("1..=count of 1..={}", plan.trials),
            format!("{}/{}", shard.index, shard.count),
        ));
        return (false, false);
    }
    let expected = (plan.nemeses.len() as u128)
        .saturating_mul(plan.columns.len() as u128)
        .saturating_mul(u128::from(per_pair(plan)));
    if expected != count as u128 {
        f.push(Finding::mismatch(
            "trials",
            code::TRIALS_INCOMPLETE,
            if plan.shard.is_some() {
                "the number of trials is not nemeses x columns x trials of the shard's slice"
            } else {
                "the number of trials is not nemeses x columns x trials of the plan"
            },
            expected.to_string(),
            count.to_string(),
        ));
        return (true, false);
    }
    (true, true)
}

//! The nemesis pages' tables, formatted from the verified file: the main table and its heat map,
//! where the kills landed, and a trial's timeline.

use super::{bound, kind_words, trial_file};
use verify::figures::nemesis::NemesisFigures;
use verify::nemesis::{NemesisFile, NemesisSummary, Trial};

/// One row of a nemesis table, formatted.
pub struct Row<'a> {
    /// The summary over the trials the page counts (their fault fired).
    pub s: &'a NemesisSummary,
    /// Judged trials whose fault never fired, counted apart.
    pub not_fired: u32,
    /// Every trial of the row, those counted apart included.
    pub trials: u32,
    /// The bound within assumptions, as a percentage with two decimals (`n/a` without trials).
    pub within_bound: String,
    /// The same bound over distinct interleavings.
    pub distinct_bound: String,
    /// The bound over all judged trials.
    pub all_bound: String,
    /// Judged trials whose credits fell short of their want.
    pub under_credits: u32,
    /// Trials that are not a plain pass: (id, page file name, what they are).
    pub listed: Vec<(&'a str, String, &'static str)>,
    /// How many trials are listed.
    pub listed_count: usize,
    /// The heat map's class ([`crate::nemesis_figures::heat_class`]).
    pub heat: &'static str,
}

/// One row of the heat map: a nemesis, and its row of each column (plan order).
pub struct HeatRow {
    /// The nemesis.
    pub nemesis: String,
    /// Each column's cell, `None` when the plan has none.
    pub cells: Vec<Option<HeatCell>>,
}

/// One cell of the heat map.
pub struct HeatCell {
    /// Its class (colour band).
    pub class: &'static str,
    /// Trials within assumptions.
    pub within: u32,
    /// Violations among them.
    pub violations: u32,
    /// The 95% bound within assumptions, over distinct interleavings (repeats of one
    /// interleaving are not independent samples of it).
    pub bound: String,
    /// Distinct interleavings within assumptions.
    pub distinct: u32,
}

/// Where the decide worker's kills landed: the last step it announced before it died.
pub struct KillRow {
    /// The step, or `(finished first)` for kills that found the worker done.
    pub step: String,
    /// Kills per column, in plan order.
    pub counts: Vec<u32>,
}

/// One event of a trial page's timeline, formatted.
pub struct TimelineRow {
    /// ms after the first worker started, three decimals.
    pub at: String,
    /// Who.
    pub actor: String,
    /// What, in words.
    pub what: String,
}

/// A trial's timeline, one formatted row per recorded event.
pub(super) fn timeline_rows(t: &Trial) -> Vec<TimelineRow> {
    t.timeline
        .iter()
        .map(|e| {
            let until = e
                .until_us
                .map(|u| format!(" (until {}.{:03} ms)", u / 1000, u % 1000))
                .unwrap_or_default();
            let what = match e.kind.as_str() {
                "read" => format!("read {}{until}", e.what),
                "post" => format!("credit POST leaves{until}"),
                "step" => format!("passed step {}", e.what),
                "pause" => format!("paused at {}", e.what),
                "resume" => format!("told {} to go on", e.what),
                "kill" => format!("SIGKILL to {}", e.what),
                "stop" => format!("SIGSTOP to {}", e.what),
                "cont" => format!("SIGCONT to {}", e.what),
                "tear" => format!("cut the last line of {}", e.what),
                "answered" if e.what == verify::nemesis::rules::REPLAYED => {
                    "the credit POST's answer is back: a replay from the idempotency cache"
                        .to_owned()
                }
                "answered" => "the credit POST's answer is back".to_owned(),
                "disk" | "dedup" => e.what.clone(),
                "outage" => format!("outage {}{until}", e.what),
                "change" => format!("changed {}{until}", e.what),
                other => format!("{other} {}", e.what),
            };
            TimelineRow {
                at: format!("{}.{:03}", e.at_us / 1000, e.at_us % 1000),
                actor: e.actor.clone(),
                what,
            }
        })
        .collect()
}

/// Where the kills landed, per nemesis and column: the decide worker's by the step it last
/// announced (`<nemesis>: <step>`), the restarts' (kill_recovery) in rows of their own
/// (`<nemesis>, a restart: <step>`); a kill that found the worker finished counts under
/// `(finished first)`, not delivered.
pub(super) fn kill_rows(file: &NemesisFile) -> Vec<KillRow> {
    let mut rows: Vec<KillRow> = Vec::new();
    for t in &file.trials {
        let Some(col) = file.plan.columns.iter().position(|c| c == &t.column) else {
            continue;
        };
        for k in &t.kills {
            let restart = k.worker.starts_with("restart");
            if k.worker != "decide" && !restart {
                continue;
            }
            let timed = k.worker == "decide" && t.replay_at.is_some();
            let landed = if k.delivered && timed {
                // A timed kill: where its replay kills (a POST that had reached the service
                // counts as `request_held` or `after_send`, not the step before it).
                t.replay_at.clone().unwrap_or_default()
            } else if k.delivered && k.after == "request_held" {
                // Killed while the service held its POST: past `before_send`, its last step.
                "request_held".to_owned()
            } else if k.delivered {
                // A cooperative kill (the worker announced the point and blocked) names no step.
                k.last_step
                    .clone()
                    .unwrap_or_else(|| format!("{} (cooperative point)", k.after))
            } else {
                "(finished first)".into()
            };
            let step = match restart {
                true => format!("{}, a restart: {landed}", t.nemesis),
                false => format!("{}: {landed}", t.nemesis),
            };
            let row = match rows.iter().position(|r| r.step == step) {
                Some(i) => &mut rows[i],
                None => {
                    rows.push(KillRow {
                        step,
                        counts: vec![0; file.plan.columns.len()],
                    });
                    let last = rows.len() - 1;
                    &mut rows[last]
                }
            };
            row.counts[col] += 1;
        }
    }
    rows
}

/// The main table's rows, one per nemesis and column, in the summary's (plan) order.
pub(super) fn table_rows<'a>(file: &'a NemesisFile, figures: &'a NemesisFigures) -> Vec<Row<'a>> {
    figures
        .summary_rows()
        .iter()
        .map(|row| {
            let s = &row.shown;
            let listed: Vec<_> = row
                .listed
                .iter()
                .filter_map(|(i, k)| file.trials.get(*i).map(|t| (t, kind_words(*k))))
                .map(|(t, k)| (t.id.as_str(), trial_file(&t.id), k))
                .collect();
            Row {
                s,
                not_fired: row.not_fired,
                trials: s.trials.saturating_add(row.not_fired),
                heat: crate::nemesis_figures::heat_band(row.within_rate_ppm),
                within_bound: bound(s.within_upper95_ppm, s.within_assumptions),
                distinct_bound: bound(s.within_distinct_upper95_ppm, s.distinct_within),
                all_bound: bound(s.violation_upper95_ppm, s.judged),
                under_credits: row.under_credits,
                listed_count: listed.len(),
                listed,
            }
        })
        .collect()
}

/// The heat map: per nemesis, each column's cell of the table (plan order).
pub(super) fn heat_rows(file: &NemesisFile, rows: &[Row<'_>]) -> Vec<HeatRow> {
    file.plan
        .nemeses
        .iter()
        .map(|n| HeatRow {
            nemesis: n.clone(),
            cells: file
                .plan
                .columns
                .iter()
                .map(|c| {
                    rows.iter()
                        .find(|r| &r.s.nemesis == n && &r.s.column == c)
                        .map(|r| HeatCell {
                            class: r.heat,
                            within: r.s.within_assumptions,
                            violations: r.s.violations_within,
                            bound: r.distinct_bound.clone(),
                            distinct: r.s.distinct_within,
                        })
                })
                .collect(),
        })
        .collect()
}

/// The kill rows of nemesis `n`, their step without the nemesis's name (a restart's marked).
pub(super) fn kill_histogram_rows(n: &str, kills: &[KillRow]) -> Vec<(String, Vec<u32>)> {
    let prefix = format!("{n}: ");
    let restart_prefix = format!("{n}, a restart: ");
    kills
        .iter()
        .filter_map(|k| {
            if let Some(step) = k.step.strip_prefix(&prefix) {
                Some((step.to_owned(), k.counts.clone()))
            } else {
                k.step
                    .strip_prefix(&restart_prefix)
                    .map(|step| (format!("a restart: {step}"), k.counts.clone()))
            }
        })
        .collect()
}

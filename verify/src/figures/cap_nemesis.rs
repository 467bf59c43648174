//! The figures of a shared_cap nemesis campaign: per column its totals over every nemesis, per
//! nemesis its rows with the trials that broke the cap and their rate, where the kills landed,
//! and which trials broke the cap; each with the definitions the published page uses.

use crate::receipt::KeyCheck;
use crate::shared_cap::nemesis::check::{check as check_campaign, CapNemesisReport};
use crate::shared_cap::nemesis::draw::restart_steps;
use crate::shared_cap::nemesis::record::{CapNemesisFile, CapTrial};
use crate::shared_cap::nemesis::summary::{all_kills_landed, summarize, NemesisSummary};
use crate::shared_cap::plan::kill_steps;

/// A campaign checked by `verify::shared_cap::nemesis::check::check`: its report and its
/// figures. A renderer shows the figures only when `report.ok`.
#[derive(Debug, Clone)]
pub struct Checked {
    /// What the check found, and the per nemesis and column summary it derived.
    pub report: CapNemesisReport,
    /// The figures of the campaign.
    pub figures: CapNemesisFigures,
}

/// Check `file` under `key` with `verify::shared_cap::nemesis::check::check` and derive its
/// figures. The figures count only the judged trials in which every drawn kill landed (issue
/// 35: a trial whose kill found its worker finished ran without its fault); the others are
/// counted apart ([`CapNemesisFigures::not_landed`]). The report's summary, which the check
/// compares with the file's, still counts every judged trial.
pub fn check(file: &CapNemesisFile, key: &KeyCheck) -> Checked {
    let report = check_campaign(file, key);
    let landed: Vec<CapTrial> = file
        .trials
        .iter()
        .filter(|t| !t.cell.judged() || all_kills_landed(t))
        .cloned()
        .collect();
    let shown = summarize(&landed, &file.plan.nemeses, &file.plan.columns);
    let figures = CapNemesisFigures::derive(file, &shown);
    Checked { report, figures }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A trial's configuration: its overlap and the steps of its kills of `a`, `b` and `a`'s restart.
type Configuration = (String, Option<String>, Option<String>, Option<String>);

/// The distinct configurations of a nemesis and column's counted trials, and how many held in
/// every trial: (configurations, held).
fn configurations(file: &CapNemesisFile, s: &NemesisSummary) -> (u32, u32) {
    let mut seen: std::collections::BTreeMap<Configuration, bool> =
        std::collections::BTreeMap::new();
    for t in file.trials.iter().filter(|t| {
        t.nemesis == s.nemesis
            && t.cell.column == s.column
            && t.cell.judged()
            && all_kills_landed(t)
    }) {
        let d = &t.draw;
        let key = (
            d.overlap.clone(),
            d.kill_a.clone(),
            d.kill_b.clone(),
            d.kill_restart.clone(),
        );
        let held = seen.entry(key).or_insert(true);
        *held &= t.cell.invariant_held;
    }
    (
        count(seen.len()),
        count(seen.values().filter(|h| **h).count()),
    )
}

/// One nemesis × column: its summary, the judged trials in which the cap did not hold, and
/// their rate.
#[derive(Debug, Clone)]
pub struct NemesisRow {
    summary: NemesisSummary,
    configurations: u32,
    configurations_held: u32,
}

impl NemesisRow {
    /// The summary `verify` derived.
    pub fn summary(&self) -> &NemesisSummary {
        &self.summary
    }

    /// Judged trials in which the cap did not hold.
    pub fn not_held(&self) -> u32 {
        self.summary.judged.saturating_sub(self.summary.held)
    }

    /// Distinct configurations among the counted trials (judged, every drawn kill landed): the
    /// overlap and the steps of each kill, the hold's length left out (it stays inside the
    /// bound). Trials of one configuration repeat one interleaving up to timing, so they are
    /// not independent samples of the space.
    pub fn configurations(&self) -> u32 {
        self.configurations
    }

    /// Of those configurations, the ones in which every counted trial held the cap.
    pub fn configurations_held(&self) -> u32 {
        self.configurations_held
    }

    /// The one-sided 95% Clopper–Pearson upper bound on the rate of configurations that break
    /// the cap, each configuration counted once, in parts per million.
    pub fn configurations_upper95_ppm(&self) -> u32 {
        crate::nemesis::rules::clopper_pearson_upper95_ppm(
            self.configurations - self.configurations_held,
            self.configurations,
        )
    }

    /// Those trials per million judged trials (rounded down); `None` when none was judged.
    pub fn not_held_ppm(&self) -> Option<u64> {
        (self.summary.judged > 0)
            .then(|| u64::from(self.not_held()) * 1_000_000 / u64::from(self.summary.judged))
    }
}

/// One column's totals over every nemesis, and its rows.
#[derive(Debug, Clone)]
pub struct CapNemesisColumn {
    column: String,
    judged: u32,
    held: u32,
    over_cap: u32,
    harness_errors: u32,
    all_kills_landed: u32,
    not_landed: u32,
    answers_matched: u32,
    rows: Vec<NemesisRow>,
}

impl CapNemesisColumn {
    /// The column.
    pub fn column(&self) -> &str {
        &self.column
    }

    /// Judged trials.
    pub fn judged(&self) -> u32 {
        self.judged
    }

    /// Judged trials in which the cap held.
    pub fn held(&self) -> u32 {
        self.held
    }

    /// Judged trials in which it did not.
    pub fn violations(&self) -> u32 {
        self.judged.saturating_sub(self.held)
    }

    /// Trials over the cap.
    pub fn over_cap(&self) -> u32 {
        self.over_cap
    }

    /// HARNESS_ERROR trials.
    pub fn harness_errors(&self) -> u32 {
        self.harness_errors
    }

    /// Judged trials in which every drawn kill landed.
    pub fn all_kills_landed(&self) -> u32 {
        self.all_kills_landed
    }

    /// Judged trials of the column in which some drawn kill did not land, counted apart.
    pub fn not_landed(&self) -> u32 {
        self.not_landed
    }

    /// Judged trials whose every answer matched Stripe.
    pub fn answers_matched(&self) -> u32 {
        self.answers_matched
    }

    /// The column's rows, one per nemesis summary, in the summary's order.
    pub fn rows(&self) -> &[NemesisRow] {
        &self.rows
    }
}

/// One nemesis and its rows (one per column summarized), in the summary's order.
#[derive(Debug, Clone)]
pub struct NemesisRows {
    /// The nemesis.
    pub nemesis: String,
    /// Its rows.
    pub rows: Vec<NemesisRow>,
}

/// Where the kills of one column landed at one step, or (`step` `None`) how many drawn kills
/// never landed: of worker a, of worker b, and of a's restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillCount {
    /// The column.
    pub column: String,
    /// The step, or `None` for the drawn kills that never landed.
    pub step: Option<&'static str>,
    /// Worker a's first-phase kills.
    pub a: u32,
    /// Worker b's.
    pub b: u32,
    /// The kills of a's restart.
    pub restart: u32,
}

/// What `verify` derived from a shared_cap nemesis campaign, beside its report.
#[derive(Debug, Clone)]
pub struct CapNemesisFigures {
    trials: u32,
    nemeses: u32,
    not_landed: u32,
    columns: Vec<CapNemesisColumn>,
    by_nemesis: Vec<NemesisRows>,
    kills: Vec<KillCount>,
    broke: Vec<usize>,
}

impl CapNemesisFigures {
    fn derive(file: &CapNemesisFile, summary: &[NemesisSummary]) -> CapNemesisFigures {
        let row = |s: &NemesisSummary| {
            let (configurations, configurations_held) = configurations(file, s);
            NemesisRow {
                summary: s.clone(),
                configurations,
                configurations_held,
            }
        };
        let columns = file
            .plan
            .columns
            .iter()
            .map(|column| {
                let mine: Vec<&NemesisSummary> =
                    summary.iter().filter(|s| &s.column == column).collect();
                let sum = |g: fn(&NemesisSummary) -> u32| mine.iter().map(|s| g(s)).sum::<u32>();
                CapNemesisColumn {
                    column: column.clone(),
                    judged: sum(|s| s.judged),
                    held: sum(|s| s.held),
                    over_cap: sum(|s| s.over_cap),
                    harness_errors: sum(|s| s.harness_errors),
                    all_kills_landed: sum(|s| s.all_kills_landed),
                    not_landed: count(
                        file.trials
                            .iter()
                            .filter(|t| &t.cell.column == column)
                            .filter(|t| t.cell.judged() && !all_kills_landed(t))
                            .count(),
                    ),
                    answers_matched: sum(|s| s.answers_matched),
                    rows: mine.into_iter().map(row).collect(),
                }
            })
            .collect();
        let by_nemesis = file
            .plan
            .nemeses
            .iter()
            .map(|n| NemesisRows {
                nemesis: n.clone(),
                rows: summary
                    .iter()
                    .filter(|s| &s.nemesis == n)
                    .map(row)
                    .collect(),
            })
            .collect();
        CapNemesisFigures {
            trials: count(file.trials.len()),
            nemeses: count(file.plan.nemeses.len()),
            not_landed: count(
                file.trials
                    .iter()
                    .filter(|t| t.cell.judged() && !all_kills_landed(t))
                    .count(),
            ),
            columns,
            by_nemesis,
            kills: kill_counts(file),
            broke: file
                .trials
                .iter()
                .enumerate()
                .filter(|(_, t)| t.cell.judged() && !t.cell.invariant_held)
                .map(|(i, _)| i)
                .collect(),
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

    /// Judged trials in which some drawn kill did not land: counted apart, in no other figure.
    pub fn not_landed(&self) -> u32 {
        self.not_landed
    }

    /// Per column of the plan, in plan order, its totals and rows.
    pub fn columns(&self) -> &[CapNemesisColumn] {
        &self.columns
    }

    /// Per nemesis of the plan, in plan order, its rows.
    pub fn by_nemesis(&self) -> &[NemesisRows] {
        &self.by_nemesis
    }

    /// Per column and step, where the kills landed (steps with none left out), then per column
    /// the drawn kills that did not land (left out when there are none).
    pub fn kills(&self) -> &[KillCount] {
        &self.kills
    }

    /// The indices, in file order, of the judged trials in which the cap did not hold.
    pub fn broke(&self) -> &[usize] {
        &self.broke
    }
}

/// Per column and step, the first-phase kills of worker a and of worker b and the kills of a's
/// restart that landed there (from the trials' `killed_at` and `restart_killed_at`), then per
/// column the drawn kills that did not land; counts of none are left out.
fn kill_counts(file: &CapNemesisFile) -> Vec<KillCount> {
    let mut out = Vec::new();
    for column in &file.plan.columns {
        let trials: Vec<&CapTrial> = file
            .trials
            .iter()
            .filter(|t| &t.cell.column == column)
            .collect();
        let killed = |t: &CapTrial, i: usize, step: &str| {
            t.cell.tickets.get(i).and_then(|x| x.killed_at.as_deref()) == Some(step)
        };
        let mut steps: Vec<&'static str> = kill_steps(column).to_vec();
        steps.extend(
            restart_steps(column)
                .iter()
                .filter(|s| !kill_steps(column).contains(s)),
        );
        let how_many =
            |p: &dyn Fn(&CapTrial) -> bool| count(trials.iter().filter(|t| p(t)).count());
        for step in steps {
            out.push(KillCount {
                column: column.clone(),
                step: Some(step),
                a: how_many(&|t| killed(t, 0, step)),
                b: how_many(&|t| killed(t, 1, step)),
                restart: how_many(&|t| t.restart_killed_at.as_deref() == Some(step)),
            });
        }
        let landed =
            |t: &CapTrial, i: usize| t.cell.tickets.get(i).is_some_and(|x| x.killed_at.is_some());
        out.push(KillCount {
            column: column.clone(),
            step: None,
            a: how_many(&|t| t.draw.kill_a.is_some() && !landed(t, 0)),
            b: how_many(&|t| t.draw.kill_b.is_some() && !landed(t, 1)),
            restart: how_many(&|t| t.draw.kill_restart.is_some() && t.restart_killed_at.is_none()),
        });
    }
    out.retain(|k| k.a + k.b + k.restart > 0);
    out
}

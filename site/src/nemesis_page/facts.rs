//! The facts the Nemesis page's prose may use: every number it states, counted from the
//! verified nemesis file (its trials and the summaries `verify` recomputed).

use super::bound;
use crate::facts::{Fact, Facts};
use verify::nemesis::{NemesisFile, Trial};

/// The facts the Nemesis page's prose may use, from the verified file (`C` a column, `N` a
/// nemesis):
///
/// | fact | type | meaning |
/// |---|---|---|
/// | `nemesis.trials`, `nemesis.per_cell`, `nemesis.kinds` | integer | trials in all, per nemesis and column, nemeses run |
/// | `max_in_flight` | duration | the target's declared server-side in-flight bound |
/// | `within.C`, `beyond.C` | integer | the column's judged trials within / beyond its assumptions |
/// | `min_within.C` | integer | the fewest within-assumption trials the column had under one nemesis that has any |
/// | `wholly_beyond.C` | text | nemeses all of whose trials for the column lie beyond its assumptions, or `none` |
/// | `violations_within.C`, `wrong_within.C`, `ambiguous_within.C` | integer | within assumptions: violations, wrong answers, AMBIGUOUS |
/// | `ambiguous.C` | integer | AMBIGUOUS among all the column's judged trials |
/// | `violations_beyond.C`, `wrong_beyond.C` | integer | violations and wrong answers beyond the assumptions |
/// | `unresolved.C`, `nothing_decided.C` | integer | restarts that ended in an error; trials killed before any decision (not judged) |
/// | `distinct_within.C` | integer | distinct interleavings within assumptions, summed over nemeses |
/// | `exposure.judged.C`, `exposure.violations.C`, `exposure.bound.C` | integer, integer, text | the exposure nemesis: trials, violations and the 95% bound on its violation rate |
/// | `violating_nemeses.C` | text | nemeses with violations within assumptions (with counts), or `none` |
/// | `violations_within.N.C`, `within.N.C` | integer | the same per nemesis |
/// | `judged.N.C`, `violations.N.C`, `wrong.N.C`, `unresolved.N.C` | integer | per nemesis, over all its judged trials (within and beyond) |
/// | `window.n.C`, `window.p50.C`, `window.p95.C` | integer, text, text | the column's unguarded window for the approval (last read to POST applied) over its exposure trials: how many, median and 95th percentile |
/// | `harness_errors` | integer | HARNESS_ERROR trials |
pub fn facts(file: &NemesisFile) -> Facts {
    let mut facts = Facts::new();
    facts.insert("nemesis.trials".into(), int(file.trials.len()));
    facts.insert(
        "nemesis.per_cell".into(),
        Fact::Int(i64::from(file.plan.trials)),
    );
    facts.insert("nemesis.kinds".into(), int(file.plan.nemeses.len()));
    facts.insert(
        "max_in_flight".into(),
        Fact::Ms(file.environment.claim.max_in_flight_ms),
    );
    facts.insert(
        "harness_errors".into(),
        int(file.trials.iter().filter(|t| t.is_harness_error()).count()),
    );
    for column in &file.plan.columns {
        column_facts(file, column, &mut facts);
    }
    facts
}

fn int(n: usize) -> Fact {
    Fact::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A list as text, or `none`.
fn list_or_none(items: Vec<String>) -> Fact {
    Fact::Text(if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    })
}
/// The facts of one column: within / beyond its assumptions, and per nemesis.
fn column_facts(file: &NemesisFile, column: &str, facts: &mut Facts) {
    // Judged trials only: one with nothing decided or a harness error is no pass of the column.
    let of = |t: &&Trial| t.column == column && t.judged();
    let judged: Vec<&Trial> = file.trials.iter().filter(of).collect();
    let (within, beyond): (Vec<&Trial>, Vec<&Trial>) =
        judged.iter().partition(|t| t.assumption.is_none());
    let trials = ColumnTrials {
        column,
        judged: &judged,
        within: &within,
        beyond: &beyond,
    };
    trial_count_facts(&trials, facts);
    summary_facts(file, column, facts);
    window_facts(file, &judged, column, facts);
    nemesis_facts(file, &trials, facts);
}

/// A column's judged trials, and those within and beyond its assumptions.
struct ColumnTrials<'a> {
    column: &'a str,
    judged: &'a [&'a Trial],
    within: &'a [&'a Trial],
    beyond: &'a [&'a Trial],
}

/// How many of `v` satisfy `p`, as a fact.
fn count(v: &[&Trial], p: fn(&Trial) -> bool) -> Fact {
    int(v.iter().filter(|t| p(t)).count())
}

/// A column's trials within and beyond its assumptions, and their violations, wrong answers,
/// unresolved restarts and AMBIGUOUS answers.
fn trial_count_facts(trials: &ColumnTrials<'_>, facts: &mut Facts) {
    let ColumnTrials {
        column,
        judged,
        within,
        beyond,
    } = *trials;
    facts.insert(format!("within.{column}"), int(within.len()));
    facts.insert(format!("beyond.{column}"), int(beyond.len()));
    facts.insert(
        format!("violations_within.{column}"),
        count(within, |t| t.violation),
    );
    facts.insert(
        format!("wrong_within.{column}"),
        count(within, |t| !t.answer_matches && !t.unresolved),
    );
    facts.insert(
        format!("unresolved.{column}"),
        count(judged, |t| t.unresolved),
    );
    facts.insert(
        format!("wrong_beyond.{column}"),
        count(beyond, |t| !t.answer_matches && !t.unresolved),
    );
    facts.insert(
        format!("ambiguous_within.{column}"),
        count(within, |t| t.ambiguous),
    );
    facts.insert(
        format!("ambiguous.{column}"),
        count(judged, |t| t.ambiguous),
    );
    facts.insert(
        format!("violations_beyond.{column}"),
        count(beyond, |t| t.violation),
    );
}

/// From the column's summaries: trials where nothing was decided, distinct interleavings within
/// assumptions, and the exposure nemesis's trials, violations and bound.
fn summary_facts(file: &NemesisFile, column: &str, facts: &mut Facts) {
    let summaries = file.summary.iter().filter(|s| s.column == column);
    let (mut nothing, mut distinct_within) = (0u32, 0u32);
    for s in summaries {
        nothing += s.nothing_decided;
        distinct_within += s.distinct_within;
        if s.nemesis == "exposure" {
            facts.insert(
                format!("exposure.judged.{column}"),
                Fact::Int(i64::from(s.judged)),
            );
            facts.insert(
                format!("exposure.violations.{column}"),
                Fact::Int(i64::from(s.violations)),
            );
            facts.insert(
                format!("exposure.bound.{column}"),
                Fact::Text(bound(s.violation_upper95_ppm, s.judged)),
            );
        }
    }
    facts.insert(
        format!("nothing_decided.{column}"),
        Fact::Int(i64::from(nothing)),
    );
    facts.insert(
        format!("distinct_within.{column}"),
        Fact::Int(i64::from(distinct_within)),
    );
}

/// Each column's unguarded window for the approval, measured on the exposure trials (nobody
/// paused or killed), by the rule's own instants: how many, median and 95th percentile.
fn window_facts(file: &NemesisFile, judged: &[&Trial], column: &str, facts: &mut Facts) {
    let mut windows: Vec<u64> = judged
        .iter()
        .filter(|t| t.nemesis == "exposure")
        .filter_map(|t| {
            verify::nemesis::rules::unguarded_window_us(
                &t.timeline,
                "approval",
                file.environment.claim.max_in_flight_ms,
            )
        })
        .collect();
    windows.sort_unstable();
    let ms = |us: Option<u64>| {
        Fact::Text(us.map_or("n/a".into(), |us| {
            format!("{}.{} ms", us / 1000, (us % 1000) / 100)
        }))
    };
    facts.insert(format!("window.n.{column}"), int(windows.len()));
    for (name, pct) in [("p50", 50), ("p95", 95)] {
        facts.insert(
            format!("window.{name}.{column}"),
            ms(verify::nemesis::rules::percentile(&windows, pct)),
        );
    }
}

/// Per nemesis, the column's trials and their findings; and over the nemeses, the fewest trials
/// within assumptions, the nemeses wholly beyond them, and those with violations within them.
fn nemesis_facts(file: &NemesisFile, trials: &ColumnTrials<'_>, facts: &mut Facts) {
    let ColumnTrials {
        column,
        judged,
        within,
        ..
    } = *trials;
    let mut min_within = usize::MAX;
    let mut violating = Vec::new();
    let mut wholly_beyond = Vec::new();
    for nemesis in &file.plan.nemeses {
        let here: Vec<&&Trial> = within.iter().filter(|t| &t.nemesis == nemesis).collect();
        let violations = here.iter().filter(|t| t.violation).count();
        if here.is_empty() {
            wholly_beyond.push(nemesis.clone());
        } else {
            min_within = min_within.min(here.len());
        }
        if violations > 0 {
            violating.push(format!("{nemesis} ({violations})"));
        }
        let of_nemesis: Vec<&Trial> = judged
            .iter()
            .copied()
            .filter(|t| &t.nemesis == nemesis)
            .collect();
        facts.insert(format!("judged.{nemesis}.{column}"), int(of_nemesis.len()));
        facts.insert(
            format!("violations.{nemesis}.{column}"),
            count(&of_nemesis, |t| t.violation),
        );
        facts.insert(
            format!("wrong.{nemesis}.{column}"),
            count(&of_nemesis, |t| !t.answer_matches && !t.unresolved),
        );
        facts.insert(
            format!("unresolved.{nemesis}.{column}"),
            count(&of_nemesis, |t| t.unresolved),
        );
        facts.insert(format!("within.{nemesis}.{column}"), int(here.len()));
        facts.insert(
            format!("violations_within.{nemesis}.{column}"),
            int(violations),
        );
    }
    facts.insert(
        format!("min_within.{column}"),
        int(if min_within == usize::MAX {
            0
        } else {
            min_within
        }),
    );
    facts.insert(
        format!("wholly_beyond.{column}"),
        list_or_none(wholly_beyond),
    );
    facts.insert(
        format!("violating_nemeses.{column}"),
        list_or_none(violating),
    );
}

//! The facts the Nemesis page's prose may use: every number it states, from the figures
//! `verify` derived from the verified nemesis file, formatted.

use super::bound;
use crate::facts::{Fact, Facts};
use verify::figures::nemesis::{ColumnFigures, NemesisFigures};
use verify::nemesis::NemesisFile;

/// The facts the Nemesis page's prose may use, from the verified file and the figures `verify`
/// derived from it (`C` a column, `N` a nemesis):
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
/// | `under_credits_within.C`, `under_credits_beyond.C` | integer | under-credits (credits short of the want) within / beyond the assumptions |
/// | `under_crediting.C` | text | nemeses with under-credits (with counts), or `none` |
/// | `unresolved.C`, `nothing_decided.C` | integer | restarts that ended in an error; trials that ended before any decision existed, killed or failing the decision's own write (not judged) |
/// | `distinct_within.C` | integer | distinct interleavings within assumptions, summed over nemeses |
/// | `exposure.judged.C`, `exposure.violations.C`, `exposure.bound.C` | integer, integer, text | the exposure nemesis: trials, violations and the 95% bound on its violation rate |
/// | `violating_nemeses.C` | text | nemeses with violations within assumptions (with counts), or `none` |
/// | `under_crediting_nemeses.C` | text | nemeses with under-credits within assumptions (with counts), or `none` |
/// | `violations_within.N.C`, `within.N.C` | integer | the same per nemesis |
/// | `judged.N.C`, `violations.N.C`, `under_credits.N.C`, `wrong.N.C`, `unresolved.N.C` | integer | per nemesis, over all its judged trials (within and beyond) |
/// | `window.n.C`, `window.p50.C`, `window.p95.C` | integer, text, text | the column's unguarded window for the approval (last read to POST applied) over its exposure trials: how many, median and 95th percentile |
/// | `exposure.timed.C`, `exposure.decision_p50.C`, `exposure.decision_p95.C` | integer, text, text | the exposure trials whose timeline has the decide worker's `started` and `decision_saved` steps, and the decision phase between them (identical code in every column: equal load shows as equal lengths): median and 95th percentile |
/// | `exposure.changed.C`, `exposure.after_saved.C` | integer | exposure trials with a world change and a `decision_saved` step, and of those the ones whose change began at or after `decision_saved` (where the columns' code differs) |
/// | `exposure.windowed.C`, `exposure.opened_before_saved.C`, `exposure.undrawn_p50.C` | integer, integer, text | exposure trials with an unguarded window and a `decision_saved` step; of those, the ones whose window opened before `decision_saved`, where the draw begins; and the median part of the window no drawn change could land in |
/// | `within_began_in_hold.C` | integer | trials within assumptions in which a worker process began while another's credit POST was still held at the service |
/// | `replay.exact`, `replay.timed` | text | the plan's nemeses whose trials replay exactly from their ids, and those that depend on timing ([`verify::nemesis::draw::replays_exactly`]) |
/// | `exposure.span` | duration | the span exposure's changes are drawn over, after `decision_saved` |
/// | `exposure.sized` | text | how that span was sized: from this run's calibration (each column's 95th-percentile path from `decision_saved` to the POST's answer), given on the command line, or the fixed span of runs that recorded none |
/// | `harness_errors` | integer | HARNESS_ERROR trials |
/// | `nemesis.not_fired`, `not_fired.C` | integer | judged trials whose fault never fired, counted apart (in no other fact) |
pub fn facts(file: &NemesisFile, figures: &NemesisFigures) -> Facts {
    let mut facts = Facts::new();
    facts.insert("nemesis.trials".into(), int(figures.trials()));
    facts.insert(
        "nemesis.per_cell".into(),
        Fact::Int(i64::from(file.plan.trials)),
    );
    facts.insert("nemesis.kinds".into(), int(figures.nemeses()));
    facts.insert(
        "max_in_flight".into(),
        Fact::Ms(file.environment.claim.max_in_flight_ms),
    );
    facts.insert("harness_errors".into(), int(figures.harness_errors()));
    facts.insert("nemesis.not_fired".into(), int(figures.not_fired()));
    for (column, c) in figures.columns() {
        column_facts(column, c, &mut facts);
    }
    let (exact, timed): (Vec<String>, Vec<String>) =
        file.plan.nemeses.iter().cloned().partition(|n| {
            verify::nemesis::nemeses::Nemesis::from_name(n)
                .is_some_and(verify::nemesis::draw::replays_exactly)
        });
    facts.insert(
        "exposure.span".into(),
        Fact::Ms(file.plan.exposure_span_ms()),
    );
    facts.insert("exposure.sized".into(), Fact::Text(sized(&file.plan)));
    facts.insert("replay.exact".into(), list_or_none(exact));
    facts.insert("replay.timed".into(), list_or_none(timed));
    facts
}

fn int(n: u32) -> Fact {
    Fact::Int(i64::from(n))
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
fn column_facts(column: &str, c: &ColumnFigures, facts: &mut Facts) {
    trial_count_facts(column, c, facts);
    summary_facts(column, c, facts);
    window_facts(column, c, facts);
    nemesis_facts(column, c, facts);
}

/// A column's judged trials within and beyond its assumptions, and their violations, wrong
/// answers, unresolved restarts and AMBIGUOUS answers.
fn trial_count_facts(column: &str, c: &ColumnFigures, facts: &mut Facts) {
    facts.insert(format!("not_fired.{column}"), int(c.not_fired()));
    facts.insert(format!("within.{column}"), int(c.within()));
    facts.insert(format!("beyond.{column}"), int(c.beyond()));
    facts.insert(
        format!("violations_within.{column}"),
        int(c.violations_within()),
    );
    facts.insert(format!("wrong_within.{column}"), int(c.wrong_within()));
    facts.insert(format!("unresolved.{column}"), int(c.unresolved()));
    facts.insert(format!("wrong_beyond.{column}"), int(c.wrong_beyond()));
    facts.insert(
        format!("ambiguous_within.{column}"),
        int(c.ambiguous_within()),
    );
    facts.insert(format!("ambiguous.{column}"), int(c.ambiguous()));
    facts.insert(
        format!("violations_beyond.{column}"),
        int(c.violations_beyond()),
    );
    facts.insert(
        format!("under_credits_within.{column}"),
        int(c.under_credits_within()),
    );
    facts.insert(
        format!("under_credits_beyond.{column}"),
        int(c.under_credits_beyond()),
    );
    facts.insert(
        format!("under_crediting.{column}"),
        list_or_none(
            c.under_crediting()
                .into_iter()
                .map(|(n, k)| format!("{n} ({k})"))
                .collect(),
        ),
    );
}

/// From the column's summaries: trials where nothing was decided, distinct interleavings within
/// assumptions, and the exposure nemesis's trials, violations and bound.
fn summary_facts(column: &str, c: &ColumnFigures, facts: &mut Facts) {
    if let Some(e) = c.exposure() {
        facts.insert(format!("exposure.judged.{column}"), int(e.judged));
        facts.insert(format!("exposure.violations.{column}"), int(e.violations));
        facts.insert(
            format!("exposure.bound.{column}"),
            Fact::Text(bound(e.violation_upper95_ppm, e.judged)),
        );
    }
    facts.insert(
        format!("nothing_decided.{column}"),
        int(c.nothing_decided()),
    );
    facts.insert(
        format!("distinct_within.{column}"),
        int(c.distinct_within()),
    );
}

/// Each column's unguarded window for the approval, measured on the exposure trials (nobody
/// paused or killed), by the rule's own instants: how many, median and 95th percentile.
fn window_facts(column: &str, c: &ColumnFigures, facts: &mut Facts) {
    let ms = |us: Option<u64>| {
        Fact::Text(us.map_or("n/a".into(), |us| {
            format!("{}.{} ms", us / 1000, (us % 1000) / 100)
        }))
    };
    facts.insert(format!("window.n.{column}"), int(c.windows()));
    facts.insert(format!("window.p50.{column}"), ms(c.window_p50_us()));
    facts.insert(format!("window.p95.{column}"), ms(c.window_p95_us()));
    let phase = c.exposure_phase();
    facts.insert(format!("exposure.timed.{column}"), int(phase.timed));
    facts.insert(
        format!("exposure.decision_p50.{column}"),
        ms(phase.decision_p50_us),
    );
    facts.insert(
        format!("exposure.decision_p95.{column}"),
        ms(phase.decision_p95_us),
    );
    facts.insert(format!("exposure.changed.{column}"), int(phase.changed));
    facts.insert(
        format!("exposure.after_saved.{column}"),
        int(phase.changed_after_saved),
    );
    facts.insert(format!("exposure.windowed.{column}"), int(phase.windowed));
    facts.insert(
        format!("exposure.opened_before_saved.{column}"),
        int(phase.opened_before_saved),
    );
    facts.insert(
        format!("exposure.undrawn_p50.{column}"),
        ms(phase.undrawn_p50_us),
    );
    facts.insert(
        format!("within_began_in_hold.{column}"),
        int(c.within_began_in_hold()),
    );
}

/// Per nemesis, the column's trials and their findings; and over the nemeses, the fewest trials
/// within assumptions, the nemeses wholly beyond them, and those with violations within them.
fn nemesis_facts(column: &str, c: &ColumnFigures, facts: &mut Facts) {
    for n in c.nemeses() {
        let nemesis = &n.nemesis;
        facts.insert(format!("judged.{nemesis}.{column}"), int(n.judged));
        facts.insert(format!("violations.{nemesis}.{column}"), int(n.violations));
        facts.insert(
            format!("under_credits.{nemesis}.{column}"),
            int(n.under_credits),
        );
        facts.insert(format!("wrong.{nemesis}.{column}"), int(n.wrong));
        facts.insert(format!("unresolved.{nemesis}.{column}"), int(n.unresolved));
        facts.insert(format!("within.{nemesis}.{column}"), int(n.within));
        facts.insert(
            format!("violations_within.{nemesis}.{column}"),
            int(n.violations_within),
        );
    }
    facts.insert(format!("min_within.{column}"), int(c.min_within()));
    facts.insert(
        format!("wholly_beyond.{column}"),
        list_or_none(c.wholly_beyond().into_iter().map(str::to_owned).collect()),
    );
    facts.insert(
        format!("under_crediting_nemeses.{column}"),
        list_or_none(
            c.under_crediting_within()
                .into_iter()
                .map(|(n, v)| format!("{n} ({v})"))
                .collect(),
        ),
    );
    facts.insert(
        format!("violating_nemeses.{column}"),
        list_or_none(
            c.violating()
                .into_iter()
                .map(|(n, v)| format!("{n} ({v})"))
                .collect(),
        ),
    );
}

/// How the exposure span was sized, in words, with the calibration's figures when it was run.
fn sized(plan: &verify::nemesis::NemesisPlan) -> String {
    let Some(e) = &plan.exposure else {
        return "fixed: this run predates spans sized from each run's own paths, and recorded none"
            .into();
    };
    let Some(calibration) = &e.calibration else {
        return "given on the command line (--exposure-span-ms), as every shard of a campaign must \
                share one"
            .into();
    };
    let p95s: Vec<String> = calibration
        .iter()
        .map(|c| {
            let us = verify::nemesis::exposure_span::p95_us(c).unwrap_or_default();
            format!("{} {}.{} ms", c.column, us / 1000, (us % 1000) / 100)
        })
        .collect();
    format!(
        "sized from this run's own calibration before its trials: {} trials per column with no \
         change in the world, each path from decision_saved to the POST's answer measured; the \
         slowest column's 95th percentile ({}) and a quarter more",
        verify::nemesis::exposure_span::CALIBRATION_TRIALS,
        p95s.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use verify::nemesis::exposure_span::{ColumnPaths, ExposureSpan};
    use verify::nemesis::NemesisPlan;

    #[test]
    fn the_span_says_how_it_was_sized() {
        let mut plan = NemesisPlan {
            nemeses: vec!["exposure".into()],
            columns: vec!["no_check".into(), "interlock".into()],
            trials: 1,
            seed: 1,
            shard: None,
            merged: None,
            exposure: None,
        };
        assert!(sized(&plan).starts_with("fixed"));
        plan.exposure = Some(ExposureSpan {
            span_ms: 9,
            calibration: None,
        });
        assert!(sized(&plan).starts_with("given on the command line"));
        plan.exposure = Some(ExposureSpan {
            span_ms: 9,
            calibration: Some(vec![
                ColumnPaths {
                    column: "no_check".into(),
                    paths_us: vec![1_200, 2_000],
                },
                ColumnPaths {
                    column: "interlock".into(),
                    paths_us: vec![6_950],
                },
            ]),
        });
        let words = sized(&plan);
        assert!(
            words.contains("(no_check 2.0 ms, interlock 6.9 ms)"),
            "{words}"
        );
    }
}

//! The one-line verdicts the front page and the top of each report show, generated from facts
//! the site already computed from the verified data ([`crate::facts`] for the matrix,
//! [`crate::nemesis_page::facts`] for the nemesis run). No new counting happens here: every
//! number in these sentences is a fact's value.

use crate::facts::{Fact, Facts};

fn get<'a>(facts: &'a Facts, key: &str) -> Option<&'a Fact> {
    facts.get(key)
}

fn int(facts: &Facts, key: &str) -> Option<i64> {
    match get(facts, key) {
        Some(Fact::Int(n)) => Some(*n),
        _ => None,
    }
}

fn text(facts: &Facts, key: &str) -> String {
    get(facts, key).map_or_else(|| "?".to_owned(), ToString::to_string)
}

/// `a`, `a and b`, `a, b and c`.
fn words(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The matrix's verdict in one sentence: which columns held the invariant in every judged cell,
/// which broke it (how often and on which rows), and which can prove what happened in every
/// cell. Built from the facts `held.C`, `violated.C`, `cells.C`, `violated_rows.C` and
/// `proof_count.C`.
pub fn verdict_line(columns: &[String], facts: &Facts) -> String {
    let mut held = Vec::new();
    let mut broke = Vec::new();
    let mut proof = Vec::new();
    for c in columns {
        let cells = int(facts, &format!("cells.{c}")).unwrap_or(0);
        if cells == 0 {
            continue;
        }
        let violated = int(facts, &format!("violated.{c}")).unwrap_or(0);
        if violated == 0 {
            held.push(format!("{c} ({})", text(facts, &format!("held.{c}"))));
        } else {
            broke.push(format!(
                "{c} broke it in {violated} of {cells} ({})",
                text(facts, &format!("violated_rows.{c}"))
            ));
        }
        if int(facts, &format!("proof_count.{c}")) == Some(cells) {
            proof.push(c.clone());
        }
    }
    let mut parts = Vec::new();
    if !held.is_empty() {
        parts.push(format!(
            "{} held the invariant in every judged cell",
            words(&held)
        ));
    }
    if !broke.is_empty() {
        parts.push(words(&broke));
    }
    if parts.is_empty() {
        return "No cell was judged.".to_owned();
    }
    let proof = if proof.is_empty() {
        "no column".to_owned()
    } else {
        words(&proof)
    };
    format!(
        "{}; {proof} can prove what happened in every cell.",
        parts.join("; ")
    )
}

/// The nemesis run in a few sentences: the trials judged, and per column the violations within
/// its assumptions over its trials within them, the violations and wrong answers beyond them,
/// and the exposure nemesis's violations (the comparison of each column's unguarded window).
/// `judged` is the campaign's judged trials as `verify` counted them; facts `nemesis.trials`,
/// `within.C`, `nothing_decided.C`, `violations_within.C`, `violations_beyond.C`,
/// `wrong_within.C`, `wrong_beyond.C`, `unresolved.C`, `under_credits_within.C`, `under_credits_beyond.C`,
/// `exposure.violations.C`, `exposure.judged.C`; and, beside the violations beyond the
/// assumptions and the wrong answers, the `nemeses` that caused them (`violations.N.C`,
/// `violations_within.N.C`, `wrong.N.C`).
pub fn nemesis_line(columns: &[String], nemeses: &[String], facts: &Facts, judged: u32) -> String {
    let per = |f: &dyn Fn(&String) -> String| -> String {
        words(&columns.iter().map(f).collect::<Vec<_>>())
    };
    // The nemeses behind a column's count, beside it: `(late_beyond_bound 60, two_workers 6)`.
    let by_nemesis = |count: &dyn Fn(&str) -> i64| -> String {
        let by: Vec<String> = nemeses
            .iter()
            .filter_map(|n| {
                let k = count(n);
                (k > 0).then(|| format!("{n} {k}"))
            })
            .collect();
        if by.is_empty() {
            String::new()
        } else {
            format!(" ({})", by.join(", "))
        }
    };
    let within = per(&|c| {
        format!(
            "{c} {} of {}",
            text(facts, &format!("violations_within.{c}")),
            text(facts, &format!("within.{c}"))
        )
    });
    let beyond = per(&|c| {
        format!(
            "{c} {} of {}{}",
            text(facts, &format!("violations_beyond.{c}")),
            text(facts, &format!("beyond.{c}")),
            by_nemesis(&|n| {
                int(facts, &format!("violations.{n}.{c}")).unwrap_or(0)
                    - int(facts, &format!("violations_within.{n}.{c}")).unwrap_or(0)
            })
        )
    });
    let wrong = per(&|c| {
        format!(
            "{c} {}{}",
            int(facts, &format!("wrong_within.{c}")).unwrap_or(0)
                + int(facts, &format!("wrong_beyond.{c}")).unwrap_or(0),
            by_nemesis(&|n| int(facts, &format!("wrong.{n}.{c}")).unwrap_or(0))
        )
    });
    let unresolved = per(&|c| {
        format!(
            "{c} {}",
            int(facts, &format!("unresolved.{c}")).unwrap_or(0)
        )
    });
    let under = per(&|c| {
        format!(
            "{c} {}",
            int(facts, &format!("under_credits_within.{c}")).unwrap_or(0)
                + int(facts, &format!("under_credits_beyond.{c}")).unwrap_or(0)
        )
    });
    let mut out = format!(
        "Of {} randomized fault trials, {judged} were judged (the rest ended before any \
         decision existed, killed or failing the decision's own write, or their fault never fired: {} of them, counted apart). Violations within each column's assumptions: {within}. Violations beyond \
         them (a request held past the declared bound, or a change after the column's last \
         read; by fault, beside each count): {beyond}: failures no check on the client can \
         prevent, reported as measured. Wrong answers (an answer that contradicts what Stripe \
         holds), within and beyond, by fault: {wrong}. Unresolved (the last restart \
         ended in an error and gave no answer): {unresolved}. Under-credits (the approved credit \
         not issued, or a smaller one), within and beyond: {under}.",
        text(facts, "nemesis.trials"),
        text(facts, "nemesis.not_fired"),
    );
    if columns
        .iter()
        .any(|c| get(facts, &format!("exposure.judged.{c}")).is_some())
    {
        let exposure = per(&|c| {
            format!(
                "{c} {} of {}",
                text(facts, &format!("exposure.violations.{c}")),
                text(facts, &format!("exposure.judged.{c}"))
            )
        });
        let windows = per(&|c| format!("{c} {}", text(facts, &format!("window.p50.{c}"))));
        out.push_str(&format!(
            " Under exposure (the approval revoked at an instant drawn over one span from the \
             saved decision, the same for every column, while the worker runs): {exposure}; \
             each column's unguarded window measured on those trials, median: {windows}."
        ));
        let early: Vec<String> = columns
            .iter()
            .filter(|c| {
                let opened = int(facts, &format!("exposure.opened_before_saved.{c}"));
                let of = int(facts, &format!("exposure.windowed.{c}"));
                matches!((opened, of), (Some(o), Some(n)) if 2 * o > n)
            })
            .cloned()
            .collect();
        if !early.is_empty() {
            out.push_str(&format!(
                " {}'s window mostly opens before the draw begins (at the decision's own read), \
                 so its count understates its exposure and does not compare with the others'; \
                 its measured window does.",
                words(&early)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_names_who_held_and_who_broke_from_the_facts() {
        let mut f = Facts::new();
        for (c, held, violated, proof) in [("a", 6, 0, 6), ("b", 5, 1, 0), ("c", 6, 0, 6)] {
            f.insert(format!("cells.{c}"), Fact::Int(6));
            f.insert(format!("violated.{c}"), Fact::Int(violated));
            f.insert(format!("proof_count.{c}"), Fact::Int(proof));
            f.insert(format!("held.{c}"), Fact::Ratio(held, 6));
            f.insert(format!("violated_rows.{c}"), Fact::Text("x / y".into()));
        }
        let cols: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            verdict_line(&cols, &f),
            "a (6/6) and c (6/6) held the invariant in every judged cell; b broke it in 1 of 6 \
             (x / y); a and c can prove what happened in every cell."
        );
    }
}

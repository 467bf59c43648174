//! pr_merge's views: the figures `verify` derived, in this scenario's words.

use super::{Table, Views};
use verify::contract::Verified;
use verify::scenarios::pr_merge::PrMerge;

impl Views for PrMerge {
    const TITLE: &'static str = "pr_merge: merging a reviewed pull request through a crash";
    const ABOUT: &'static str = "An agent merges a pull request reviewed at head H; the worker is \
        SIGKILLed before or after its merge request while someone pushes, merges or moves the base. \
        The service has no idempotency key, can be asked for the merge commit, and refuses a merge \
        whose sha is not the head.";

    fn summary(v: &Verified<Self>) -> Table {
        let rows = v
            .summary()
            .iter()
            .map(|(column, s)| {
                vec![
                    column.clone(),
                    format!("{}/{}", s.held, s.judged),
                    s.over.to_string(),
                    s.under.to_string(),
                    s.unreviewed.to_string(),
                    s.wrong_answers.to_string(),
                ]
            })
            .collect();
        Table {
            caption: "Per column, re-derived by verify from the repository's merges".into(),
            headers: [
                "column",
                "invariant held",
                "merged more than wanted",
                "merged less than wanted",
                "merged an unreviewed head",
                "wrong answers",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        }
    }

    fn cells(v: &Verified<Self>) -> Table {
        let rows = v
            .file()
            .cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let status = c.ticket.status.as_str();
                let judged = match v.judgement(i) {
                    Some(j) => format!(
                        "{}: {} merge(s), want {}{}",
                        if j.invariant_held { "held" } else { "VIOLATED" },
                        j.merges,
                        j.want,
                        if j.answer_matches {
                            ""
                        } else {
                            "; wrong answer"
                        }
                    ),
                    None => format!(
                        "harness error: {}",
                        c.harness_error.as_deref().unwrap_or_default()
                    ),
                };
                vec![
                    format!(
                        "{} · {} · {} #{}",
                        c.planned.crash_point, c.planned.outage, c.planned.column, c.planned.repeat
                    ),
                    status.to_owned(),
                    judged,
                ]
            })
            .collect();
        Table {
            caption: "Every cell: crash point · outage · column #repeat".into(),
            headers: ["cell", "final answer", "judged"]
                .map(String::from)
                .to_vec(),
            rows,
        }
    }
}

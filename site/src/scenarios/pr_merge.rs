//! pr_merge's views: the figures `verify` derived, in this scenario's words.

use super::{Placed, Table, Views};
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

    fn notes(v: &Verified<Self>) -> Vec<String> {
        let summary = v.summary();
        let get = |column: &str| summary.get(column).cloned().unwrap_or_default();
        let per = |f: &dyn Fn(&verify::scenarios::pr_merge::ColumnSummary) -> String| {
            summary
                .iter()
                .map(|(column, s)| format!("{column} {}", f(s)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (no_check, native) = (get("no_check"), get("native"));
        let whole: Vec<&str> = summary
            .iter()
            .filter(|(_, s)| s.judged > 0 && s.held == s.judged)
            .map(|(c, _)| c.as_str())
            .collect();
        let tie = if whole.contains(&"native") && whole.contains(&"interlock") {
            "native, which relies on the service's precondition alone, ties with the gate on the \
             merges themselves: in this matrix the service's compare-and-swap does the gate's work \
             on what lands."
        } else {
            "The columns that held in every cell are the ones above; where native did not, the \
             service's precondition was not enough."
        };
        vec![
            format!(
                "Invariant held (at most one merge, and only of the reviewed head): {}. Columns \
                 that held it in every judged cell: {}. {tie}",
                per(&|s| format!("{}/{}", s.held, s.judged)),
                if whole.is_empty() {
                    "none".to_owned()
                } else {
                    whole.join(", ")
                }
            ),
            format!(
                "Where the service's own precondition does the gate's work: native passes only \
                 sha = H and merged an unreviewed head in {} of {} cells, no_check, which sends \
                 no sha, in {} of {}. The service answers 409 to a merge whose sha is not the \
                 head, so a head moved by an unreviewed push is refused without any check of \
                 the client's own. Unreviewed merges per column: {}.",
                native.unreviewed,
                native.judged,
                no_check.unreviewed,
                no_check.judged,
                per(&|s| s.unreviewed.to_string())
            ),
            format!(
                "Merges beyond what the case may make (a second merge, or a merge after the \
                 head moved or someone else merged): {}. The service refuses to merge a pull \
                 request that is already merged (405), so a resend after a landed merge cannot \
                 merge twice.",
                per(&|s| s.over.to_string())
            ),
            format!(
                "Where it does not: the answer. A refusal is all a column without a record \
                 learns, so a restart whose first merge had landed hears 405 and cannot say it \
                 merged. Answers that do not match the repository: {}. hand_check and interlock \
                 look their own merge up first (a trailer in the merge commit).",
                per(&|s| s.wrong_answers.to_string())
            ),
            "The approval is the other thing the service cannot check: it knows nothing of it. \
             Only hand_check and interlock re-read it before a send; this matrix never revokes \
             it (the campaign's revoke_mid_check does)."
                .to_owned(),
        ]
    }

    fn placed(v: &Verified<Self>) -> Vec<Placed> {
        v.file()
            .cells
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let j = v.judgement(i)?;
                let fault = format!("{} · {}", c.planned.crash_point, c.planned.outage);
                Some(Placed::trial(
                    &fault,
                    &c.planned.column,
                    true,
                    false,
                    j.invariant_held,
                ))
            })
            .collect()
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

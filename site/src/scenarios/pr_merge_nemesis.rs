//! pr_merge_nemesis's views: the figures `verify` derived, in this campaign's words.

use super::{Table, Views};
use verify::contract::Verified;
use verify::scenarios::pr_merge_nemesis::{NemesisColumn, PrMergeNemesis};

/// How many distinct configurations the campaign's trials hold (the nemesis, the column and the
/// draw, the hold's length left out), in a sentence.
fn distinct(v: &Verified<PrMergeNemesis>) -> String {
    let configurations: std::collections::BTreeSet<String> = v
        .file()
        .cells
        .iter()
        .map(|c| {
            let d = &c.planned.draw;
            format!(
                "{} {} {} {:?} {:?} {:?} {:?} {}",
                c.planned.nemesis,
                c.planned.column,
                d.outage,
                d.kill_at,
                d.restart_kill_at,
                d.pause_at,
                d.answer,
                d.hold_ms.is_some()
            )
        })
        .collect();
    format!(
        "The {} trials hold {} distinct configurations (nemesis, column, outage and the steps of \
         each fault; the hold's length left out): trials of one configuration repeat one \
         interleaving up to timing, so the counts above are not that many independent samples.",
        v.file().cells.len(),
        configurations.len()
    )
}

impl Views for PrMergeNemesis {
    const TITLE: &'static str =
        "pr_merge nemesis: randomized faults on merging a reviewed pull request";
    const ABOUT: &'static str = "Kills at every step of each column and of its restart (the \
        gate's inside its recovery too: after its premise read, its approval read and its \
        lookup), a merge request held at the service while its worker is killed (inside and past \
        the declared in-flight bound), answers dropped or replaced by a 500 after the merge \
        landed, and an unreviewed push or the approval revoked while the worker is paused \
        mid-check; each trial judged by pr_merge's want rule and labelled within or beyond its \
        column's assumptions by one rule: a hold past the bound, or a change after the \
        column's last read of a fact that nothing else guards (the service's sha guards the \
        head for every column that passes it).";

    fn summary(v: &Verified<Self>) -> Table {
        let rows = v
            .summary()
            .iter()
            .map(|(key, s)| {
                let (nemesis, column) = key.split_once(':').unwrap_or((key, ""));
                vec![
                    format!("{nemesis} · {column}"),
                    s.judged.to_string(),
                    s.not_fired.to_string(),
                    format!(
                        "{} ({} violations, {} wrong)",
                        s.within, s.violations_within, s.wrong_within
                    ),
                    format!(
                        "{} ({} violations, {} wrong)",
                        s.beyond, s.violations_beyond, s.wrong_beyond
                    ),
                    s.unresolved.to_string(),
                ]
            })
            .collect();
        Table {
            caption: "Per nemesis and column, re-derived by verify from the repositories' merges"
                .into(),
            headers: [
                "nemesis · column",
                "judged",
                "fault did not fire (apart)",
                "within assumptions",
                "beyond assumptions",
                "unresolved",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        }
    }

    fn notes(v: &Verified<Self>) -> Vec<String> {
        let totals = column_totals(v);
        let per = |f: &dyn Fn(&NemesisColumn) -> String| {
            totals
                .iter()
                .map(|(c, t)| format!("{c} {}", f(t)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let revoked = revoked_merges(v);
        vec![
            format!(
                "Within each column's assumptions, violations over fired trials: {}, as the \
                 service's own guards make certain (it refuses a second merge and a moved head); \
                 the columns differ where the service cannot help. With the approval revoked \
                 mid-check, merges that went out anyway: {}. Wrong answers within assumptions: {}.",
                per(&|t| format!("{} of {}", t.violations_within, t.within)),
                if revoked.is_empty() {
                    "not run".to_owned()
                } else {
                    revoked.join(", ")
                },
                per(&|t| t.wrong_within.to_string())
            ),
            "What those zeros measure: the service's own guards more than the columns. It \
             refuses a second merge of a merged pull request (405) and a merge whose sha is not \
             the head (409), and a push before no_check's merge is beyond its assumptions (it \
             sends no sha), so within assumptions only a revoked approval could make a column \
             break the invariant. The columns differ there, in their answers and in whether a \
             record proves them."
                .to_owned(),
            distinct(v),
            format!(
                "Beyond them (a request held past the declared bound; the approval revoked after \
                 the column's last read of it; for no_check, which sends no sha, a push before its \
                 merge): violations {}, wrong answers {}.",
                per(&|t| format!("{} of {}", t.violations_beyond, t.beyond)),
                per(&|t| t.wrong_beyond.to_string())
            ),
            format!(
                "Trials whose drawn fault did not fire (a kill at a step the worker never \
                 reached, a fault the request never took), counted apart: {}. Unresolved \
                 (the last restart ended in an error): {}.",
                per(&|t| t.not_fired.to_string()),
                per(&|t| t.unresolved.to_string())
            ),
            format!(
                "Where the service's precondition cannot help: the approval. Revoked while the \
                 worker was mid-check, merges that went out anyway: {}. The service knows \
                 nothing of the approval, so native merges whenever the head is unchanged; \
                 hand_check misses a revocation after its own check, and the gate one after \
                 its check at DISPATCHED (both beyond their assumptions).",
                if revoked.is_empty() {
                    "not run".to_owned()
                } else {
                    revoked.join(", ")
                }
            ),
            format!(
                "Trials in which a case merged the pull request twice: {}. The service keeps the \
                 merge's own state and refuses to merge a merged pull request (405): a request \
                 held, dropped or answered 500 is not a second merge once one landed. What \
                 differs between the columns is what they answer, and whether a record proves it.",
                (0..v.file().cells.len())
                    .filter_map(|i| v.judgement(i))
                    .filter(|j| j.merge.merges > 1)
                    .count()
            ),
            held_note(v),
        ]
    }

    fn cells(v: &Verified<Self>) -> Table {
        let rows = v
            .file()
            .cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let d = &c.planned.draw;
                let mut faults = vec![format!("outage {}", d.outage)];
                if let Some(k) = &d.kill_at {
                    faults.push(format!("kill at {k}"));
                }
                if let Some(k) = &d.restart_kill_at {
                    faults.push(format!("restart killed at {k}"));
                }
                if let Some(h) = d.hold_ms {
                    faults.push(format!("held {h} ms"));
                }
                if let Some(a) = &d.answer {
                    faults.push(format!("answer {a}"));
                }
                if let Some(p) = &d.pause_at {
                    faults.push(format!("push while paused at {p}"));
                }
                let judged = match v.judgement(i) {
                    Some(j) => format!(
                        "{}{}: {} merge(s), want {}{}{}",
                        if j.merge.invariant_held {
                            "held"
                        } else {
                            "VIOLATED"
                        },
                        if j.fired { "" } else { " (fault did not fire)" },
                        j.merge.merges,
                        j.merge.want,
                        if j.merge.answer_matches {
                            ""
                        } else {
                            "; wrong answer"
                        },
                        j.beyond
                            .as_ref()
                            .map(|b| format!("; beyond: {b}"))
                            .unwrap_or_default()
                    ),
                    None => format!(
                        "harness error: {}",
                        c.harness_error.as_deref().unwrap_or_default()
                    ),
                };
                vec![
                    format!(
                        "{} · {} #{}",
                        c.planned.nemesis, c.planned.column, c.planned.index
                    ),
                    faults.join("; "),
                    c.ticket.status.clone(),
                    judged,
                ]
            })
            .collect();
        Table {
            caption: "Every trial: nemesis · column #index".into(),
            headers: ["trial", "drawn faults", "final answer", "judged"]
                .map(String::from)
                .to_vec(),
            rows,
        }
    }
}

/// What a held merge request can do here (no second merge: the service merges a pull request
/// once), with the held nemeses' figures per column from the verified summary.
fn held_note(v: &Verified<PrMergeNemesis>) -> String {
    let held: Vec<String> = ["kill_while_held", "held_beyond_bound"]
        .iter()
        .flat_map(|n| {
            v.summary().iter().filter_map(move |(key, s)| {
                let column = key.strip_prefix(n)?.strip_prefix(':')?;
                Some(format!(
                    "{n} {column}: {} violations and {} wrong answers over {} fired trials",
                    s.violations_within + s.violations_beyond,
                    s.wrong_within + s.wrong_beyond,
                    s.within + s.beyond
                ))
            })
        })
        .collect();
    if held.is_empty() {
        return "No nemesis held a merge request in this campaign.".into();
    }
    format!(
        "A held merge request cannot make a second merge here, inside the bound or past it: a \
         restart's request either merges first, and the held one is then refused (405), or comes \
         after the held one landed and is refused or finds it. Unlike a credit, a merge cannot \
         land twice, so the in-flight bound the gate waits out before its lookup guards against \
         nothing the service does not already refuse; it would matter for a service that applies \
         a held request beside a resent one. Held trials: {}.",
        held.join("; ")
    )
}

/// Each column's figures summed over the nemeses.
fn column_totals(v: &Verified<PrMergeNemesis>) -> std::collections::BTreeMap<&str, NemesisColumn> {
    let mut totals: std::collections::BTreeMap<&str, NemesisColumn> = Default::default();
    for (key, s) in v.summary() {
        let column = key.split_once(':').map_or(key.as_str(), |(_, c)| c);
        let t = totals.entry(column).or_default();
        t.judged += s.judged;
        t.not_fired += s.not_fired;
        t.within += s.within;
        t.violations_within += s.violations_within;
        t.wrong_within += s.wrong_within;
        t.beyond += s.beyond;
        t.violations_beyond += s.violations_beyond;
        t.wrong_beyond += s.wrong_beyond;
        t.unresolved += s.unresolved;
    }
    totals
}

/// Per column, the merges that went out with the approval revoked mid-check, over its fired
/// revoke_mid_check trials.
fn revoked_merges(v: &Verified<PrMergeNemesis>) -> Vec<String> {
    v.summary()
        .iter()
        .filter_map(|(key, s)| {
            let column = key.strip_prefix("revoke_mid_check:")?;
            Some(format!(
                "{column} {} of {}",
                s.violations_within + s.violations_beyond,
                s.within + s.beyond
            ))
        })
        .collect()
}

//! pr_merge_nemesis's views: the figures `verify` derived, in this campaign's words.

use super::{Placed, Table, Views};
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
        the declared in-flight bound, or until the runner lands it at a drawn step of the \
        restart), answers dropped or replaced by a 500 after the merge \
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
        let revoked = if revoked.is_empty() {
            "not run".to_owned()
        } else {
            revoked.join(", ")
        };
        vec![
            format!(
                "Within each column's assumptions, violations over fired trials: {}; wrong \
                 answers: {}. Beyond them, violations: {} (the approval revoked after the \
                 column's last read of it, which no check before the send can see; a request \
                 held past the declared bound; for no_check, a push before its merge). The \
                 zeros within are mostly the service's guards: it refuses a second \
                 merge (405) and a merge whose sha is not the head (409), and no_check, which \
                 sends no sha, has every push before its merge counted beyond its assumptions, \
                 so its zero says nothing of the head. With the approval revoked while the \
                 worker was paused before its send, merges that went out anyway: {revoked} \
                 (these count pause steps, not time: see below).",
                per(&|t| format!("{} of {}", t.violations_within, t.within)),
                per(&|t| t.wrong_within.to_string()),
                per(&|t| format!("{} of {}", t.violations_beyond, t.beyond)),
            ),
            zeros_note(&totals),
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
                 worker was paused at a step before its send, merges that went out anyway: \
                 {revoked}. These count steps, not time: a pause at a given step always ends the \
                 same way, so a column's figure is the share of its drawn pause steps that come \
                 after its last read of the approval ({}). The service knows nothing of the \
                 approval; hand_check reads it after its premise read, the gate at its check \
                 before DISPATCHED; a revocation after that read is beyond their assumptions.",
                steps_after_last_read()
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
            gate_time_note(v),
        ]
    }

    const UNIT: &'static str = "trials";

    fn placed(v: &Verified<Self>) -> Vec<Placed> {
        v.file()
            .cells
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let j = v.judgement(i)?;
                Some(Placed::trial(
                    &c.planned.nemesis,
                    &c.planned.column,
                    j.fired,
                    j.beyond.is_some(),
                    j.merge.invariant_held,
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
                    let what = if c.planned.nemesis == "revoke_mid_check" {
                        "approval revoked"
                    } else {
                        "push"
                    };
                    faults.push(format!("{what} while paused at {p}"));
                }
                if let Some(r) = &d.release_at {
                    faults.push(format!("held until released at the restart's {r}"));
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
/// once; but a held merge that lands while a restart checks and sends can make its answer
/// wrong), with the held nemeses' figures per column from the verified summary.
fn held_note(v: &Verified<PrMergeNemesis>) -> String {
    let held: Vec<String> = [
        "kill_while_held",
        "held_beyond_bound",
        "release_mid_restart",
    ]
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
        "A held merge request cannot make a second merge here: the service merges a pull request \
         once. What it can break is the answer: a held merge that lands after a restart's lookup \
         and before its send (the restart's merge is then refused 405), or between its lookup \
         and its read of the pull request (it reads \"already merged\" and takes the merge for \
         someone else's), leaves an answer the repository contradicts. A restart that trusts a \
         \"not found\" only once the declared in-flight bound has passed (the gate: it looks its \
         merge up at once, and again after the bound before it sends) cannot meet a merge that \
         is still held. One that does not wait meets it only if the merge lands in that window, a \
         few milliseconds wide; kill_while_held draws short holds as often as long ones so that \
         some land near it, and its trials are samples, not a search. release_mid_restart \
         searches the window instead: the service holds the request until the runner releases \
         it, and the runner lands it at a drawn step of the restart before its merge request \
         ({}), so every step is met; within or beyond is then decided by how long the request \
         was held, as measured. Held trials: {}.",
        release_steps_text(),
        held.join("; ")
    )
}

/// Per column, the restart steps at which release_mid_restart lands the held merge (from
/// verify's step table).
fn release_steps_text() -> String {
    verify::scenarios::pr_merge::COLUMNS
        .iter()
        .map(|c| {
            let steps = verify::scenarios::pr_merge_nemesis::release_steps(c);
            format!("{c}: {}", steps.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// What the zeros within assumptions measure, said only when every column has them.
fn zeros_note(totals: &std::collections::BTreeMap<&str, NemesisColumn>) -> String {
    let none_broke = totals.values().all(|t| t.violations_within == 0);
    let wrong: Vec<String> = totals
        .iter()
        .filter(|(_, t)| t.wrong_within > 0)
        .map(|(c, t)| format!("{c} {}", t.wrong_within))
        .collect();
    let differ = if wrong.is_empty() {
        "No column answered wrong within its assumptions either.".to_owned()
    } else {
        format!(
            "Where the columns differ is in their answers (wrong within assumptions: {}; \
             release_mid_restart shows why for hand_check: a held merge that lands inside a \
             restart's checks is taken for someone else's or answered by the service's 405) and \
             in whether a record proves them.",
            wrong.join(", ")
        )
    };
    if none_broke {
        format!(
            "What those zeros measure: the service's own guards more than the columns. Within \
             each column's assumptions no column broke the invariant: the service refuses a \
             second merge and a merge of a moved head, and every revocation that went through \
             came after the column's last read of the approval, which is beyond its assumptions \
             by rule. {differ}"
        )
    } else {
        differ
    }
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

/// Per column, the pause steps after its last read of the approval, of all its pause steps (from
/// verify's step tables).
fn steps_after_last_read() -> String {
    use verify::scenarios::pr_merge_nemesis::{pause_steps, reads_approval_after};
    verify::scenarios::pr_merge::COLUMNS
        .iter()
        .map(|column| {
            let steps = pause_steps(column);
            let after: Vec<&str> = steps
                .iter()
                .copied()
                .filter(|s| !reads_approval_after(column, s))
                .collect();
            format!(
                "{column} {} of {} steps{}",
                after.len(),
                steps.len(),
                if after.is_empty() {
                    String::new()
                } else {
                    format!(": {}", after.join(", "))
                }
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The gate's cost in time, from its verified receipts: per final status, the median from its
/// first DISPATCHED entry to its last entry.
fn gate_time_note(v: &Verified<PrMergeNemesis>) -> String {
    let mut by_status: std::collections::BTreeMap<&str, Vec<u64>> = Default::default();
    for (i, c) in v.file().cells.iter().enumerate() {
        if v.judgement(i).is_none() {
            continue;
        }
        let Some(r) = &c.ticket.receipt else { continue };
        let ts = |e: &serde_json::Value| e.get("ts_ms").and_then(serde_json::Value::as_u64);
        let dispatched = r
            .entries
            .iter()
            .find(|e| e.get("kind").and_then(serde_json::Value::as_str) == Some("DISPATCHED"))
            .and_then(ts);
        if let (Some(d), Some(end)) = (dispatched, r.entries.last().and_then(ts)) {
            by_status
                .entry(c.ticket.status.as_str())
                .or_default()
                .push(end.saturating_sub(d));
        }
    }
    if by_status.is_empty() {
        return "No gated trial reached DISPATCHED in this campaign.".into();
    }
    let parts: Vec<String> = by_status
        .iter_mut()
        .map(|(status, times)| {
            times.sort_unstable();
            let median = times.get(times.len() / 2).copied().unwrap_or_default();
            format!("{status} {median} ms ({} trials)", times.len())
        })
        .collect();
    format!(
        "The gate's cost here is time. From its DISPATCHED entry to its last, median per final \
         answer, from its signed receipts: {}. A recovery that resends or refuses after a \
         lookup first waits out the declared in-flight bound ({} ms) since it found the \
         sender's claim free; answers that rest on the service's own reply do not wait.",
        parts.join(", "),
        verify::scenarios::pr_merge::DECLARED_MAX_IN_FLIGHT_MS
    )
}

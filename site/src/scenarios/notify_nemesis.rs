//! notify_nemesis's views: the figures `verify` derived, in this campaign's words.

use super::{Placed, Table, Views};
use std::collections::BTreeMap;
use verify::contract::Verified;
use verify::scenarios::notify::Answer;
use verify::scenarios::notify_nemesis::{NemesisColumn, NotifyNemesis};

impl Views for NotifyNemesis {
    const TITLE: &'static str =
        "notify nemesis: randomized faults on an email nobody can take back";
    const ABOUT: &'static str = "Kills at every step of each column (inside the SMTP DATA too: \
        half of the message at the server, its final dot never sent) while the refund fails or \
        the approval is revoked, restarts killed at a drawn step of the column's path (a restart \
        that settles without a step, as the gate's AMBIGUOUS and hand_check's escalation do, \
        is counted apart as not fired), and the same changes made while a live worker is paused \
        before its send; each trial judged by notify's rules (a \"cannot know\" \
        answer is handed to a person, never wrong) and labelled within or beyond its column's \
        assumptions by one rule: a change after the column's last read of the fact it changes, \
        which no mail server guards.";

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
                        "{} ({} more emails than wanted, {} fewer, {} wrong, {} handed to a \
                         person)",
                        s.within, s.over_within, s.under_within, s.wrong_within, s.handoffs_within
                    ),
                    format!(
                        "{} ({} violations, {} wrong, {} handed to a person)",
                        s.beyond, s.violations_beyond, s.wrong_beyond, s.handoffs_beyond
                    ),
                    s.unresolved.to_string(),
                ]
            })
            .collect();
        Table {
            caption: "Per nemesis and column, re-derived by verify from the mailbox (emails \
                      counted in the Maildir once the mail queue was empty)"
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
        let mid: NemesisColumn = totals.values().fold(NemesisColumn::default(), |mut a, t| {
            a.killed_mid_data += t.killed_mid_data;
            a.kept_mid_data += t.kept_mid_data;
            a
        });
        vec![
            format!(
                "Within each column's assumptions, over fired trials: a second email (or one \
                 that should not have gone out): {}; no email where one was wanted: {}; answers \
                 the mailbox contradicts: {}; handed to a person: {}. Beyond them, violations: \
                 {} (a premise changed after the column's last read of it, which no check \
                 before the send can see; for no_check, which reads nothing after its \
                 decision, any change).",
                per(&|t| format!("{} of {}", t.over_within, t.within)),
                per(&|t| format!("{} of {}", t.under_within, t.within)),
                per(&|t| t.wrong_within.to_string()),
                per(&|t| t.handoffs_within.to_string()),
                per(&|t| format!("{} of {}", t.violations_beyond, t.beyond)),
            ),
            guess_and_gate(v),
            pause_steps_note(),
            format!(
                "SIGKILLs inside the SMTP DATA (half of the message at the server, its final dot \
                 never sent), of first workers and of restarts: {}; of those, messages the \
                 server kept: {} (the server must discard such a transaction: want 0).",
                mid.killed_mid_data, mid.kept_mid_data
            ),
            format!(
                "Beyond each column's assumptions (the refund failed or the approval was revoked \
                 after the column's last read of it, before its email; for no_check, which reads \
                 nothing after its decision, any such change): violations {}, wrong answers {}.",
                per(&|t| format!("{} of {}", t.violations_beyond, t.beyond)),
                per(&|t| t.wrong_beyond.to_string()),
            ),
            format!(
                "Trials whose drawn fault did not fire (a kill or a pause at a step the worker \
                 never reached; mostly kill_restart, whose restart settles without a step when \
                 the careful columns find a send they cannot see through, or a change that \
                 makes them refuse), counted apart: {}. Unresolved (no final answer: the last \
                 restart ended in an error, or the gate's effect was left in flight): {}.",
                per(&|t| t.not_fired.to_string()),
                per(&|t| t.unresolved.to_string())
            ),
            distinct(v),
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
                    j.mail.invariant_held,
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
                let mut faults = vec![format!("change {}", d.outage)];
                if let Some(k) = &d.kill_at {
                    faults.push(format!("kill at {k}"));
                }
                if let Some(k) = &d.restart_kill_at {
                    faults.push(format!("restart killed at {k}"));
                }
                if let Some(p) = &d.pause_at {
                    faults.push(format!("change while paused at {p}"));
                }
                let judged = match v.judgement(i) {
                    Some(j) => format!(
                        "{}{}: {} email(s), want {}{}{}",
                        if j.mail.invariant_held {
                            "held"
                        } else {
                            "VIOLATED"
                        },
                        if j.fired { "" } else { " (fault did not fire)" },
                        j.mail.delivered,
                        j.mail.want,
                        match j.mail.answer {
                            Answer::Matches => "",
                            Answer::Wrong => "; wrong answer",
                            Answer::HandedOff => "; handed to a person",
                            Answer::Unresolved => "; no final answer (unresolved)",
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

/// What a guess costs (second emails, and answers the mailbox contradicts, from the columns that
/// send again) beside what never guessing costs (handoffs, and among them emails not sent until
/// a person acts), over the kill nemeses only (a pause hands nothing off), and whether the gate
/// and the careful hand-written check tie on the mailbox there.
fn guess_and_gate(v: &Verified<NotifyNemesis>) -> String {
    let kills = column_totals_of(v, &|nemesis| nemesis.starts_with("kill_"));
    let get = |c: &str| kills.get(c).cloned().unwrap_or_default();
    let (hc, il) = (get("hand_check"), get("interlock"));
    let guessing: Vec<String> = ["no_check", "hand_resend"]
        .iter()
        .filter(|c| kills.contains_key(*c))
        .map(|c| {
            let t = get(c);
            format!(
                "{c} {} second or unwanted emails and {} answers the mailbox contradicts in {} \
                 trials",
                t.over_within, t.wrong_within, t.within
            )
        })
        .collect();
    let handing: Vec<String> = [("hand_check", &hc), ("interlock", &il)]
        .iter()
        .map(|(c, t)| {
            format!(
                "{c} {} handoffs in {} trials, the mailbox holding the email in {} of them and \
                 no email where one was wanted in {}",
                t.handoffs_within, t.within, t.handoffs_found_sent, t.under_within
            )
        })
        .collect();
    let tie = if (il.over_within, il.wrong_within) == (hc.over_within, hc.wrong_within) {
        "On the mailbox the gate ties the careful hand-written check: neither sends twice nor \
         answers wrong, and both hand the cases they cannot see through to a person, about as \
         often; what the gate adds is a signed receipt of every step."
    } else {
        "On the mailbox the gate and the careful hand-written check differ, in the figures above."
    };
    format!(
        "Under the kills (kill_at_step and kill_restart, within each column's assumptions), \
         what a guess costs: a column that sends again after a crash it cannot see through sends \
         a second email when the first had gone out, and when the refund failed or the approval \
         was revoked meanwhile it refuses and says nothing went out, while the customer has the \
         email ({}). What not guessing costs: the case goes to a person, and until that person \
         acts an email that never went out stays unsent ({}). {tie}",
        guessing.join("; "),
        handing.join("; ")
    )
}

/// What the within and beyond counts of change_mid_check measure: pause steps, per column the
/// steps after its last read of each fact (from verify's step tables).
fn pause_steps_note() -> String {
    use verify::scenarios::notify_nemesis::{pause_steps, reads_after, CHANGES};
    let per: Vec<String> = verify::scenarios::notify::COLUMNS
        .iter()
        .map(|column| {
            let steps = pause_steps(column);
            let after: Vec<String> = CHANGES
                .iter()
                .map(|change| {
                    let n = steps
                        .iter()
                        .filter(|s| !reads_after(column, s, change))
                        .count();
                    format!("{change} {n}")
                })
                .collect();
            format!("{column} {} steps ({})", steps.len(), after.join(", "))
        })
        .collect();
    format!(
        "change_mid_check's within and beyond counts measure pause steps, not time or exposure: a \
         pause at a given step always ends the same way, so a column's share beyond is the share \
         of its labelled pause steps that come after its last read of the changed fact. Pause \
         steps per column, and how many lie after that read for each change: {}. The gate's \
         re-read of the refund (its premises step) and of the approval (right before DISPATCHED) \
         are labelled as the hand-written columns' reads are.",
        per.join("; ")
    )
}

/// Each column's figures summed over the nemeses.
fn column_totals(v: &Verified<NotifyNemesis>) -> BTreeMap<&str, NemesisColumn> {
    column_totals_of(v, &|_| true)
}

/// Each column's figures summed over the nemeses `keep` keeps.
fn column_totals_of<'v>(
    v: &'v Verified<NotifyNemesis>,
    keep: &dyn Fn(&str) -> bool,
) -> BTreeMap<&'v str, NemesisColumn> {
    let mut totals: BTreeMap<&str, NemesisColumn> = BTreeMap::new();
    for (key, s) in v.summary() {
        let (nemesis, column) = key.split_once(':').unwrap_or((key.as_str(), ""));
        if !keep(nemesis) {
            continue;
        }
        let t = totals.entry(column).or_default();
        t.judged += s.judged;
        t.not_fired += s.not_fired;
        t.within += s.within;
        t.violations_within += s.violations_within;
        t.over_within += s.over_within;
        t.under_within += s.under_within;
        t.wrong_within += s.wrong_within;
        t.handoffs_within += s.handoffs_within;
        t.handoffs_found_sent += s.handoffs_found_sent;
        t.beyond += s.beyond;
        t.violations_beyond += s.violations_beyond;
        t.wrong_beyond += s.wrong_beyond;
        t.handoffs_beyond += s.handoffs_beyond;
        t.unresolved += s.unresolved;
        t.killed_mid_data += s.killed_mid_data;
        t.kept_mid_data += s.kept_mid_data;
    }
    totals
}

/// How many distinct configurations the campaign's trials hold, in a sentence.
fn distinct(v: &Verified<NotifyNemesis>) -> String {
    let configurations: std::collections::BTreeSet<String> = v
        .file()
        .cells
        .iter()
        .map(|c| {
            let d = &c.planned.draw;
            format!(
                "{} {} {} {:?} {:?} {:?}",
                c.planned.nemesis,
                c.planned.column,
                d.outage,
                d.kill_at,
                d.restart_kill_at,
                d.pause_at
            )
        })
        .collect();
    format!(
        "The {} trials hold {} distinct configurations (nemesis, column, change and the step of \
         each fault): trials of one configuration repeat one interleaving up to timing, so the \
         counts above are not that many independent samples.",
        v.file().cells.len(),
        configurations.len()
    )
}

//! notify's views: the figures `verify` derived, in this scenario's words.

use super::{Placed, Table, Views};
use verify::contract::Verified;
use verify::scenarios::notify::{Answer, ColumnSummary, Handoff, Notify};

impl Views for Notify {
    const TITLE: &'static str = "notify: an email nobody can take back, through a crash";
    const ABOUT: &'static str = "After a $20 refund, an agent emails the customer that the money \
        is on the way, through a real mail server (Postfix on loopback); the worker is SIGKILLed \
        right before the SMTP transaction or right after the server accepted the message, while \
        the refund fails or the approval is revoked. The server keeps no idempotency key and \
        cannot be asked what it accepted: after such a crash the honest answer is \"cannot \
        know\", which hands the case to a person.";

    fn summary(v: &Verified<Self>) -> Table {
        let rows = v
            .summary()
            .iter()
            .map(|(column, s)| {
                vec![
                    column.clone(),
                    format!("{} / {}", s.emails_sent, s.emails_wanted),
                    format!("{}/{}", s.held, s.judged),
                    s.over.to_string(),
                    s.under.to_string(),
                    s.wrong_answers.to_string(),
                    s.handoffs.to_string(),
                ]
            })
            .collect();
        Table {
            caption: "Per column, re-derived by verify from the mailbox (emails counted in the \
                      Maildir once the mail queue was empty)"
                .into(),
            headers: [
                "column",
                "emails sent / wanted",
                "invariant held",
                "more emails than wanted",
                "fewer emails than wanted",
                "wrong answers",
                "handed to a person",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        }
    }

    fn notes(v: &Verified<Self>) -> Vec<String> {
        let summary = v.summary();
        let per = |f: &dyn Fn(&ColumnSummary) -> String| {
            summary
                .iter()
                .map(|(column, s)| format!("{column} {}", f(s)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut notes = vec![
            format!(
                "What a guess costs and what the gate costs, in emails and in people: emails \
                 sent / wanted: {}; violations (a second email, an email sent after the refund \
                 failed or the approval was revoked, or none where one was wanted): {}; wrong \
                 answers: {}; cases handed to a person: {}. Wanted: one email per case, or none \
                 when the refund failed or the approval was revoked before the case's first \
                 email was delivered; an email already delivered when the refund later failed \
                 stays wanted, since no column can take it back (the customer then holds an \
                 email the refund no longer bears out, whatever the column).",
                per(&|s| format!("{} / {}", s.emails_sent, s.emails_wanted)),
                per(&|s| s.judged.saturating_sub(s.held).to_string()),
                per(&|s| s.wrong_answers.to_string()),
                per(&|s| s.handoffs.to_string()),
            ),
            "One rule judges every column: an answer that says it cannot know (the gate's \
             AMBIGUOUS, hand_check's ESCALATED) is never a wrong answer; it is counted as handed \
             to a person, apart from the invariant, which is about the mailbox alone. Any other \
             answer must agree with the mailbox: it says sent exactly when the case's email is \
             there."
                .to_owned(),
        ];
        notes.extend(
            summary
                .iter()
                .filter(|(_, s)| !s.handed_off.is_empty())
                .map(|(column, s)| handoff_note(column, &s.handed_off)),
        );
        notes
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
                let judged = match v.judgement(i) {
                    Some(j) => format!(
                        "{}: {} email(s), want {}{}",
                        if j.invariant_held { "held" } else { "VIOLATED" },
                        j.delivered,
                        j.want,
                        match j.answer {
                            Answer::Matches => "",
                            Answer::Wrong => "; wrong answer",
                            Answer::HandedOff => "; handed to a person",
                            Answer::Unresolved => "; no final answer (unresolved)",
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
                    c.ticket.status.clone(),
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

/// What the person handed a column's cases would have found in the mailbox, case by case.
fn handoff_note(column: &str, handoffs: &[Handoff]) -> String {
    let found: Vec<String> = handoffs
        .iter()
        .map(|h| {
            format!(
                "{} · {} #{} ({}): {} email(s) in the mailbox, {} wanted",
                h.crash_point, h.outage, h.repeat, h.status, h.delivered, h.want
            )
        })
        .collect();
    format!(
        "{column} handed {} case(s) to a person. What the mailbox held for each: {}.",
        handoffs.len(),
        found.join("; ")
    )
}

//! The opening of a report in the results format (billing_credit's): what was tested, found and
//! defined, from the matrix's facts ([`crate::facts`]) and, when the scenario has one, the
//! figures `verify` derived from its nemesis campaign.

use super::{
    assumptions_definition, column_definitions, verify_command, words, wrong_answer_definition,
    Definition, Opening, GATE,
};
use crate::facts::{Fact, Facts};
use crate::format::seconds;
use crate::outcome_chart::{figure, Outcome, OutcomeBar, OutcomeFigure, OutcomeRow};
use crate::report_view::Report;
use verify::figures::nemesis::{ColumnFigures, NemesisFigures};
use verify::nemesis::nemeses::Nemesis;

/// What the opening needs of a nemesis campaign: the figures `verify` derived, in the plan's
/// column order, and the target's declared in-flight bound.
#[derive(Debug, Clone)]
pub struct Campaign {
    /// The figures `verify` derived from the campaign.
    pub figures: NemesisFigures,
    /// The plan's columns, in order.
    pub columns: Vec<String>,
    /// The target's declared server-side in-flight bound, in milliseconds.
    pub max_in_flight_ms: u64,
}

impl Campaign {
    fn column(&self, c: &str) -> Option<&ColumnFigures> {
        self.figures.columns().get(c)
    }
}

fn int(facts: &Facts, key: &str) -> i64 {
    match facts.get(key) {
        Some(Fact::Int(n)) => *n,
        _ => 0,
    }
}

fn text(facts: &Facts, key: &str) -> String {
    facts
        .get(key)
        .map_or_else(|| "not recorded".to_owned(), ToString::to_string)
}

/// The opening of `report`, from its facts and its campaign's figures.
pub fn opening(report: &Report, facts: &Facts, campaign: Option<&Campaign>) -> Opening {
    let columns: Vec<String> = report
        .columns
        .iter()
        .filter(|c| int(facts, &format!("cells.{c}")) > 0)
        .cloned()
        .collect();
    let mut found = vec![money(&columns, facts, campaign)];
    found.push(record(&columns, facts, campaign));
    if let Some(c) = campaign {
        found.push(beyond(c));
        found.push(wrong_answers(c));
    }
    Opening {
        tested: tested(report, facts, campaign),
        found,
        data_file: report.json_name.clone(),
        check: verify_command(&report.json_name),
        definitions: definitions(&report.columns, campaign.is_some()),
        on_front: 2,
        figure: Some(match campaign {
            Some(c) => campaign_figure(c),
            None => matrix_figure(report),
        }),
    }
}

fn tested(report: &Report, facts: &Facts, campaign: Option<&Campaign>) -> String {
    let amount = facts
        .get("approved")
        .map_or_else(|| "an approved".to_owned(), |a| format!("a {a}"));
    let mut out = format!(
        "Whether {amount} goodwill credit to a subscriber is issued exactly as the billing rules \
         allow when the worker sending it is killed: {} named cells ({} crash point and outage \
         rows × {}), each worker SIGKILLed right before or right after its credit request while \
         billing renews the subscription or compensates the same incident. Sent to {}; decided \
         by {}.",
        text(facts, "cells"),
        text(facts, "rows"),
        words(&report.columns),
        report.env.backend_label,
        report.env.decider_label,
    );
    if let Some(c) = campaign {
        out.push_str(&format!(
            " Then {} randomized fault trials of {} kinds (kills at random instants and at every \
             step, requests held or failed at the service, the approval revoked or billing's \
             credit note issued mid-check), each judged by the same rule.",
            c.figures.trials(),
            c.figures.nemeses()
        ));
    }
    out
}

/// The verdict on money: who held the invariant in every named cell (and within their
/// assumptions in every trial), who broke it, and where the gate stands among them.
fn money(columns: &[String], facts: &Facts, campaign: Option<&Campaign>) -> String {
    let within = |c: &str| campaign.and_then(|k| k.column(c));
    let clean = |c: &str| {
        int(facts, &format!("violated.{c}")) == 0
            && within(c).is_none_or(|f| f.violations_within() == 0)
    };
    let (held, broke): (Vec<&String>, Vec<&String>) = columns.iter().partition(|c| clean(c));
    let held_words = |c: &&String| {
        let mut s = format!("{c} {} named cells", text(facts, &format!("held.{c}")));
        if let Some(f) = within(c) {
            s.push_str(&format!(
                ", {} violations in {} trials within its assumptions",
                f.violations_within(),
                f.within()
            ));
        }
        s
    };
    let broke_words = |c: &&String| {
        let mut s = format!(
            "{c} in {} of {} named cells ({})",
            int(facts, &format!("violated.{c}")),
            int(facts, &format!("cells.{c}")),
            text(facts, &format!("violated_rows.{c}"))
        );
        if let Some(f) = within(c) {
            s.push_str(&format!(
                " and in {} of {} trials within its assumptions",
                f.violations_within(),
                f.within()
            ));
        }
        s
    };
    let others: Vec<String> = held
        .iter()
        .filter(|c| c.as_str() != GATE)
        .map(|c| (*c).clone())
        .collect();
    let gate_held = held.iter().any(|c| c.as_str() == GATE);
    let lead = match (gate_held, others.is_empty()) {
        (true, false) => format!(
            "On money Interlock ties {}: each held the invariant",
            words(&others)
        ),
        (true, true) => "On money Interlock alone held the invariant".to_owned(),
        (false, _) => "On money Interlock did not hold the invariant everywhere".to_owned(),
    };
    let mut out = format!(
        "{lead} ({}).",
        held.iter().map(held_words).collect::<Vec<_>>().join("; ")
    );
    if held.is_empty() {
        out = "No column held the invariant everywhere.".to_owned();
    }
    if !broke.is_empty() {
        out.push_str(&format!(
            " Broken: {}.",
            broke.iter().map(broke_words).collect::<Vec<_>>().join("; ")
        ));
    }
    out
}

/// The record: what each column keeps, and under randomized faults how often its restart gave
/// no answer or a wrong one within its assumptions; the gate leads when it is never behind.
fn record(columns: &[String], facts: &Facts, campaign: Option<&Campaign>) -> String {
    let kinds: Vec<String> = columns
        .iter()
        .map(|c| {
            let kind = match text(facts, &format!("record.{c}")).as_str() {
                "signed_chain" => "a signed, hash-chained receipt anyone can check offline",
                "plain_log" => "a plain log file, shown but unverifiable",
                "none" => "no record",
                _ => "a record of mixed kinds",
            };
            format!(
                "{c} keeps {kind} ({} cells proved)",
                text(facts, &format!("proof.{c}"))
            )
        })
        .collect();
    let Some(k) = campaign else {
        // Without a campaign the lead is the record itself: the gate's alone is signed.
        let signed = |c: &String| text(facts, &format!("record.{c}")) == "signed_chain";
        let lead = if columns
            .iter()
            .filter(|c| signed(c))
            .eq(columns.iter().filter(|c| c.as_str() == GATE))
        {
            "On the record Interlock leads"
        } else {
            "On the record"
        };
        return format!("{lead}: {}.", words(&kinds));
    };
    let figures = |c: &String| k.column(c).map(|f| (f.unresolved(), f.wrong_within()));
    let gate = figures(&GATE.to_owned());
    let rivals: Vec<(&String, (u32, u32))> = columns
        .iter()
        .filter(|c| c.as_str() != GATE)
        .filter_map(|c| figures(c).map(|f| (c, f)))
        .collect();
    let lead = match gate {
        Some((u, w)) if rivals.iter().all(|(_, (ru, rw))| u <= *ru && w <= *rw) => {
            "On the record Interlock leads"
        }
        Some(_) => "On the record Interlock does not lead everywhere",
        None => "On the record",
    };
    let per = |f: &dyn Fn(&ColumnFigures) -> u32| -> String {
        words(
            &columns
                .iter()
                .filter_map(|c| k.column(c).map(|x| format!("{c} {}", f(x))))
                .collect::<Vec<_>>(),
        )
    };
    format!(
        "{lead}: {}. Under the randomized faults, restarts that ended in an error and gave no \
         answer: {}; wrong answers within each column's assumptions: {}.",
        words(&kinds),
        per(&ColumnFigures::unresolved),
        per(&ColumnFigures::wrong_within),
    )
}

/// Why a trial of `nemesis` lies beyond a column's assumptions, in one line.
fn beyond_reason(nemesis: &str, max_in_flight_ms: u64) -> String {
    match Nemesis::from_name(nemesis) {
        Some(Nemesis::LateBeyondBound) => format!(
            "the service applied a request after the declared in-flight bound ({}), when \
             recovery had already trusted its lookup",
            seconds(max_in_flight_ms)
        ),
        _ => "a fact changed after the column's last read of it and before its request landed, \
              which no check can see (Stripe has no precondition on a balance transaction)"
            .to_owned(),
    }
}

/// Per column, its violations beyond its assumptions by nemesis, and why each lies beyond.
fn beyond(k: &Campaign) -> String {
    let mut reasons: Vec<(String, String)> = Vec::new();
    let per: Vec<String> = k
        .columns
        .iter()
        .filter_map(|c| k.column(c).map(|f| (c, f)))
        .map(|(c, f)| {
            let by: Vec<String> = f
                .nemeses()
                .iter()
                .filter(|n| n.violations > n.violations_within)
                .map(|n| {
                    if !reasons.iter().any(|(m, _)| m == &n.nemesis) {
                        reasons.push((
                            n.nemesis.clone(),
                            beyond_reason(&n.nemesis, k.max_in_flight_ms),
                        ));
                    }
                    format!("{} {}", n.nemesis, n.violations - n.violations_within)
                })
                .collect();
            let by = if by.is_empty() {
                String::new()
            } else {
                format!(": {}", by.join(", "))
            };
            format!("{c} {} of {}{by}", f.violations_beyond(), f.beyond())
        })
        .collect();
    // One line per reason, naming the nemeses it explains.
    let mut why: Vec<(String, Vec<String>)> = Vec::new();
    for (n, r) in reasons {
        match why.iter_mut().find(|(w, _)| *w == r) {
            Some((_, names)) => names.push(n),
            None => why.push((r, vec![n])),
        }
    }
    let why: Vec<String> = why
        .into_iter()
        .map(|(r, names)| format!("under {}, {r}", words(&names)))
        .collect();
    format!(
        "Beyond the declared assumptions every column can fail, the gate included, and these \
         failures are reported as measured, not hidden: violations beyond them, {}. Why they lie \
         beyond: {}.",
        per.join("; "),
        if why.is_empty() {
            "none did".to_owned()
        } else {
            why.join("; ")
        }
    )
}

/// Per column, its wrong answers within and beyond its assumptions, with the nemeses that
/// caused them.
fn wrong_answers(k: &Campaign) -> String {
    let per: Vec<String> = k
        .columns
        .iter()
        .filter_map(|c| k.column(c).map(|f| (c, f)))
        .map(|(c, f)| {
            let by: Vec<String> = f
                .nemeses()
                .iter()
                .filter(|n| n.wrong > 0)
                .map(|n| {
                    let place = if n.within == 0 {
                        " (every trial beyond the assumptions)"
                    } else {
                        ""
                    };
                    format!("{} {}{place}", n.nemesis, n.wrong)
                })
                .collect();
            let total = f.wrong_within() + f.wrong_beyond();
            let within = f.wrong_within();
            if by.is_empty() {
                format!("{c} {total}")
            } else {
                format!(
                    "{c} {total}, {within} of them within its assumptions, from {}",
                    by.join(", ")
                )
            }
        })
        .collect();
    format!(
        "Wrong answers (a final answer that contradicts what Stripe holds): {}. A wrong answer \
         beyond the assumptions is an answer given before a late request landed or a fact \
         changed unseen; within them it is a failure of the column.",
        per.join("; ")
    )
}

fn definitions(columns: &[String], campaign: bool) -> Vec<Definition> {
    let mut d = vec![Definition::new(
        "the invariant",
        "this case credits the customer exactly what the billing rules allow: once, unless \
         someone else compensated the same incident before the case's first credit, then not at \
         all. It is judged from every credit Stripe holds, never from a column's own \
         bookkeeping; held means it was met, VIOLATED that it was not.",
    )];
    d.extend(column_definitions(columns));
    d.push(Definition::new(
        "can prove what happened",
        "the column's own record, checked against Stripe, says what happened to the credit.",
    ));
    if campaign {
        d.push(assumptions_definition());
        d.push(wrong_answer_definition());
        d.push(Definition::new(
            "unresolved",
            "a restart that ended in an error and gave no answer; counted apart, not as wrong.",
        ));
    }
    d
}

/// Per nemesis and column: its judged trials split by outcome, within and beyond assumptions.
fn campaign_figure(k: &Campaign) -> OutcomeFigure {
    let mut rows: Vec<OutcomeRow> = Vec::new();
    for c in &k.columns {
        let Some(f) = k.column(c) else { continue };
        for n in f.nemeses() {
            let beyond = n.judged.saturating_sub(n.within);
            let beyond_violated = n.violations.saturating_sub(n.violations_within);
            let bar = OutcomeBar {
                column: c.clone(),
                parts: vec![
                    (Outcome::Held, n.within.saturating_sub(n.violations_within)),
                    (Outcome::Violated, n.violations_within),
                    (Outcome::BeyondHeld, beyond.saturating_sub(beyond_violated)),
                    (Outcome::BeyondViolated, beyond_violated),
                ],
            };
            match rows.iter_mut().find(|r| r.fault == n.nemesis) {
                Some(r) => r.bars.push(bar),
                None => rows.push(OutcomeRow {
                    fault: n.nemesis.clone(),
                    bars: vec![bar],
                }),
            }
        }
    }
    figure(
        "outcomes",
        "Outcomes of the randomized trials, per fault and column",
        "trials",
        &k.columns,
        &rows,
    )
}

/// Per named row and column: its judged cells, held or violated.
fn matrix_figure(report: &Report) -> OutcomeFigure {
    let rows: Vec<OutcomeRow> = report
        .rows
        .iter()
        .map(|row| OutcomeRow {
            fault: row.label.clone(),
            bars: report
                .columns
                .iter()
                .zip(&row.cells)
                .filter(|(_, cells)| !cells.is_empty())
                .map(|(c, cells)| {
                    let judged = cells.iter().filter(|x| x.judged);
                    let held = judged.clone().filter(|x| x.held).count();
                    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                    OutcomeBar {
                        column: c.clone(),
                        parts: vec![
                            (Outcome::Held, count(held)),
                            (Outcome::Violated, count(judged.count() - held)),
                        ],
                    }
                })
                .collect(),
        })
        .collect();
    figure(
        "outcomes",
        "Outcomes of the named crash cells, per crash point, outage and column",
        "cells",
        &report.columns,
        &rows,
    )
}

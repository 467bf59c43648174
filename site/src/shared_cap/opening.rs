//! The opening of a shared_cap run's report: what was tested, what was found (the cap, the
//! record, where and why columns went over), how to check it, the definitions, and the figure
//! of its cells per row and column. Every figure is the summary's or its campaign's, as
//! `verify` derived them.

use super::{CellView, RowView, SummaryRow};
use crate::format::dollars;
use crate::opening::{column_definitions, verify_command, words, Definition, Opening, GATE};
use crate::outcome_chart::{figure, Outcome, OutcomeBar, OutcomeRow};
use verify::figures::cap_nemesis::CapNemesisFigures;
use verify::shared_cap::{CAP_CENTS, PAYMENT_CENTS, REFUND_CENTS};

/// What the opening is built from.
pub(super) struct Inputs<'a> {
    /// Each column's summary row.
    pub summary: &'a [SummaryRow],
    /// The report's rows (their cells, for the figure).
    pub rows: &'a [RowView],
    /// The columns, in the matrix's order.
    pub columns: &'a [String],
    /// The campaign's figures, when the run has one.
    pub campaign: Option<&'a CapNemesisFigures>,
    /// The service and the decider, in words.
    pub backend: &'a str,
    /// How many hosts ran the workers, when more than one.
    pub hosts: Option<u32>,
    /// The results file's name under `data/`.
    pub json_name: &'a str,
}

/// The opening of a shared_cap run.
pub(super) fn opening(i: &Inputs<'_>) -> Opening {
    let mut found = vec![cap(i.summary, i.campaign)];
    found.push(record(i.summary));
    if let Some(over) = over(i.summary) {
        found.push(over);
    }
    Opening {
        tested: tested(i),
        found,
        data_file: i.json_name.to_owned(),
        check: verify_command(i.json_name),
        definitions: definitions(i.columns),
        on_front: 2,
        figure: Some(cells_figure(i.columns, i.rows)),
    }
}

fn tested(i: &Inputs<'_>) -> String {
    let hosts = match i.hosts {
        Some(n) if n > 1 => format!(", the two bots on {n} hosts"),
        _ => String::new(),
    };
    let mut out = format!(
        "Two support bots each decide a {} refund on the same {} payment, under a policy \
         capping refunds at {} per order that the service does not enforce{hosts}. Worker a is \
         SIGKILLed right before or right after its refund request, with the bots one after the \
         other or at once; columns: {}. Sent to {}.",
        dollars(REFUND_CENTS),
        dollars(PAYMENT_CENTS),
        dollars(CAP_CENTS),
        words(i.columns),
        i.backend,
    );
    if let Some(k) = i.campaign {
        out.push_str(&format!(
            " Then {} randomized fault trials of {} kinds: kills of either bot, of both, of a \
             restart.",
            k.trials(),
            k.nemeses()
        ));
    }
    out
}

/// The verdict on the cap: who held it wherever the kill landed, and the gate among them.
fn cap(summary: &[SummaryRow], campaign: Option<&CapNemesisFigures>) -> String {
    // Clean: the cap held wherever the kill landed, and in every trial of the campaign.
    let campaign_held = |column: &str| {
        campaign.is_none_or(|k| {
            k.columns()
                .iter()
                .filter(|c| c.column() == column)
                .all(|c| c.held() == c.judged())
        })
    };
    let clean = |r: &SummaryRow| {
        r.held_landed == r.landed && r.s.over_cap == 0 && campaign_held(&r.s.column)
    };
    let held: Vec<&SummaryRow> = summary.iter().filter(|r| clean(r)).collect();
    let others: Vec<String> = held
        .iter()
        .filter(|r| r.s.column != GATE)
        .map(|r| r.s.column.clone())
        .collect();
    let gate_held = held.iter().any(|r| r.s.column == GATE);
    // What "held" was checked against: the cells, and the campaign's trials when there is one.
    let everywhere = if campaign.is_some() {
        "in every cell where the kill landed and in every randomized trial"
    } else {
        "in every cell where the kill landed"
    };
    let lead = match (gate_held, others.is_empty()) {
        (true, false) => format!(
            "On the cap Interlock ties {}: each held it {everywhere}",
            words(&others)
        ),
        (true, true) => format!("On the cap Interlock alone held it {everywhere}"),
        (false, _) => "On the cap Interlock did not hold it in every cell".to_owned(),
    };
    let per: Vec<String> = summary
        .iter()
        .map(|r| format!("{} {}/{}", r.s.column, r.held_landed, r.landed))
        .collect();
    let mut out = format!("{lead} (cap held: {}).", per.join(", "));
    if let Some(k) = campaign {
        let per: Vec<String> = k
            .columns()
            .iter()
            .map(|c| format!("{} {}/{}", c.column(), c.held(), c.judged()))
            .collect();
        let apart: Vec<String> = k
            .columns()
            .iter()
            .map(|c| format!("{} {}", c.column(), c.not_landed()))
            .collect();
        out.push_str(&format!(
            " Under the randomized faults the cap held in {}, over the trials whose drawn kills \
             all landed; a trial whose kill found its worker already finished ran without its \
             fault and is counted apart ({}).",
            per.join(", "),
            apart.join(", ")
        ));
    }
    out
}

/// The record: the tickets each column's record proves, and the answers that matched.
fn record(summary: &[SummaryRow]) -> String {
    let gate = summary.iter().find(|r| r.s.column == GATE);
    let lead = match gate {
        Some(g) if summary.iter().all(|r| r.s.proved <= g.s.proved) => {
            "On the record Interlock leads or ties every column"
        }
        Some(_) => "On the record Interlock does not lead",
        None => "On the record",
    };
    let proved: Vec<String> = summary
        .iter()
        .map(|r| format!("{} {}/{}", r.s.column, r.s.proved, r.s.tickets))
        .collect();
    let answers: Vec<String> = summary
        .iter()
        .map(|r| format!("{} {}/{}", r.s.column, r.s.answers_matched, r.judged))
        .collect();
    format!(
        "{lead}: tickets whose outcome the column's own record proves, {}; cells whose every \
         answer matched the service, {}. Interlock's record is a signed receipt anyone can check \
         offline.",
        proved.join(", "),
        answers.join(", ")
    )
}

/// Where columns went over the cap, and why, when any did.
fn over(summary: &[SummaryRow]) -> Option<String> {
    let over: Vec<String> = summary
        .iter()
        .filter(|r| r.s.over_cap > 0)
        .map(|r| format!("{} in {} cells", r.s.column, r.s.over_cap))
        .collect();
    (!over.is_empty()).then(|| {
        format!(
            "Refunds went over the cap: {}. A column that does not check the order's refunds, or \
             checks them without a lock both bots honour, lets both bots send when each checks \
             before the other's refund lands; the Verdict below says in which rows.",
            words(&over)
        )
    })
}

fn definitions(columns: &[String]) -> Vec<Definition> {
    let mut d = vec![Definition::new(
        "the invariant (the cap)",
        format!(
            "the order's refunds stay within the {} cap, exactly one {} refund is made, and each \
             ticket's answer matches what the service holds; judged from the refunds the service \
             holds.",
            dollars(CAP_CENTS),
            dollars(REFUND_CENTS)
        ),
    )];
    d.extend(column_definitions(columns));
    d.push(Definition::new(
        "where the kill landed / apart",
        "a cell counts when the kill of worker a landed at its crash point; when a ended before \
         it (the other bot won the lock or the budget), no fault landed and the cell is counted \
         apart.",
    ));
    d.push(Definition::new(
        "95% interval",
        "the Clopper–Pearson interval over a row's repeats: how far the rate could be from what \
         was seen, given so few repeats.",
    ));
    d
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Per row and column: the judged cells whose kill landed, held or over, and those apart.
fn cells_figure(columns: &[String], rows: &[RowView]) -> crate::outcome_chart::OutcomeFigure {
    let bars = |cells: &[Vec<CellView>]| -> Vec<OutcomeBar> {
        columns
            .iter()
            .zip(cells)
            .filter(|(_, cells)| !cells.is_empty())
            .map(|(c, cells)| {
                let judged: Vec<&CellView> =
                    cells.iter().filter(|x| x.harness_error.is_none()).collect();
                let landed: Vec<&&CellView> = judged.iter().filter(|x| x.a_killed).collect();
                let held = landed.iter().filter(|x| x.held).count();
                OutcomeBar {
                    column: c.clone(),
                    parts: vec![
                        (Outcome::Held, count(held)),
                        (Outcome::Violated, count(landed.len() - held)),
                        (Outcome::Apart, count(judged.len() - landed.len())),
                    ],
                }
            })
            .collect()
    };
    let rows: Vec<OutcomeRow> = rows
        .iter()
        .map(|r| OutcomeRow {
            fault: format!("{}, {}", r.crash, r.overlap),
            bars: bars(&r.cells),
        })
        .collect();
    figure(
        "outcomes",
        "Outcomes of the cells, per crash point of worker a, overlap and column",
        "cells",
        columns,
        &rows,
    )
}

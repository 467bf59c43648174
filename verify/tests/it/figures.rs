//! The figures `verify` derives for the published report, on small synthetic files with known
//! counts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use verify::figures::billing_credit::{check, CellAt, Row, CANDIDATES};
use verify::receipt::KeyCheck;
use verify::results::{Cell, ResultsFile};

fn synthetic() -> ResultsFile {
    synthetic::generate(&synthetic::Spec::default())
}

fn row(crash: &str, outage: &str) -> Row {
    Row {
        crash: crash.into(),
        outage: outage.into(),
    }
}

#[test]
fn a_clean_synthetic_file_has_every_cell_judged_and_no_differing_row() {
    let checked = check(&synthetic(), &KeyCheck::SelfAttested);
    assert!(checked.report.ok);
    let f = &checked.figures;
    assert_eq!(
        (f.judged(), f.harness_errors(), f.sigkilled(), f.repeats()),
        (18, 0, 18, 1)
    );
    assert_eq!((f.receipts(), f.receipts_verified()), (6, 6));
    assert_eq!(f.columns().len(), 3);
    let d = f.differ("hand_check", "interlock").unwrap();
    assert_eq!((d.count(), d.rows().len()), (0, 0));
    assert!(f.differ("hand_check", "nope").is_none());
    assert!(f.differ("interlock", "interlock").is_none());
    assert_eq!(f.row_columns().len(), 18);
    assert!(f.row_columns().iter().all(|rc| rc.cells == 1));
    assert_eq!(f.candidate_totals().len(), CANDIDATES.len());
    assert!(f.candidate_totals().iter().all(|t| t.rows == 6));
    assert_eq!(f.cells(), 18);
}

#[test]
fn replayed_decisions_and_each_rows_wants_are_counted_over_judged_cells() {
    let mut file = synthetic();
    let replayed = file
        .cells
        .iter()
        .filter(|c| {
            c.decision
                .as_ref()
                .is_some_and(|d| d.replayed_from.is_some())
        })
        .count() as u32;
    let f = check(&file, &KeyCheck::SelfAttested).figures;
    assert_eq!(f.replayed(), replayed);
    assert_eq!(f.row_wants().len(), file.rows.len());
    for (r, wants) in file.rows.iter().zip(f.row_wants()) {
        let mine: std::collections::BTreeSet<u32> = file
            .cells
            .iter()
            .filter(|c| c.crash == r.crash && c.outage == r.outage && c.judged())
            .map(|c| c.want.count)
            .collect();
        assert_eq!(wants, &mine);
    }
    // A row whose every cell is a harness error wants nothing the page can name.
    let (crash, outage) = (file.rows[0].crash.clone(), file.rows[0].outage.clone());
    for c in file
        .cells
        .iter_mut()
        .filter(|c| c.crash == crash && c.outage == outage)
    {
        c.outcome = verify::scenarios::billing_credit::HARNESS_ERROR.into();
    }
    let f = check(&file, &KeyCheck::SelfAttested).figures;
    assert!(f.row_wants()[0].is_empty());
}

#[test]
fn a_harness_error_is_not_judged_and_a_broken_invariant_names_its_row() {
    let mut file = synthetic();
    let c = &mut file.cells[0];
    c.outcome = verify::scenarios::billing_credit::HARNESS_ERROR.into();
    c.harness_error = Some("boom".into());
    c.worker_exit_signal = None;
    let (crash, outage, column) = (c.crash.clone(), c.outage.clone(), c.column.clone());
    let other = file
        .cells
        .iter_mut()
        .find(|c| c.column == "hand_check" && c.crash == "after_send" && c.outage == "renewal")
        .unwrap();
    other.invariant_held = false;
    other.timings = Some(verify::results::Timings {
        crash_to_settled_ms: 1,
        restart_to_settled_ms: 2,
        outage_ms: 3,
    });
    let checked = check(&file, &KeyCheck::SelfAttested);
    assert!(!checked.report.ok, "the file was changed after signing");
    let f = &checked.figures;
    assert_eq!((f.judged(), f.harness_errors(), f.sigkilled()), (17, 1, 17));
    let hand = &f.columns()["hand_check"];
    assert_eq!(hand.violated_rows(), &[row("after_send", "renewal")]);
    assert_eq!(hand.min_crash_ms(), Some(1));
    assert_eq!(hand.min_restart_ms(), Some(2));
    let d = f.differ("hand_check", "interlock").unwrap();
    assert_eq!(d.count(), 1);
    assert_eq!(
        d.cells(),
        &[CellAt {
            row: row("after_send", "renewal"),
            repeat: 0
        }]
    );
    assert!(!f
        .row_columns()
        .iter()
        .any(|rc| rc.row == row(&crash, &outage) && rc.column == column));
}

#[test]
fn a_column_counts_its_outcomes_and_sends() {
    let file = synthetic();
    let checked = check(&file, &KeyCheck::SelfAttested);
    for (col, figures) in checked.figures.columns() {
        let cells: Vec<&Cell> = file.cells.iter().filter(|c| &c.column == col).collect();
        let tallied: u32 = figures.outcomes().values().sum();
        assert_eq!(tallied as usize, cells.len(), "{col}");
        let sent = cells
            .iter()
            .filter(|c| verify::scenarios::billing_credit::status_says_sent(&c.outcome))
            .count();
        assert_eq!(figures.sent() as usize, sent, "{col}");
        let violated = cells.iter().filter(|c| !c.invariant_held).count();
        assert_eq!(figures.violated() as usize, violated, "{col}");
        assert_eq!(figures.violated_rows().is_empty(), violated == 0, "{col}");
    }
}

#[test]
fn a_premise_candidate_is_right_where_refusing_at_restart_matches_wanting_no_credit() {
    let mut file = synthetic();
    let cell = file
        .cells
        .iter_mut()
        .find(|c| c.crash == "after_send" && c.outage == "renewal")
        .unwrap();
    cell.observations.crash.as_mut().unwrap().customer_balance = -1000;
    let checked = check(&file, &KeyCheck::SelfAttested);
    let rows = checked.figures.candidates();
    let after = rows
        .iter()
        .find(|r| r.row == row("after_send", "renewal"))
        .unwrap();
    let balance = &after.cells[0];
    assert_eq!(
        (
            balance.refuses_at_crash,
            balance.refuses_at_restart,
            balance.cells
        ),
        (1, 0, 3)
    );
    assert!(balance.right);
    assert!(balance.values.contains(&(0, Some(-1000), 0)));
    let billing = rows
        .iter()
        .find(|r| r.row == row("before_send", "billing_credit"))
        .unwrap();
    assert_eq!(billing.wants.iter().copied().collect::<Vec<_>>(), vec![0]);
    assert_eq!(
        (billing.cells[2].refuses_at_restart, billing.cells[2].right),
        (3, true)
    );
    let totals = checked.figures.candidate_totals();
    for t in totals {
        let right = rows
            .iter()
            .filter(|r| r.cells[CANDIDATES.iter().position(|n| *n == t.name).unwrap()].right)
            .count();
        assert_eq!((t.right as usize, t.rows as usize), (right, rows.len()));
        assert_eq!(t.wrong_rows.len(), rows.len() - right);
    }
}

#[test]
fn a_nemesis_campaign_counts_each_columns_trials_within_and_beyond_its_assumptions() {
    let (file, key) = common::nemesis_file();
    let checked = verify::figures::nemesis::check(&file, &KeyCheck::Pinned(key.verifying_key()));
    assert!(checked.report.findings.is_empty());
    let f = &checked.figures;
    assert_eq!((f.trials(), f.nemeses(), f.harness_errors()), (18, 1, 0));
    assert_eq!(f.columns().len(), 3);
    for (column, c) in f.columns() {
        let judged: Vec<_> = file
            .trials
            .iter()
            .filter(|t| &t.column == column && t.judged())
            .collect();
        let within = judged.iter().filter(|t| t.assumption.is_none()).count() as u32;
        assert_eq!(
            (c.within(), c.beyond()),
            (within, judged.len() as u32 - within)
        );
        let violations = judged.iter().filter(|t| t.violation).count() as u32;
        assert_eq!(c.violations_within() + c.violations_beyond(), violations);
        let [n] = c.nemeses() else {
            panic!("one nemesis")
        };
        assert_eq!(n.nemesis, common::NEMESIS);
        assert_eq!(
            (n.judged, n.within, n.violations),
            (judged.len() as u32, within, violations)
        );
        assert_eq!(c.min_within(), within);
        assert_eq!(c.wholly_beyond().is_empty(), within > 0);
        assert_eq!(
            c.violating(),
            if n.violations_within > 0 {
                vec![(common::NEMESIS, n.violations_within)]
            } else {
                vec![]
            }
        );
        let summary = file.summary.iter().find(|s| &s.column == column).unwrap();
        assert_eq!(c.nothing_decided(), summary.nothing_decided);
        assert_eq!(c.distinct_within(), summary.distinct_within);
        assert!(c.exposure().is_none(), "no exposure nemesis ran");
        assert_eq!((c.windows(), c.window_p50_us()), (0, None));
    }
}

#[test]
fn a_nemesis_trial_beyond_the_assumptions_moves_from_within_to_beyond() {
    let (mut file, _) = common::nemesis_file();
    let before = verify::figures::nemesis::check(&file, &KeyCheck::SelfAttested).figures;
    let t = file
        .trials
        .iter_mut()
        .find(|t| t.column == "interlock" && t.judged() && t.assumption.is_none())
        .unwrap();
    t.assumption = Some("world".into());
    t.violation = true;
    let after = verify::figures::nemesis::check(&file, &KeyCheck::SelfAttested).figures;
    let (b, a) = (
        &before.columns()["interlock"],
        &after.columns()["interlock"],
    );
    assert_eq!((a.within(), a.beyond()), (b.within() - 1, b.beyond() + 1));
    assert_eq!(a.violations_beyond(), b.violations_beyond() + 1);
    assert_eq!(a.nemeses()[0].violations, b.nemeses()[0].violations + 1);
}

fn cap_fixture<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn a_shared_cap_run_names_the_rows_each_column_went_over_the_cap_and_each_cells_refunds() {
    use verify::shared_cap::record::CapResults;
    let file: CapResults = cap_fixture("shared_cap.json");
    let checked = verify::figures::shared_cap::check(&file, &KeyCheck::SelfAttested);
    assert!(checked.report.ok, "{:?}", checked.report.findings);
    let f = &checked.figures;
    assert_eq!(f.cells() as usize, file.cells.len());
    assert_eq!(f.columns().len(), checked.report.summary.len());
    for c in f.columns() {
        let s = c.summary();
        assert_eq!(c.judged(), s.cells - s.harness_errors);
        let mut over: Vec<(String, String)> = Vec::new();
        for cell in file.cells.iter().filter(|x| {
            x.column == s.column
                && x.judged()
                && x.truth.refunded_cents() > verify::shared_cap::CAP_CENTS
        }) {
            let row = (cell.crash_point.clone(), cell.overlap.clone());
            if !over.contains(&row) {
                over.push(row);
            }
        }
        let named: Vec<(String, String)> = c
            .over_rows()
            .iter()
            .map(|r| (r.crash_point.clone(), r.overlap.clone()))
            .collect();
        assert_eq!(named, over, "{}", s.column);
    }
    for (i, cell) in file.cells.iter().enumerate() {
        let counted = cell.truth.refunds.iter().filter(|r| r.counts()).count();
        assert_eq!(f.refunds(i), Some(counted as u32));
    }
    assert_eq!(f.refunds(file.cells.len()), None);
}

#[test]
fn a_shared_cap_run_counts_only_cells_whose_kill_landed_and_gives_its_weakest_rows_interval() {
    use verify::shared_cap::record::CapResults;
    let mut file: CapResults = cap_fixture("shared_cap.json");
    let before = verify::figures::shared_cap::check(&file, &KeyCheck::SelfAttested).figures;
    // Make one judged cell of interlock a cell whose kill did not land: it leaves the landed
    // count and its row's count, held or not.
    let i = file
        .cells
        .iter()
        .position(|c| c.column == "interlock" && c.judged() && c.a_killed())
        .unwrap();
    for t in &mut file.cells[i].tickets {
        t.killed_at = None;
    }
    let after = verify::figures::shared_cap::check(&file, &KeyCheck::SelfAttested).figures;
    let col = |f: &verify::figures::shared_cap::CapFigures| {
        f.columns()
            .iter()
            .find(|c| c.summary().column == "interlock")
            .cloned()
            .unwrap()
    };
    let (b, a) = (col(&before), col(&after));
    assert_eq!(a.landed(), b.landed() - 1);
    assert_eq!(
        a.held_landed(),
        b.held_landed() - u32::from(file.cells[i].invariant_held)
    );
    assert_eq!(a.judged(), b.judged());
    for c in before.columns() {
        let w = c.weakest_row().unwrap();
        let rate = |held: u32, landed: u32| f64::from(held) / f64::from(landed);
        let (lower, upper) = w.interval95_ppm;
        assert!(lower <= upper && upper <= 1_000_000);
        let point = (rate(w.held, w.landed) * 1e6) as u32;
        assert!(
            lower <= point && point <= upper,
            "{}: {w:?}",
            c.summary().column
        );
        assert!(w.landed <= c.landed() && w.held <= c.held_landed());
        assert!(rate(w.held, w.landed) <= rate(c.held_landed(), c.landed()) + 1e-12);
    }
}

#[test]
fn a_shared_cap_campaign_counts_every_kill_once_and_names_the_trials_that_broke_the_cap() {
    use verify::shared_cap::nemesis::record::{CapNemesisFile, CapTrial};
    use verify::shared_cap::nemesis::summary::all_kills_landed;
    let file: CapNemesisFile = cap_fixture("shared_cap_nemesis.json");
    let checked = verify::figures::cap_nemesis::check(&file, &KeyCheck::SelfAttested);
    assert!(checked.report.ok, "{:?}", checked.report.findings);
    let f = &checked.figures;
    assert_eq!(f.trials() as usize, file.trials.len());
    assert_eq!(f.nemeses() as usize, file.plan.nemeses.len());
    let not_landed = file
        .trials
        .iter()
        .filter(|t| t.cell.judged() && !all_kills_landed(t))
        .count();
    assert_eq!(f.not_landed() as usize, not_landed);
    let (missed, landed): (Vec<_>, Vec<_>) = f.kills().iter().partition(|k| k.step.is_none());
    let total = |ks: &[&verify::figures::cap_nemesis::KillCount]| {
        ks.iter().map(|k| k.a + k.b + k.restart).sum::<u32>()
    };
    let landed_in_trials: u32 = file.trials.iter().map(CapTrial::kills_landed).sum();
    assert_eq!(total(&landed), landed_in_trials);
    let drawn: u32 = file
        .trials
        .iter()
        .map(|t| {
            [&t.draw.kill_a, &t.draw.kill_b, &t.draw.kill_restart]
                .iter()
                .filter(|k| k.is_some())
                .count() as u32
        })
        .sum();
    assert_eq!(total(&missed), drawn - landed_in_trials);
    let broke: Vec<usize> = file
        .trials
        .iter()
        .enumerate()
        .filter(|(_, t)| t.cell.judged() && !t.cell.invariant_held)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(f.broke(), broke.as_slice());
    for c in f.columns() {
        let mine: Vec<_> = checked
            .report
            .summary
            .iter()
            .filter(|s| s.column == c.column())
            .collect();
        // The figures count only the trials in which every drawn kill landed (issue 35); the
        // report's summary counts every judged trial.
        let judged: u32 = mine.iter().map(|s| s.judged).sum();
        let landed: Vec<_> = file
            .trials
            .iter()
            .filter(|t| t.cell.column == c.column() && t.cell.judged() && all_kills_landed(t))
            .collect();
        let held = landed.iter().filter(|t| t.cell.invariant_held).count() as u32;
        let counted = landed.len() as u32;
        assert!(counted <= judged);
        assert_eq!(
            (c.judged(), c.held(), c.violations()),
            (counted, held, counted - held)
        );
        assert_eq!(c.all_kills_landed(), counted);
        assert_eq!(c.rows().len(), mine.len());
        for r in c.rows() {
            let s = r.summary();
            assert_eq!(r.not_held(), s.judged - s.held);
            assert_eq!(
                r.not_held_ppm(),
                (s.judged > 0).then(|| u64::from(r.not_held()) * 1_000_000 / u64::from(s.judged))
            );
        }
    }
    let by_nemesis: usize = f.by_nemesis().iter().map(|n| n.rows.len()).sum();
    assert_eq!(by_nemesis, checked.report.summary.len());
}

/// Issue 35 (4): a judged trial whose fault never fired (here a recorded fault that hit
/// nothing) is counted apart: in no count or rate the pages show, listed as what it is.
#[test]
fn a_judged_trial_whose_fault_never_fired_is_counted_apart() {
    use verify::figures::nemesis::{listed, Listed};
    let (mut file, _) = common::nemesis_file();
    let before = verify::figures::nemesis::check(&file, &KeyCheck::SelfAttested).figures;
    let i = file
        .trials
        .iter()
        .position(|t| t.column == "interlock" && t.counted() && t.assumption.is_none())
        .expect("a counted interlock trial within its assumptions");
    file.trials[i].faults.push(verify::nemesis::Fault {
        kind: "torn_tail".into(),
        detail: "no record to tear".into(),
        fired: 0,
        held_ms: None,
    });
    let t = &file.trials[i];
    assert!(t.judged() && !t.fault_fired() && !t.counted());
    assert_eq!(listed(t), Some(Listed::NotFired));
    let (nemesis, column) = (t.nemesis.clone(), t.column.clone());
    let after = verify::figures::nemesis::check(&file, &KeyCheck::SelfAttested).figures;
    let (b, a) = (
        &before.columns()["interlock"],
        &after.columns()["interlock"],
    );
    assert_eq!(a.not_fired(), b.not_fired() + 1);
    assert_eq!(a.within(), b.within() - 1);
    assert_eq!(after.judged(), before.judged() - 1);
    assert_eq!(after.not_fired(), before.not_fired() + 1);
    let row = |f: &verify::figures::nemesis::NemesisFigures| {
        f.summary_rows()
            .iter()
            .find(|r| r.shown.nemesis == nemesis && r.shown.column == column)
            .cloned()
            .unwrap()
    };
    let (rb, ra) = (row(&before), row(&after));
    assert_eq!(ra.shown.judged, rb.shown.judged - 1);
    assert_eq!(ra.not_fired, rb.not_fired + 1);
    assert!(ra.listed.contains(&(i, Listed::NotFired)));
    // The file's own summary still counts it: verify checks that one against every judged trial.
    let s = file
        .summary
        .iter()
        .find(|s| s.nemesis == nemesis && s.column == column)
        .unwrap();
    assert_eq!(s.judged, rb.shown.judged);
}

/// Issue 35 (3): a trial whose credits fall short of its want (the approved credit never issued)
/// was a plain pass; it is an under-credit, listed and counted in every figure, within or beyond.
#[test]
fn a_nemesis_trial_that_credits_less_than_its_want_is_an_under_credit_everywhere() {
    use verify::figures::nemesis::{listed, Listed};
    let (mut file, _) = common::nemesis_file();
    let before = verify::figures::nemesis::check(&file, &KeyCheck::SelfAttested).figures;
    let i = file
        .trials
        .iter()
        .position(|t| {
            t.column == "interlock"
                && listed(t).is_none()
                && t.assumption.is_none()
                && t.want.count == 1
                && t.ground_truth.case_credit_count == 1
        })
        .expect("a plain pass that credited its want");
    let t = &mut file.trials[i];
    assert!(!t.under_credit());
    // The credit that landed is removed: the approved credit was never issued.
    t.ground_truth.case_credits.clear();
    t.ground_truth.case_credit_count = 0;
    t.ground_truth.case_credit_cents = 0;
    t.invariant_held = false;
    assert!(t.under_credit());
    assert_eq!(listed(t), Some(Listed::UnderCredit));
    let (nemesis, column) = (t.nemesis.clone(), t.column.clone());
    let checked = verify::figures::nemesis::check(&file, &KeyCheck::SelfAttested);
    assert_eq!(checked.report.under_credits, Some(1));
    let after = checked.figures;
    let (b, a) = (
        &before.columns()["interlock"],
        &after.columns()["interlock"],
    );
    assert_eq!(
        (a.under_credits_within(), a.under_credits_beyond()),
        (b.under_credits_within() + 1, b.under_credits_beyond())
    );
    assert_eq!(a.violations_within(), b.violations_within());
    assert_eq!(a.under_crediting(), vec![(nemesis.as_str(), 1)]);
    let row = file
        .summary
        .iter()
        .zip(after.summary_rows())
        .find(|(s, _)| s.nemesis == nemesis && s.column == column)
        .map(|(_, r)| r)
        .unwrap();
    assert_eq!(row.under_credits, 1);
    assert!(row.listed.contains(&(i, Listed::UnderCredit)));
    // A trial with nothing decided is never an under-credit, whatever its want.
    let t = &mut file.trials[i];
    t.outcome = "NOT_DECIDED".into();
    assert!(!t.under_credit());
}

#[test]
fn a_nemesis_trial_that_is_not_a_plain_pass_is_listed_under_its_row_with_what_it_is() {
    use verify::figures::nemesis::{listed, Listed};
    let (mut file, _) = common::nemesis_file();
    let i = file
        .trials
        .iter()
        .position(|t| t.column == "interlock" && listed(t).is_none())
        .unwrap();
    file.trials[i].unresolved = true;
    let f = verify::figures::nemesis::check(&file, &KeyCheck::SelfAttested).figures;
    assert!(f.listed().contains(&(i, Listed::Unresolved)));
    let every: Vec<(usize, Listed)> = file
        .trials
        .iter()
        .enumerate()
        .filter_map(|(k, t)| listed(t).map(|l| (k, l)))
        .collect();
    assert_eq!(f.listed(), every.as_slice());
    assert_eq!(f.summary_rows().len(), file.summary.len());
    for (s, row) in file.summary.iter().zip(f.summary_rows()) {
        let mine: Vec<(usize, Listed)> = every
            .iter()
            .copied()
            .filter(|(k, _)| {
                file.trials[*k].nemesis == s.nemesis && file.trials[*k].column == s.column
            })
            .collect();
        assert_eq!(row.listed, mine);
        assert_eq!(
            row.within_rate_ppm,
            (s.within_assumptions > 0).then(
                || u64::from(s.violations_within) * 1_000_000 / u64::from(s.within_assumptions)
            )
        );
    }
    let judged = file.trials.iter().filter(|t| t.judged()).count() as u32;
    assert_eq!(f.judged(), judged);
    // A violation comes first, whatever else the trial is.
    file.trials[i].violation = true;
    assert_eq!(listed(&file.trials[i]), Some(Listed::Violation));
}

/// The referee of round four, finding 4: a trial that drew restart kills, all of which found
/// the restart finished (kill_recovery), ran without its fault even though its decide kill
/// landed; so did one whose decide kill never landed. Each kind of kill drawn must land once.
#[test]
fn a_trial_whose_drawn_restart_kills_never_landed_did_not_fire() {
    let (file, _) = common::nemesis_file();
    let mut t = file
        .trials
        .iter()
        .find(|t| t.counted())
        .cloned()
        .expect("a counted trial");
    let kill = |worker: &str, delivered: bool| verify::nemesis::Kill {
        worker: worker.into(),
        at_ms: 0,
        after: "decision_saved".into(),
        delivered,
        last_step: None,
    };
    t.faults.clear();
    t.kills = vec![kill("decide", true), kill("restart-1", false)];
    assert!(!t.fault_fired());
    t.kills.push(kill("restart-2", true));
    assert!(t.fault_fired());
    t.kills = vec![kill("decide", false), kill("restart-1", true)];
    assert!(!t.fault_fired());
    t.kills = vec![kill("decide", true)];
    assert!(t.fault_fired());
}

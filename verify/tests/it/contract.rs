//! The scenario contract's pipeline, driven by a toy scenario: each stage refuses what it
//! exists to refuse, and only a file that passes every stage becomes a `Verified`.

use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use verify::contract::{
    self, codes, Evidence, Exit, HarnessError, Report, Scenario, ScenarioFile, Ticket,
};
use verify::entry::ReceiptBundle;
use verify::receipt::{KeyCheck, ReceiptReport};
use verify::scenarios::billing_credit::billing_credit_effect_id;

/// A toy scenario: each cell asks one worker for one effect; the target records how many
/// times it landed (`landed`); the invariant is "exactly once".
struct Coin;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Params {
    columns: Vec<String>,
    repeats: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Planned {
    column: String,
    repeat: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct TicketRecord {
    status: String,
    effect_id: Option<String>,
    journal_kinds: Option<Vec<String>>,
    receipt: Option<ReceiptBundle>,
    killed_at: Option<String>,
    exit_signal: Option<i32>,
    exit_at: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Cell {
    planned: Planned,
    landed: u32,
    tickets: Vec<TicketRecord>,
    harness_error: Option<String>,
    worker_output: Option<String>,
    judgement: Option<Judgement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Judgement {
    held: bool,
}

type Summary = BTreeMap<String, [usize; 2]>;

impl Scenario for Coin {
    const NAME: &'static str = "coin";
    type Params = Params;
    type Planned = Planned;
    type Cell = Cell;
    type Judgement = Judgement;
    type Summary = Summary;

    fn plan(p: &Params, _at_most: usize) -> Result<Vec<Planned>, contract::PlanError> {
        if p.repeats == 0 {
            return Err(contract::PlanError::NoRepeats);
        }
        Ok(p.columns
            .iter()
            .flat_map(|c| {
                (0..p.repeats).map(|repeat| Planned {
                    column: c.clone(),
                    repeat,
                })
            })
            .collect())
    }
    fn planned(cell: &Cell) -> &Planned {
        &cell.planned
    }
    fn evidence(cell: &Cell) -> Evidence<'_> {
        let tickets = cell
            .tickets
            .iter()
            .enumerate()
            .map(|(j, t)| Ticket {
                path: format!("tickets[{j}]"),
                gated: cell.planned.column == "gated",
                status: &t.status,
                effect_id: t.effect_id.as_deref(),
                journal_kinds: t.journal_kinds.as_deref(),
                receipt: t.receipt.as_ref(),
                killed_at: t.killed_at.as_deref(),
                first_exit: Some(match t.exit_signal {
                    Some(signal) => Exit::Signal {
                        signal,
                        at: t.exit_at.as_deref(),
                    },
                    None => Exit::Code(0),
                }),
            })
            .collect();
        Evidence {
            tickets,
            harness_error: cell.harness_error.as_deref().map(|reason| HarnessError {
                reason,
                output: cell.worker_output.as_deref(),
            }),
        }
    }
    fn judge(
        cell: &Cell,
        _receipts: &[Option<&ReceiptReport>],
    ) -> Result<Judgement, Vec<verify::finding::Finding>> {
        Ok(Judgement {
            held: cell.landed == 1,
        })
    }
    fn stated(cell: &Cell) -> Option<&Judgement> {
        cell.judgement.as_ref()
    }
    fn summarize(judged: &[(&Cell, &Judgement)]) -> Summary {
        let mut out = Summary::new();
        for (cell, j) in judged {
            let row = out.entry(cell.planned.column.clone()).or_default();
            row[0] += 1;
            row[1] += usize::from(j.held);
        }
        out
    }
}

fn key() -> SigningKey {
    SigningKey::from_bytes(&[11; 32])
}

/// A sealed receipt of an effect committed on its first send.
fn receipt(key: &SigningKey, case: &str) -> ReceiptBundle {
    let eid = billing_credit_effect_id(case);
    let effect = json!({"customer": "cus_1", "amount": 500, "description": "goodwill"});
    let premises = json!({"subscription_status": "active"});
    let grant = json!({"id": "ap_1", "approver": "a", "max_cents": 1000, "revoked": Value::Null});
    let checks = json!({"lease_live": true, "grant": grant, "violations": []});
    let bodies = vec![
        json!({"kind": "PROPOSED", "agent": "coin-agent", "lease": "ap_1", "premises": premises,
               "effect": effect, "request_id": format!("goodwill-credit:{case}")}),
        json!({"kind": "AUTHORIZED", "lease": "ap_1"}),
        json!({"kind": "DISPATCHED", "effect": effect, "lease": "ap_1", "premises": premises,
               "checks": checks}),
        json!({"kind": "COMMITTED", "via": "send", "evidence": {"status": "ok"}}),
    ];
    let mut bundle = synthetic::seal_chain(key, &eid, 1_789_339_200_000, bodies);
    verify::binding::seal_bundle(&mut bundle, key, 1_789_339_201_000)
        .unwrap_or_else(|e| panic!("{e}"));
    bundle
}

fn ticket(key: &SigningKey, gated: bool, case: &str) -> TicketRecord {
    let receipt = gated.then(|| receipt(key, case));
    TicketRecord {
        status: "COMMITTED".into(),
        effect_id: receipt.as_ref().map(|r| r.effect_id.clone()),
        journal_kinds: receipt.as_ref().map(|_| {
            ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"]
                .map(String::from)
                .to_vec()
        }),
        receipt,
        killed_at: None,
        exit_signal: None,
        exit_at: None,
    }
}

/// A genuine signed file: two columns, two repeats, every cell held.
fn genuine(key: &SigningKey) -> ScenarioFile<Coin> {
    let params = Params {
        columns: vec!["plain".into(), "gated".into()],
        repeats: 2,
    };
    let cells: Vec<Cell> = Coin::plan(&params, usize::MAX)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, planned)| Cell {
            tickets: vec![ticket(key, planned.column == "gated", &format!("coin-{i}"))],
            planned,
            landed: 1,
            harness_error: None,
            worker_output: None,
            judgement: Some(Judgement { held: true }),
        })
        .collect();
    let judged: Vec<(&Cell, &Judgement)> = cells
        .iter()
        .filter_map(|c| c.judgement.as_ref().map(|j| (c, j)))
        .collect();
    let summary = Coin::summarize(&judged);
    let mut file = ScenarioFile {
        format: contract::FORMAT.into(),
        scenario: "coin".into(),
        generated_at: "2026-09-13T22:40:00Z".into(),
        environment: [("backend", "emulator"), ("decider", "policy")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        params,
        cells,
        summary,
        signature: contract::FileSignature {
            signer: String::new(),
            hash: String::new(),
            sig: String::new(),
        },
    };
    contract::sign(&mut file, key).unwrap_or_else(|e| panic!("{e}"));
    file
}

fn resigned(mut file: ScenarioFile<Coin>, key: &SigningKey) -> ScenarioFile<Coin> {
    contract::sign(&mut file, key).unwrap_or_else(|e| panic!("{e}"));
    file
}

fn codes_of(report: &Report<Coin>) -> Vec<String> {
    report.findings.iter().map(|f| f.code.clone()).collect()
}

fn refused(file: ScenarioFile<Coin>, key: &KeyCheck) -> Report<Coin> {
    match contract::check(file, key) {
        Ok(_) => panic!("the file was accepted"),
        Err(report) => *report,
    }
}

fn pinned() -> KeyCheck {
    KeyCheck::Pinned(key().verifying_key())
}

#[test]
fn a_genuine_file_is_verified_under_its_pinned_key_with_every_figure_derived() {
    let verified = contract::check(genuine(&key()), &pinned())
        .unwrap_or_else(|r| panic!("refused: {:?}", r.findings));
    assert_eq!(verified.report().judged, 4);
    assert_eq!(verified.report().receipts, 2);
    assert!(verified.report().signed);
    assert_eq!(verified.summary().get("gated"), Some(&[2, 2]));
    assert!(verified.receipts(1)[0].is_none());
    assert!(verified.receipts(2)[0].as_ref().is_some_and(|r| r.valid));
    assert_eq!(verified.judgement(0), Some(&Judgement { held: true }));
}

#[test]
fn a_file_resigned_by_another_key_is_refused_under_the_pin_and_read_no_further() {
    let report = refused(genuine(&SigningKey::from_bytes(&[12; 32])), &pinned());
    assert_eq!(codes_of(&report), [codes::Signature::NotPinnedKey.as_str()]);
    assert!(!report.read && report.summary.is_none());
}

#[test]
fn a_changed_cell_breaks_the_signature_under_either_key_policy() {
    for policy in [pinned(), KeyCheck::SelfAttested] {
        let mut file = genuine(&key());
        file.cells[0].landed = 2;
        let report = refused(file, &policy);
        assert_eq!(codes_of(&report), [codes::Signature::HashMismatch.as_str()]);
    }
}

#[test]
fn a_weak_key_an_uppercase_signer_or_a_cut_signature_is_refused_as_the_matrix_format_refuses_it() {
    // The identity point: a small-order key, for which any signature with R = identity and
    // s = 0 verifies under the loose rule.
    let mut weak = genuine(&key());
    weak.signature.signer = format!("01{}", "00".repeat(31));
    weak.signature.sig = format!("01{}{}", "00".repeat(31), "00".repeat(32));
    let report = refused(weak, &KeyCheck::SelfAttested);
    assert_eq!(codes_of(&report), [codes::Signature::KeyRefused.as_str()]);

    let mut upper = genuine(&key());
    upper.signature.signer = upper.signature.signer.to_uppercase();
    let report = refused(upper, &KeyCheck::SelfAttested);
    assert_eq!(codes_of(&report), [codes::Signature::Malformed.as_str()]);

    let mut cut = genuine(&key());
    cut.signature.sig.truncate(126);
    let report = refused(cut, &KeyCheck::SelfAttested);
    assert_eq!(codes_of(&report), [codes::Signature::Malformed.as_str()]);
}

#[test]
fn cells_that_are_not_the_plan_are_refused_even_when_signed() {
    let mut file = genuine(&key());
    file.cells.swap(0, 3);
    let report = refused(resigned(file, &key()), &pinned());
    assert!(codes_of(&report).contains(&codes::Plan::CellSetMismatch.as_str().to_owned()));

    let mut file = genuine(&key());
    file.cells.pop();
    let report = refused(resigned(file, &key()), &pinned());
    assert!(codes_of(&report).contains(&codes::Plan::CellSetMismatch.as_str().to_owned()));
}

#[test]
fn a_stated_judgement_or_summary_the_rules_do_not_derive_is_refused() {
    let mut file = genuine(&key());
    file.cells[1].landed = 2;
    let report = refused(resigned(file, &key()), &pinned());
    assert_eq!(
        codes_of(&report),
        [
            codes::Cells::JudgementMismatch.as_str(),
            codes::Summary::Mismatch.as_str()
        ]
    );

    let mut file = genuine(&key());
    file.summary.insert("plain".into(), [2, 1]);
    let report = refused(resigned(file, &key()), &pinned());
    assert_eq!(codes_of(&report), [codes::Summary::Mismatch.as_str()]);
}

#[test]
fn a_gated_ticket_without_its_receipt_or_with_another_effects_receipt_is_not_bound() {
    let mut file = genuine(&key());
    file.cells[2].tickets[0].receipt = None;
    let report = refused(resigned(file, &key()), &pinned());
    let found = codes_of(&report);
    assert!(found.contains(&codes::Cells::ReceiptMissing.as_str().to_owned()));
    assert!(found.contains(&codes::Cells::ReceiptNotBound.as_str().to_owned()));

    let mut file = genuine(&key());
    let other = file.cells[3].tickets[0].receipt.clone();
    file.cells[2].tickets[0].receipt = other;
    let report = refused(resigned(file, &key()), &pinned());
    assert_eq!(codes_of(&report), [codes::Cells::ReceiptNotBound.as_str()]);
}

#[test]
fn a_status_or_journal_kinds_the_receipt_does_not_show_are_not_bound() {
    let mut file = genuine(&key());
    file.cells[2].tickets[0].status = "REFUSED:lease".into();
    let report = refused(resigned(file, &key()), &pinned());
    assert_eq!(codes_of(&report), [codes::Cells::ReceiptNotBound.as_str()]);

    let mut file = genuine(&key());
    if let Some(kinds) = file.cells[2].tickets[0].journal_kinds.as_mut() {
        kinds.pop();
    }
    let report = refused(resigned(file, &key()), &pinned());
    assert_eq!(codes_of(&report), [codes::Cells::ReceiptNotBound.as_str()]);
}

#[test]
fn a_receipt_outside_the_gated_column_is_verified_and_refused_when_signed_by_another_key() {
    let mut file = genuine(&key());
    let stranger = SigningKey::from_bytes(&[13; 32]);
    file.cells[0].tickets[0] = ticket(&stranger, true, "coin-0");
    let report = refused(resigned(file, &key()), &pinned());
    assert!(codes_of(&report).contains(&codes::Cells::ReceiptInvalid.as_str().to_owned()));
    assert!(!report.signed);
}

#[test]
fn a_kill_is_bound_to_the_first_exit_by_sigkill_at_its_point() {
    let with_kill = |killed_at: Option<&str>, signal: Option<i32>, at: Option<&str>| {
        let mut file = genuine(&key());
        let t = &mut file.cells[0].tickets[0];
        t.killed_at = killed_at.map(String::from);
        t.exit_signal = signal;
        t.exit_at = at.map(String::from);
        contract::check(resigned(file, &key()), &pinned())
    };
    assert!(with_kill(Some("after_send"), Some(9), Some("after_send")).is_ok());
    for (killed_at, signal, at) in [
        (Some("after_send"), None, None),
        (Some("after_send"), Some(9), Some("before_send")),
        (Some("after_send"), Some(15), Some("after_send")),
        (None, Some(9), Some("after_send")),
    ] {
        let report = with_kill(killed_at, signal, at)
            .err()
            .unwrap_or_else(|| panic!("accepted {killed_at:?} {signal:?} {at:?}"));
        assert_eq!(codes_of(&report), [codes::Cells::KillNotBound.as_str()]);
    }
}

#[test]
fn a_harness_error_needs_its_reason_and_output_and_is_not_judged() {
    let with_error = |reason: &str, output: Option<&str>, judgement: Option<Judgement>| {
        let mut file = genuine(&key());
        file.cells[0].harness_error = Some(reason.into());
        file.cells[0].worker_output = output.map(String::from);
        file.cells[0].judgement = judgement;
        let judged: Vec<(&Cell, &Judgement)> = file
            .cells
            .iter()
            .filter(|c| c.harness_error.is_none())
            .filter_map(|c| c.judgement.as_ref().map(|j| (c, j)))
            .collect();
        file.summary = Coin::summarize(&judged);
        contract::check(resigned(file, &key()), &pinned())
    };
    let verified = with_error("worker exited 101", Some("panicked"), None)
        .unwrap_or_else(|r| panic!("refused: {:?}", r.findings));
    assert_eq!(verified.report().judged, 3);
    let report = with_error("", Some("panicked"), None).err();
    assert_eq!(
        report.map(|r| codes_of(&r)),
        Some(vec![codes::Cells::HarnessErrorWithoutEvidence
            .as_str()
            .to_owned()])
    );
    let report = with_error("worker exited 101", None, None).err();
    assert_eq!(
        report.map(|r| codes_of(&r)),
        Some(vec![codes::Cells::HarnessErrorWithoutEvidence
            .as_str()
            .to_owned()])
    );
    let report = with_error(
        "worker exited 101",
        Some("x"),
        Some(Judgement { held: true }),
    )
    .err();
    assert_eq!(
        report.map(|r| codes_of(&r)),
        Some(vec![codes::Cells::JudgementMismatch.as_str().to_owned()])
    );
}

#[test]
fn findings_are_capped_whatever_the_file_holds() {
    let mut file = genuine(&key());
    let template = file.cells[0].clone();
    file.params.repeats = 400;
    file.cells = (0..800)
        .map(|i| {
            let mut c = template.clone();
            c.planned.repeat = 7;
            c.planned.column = format!("c{i}");
            c
        })
        .collect();
    let report = refused(resigned(file, &key()), &pinned());
    assert_eq!(report.findings.len(), contract::MAX_FINDINGS + 1);
    assert_eq!(
        report.findings.last().map(|f| f.code.as_str()),
        Some("findings_left_out")
    );
}

#[test]
fn a_receipt_whose_effect_id_is_not_64_lowercase_hex_is_refused_before_it_is_checked() {
    let mut file = genuine(&key());
    if let Some(r) = file.cells[2].tickets[0].receipt.as_mut() {
        r.effect_id = "a".repeat(28_000);
        r.entries = vec![json!({"ts_ms": 1}); 100];
    }
    let report = refused(resigned(file, &key()), &pinned());
    let at_id: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.path.ends_with(".receipt.effect_id"))
        .map(|f| f.code.as_str())
        .collect();
    assert_eq!(at_id, [codes::Cells::ReceiptInvalid.as_str()]);
    // Nothing from the receipt's entries: it was not checked.
    assert!(report.findings.iter().all(|f| f.entry.is_none()));
    assert!(!report.signed);
}

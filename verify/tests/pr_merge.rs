//! `verify` on a pr_merge file: the scenario is found in the registry by the name its file
//! states and checked by the contract's pipeline, end to end through the command line.

use ed25519_dalek::SigningKey;
use serde_json::{json, Value};
use std::process::Command;
use verify::contract::{self, FileSignature, ScenarioFile};
use verify::scenarios::billing_credit::billing_credit_effect_id;
use verify::scenarios::pr_merge::{
    judge, plan, summarize, Branch, Cell, Params, PrMerge, RefUpdate, RepoTruth, TicketRecord,
    MERGED,
};

const H: &str = "1111111111111111111111111111111111111111";

fn key() -> SigningKey {
    SigningKey::from_bytes(&[21; 32])
}

/// A sealed receipt of a merge committed on its first send.
fn receipt(key: &SigningKey, case: &str) -> verify::entry::ReceiptBundle {
    let eid = billing_credit_effect_id(case);
    let effect = json!({"pull": 1, "sha": H, "merge_method": "merge"});
    let premises = json!({"head": H, "state": "open"});
    // A merge approval has no cap in cents: it covers the one pull request it names.
    let grant = json!({"id": "ap_1", "approver": "a", "pull": 1, "revoked": Value::Null});
    let bodies = vec![
        json!({"kind": "PROPOSED", "agent": "merge-agent", "lease": "ap_1", "premises": premises,
               "effect": effect, "request_id": format!("goodwill-credit:{case}")}),
        json!({"kind": "AUTHORIZED", "lease": "ap_1"}),
        json!({"kind": "DISPATCHED", "effect": effect, "lease": "ap_1", "premises": premises,
               "checks": {"lease_live": true, "grant": grant, "violations": []}}),
        json!({"kind": "COMMITTED", "via": "send", "evidence": {"merge_commit": "m"}}),
    ];
    let mut bundle = synthetic::seal_chain(key, &eid, 1_789_339_200_000, bodies);
    verify::binding::seal_bundle(&mut bundle, key, 1_789_339_201_000)
        .unwrap_or_else(|e| panic!("{e}"));
    bundle
}

/// A signed file of the default plan, judged by the scenario's own rules.
fn file(key: &SigningKey) -> ScenarioFile<PrMerge> {
    let params = Params::default();
    let cells: Vec<Cell> = plan(&params)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(index, planned)| {
            let other = planned.outage == "merged_by_other";
            let merge = RefUpdate {
                branch: Branch::Base,
                commit: format!("{index:040x}"),
                merged_head: Some(H.into()),
            };
            let gated = planned.column == "interlock";
            let receipt = gated.then(|| receipt(key, &format!("pr-{index}")));
            let mut cell = Cell {
                index,
                pull: 1,
                truth: RepoTruth {
                    reviewed_head: H.into(),
                    outage_merge: other.then(|| merge.commit.clone()),
                    updates: vec![merge],
                },
                tickets: vec![TicketRecord {
                    status: if gated { "COMMITTED" } else { MERGED }.into(),
                    effect_id: receipt.as_ref().map(|r| r.effect_id.clone()),
                    journal_kinds: receipt.as_ref().map(|_| {
                        ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"]
                            .map(String::from)
                            .to_vec()
                    }),
                    receipt,
                    killed_at: None,
                    first_exit: None,
                }],
                planned,
                harness_error: None,
                worker_output: None,
                judgement: None,
            };
            cell.judgement = judge(&cell).ok();
            cell
        })
        .collect();
    let pairs: Vec<_> = cells
        .iter()
        .filter_map(|c| c.judgement.as_ref().map(|j| (c, j)))
        .collect();
    let summary = summarize(&pairs);
    let mut file = ScenarioFile {
        format: contract::FORMAT.into(),
        scenario: "pr_merge".into(),
        generated_at: "2026-09-13T22:40:00Z".into(),
        environment: json!({"backend": "git-forge-emulator", "git_commit": "abc"}),
        params,
        cells,
        summary,
        signature: FileSignature {
            signer: String::new(),
            hash: String::new(),
            sig: String::new(),
        },
    };
    contract::sign(&mut file, key).unwrap_or_else(|e| panic!("{e}"));
    file
}

fn run(file: &ScenarioFile<PrMerge>, args: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("pr_merge.json");
    let text = serde_json::to_vec(file).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

#[test]
fn a_genuine_pr_merge_file_verifies_through_the_registry_under_its_pinned_key() {
    let key_hex = hex::encode(key().verifying_key().as_bytes());
    let (code, out) = run(&file(&key()), &["--key", &key_hex]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("pr_merge run, 32 cells (32 judged), 8 receipts"),
        "{out}"
    );
    assert!(out.contains("(pinned)"), "{out}");
}

#[test]
fn a_pr_merge_file_signed_by_another_key_fails_under_the_pin() {
    let other = hex::encode(SigningKey::from_bytes(&[22; 32]).verifying_key().as_bytes());
    let (code, out) = run(&file(&key()), &["--key", &other]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("signature_not_pinned_key"), "{out}");
    assert!(out.contains("not read further"), "{out}");
}

#[test]
fn a_judgement_the_rules_do_not_derive_fails_even_when_re_signed() {
    let mut f = file(&key());
    if let Some(j) = f.cells[0].judgement.as_mut() {
        j.invariant_held = !j.invariant_held;
    }
    contract::sign(&mut f, &key()).unwrap_or_else(|e| panic!("{e}"));
    let (code, out) = run(&f, &["--json"]);
    assert_eq!(code, Some(1), "{out}");
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(out.contains("cells_judgement_mismatch"), "{report}");
}

#[test]
fn a_scenario_the_registry_does_not_list_cannot_be_checked() {
    let mut f = file(&key());
    f.scenario = "nope".into();
    let (code, out) = run(&f, &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("\"nope\" is not one this verifier knows"),
        "{out}"
    );
    assert!(out.contains("known: pr_merge"), "{out}");
}

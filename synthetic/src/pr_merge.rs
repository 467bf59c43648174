//! A synthetic pr_merge file (`interlock-scenario/1`) for tests: the default plan, signed.

use crate::seal_chain;
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};
use verify::contract::{self, FileSignature, ScenarioFile};
use verify::scenarios::billing_credit::billing_credit_effect_id;
use verify::scenarios::pr_merge::{
    judge, plan, summarize, Branch, Cell, Params, Planned, PrMerge, RefUpdate, RepoTruth,
    TicketRecord, WorkerExit, MERGED,
};

/// The reviewed head of every case.
pub const H: &str = "1111111111111111111111111111111111111111";

/// A sealed receipt of a merge committed on its first send, for case `case`, naming the merge
/// commit `merge_commit`.
pub fn receipt(key: &SigningKey, case: &str, merge_commit: &str) -> verify::entry::ReceiptBundle {
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
        json!({"kind": "COMMITTED", "via": "send", "evidence": {"merge_commit": merge_commit}}),
    ];
    let mut bundle = seal_chain(key, &eid, 1_789_339_200_000, bodies);
    verify::binding::seal_bundle(&mut bundle, key, 1_789_339_201_000)
        .unwrap_or_else(|e| panic!("{e}"));
    bundle
}

/// Cell `index` of the plan: the case merged the reviewed head once, the planned outage shows
/// after that merge, the worker was killed at the planned crash point; judged by the rules.
fn cell(key: &SigningKey, index: usize, planned: Planned) -> Cell {
    let merge = RefUpdate {
        branch: Branch::Base,
        commit: format!("{index:040x}"),
        merged_head: Some(H.into()),
    };
    // The planned outage shows after the case's merge (so the one merge stays wanted).
    let outage = match planned.outage.as_str() {
        "unreviewed_push" => Some((Branch::Head, "2".repeat(40))),
        "base_moved" => Some((Branch::Base, "3".repeat(40))),
        _ => None,
    };
    let outage = outage.map(|(branch, commit)| RefUpdate {
        branch,
        commit,
        merged_head: None,
    });
    let gated = planned.column == "interlock";
    let receipt = gated.then(|| receipt(key, &format!("pr-{index}"), &merge.commit));
    let mut cell = Cell {
        pull: 1,
        truth: RepoTruth {
            reviewed_head: H.into(),
            // Under merged_by_other the case had merged first: nobody else could merge it after.
            outage_merge: None,
            updates: std::iter::once(merge).chain(outage).collect(),
        },
        ticket: TicketRecord {
            status: if gated { "COMMITTED" } else { MERGED }.into(),
            effect_id: receipt.as_ref().map(|r| r.effect_id.clone()),
            journal_kinds: receipt.as_ref().map(|_| {
                ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"]
                    .map(String::from)
                    .to_vec()
            }),
            receipt,
            killed_at: Some(planned.crash_point.clone()),
            first_exit: Some(WorkerExit {
                code: None,
                signal: Some(9),
                at: Some(planned.crash_point.clone()),
            }),
        },
        planned,
        harness_error: None,
        worker_output: None,
        judgement: None,
    };
    cell.judgement = judge(&cell).ok();
    cell
}

/// A signed pr_merge file of the default plan, judged by the scenario's own rules: every
/// case merged the reviewed head once (under `merged_by_other` before anyone else could), the
/// interlock column's tickets with their sealed receipts.
pub fn signed_file(key: &SigningKey) -> ScenarioFile<PrMerge> {
    let params = Params::default();
    let cells: Vec<Cell> = plan(&params, usize::MAX)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(index, planned)| cell(key, index, planned))
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
        environment: [("backend", "git-forge-emulator"), ("git_commit", "abc")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
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

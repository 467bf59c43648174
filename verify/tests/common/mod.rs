//! A consistent, signed nemesis file built in code (`interlock-nemesis/3`): one nemesis over the
//! three columns, each trial made from a cell of the synthetic results file (its case, decision,
//! outcome, ground truth and sealed receipt), every derived field computed with the rules
//! `verify` re-derives. Tests edit it and sign it again, as the results-file tests do.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use ed25519_dalek::SigningKey;
use verify::nemesis::rules::{
    assumption_broken, interleaving, judge, summarize, trial_id, trial_seed,
};
use verify::nemesis::{FileSignature, NemesisFile, NemesisPlan, Trial, NEMESIS_FORMAT};
use verify::results::Cell;

/// The nemesis every built trial runs under.
pub const NEMESIS: &str = "kill_random";

/// The run's seed.
pub const SEED: u64 = 42;

/// The genuine file and the key that signed it (the synthetic run's key).
pub fn nemesis_file() -> (NemesisFile, SigningKey) {
    nemesis_file_from(&synthetic::Spec::default())
}

/// The file built from the synthetic run of `spec`, every receipt and the file signed by its key
/// (another seed: the same file, as a forger who re-signs everything would write it).
pub fn nemesis_file_from(spec: &synthetic::Spec) -> (NemesisFile, SigningKey) {
    let key = synthetic::signing_key(spec);
    let results = synthetic::generate(spec);
    let columns: Vec<String> = spec.columns.clone();
    let per_column = results.cells.len() / columns.len();
    let plan = NemesisPlan {
        nemeses: vec![NEMESIS.to_owned()],
        columns: columns.clone(),
        trials: per_column as u32,
        seed: SEED,
        shard: None,
        merged: None,
    };
    let max_in_flight_ms = results.environment.claim.max_in_flight_ms;
    let mut trials = Vec::new();
    for column in &columns {
        let cells = results.cells.iter().filter(|c| &c.column == column);
        for (index, cell) in cells.enumerate() {
            trials.push(trial(column, index as u32, cell, max_in_flight_ms));
        }
    }
    let summary = summarize(&plan, &trials);
    let mut file = NemesisFile {
        format: NEMESIS_FORMAT.to_owned(),
        scenario: "billing_credit".to_owned(),
        generated: "2026-11-30T12:00:00Z".to_owned(),
        environment: results.environment.clone(),
        plan,
        trials,
        summary,
        signature: FileSignature::default(),
    };
    file.environment.git_commit = Some("0123456789abcdef0123456789abcdef01234567".to_owned());
    verify::nemesis::sign::sign(&mut file, &key).unwrap();
    (file, key)
}

/// Trial `index` of `column`, made from `cell`.
pub fn trial(column: &str, index: u32, cell: &Cell, max_in_flight_ms: u64) -> Trial {
    let seed = trial_seed(SEED, NEMESIS, column, index);
    let mut t = Trial {
        id: trial_id(NEMESIS, column, seed),
        nemesis: NEMESIS.to_owned(),
        column: column.to_owned(),
        index,
        seed,
        outage: cell.outage.clone(),
        faults: Vec::new(),
        kills: Vec::new(),
        assumption: None,
        case: cell.case.clone(),
        decision: cell.decision.clone(),
        outcome: cell.outcome.clone(),
        harness_error: None,
        ground_truth: cell.ground_truth.clone(),
        want: cell.want,
        invariant_held: false,
        violation: false,
        answer_matches: false,
        ambiguous: false,
        unresolved: false,
        timeline: Vec::new(),
        interleaving: interleaving(&[]),
        settle_ms: Some(100 + u64::from(index)),
        receipt: cell.receipt.clone(),
        journal_kinds: cell.journal_kinds.clone(),
        replay_at: None,
        restart_error: None,
    };
    t.assumption = assumption_broken(&t.faults, &t.timeline, max_in_flight_ms).map(str::to_owned);
    rejudge(&mut t);
    t
}

/// Restate a trial's judgement from its data, as an honest runner would.
pub fn rejudge(t: &mut Trial) {
    let j = judge(
        &t.ground_truth,
        &t.case.case_id,
        &t.case.incident,
        &t.case.approval,
        t.decision.as_ref().map(|d| d.amount),
        &t.outcome,
    );
    t.want = j.want;
    t.invariant_held = j.invariant_held;
    t.violation = j.violation;
    t.answer_matches = j.answer_matches;
    t.ambiguous = j.ambiguous;
    t.unresolved = j.unresolved;
}

/// Restate the summary and sign again with `key` (naming it as the run's signer): only the checks
/// under test can catch an edit.
pub fn resign(file: &mut NemesisFile, key: &SigningKey) {
    file.summary = summarize(&file.plan, &file.trials);
    file.environment.signer = verify::entry::lower_hex(key.verifying_key().as_bytes());
    verify::nemesis::sign::sign(file, key).unwrap();
}

/// The index of the first interlock trial whose receipt committed.
pub fn committed_trial(file: &NemesisFile) -> usize {
    file.trials
        .iter()
        .position(|t| {
            t.column == "interlock"
                && t.receipt.as_ref().is_some_and(|r| {
                    r.entries.last().and_then(|e| e.get("kind"))
                        == Some(&serde_json::json!("COMMITTED"))
                })
        })
        .unwrap()
}

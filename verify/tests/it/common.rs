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
        exposure: None,
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
        // The outage its seed draws (the checker draws every trial again), not the cell's.
        outage: drawn_outage(column, seed),
        faults: Vec::new(),
        kills: drawn_kills(column, seed),
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

/// The outage a trial of `column` with `seed` draws under [`NEMESIS`].
pub fn drawn_outage(column: &str, seed: u64) -> String {
    let nemesis = verify::nemesis::nemeses::Nemesis::from_name(NEMESIS).unwrap();
    verify::nemesis::draw::draw_for(nemesis, column, seed)
        .unwrap()
        .outage
        .to_owned()
}

/// The decide kill a trial of `column` with `seed` draws under [`NEMESIS`] (the checker draws
/// every trial again and wants the kill its seed draws recorded), delivered.
pub fn drawn_kills(column: &str, seed: u64) -> Vec<verify::nemesis::Kill> {
    let nemesis = verify::nemesis::nemeses::Nemesis::from_name(NEMESIS).unwrap();
    let d = verify::nemesis::draw::draw_for(nemesis, column, seed).unwrap();
    let (after, at_ms) = match (d.kill_at_step, d.decide_kill_ms) {
        (Some(step), _) => (step, 0),
        (None, Some(ms)) => (d.kill_after, ms),
        (None, None) => return Vec::new(),
    };
    vec![verify::nemesis::Kill {
        worker: "decide".to_owned(),
        at_ms,
        after: after.to_owned(),
        delivered: true,
        last_step: None,
    }]
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

/// The identity point's encoding (y = 1): a small-order "public key" under which a non-strict
/// verifier accepts [`identity_key_forgery`] for every message.
pub const IDENTITY_KEY: &str = "0100000000000000000000000000000000000000000000000000000000000000";

/// A signature, 128 lowercase hex characters, that plain (non-strict) ed25519 verification
/// accepts for ANY message under [`IDENTITY_KEY`]: `R = [s]B` and `s` in range, so
/// `[s]B - [k]·identity = R` whatever `k` is. A verifier that refuses weak keys refuses it.
pub fn identity_key_forgery() -> String {
    use sha2::Digest as _;
    // The group order l, little-endian.
    const L: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
        0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];
    let seed = [7u8; 32];
    let public = SigningKey::from_bytes(&seed).verifying_key().to_bytes();
    // The secret scalar a (public = [a]B), clamped as ed25519 derives it, then reduced mod l.
    let h = sha2::Sha512::digest(seed);
    let mut a: [u8; 32] = h[..32].try_into().unwrap();
    a[0] &= 248;
    a[31] &= 127;
    a[31] |= 64;
    let at_least_l = |x: &[u8; 32]| {
        for i in (0..32).rev() {
            if x[i] != L[i] {
                return x[i] > L[i];
            }
        }
        true
    };
    while at_least_l(&a) {
        let mut borrow = 0i16;
        for i in 0..32 {
            let d = i16::from(a[i]) - i16::from(L[i]) - borrow;
            borrow = i16::from(d < 0);
            a[i] = (d + 256 * borrow) as u8;
        }
    }
    let mut sig = public.to_vec();
    sig.extend_from_slice(&a);
    hex::encode(sig)
}

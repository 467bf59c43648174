//! A generator of synthetic, internally consistent results files (`verify::results::RESULTS_FORMAT`) with signed
//! receipts, for tests and benchmarks (never for publishing: the ground truth is invented, not
//! read from Stripe).
//!
//! The default matrix is the reference page's six rows × three columns; `repeats` scales it, and
//! `columns` can be narrowed to `interlock` alone to get many receipts cheaply (the 100k-receipt
//! benchmark). Every derived field is computed with the same rules `verify` re-derives, so a file
//! straight from [`generate`] verifies, and any single edit of it should not.

mod cell;
pub mod pr_merge;

use cell::cell;
use ed25519_dalek::SigningKey;
use rayon::prelude::*;
use serde_json::{json, Map, Value};
use verify::entry::{self, ReceiptBundle};
use verify::protocol::{RefusalCode, Via};
use verify::results::*;
use verify::scenarios::billing_credit::{billing_credit_effect_id, request_id};

/// The six (crash, outage) rows of the reference page, in display order (verify's plan).
pub use verify::scenarios::billing_credit::REFERENCE_ROWS as DEFAULT_ROWS;

/// The three columns, in display order (verify's plan).
pub use verify::scenarios::billing_credit::REFERENCE_COLUMNS as DEFAULT_COLUMNS;

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// Seed of the run's signing key (and the file's `environment.seed`).
    pub seed: u8,
    /// Repeats of every row × column.
    pub repeats: u32,
    /// Columns to include (a subset of [`DEFAULT_COLUMNS`]).
    pub columns: Vec<String>,
}

impl Default for Spec {
    fn default() -> Spec {
        Spec {
            seed: 7,
            repeats: 1,
            columns: DEFAULT_COLUMNS.iter().map(|c| (*c).to_owned()).collect(),
        }
    }
}

/// The signing key a spec's file is signed with.
pub fn signing_key(spec: &Spec) -> SigningKey {
    SigningKey::from_bytes(&[spec.seed; 32])
}

fn grant(case: &Case) -> Value {
    json!({
        "id": case.approval.id, "approver": case.approval.approver,
        "max_cents": case.approval.max_cents, "revoked": Value::Null
    })
}

/// Build one signed receipt for an interlock cell.
pub fn receipt(
    key: &SigningKey,
    case: &Case,
    customer: &str,
    decision: &Decision,
    resolution: &Resolution,
    t0_ms: i64,
) -> ReceiptBundle {
    let eid = billing_credit_effect_id(&case.case_id);
    let effect = json!({"customer": customer, "amount": decision.amount, "description": decision.description});
    let premises = json!({"subscription_status": "active", "incident_compensation": 0});
    let checks = json!({"lease_live": true, "grant": grant(case), "violations": []});
    let mut bodies: Vec<(&str, Value)> = vec![
        (
            "PROPOSED",
            json!({"agent": "billing-credit-agent", "lease": case.approval.id, "premises": premises,
                   "effect": effect, "request_id": request_id(&case.case_id)}),
        ),
        ("AUTHORIZED", json!({"lease": case.approval.id})),
        (
            "DISPATCHED",
            json!({"effect": effect, "lease": case.approval.id, "premises": premises, "checks": checks}),
        ),
    ];
    match resolution {
        Resolution::Committed { credit } => bodies.push((
            "COMMITTED",
            json!({"via": Via::RetryIdempotent.as_str(),
                   "evidence": {"status": "ok", "credit": credit, "amount": decision.amount},
                   "rechecked": {"lease_live": true, "grant": grant(case), "violations": []}}),
        )),
        Resolution::RefusedStale => bodies.push((
            "REFUSED",
            json!({"code": RefusalCode::StalePremiseAtRecovery.as_str(),
                   "reason": "The incident was compensated by someone else while the sender was dead.",
                   "resolves": true,
                   "rechecked": {"lease_live": true, "grant": grant(case),
                                 "violations": ["incident_compensation: was 0, now 1000"]}}),
        )),
    }
    let bodies = bodies
        .into_iter()
        .map(|(kind, mut body)| {
            if let Value::Object(m) = &mut body {
                m.insert("kind".into(), json!(kind));
            }
            body
        })
        .collect();
    let mut bundle = seal_chain(key, &eid, t0_ms, bodies);
    // Sealed a second after the last entry; the entries hold only integers, so this cannot fail.
    let sealed_at = u64::try_from(t0_ms).unwrap_or(0).saturating_add(1_000);
    let _ = verify::binding::seal_bundle(&mut bundle, key, sealed_at);
    bundle
}

/// Build a signed chain for `effect_id` from entry bodies (each an object with `kind` and the
/// kind's fields): adds `v`, `ts_ms` (from `t0_ms`, 7 ms apart), `effect_id` and `prev`, then
/// seals each entry with `key`. Bodies that are not objects are kept as they are.
pub fn seal_chain(
    key: &SigningKey,
    effect_id: &str,
    t0_ms: i64,
    bodies: Vec<Value>,
) -> ReceiptBundle {
    let mut entries = Vec::with_capacity(bodies.len());
    let mut prev = Value::Null;
    for (k, body) in bodies.into_iter().enumerate() {
        let Value::Object(fields) = body else {
            entries.push(body);
            continue;
        };
        let mut e = Map::new();
        e.insert("v".into(), json!(entry::ENTRY_VERSION));
        e.insert("ts_ms".into(), json!(t0_ms + 7 * k as i64));
        e.insert("effect_id".into(), json!(effect_id));
        e.extend(fields);
        e.insert("prev".into(), prev.clone());
        // Sealing fails only on floats or unsafe integers; such an entry is kept unsealed.
        if entry::seal(&mut e, key).is_ok() {
            prev = e.get("hash").cloned().unwrap_or(Value::Null);
        }
        entries.push(Value::Object(e));
    }
    ReceiptBundle::new(effect_id, entries)
}

/// How an interlock receipt ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Recovery resent under the same key; Stripe holds `credit`.
    Committed {
        /// The credit's balance transaction id.
        credit: String,
    },
    /// Recovery found the premise stale and nothing landed.
    RefusedStale,
}

/// Generate a consistent results file for `spec`.
pub fn generate(spec: &Spec) -> ResultsFile {
    let key = signing_key(spec);
    let mut plan = Vec::new();
    for repeat in 0..spec.repeats {
        for (crash, outage) in DEFAULT_ROWS {
            for column in &spec.columns {
                plan.push((crash, outage, column.as_str(), repeat));
            }
        }
    }
    let cells: Vec<Cell> = plan
        .par_iter()
        .enumerate()
        .map(|(n, (crash, outage, column, repeat))| cell(n, crash, outage, column, *repeat, &key))
        .collect();
    let summary = verify::scenarios::billing_credit::summarize(&spec.columns, &cells);
    let mut file = ResultsFile {
        format: RESULTS_FORMAT.into(),
        scenario: verify::scenarios::Scenario::BillingCredit.as_str().into(),
        generated: "2026-11-29T12:00:00Z".into(),
        environment: Environment {
            backend: "emulator".into(),
            stripe_api_version: "2025-03-31.basil".into(),
            decider: DeciderInfo {
                kind: "policy".into(),
                model: None,
            },
            runner_version: "synthetic".into(),
            git_commit: None,
            seed: u64::from(spec.seed),
            claim: ClaimSettings {
                max_in_flight_ms: 2000,
                claim_ttl_ms: 40_000,
                dedup_window_ms: 86_400_000,
                dedup_margin_ms: 3_600_000,
            },
            signer: hex::encode(key.verifying_key().as_bytes()),
            command: "synthetic::generate".into(),
            jobs: 1,
            journal: None,
            // Synthetic cases start their clocks at different instants.
            clock_start: None,
            outage_ms: None,
        },
        rows: DEFAULT_ROWS
            .iter()
            .map(|(c, o)| RowSpec {
                crash: (*c).into(),
                outage: (*o).into(),
            })
            .collect(),
        columns: spec.columns.clone(),
        repeats: spec.repeats,
        selected: Vec::new(),
        cells,
        summary,
        manifest: Default::default(),
    };
    // Every value above is an integer within 2^53 and holds no float, so the manifest can be
    // computed; if it ever could not, the file stays unsigned and fails verification.
    let _ = verify::manifest::sign(&mut file, &key);
    file
}

//! A generator of synthetic, internally consistent results files (`verify::results::RESULTS_FORMAT`) with signed
//! receipts, for tests and benchmarks (never for publishing: the ground truth is invented, not
//! read from Stripe).
//!
//! The default matrix is the reference page's six rows × three columns; `repeats` scales it, and
//! `columns` can be narrowed to `interlock` alone to get many receipts cheaply (the 100k-receipt
//! benchmark). Every derived field is computed with the same rules `verify` re-derives, so a file
//! straight from [`generate`] verifies, and any single edit of it should not.

pub mod pr_merge;

use ed25519_dalek::SigningKey;
use rayon::prelude::*;
use serde_json::{json, Map, Value};
use verify::entry::{self, ReceiptBundle};
use verify::protocol::{RefusalCode, Status, Via};
use verify::receipt::KeyCheck;
use verify::results::*;
use verify::scenarios::billing_credit;
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

const DAY: i64 = 86_400;
const APPROVED: i64 = 1000;

struct Ids {
    n: usize,
}

impl Ids {
    fn id(&self, prefix: &str, k: u32) -> String {
        format!("{prefix}_{:08x}{:016x}", k, self.n)
    }
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

fn txn(
    id: String,
    kind: &str,
    amount: i64,
    created: i64,
    case: Option<&str>,
    inc: Option<&str>,
) -> BalanceTxnTruth {
    BalanceTxnTruth {
        id,
        kind: kind.into(),
        amount,
        created,
        case_id: case.map(Into::into),
        incident: inc.map(Into::into),
        credit_note: None,
        invoice: None,
    }
}

fn cell(n: usize, crash: &str, outage: &str, column: &str, repeat: u32, key: &SigningKey) -> Cell {
    let ids = Ids { n };
    let case_id = format!("case-{:010x}", n);
    let incident = format!("INC-{:06x}", n % 0xff_ffff);
    let customer = ids.id("cus", 1);
    let case = Case {
        case_id: case_id.clone(),
        incident: incident.clone(),
        approval: Approval {
            id: format!("approval-{case_id}"),
            approver: "support-lead".into(),
            max_cents: APPROVED,
            revoked: None,
        },
        text: format!("Support case {case_id}: approve ONE goodwill credit of $10.00 for incident {incident}."),
    };
    let decision = Decision {
        amount: APPROVED,
        description: format!("Goodwill credit for incident {incident} ({case_id})"),
        decider: DeciderInfo {
            kind: "policy".into(),
            model: None,
        },
        premises: Premises {
            subscription_status: "active".into(),
            incident_compensation: 0,
        },
        replayed_from: None,
    };
    let t0 = 1_789_000_000 + (n as i64) * 1000;
    let renewal_at = t0 + 30 * DAY;
    let outage_at = renewal_at + 3 * 3600;
    let before = crash == "before_send";
    let compensated = outage == "billing_credit";

    // What each column did, from the story (DESIGN §4.3-4.5).
    let credited = match column {
        "no_check" => true,
        _ => !(before && compensated),
    };
    let credit_at = if before { outage_at + 60 } else { t0 + 10 };
    let credit_id = ids.id("cbtxn", 2);
    let mut txns = Vec::new();
    let mut notes = Vec::new();
    let renewal_invoice = ids.id("in", 3);
    let mut invoices = vec![InvoiceTruth {
        id: ids.id("in", 4),
        billing_reason: Some("subscription_create".into()),
        status: Some("paid".into()),
        total: 3000,
        starting_balance: 0,
        amount_due: 3000,
        created: t0,
    }];
    let mut starting_balance = 0;
    if credited && !before {
        txns.push(txn(
            credit_id.clone(),
            "adjustment",
            -APPROVED,
            credit_at,
            Some(&case_id),
            None,
        ));
        txns.push(txn(
            ids.id("cbtxn", 5),
            "applied_to_invoice",
            APPROVED,
            renewal_at + 3600,
            None,
            None,
        ));
        starting_balance = -APPROVED;
    }
    let total = if outage == "proration" { 2000 } else { 3000 };
    invoices.push(InvoiceTruth {
        id: renewal_invoice.clone(),
        billing_reason: Some("subscription_cycle".into()),
        status: Some("paid".into()),
        total,
        starting_balance,
        amount_due: total + starting_balance,
        created: renewal_at,
    });
    let mut note_record = (None, None);
    if outage == "billing_credit" || outage == "unrelated_credit" {
        let note_incident = if compensated {
            incident.clone()
        } else {
            format!("INC-{:06x}", (n + 1) % 0xff_ffff)
        };
        let note_id = ids.id("cn", 6);
        notes.push(CreditNoteTruth {
            id: note_id.clone(),
            amount: APPROVED,
            status: "issued".into(),
            incident: Some(note_incident.clone()),
            created: outage_at,
            invoice: renewal_invoice.clone(),
        });
        let mut t = txn(
            ids.id("cbtxn", 7),
            "credit_note",
            -APPROVED,
            outage_at,
            None,
            None,
        );
        t.credit_note = Some(note_id.clone());
        txns.push(t);
        note_record = (Some(note_id), Some(note_incident));
    }
    if credited && before {
        txns.push(txn(
            credit_id.clone(),
            "adjustment",
            -APPROVED,
            credit_at,
            Some(&case_id),
            None,
        ));
    }
    txns.sort_by_key(|t| std::cmp::Reverse(t.created));
    invoices.sort_by_key(|i| std::cmp::Reverse(i.created));
    let interlock = column == "interlock";
    let case_credits: Vec<CaseCredit> = txns
        .iter()
        .filter(|t| billing_credit::is_judged_credit(t))
        .map(|t| CaseCredit {
            id: t.id.clone(),
            amount: t.amount,
            created: t.created,
            effect_id: interlock.then(|| billing_credit_effect_id(&case_id)),
            dispatch: None,
        })
        .collect();
    let mut ground_truth = GroundTruth {
        case_credit_count: case_credits.len() as u32,
        case_credit_cents: case_credits.iter().map(|c| -c.amount).sum(),
        case_credits,
        customer_balance: txns.iter().map(|t| t.amount).sum(),
        compensation_by_others: 0,
        incident_compensation: 0,
        credit_notes: notes,
        balance_transactions: txns,
        invoices,
    };
    ground_truth.compensation_by_others = billing_credit::compensation_by_others(
        &ground_truth.credit_notes,
        &ground_truth.balance_transactions,
        &case_id,
        None,
    );
    ground_truth.incident_compensation = billing_credit::compensation_by_others(
        &ground_truth.credit_notes,
        &ground_truth.balance_transactions,
        &case_id,
        Some(&incident),
    );

    let outcome = match (column, before, compensated) {
        ("no_check", true, _) => billing_credit::CREDITED,
        ("no_check", false, _) => billing_credit::REPLAYED_BY_STRIPE,
        ("hand_check", true, true) => Status::Refused(RefusalCode::StalePremise).as_str(),
        ("hand_check", true, false) => billing_credit::CREDITED,
        ("hand_check", false, _) => billing_credit::FOUND_BY_LOOKUP,
        (_, true, true) => Status::Refused(RefusalCode::StalePremiseAtRecovery).as_str(),
        _ => Status::CommittedByRetry.as_str(),
    }
    .to_owned();
    let grant_json = json!({"id": case.approval.id, "approver": "support-lead", "max_cents": APPROVED, "revoked": null});
    let premises_json = json!({"subscription_status": "active", "incident_compensation": 0});
    let decide = json!({"ts": t0 + 5, "case_id": case_id, "phase": "decide", "step": "send",
                        "key": format!("goodwill-credit-{case_id}"), "approval": grant_json, "premises": premises_json});
    let hand_check_log = (column == "hand_check").then(|| match (before, compensated) {
        (true, true) => vec![
            decide.clone(),
            json!({"ts": outage_at + 50, "case_id": case_id, "phase": "restart", "step": "premises",
                   "refused": {"was": premises_json, "now": {"subscription_status": "active", "incident_compensation": APPROVED}}}),
        ],
        (true, false) => vec![
            decide.clone(),
            json!({"ts": outage_at + 50, "case_id": case_id, "phase": "restart", "step": "send",
                   "key": format!("goodwill-credit-{case_id}"), "approval": grant_json, "premises": premises_json}),
            json!({"ts": credit_at, "case_id": case_id, "phase": "restart", "step": "sent", "credit": credit_id, "replayed": false}),
        ],
        (false, _) => vec![
            decide.clone(),
            json!({"ts": outage_at + 50, "case_id": case_id, "phase": "restart", "step": "lookup", "found": credit_id}),
        ],
    });
    let (receipt_bundle, via, effect_id, journal_kinds) = if interlock {
        let resolution = if credited {
            Resolution::Committed {
                credit: credit_id.clone(),
            }
        } else {
            Resolution::RefusedStale
        };
        let r = receipt(key, &case, &customer, &decision, &resolution, t0 * 1000);
        let kinds = r
            .entries
            .iter()
            .map(|e| {
                e.get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned()
            })
            .collect();
        let via = credited.then(|| Via::RetryIdempotent.as_str().to_owned());
        let eid = r.effect_id.clone();
        // The gate's credit carries its DISPATCHED entry's hash (the anchor).
        let anchor = r
            .entries
            .iter()
            .find(|e| e.get("kind").and_then(Value::as_str) == Some("DISPATCHED"))
            .and_then(|e| e.get("hash")?.as_str().map(str::to_owned));
        for c in &mut ground_truth.case_credits {
            c.dispatch.clone_from(&anchor);
        }
        (Some(r), via, Some(eid), kinds)
    } else {
        (None, None, None, Vec::new())
    };
    let effect_id_json = json!(effect_id);
    let outage_ms = 900 + (n as u64 * 37) % 400;
    let restart_ms = 40 + (n as u64 * 13) % 90;
    let cand = |bal: i64, others: i64, inc: i64| Candidates {
        customer_balance: bal,
        compensation_by_others: others,
        incident_compensation: inc,
    };
    let mut cell = Cell {
        crash: crash.into(),
        outage: outage.into(),
        column: column.into(),
        repeat,
        outcome: outcome.clone(),
        via,
        worker_exit_signal: Some(9),
        worker_exit_code: None,
        harness_error: None,
        // Judged below, by the scenario's rules.
        want: Want { count: 0, cents: 0 },
        invariant_held: false,
        answer_matches: false,
        proof: false,
        record: billing_credit::proof::record_kind(column).into(),
        timings: Some(Timings {
            crash_to_settled_ms: outage_ms + restart_ms,
            restart_to_settled_ms: restart_ms,
            outage_ms,
        }),
        decision: Some(decision),
        observations: Observations {
            decision: Some(cand(0, 0, 0)),
            crash: Some(cand(0, 0, 0)),
            restart: Some(cand(
                0,
                ground_truth.compensation_by_others,
                ground_truth.incident_compensation,
            )),
        },
        outage_record: OutageRecord {
            renewal_invoice: Some(renewal_invoice),
            credit_note: note_record.0,
            credit_note_incident: note_record.1,
            downgraded_to_price: (outage == "proration").then(|| ids.id("price", 8)),
            clock_time: Some(outage_at),
        },
        stripe_ids: StripeIds {
            clock: ids.id("clock", 9),
            customer: customer.clone(),
            subscription: ids.id("sub", 10),
            invoices: ground_truth.invoices.iter().map(|i| i.id.clone()).collect(),
            credit_notes: ground_truth
                .credit_notes
                .iter()
                .map(|c| c.id.clone())
                .collect(),
            case_credits: ground_truth
                .case_credits
                .iter()
                .map(|c| c.id.clone())
                .collect(),
        },
        ground_truth,
        case,
        effect_id,
        journal_kinds,
        receipt: receipt_bundle,
        hand_check_log: hand_check_log.map(|log| log.iter().map(FreeForm::from_value).collect()),
        restart: Some(FreeForm::from_value(
            &json!({"status": outcome, "effect_id": effect_id_json}),
        )),
    };
    let report = cell.receipt.as_ref().map(|bundle| {
        verify::receipt::verify_bundle(bundle, &KeyCheck::Pinned(key.verifying_key()))
    });
    billing_credit::judge_in_place(&mut cell, report.as_ref());
    cell
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
        scenario: "billing_credit".into(),
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

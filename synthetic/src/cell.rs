//! One synthetic cell: the story of a (crash, outage, column) case told in the order the runner
//! would record it — the case and its decision, what Stripe holds afterwards, what the column
//! answered and logged, the interlock receipt — then judged by the scenario's own rules.

use crate::{receipt, Resolution};
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};
use verify::entry::ReceiptBundle;
use verify::protocol::{RefusalCode, Status, Via};
use verify::receipt::KeyCheck;
use verify::results::*;
use verify::scenarios::billing_credit;
use verify::scenarios::billing_credit::billing_credit_effect_id;
use verify::scenarios::billing_credit::outage;

const DAY: i64 = 86_400;
const APPROVED: i64 = 1000;

/// Stripe-shaped ids of cell `n`: `k` tells the objects of one cell apart.
struct Ids {
    n: usize,
}

impl Ids {
    fn id(&self, prefix: &str, k: u32) -> String {
        format!("{prefix}_{:08x}{:016x}", k, self.n)
    }
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

/// The facts of cell `n` every part of it is derived from (DESIGN §4.3-4.5).
struct Story<'a> {
    n: usize,
    ids: Ids,
    outage: &'a str,
    column: &'a str,
    case_id: String,
    incident: String,
    customer: String,
    t0: i64,
    renewal_at: i64,
    outage_at: i64,
    /// The worker was killed before it sent the credit.
    before: bool,
    /// The outage compensated this case's incident.
    compensated: bool,
    /// The column's credit landed in Stripe.
    credited: bool,
    credit_at: i64,
    credit_id: String,
    renewal_invoice: String,
}

/// The credit note an outage issued: its id and the incident it names.
type NoteRecord = (Option<String>, Option<String>);

/// What the interlock column recorded: its receipt, the COMMITTED entry's `via`, the effect id
/// and the journal's kinds (all empty in the other columns).
type Evidence = (
    Option<ReceiptBundle>,
    Option<String>,
    Option<String>,
    Vec<String>,
);

impl<'a> Story<'a> {
    fn new(n: usize, crash: &'a str, outage: &'a str, column: &'a str) -> Story<'a> {
        let ids = Ids { n };
        let t0 = 1_789_000_000 + (n as i64) * 1000;
        let renewal_at = t0 + 30 * DAY;
        let outage_at = renewal_at + 3 * 3600;
        let before = crash == "before_send";
        let compensated = outage == outage::BILLING_CREDIT;
        // What each column did, from the story.
        let credited = match column {
            "no_check" => true,
            _ => !(before && compensated),
        };
        Story {
            case_id: format!("case-{:010x}", n),
            incident: format!("INC-{:06x}", n % 0xff_ffff),
            customer: ids.id("cus", 1),
            credit_at: if before { outage_at + 60 } else { t0 + 10 },
            credit_id: ids.id("cbtxn", 2),
            renewal_invoice: ids.id("in", 3),
            n,
            ids,
            outage,
            column,
            t0,
            renewal_at,
            outage_at,
            before,
            compensated,
            credited,
        }
    }

    fn case(&self) -> Case {
        let (case_id, incident) = (&self.case_id, &self.incident);
        Case {
            case_id: case_id.clone(),
            incident: incident.clone(),
            approval: Approval {
                id: format!("approval-{case_id}"),
                approver: "support-lead".into(),
                max_cents: APPROVED,
                revoked: None,
            },
            text: format!("Support case {case_id}: approve ONE goodwill credit of $10.00 for incident {incident}."),
        }
    }

    fn decision(&self) -> Decision {
        Decision {
            amount: APPROVED,
            description: format!(
                "Goodwill credit for incident {} ({})",
                self.incident, self.case_id
            ),
            decider: DeciderInfo {
                kind: "policy".into(),
                model: None,
            },
            premises: Premises {
                subscription_status: "active".into(),
                incident_compensation: 0,
            },
            replayed_from: None,
        }
    }

    fn adjustment(&self) -> BalanceTxnTruth {
        txn(
            self.credit_id.clone(),
            "adjustment",
            -APPROVED,
            self.credit_at,
            Some(&self.case_id),
            None,
        )
    }

    /// The subscription's two invoices, newest first; the renewal starts from the case's credit
    /// when it landed before the renewal.
    fn invoices(&self, starting_balance: i64) -> Vec<InvoiceTruth> {
        let total = if self.outage == outage::PRORATION {
            2000
        } else {
            3000
        };
        let mut invoices = vec![
            InvoiceTruth {
                id: self.ids.id("in", 4),
                billing_reason: Some("subscription_create".into()),
                status: Some("paid".into()),
                total: 3000,
                starting_balance: 0,
                amount_due: 3000,
                created: self.t0,
            },
            InvoiceTruth {
                id: self.renewal_invoice.clone(),
                billing_reason: Some("subscription_cycle".into()),
                status: Some("paid".into()),
                total,
                starting_balance,
                amount_due: total + starting_balance,
                created: self.renewal_at,
            },
        ];
        invoices.sort_by_key(|i| std::cmp::Reverse(i.created));
        invoices
    }

    /// The credit note an outage of credits issued on the renewal invoice, with its balance
    /// transaction; none for the other outages.
    fn outage_note(&self) -> Option<(CreditNoteTruth, BalanceTxnTruth, NoteRecord)> {
        if self.outage != outage::BILLING_CREDIT && self.outage != outage::UNRELATED_CREDIT {
            return None;
        }
        let note_incident = if self.compensated {
            self.incident.clone()
        } else {
            format!("INC-{:06x}", (self.n + 1) % 0xff_ffff)
        };
        let note_id = self.ids.id("cn", 6);
        let note = CreditNoteTruth {
            id: note_id.clone(),
            amount: APPROVED,
            status: "issued".into(),
            incident: Some(note_incident.clone()),
            created: self.outage_at,
            invoice: self.renewal_invoice.clone(),
        };
        let id = self.ids.id("cbtxn", 7);
        let mut t = txn(id, "credit_note", -APPROVED, self.outage_at, None, None);
        t.credit_note = Some(note_id.clone());
        Some((note, t, (Some(note_id), Some(note_incident))))
    }

    /// What Stripe holds after the restart, and the outage's credit note.
    fn ground_truth(&self) -> (GroundTruth, NoteRecord) {
        let mut txns = Vec::new();
        let mut notes = Vec::new();
        let mut starting_balance = 0;
        if self.credited && !self.before {
            txns.push(self.adjustment());
            let applied = self.ids.id("cbtxn", 5);
            let at = self.renewal_at + 3600;
            txns.push(txn(applied, "applied_to_invoice", APPROVED, at, None, None));
            starting_balance = -APPROVED;
        }
        let mut note_record = (None, None);
        if let Some((note, t, record)) = self.outage_note() {
            notes.push(note);
            txns.push(t);
            note_record = record;
        }
        if self.credited && self.before {
            txns.push(self.adjustment());
        }
        txns.sort_by_key(|t| std::cmp::Reverse(t.created));
        let interlock = self.column == "interlock";
        let case_credits: Vec<CaseCredit> = txns
            .iter()
            .filter(|t| billing_credit::is_judged_credit(t))
            .map(|t| CaseCredit {
                id: t.id.clone(),
                amount: t.amount,
                created: t.created,
                effect_id: interlock.then(|| billing_credit_effect_id(&self.case_id)),
                dispatch: None,
            })
            .collect();
        let others = |incident: Option<&str>| {
            billing_credit::compensation_by_others(&notes, &txns, &self.case_id, incident)
        };
        let compensation_by_others = others(None);
        let incident_compensation = others(Some(&self.incident));
        let ground_truth = GroundTruth {
            case_credit_count: case_credits.len() as u32,
            case_credit_cents: case_credits.iter().map(|c| -c.amount).sum(),
            case_credits,
            customer_balance: txns.iter().map(|t| t.amount).sum(),
            compensation_by_others,
            incident_compensation,
            credit_notes: notes,
            balance_transactions: txns,
            invoices: self.invoices(starting_balance),
        };
        (ground_truth, note_record)
    }

    /// The column's final status, as the reference page prints it.
    fn outcome(&self) -> String {
        match (self.column, self.before, self.compensated) {
            ("no_check", true, _) => billing_credit::CREDITED,
            ("no_check", false, _) => billing_credit::REPLAYED_BY_STRIPE,
            ("hand_check", true, true) => Status::Refused(RefusalCode::StalePremise).as_str(),
            ("hand_check", true, false) => billing_credit::CREDITED,
            ("hand_check", false, _) => billing_credit::FOUND_BY_LOOKUP,
            (_, true, true) => Status::Refused(RefusalCode::StalePremiseAtRecovery).as_str(),
            _ => Status::CommittedByRetry.as_str(),
        }
        .to_owned()
    }

    /// The hand_check column's plain log (none in the other columns).
    fn hand_check_log(&self, case: &Case) -> Option<Vec<Value>> {
        let (case_id, outage_at, credit_id) = (&self.case_id, self.outage_at, &self.credit_id);
        let grant_json = json!({"id": case.approval.id, "approver": "support-lead", "max_cents": APPROVED, "revoked": null});
        let premises_json = json!({"subscription_status": "active", "incident_compensation": 0});
        let decide = json!({"ts": self.t0 + 5, "case_id": case_id, "phase": "decide", "step": "send",
                            "key": format!("goodwill-credit-{case_id}"), "approval": grant_json, "premises": premises_json});
        (self.column == "hand_check").then(|| match (self.before, self.compensated) {
            (true, true) => vec![
                decide.clone(),
                json!({"ts": outage_at + 50, "case_id": case_id, "phase": "restart", "step": "premises",
                       "refused": {"was": premises_json, "now": {"subscription_status": "active", "incident_compensation": APPROVED}}}),
            ],
            (true, false) => vec![
                decide.clone(),
                json!({"ts": outage_at + 50, "case_id": case_id, "phase": "restart", "step": "send",
                       "key": format!("goodwill-credit-{case_id}"), "approval": grant_json, "premises": premises_json}),
                json!({"ts": self.credit_at, "case_id": case_id, "phase": "restart", "step": "sent", "credit": credit_id, "replayed": false}),
            ],
            (false, _) => vec![
                decide.clone(),
                json!({"ts": outage_at + 50, "case_id": case_id, "phase": "restart", "step": "lookup", "found": credit_id}),
            ],
        })
    }

    /// The interlock column's signed receipt and what the runner reads from it; the case's
    /// credits carry its DISPATCHED entry's hash (the gate's anchor).
    fn interlock_evidence(
        &self,
        key: &SigningKey,
        case: &Case,
        decision: &Decision,
        ground_truth: &mut GroundTruth,
    ) -> Evidence {
        if self.column != "interlock" {
            return (None, None, None, Vec::new());
        }
        let resolution = if self.credited {
            Resolution::Committed {
                credit: self.credit_id.clone(),
            }
        } else {
            Resolution::RefusedStale
        };
        let r = receipt(
            key,
            case,
            &self.customer,
            decision,
            &resolution,
            self.t0 * 1000,
        );
        let kind = |e: &Value| e.get("kind").and_then(Value::as_str).map(str::to_owned);
        let kinds = r
            .entries
            .iter()
            .map(|e| kind(e).unwrap_or_else(|| "?".to_owned()))
            .collect();
        let via = self
            .credited
            .then(|| Via::RetryIdempotent.as_str().to_owned());
        let eid = r.effect_id.clone();
        let anchor = r
            .entries
            .iter()
            .find(|e| kind(e).as_deref() == Some("DISPATCHED"))
            .and_then(|e| e.get("hash")?.as_str().map(str::to_owned));
        for c in &mut ground_truth.case_credits {
            c.dispatch.clone_from(&anchor);
        }
        (Some(r), via, Some(eid), kinds)
    }

    fn timings(&self) -> Timings {
        let outage_ms = 900 + (self.n as u64 * 37) % 400;
        let restart_ms = 40 + (self.n as u64 * 13) % 90;
        Timings {
            crash_to_settled_ms: outage_ms + restart_ms,
            restart_to_settled_ms: restart_ms,
            outage_ms,
        }
    }

    /// Premise candidates: nothing compensated until the outage, then what Stripe holds.
    fn observations(&self, ground_truth: &GroundTruth) -> Observations {
        let cand = |bal: i64, others: i64, inc: i64| Candidates {
            customer_balance: bal,
            compensation_by_others: others,
            incident_compensation: inc,
        };
        Observations {
            decision: Some(cand(0, 0, 0)),
            crash: Some(cand(0, 0, 0)),
            restart: Some(cand(
                0,
                ground_truth.compensation_by_others,
                ground_truth.incident_compensation,
            )),
        }
    }

    fn outage_record(&self, note_record: NoteRecord) -> OutageRecord {
        OutageRecord {
            renewal_invoice: Some(self.renewal_invoice.clone()),
            credit_note: note_record.0,
            credit_note_incident: note_record.1,
            downgraded_to_price: (self.outage == outage::PRORATION)
                .then(|| self.ids.id("price", 8)),
            clock_time: Some(self.outage_at),
        }
    }

    fn stripe_ids(&self, ground_truth: &GroundTruth) -> StripeIds {
        StripeIds {
            clock: self.ids.id("clock", 9),
            customer: self.customer.clone(),
            subscription: self.ids.id("sub", 10),
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
        }
    }
}

/// Cell `n` of the plan, with its receipt (interlock) signed by `key`, judged by the scenario's
/// rules.
pub(crate) fn cell(
    n: usize,
    crash: &str,
    outage: &str,
    column: &str,
    repeat: u32,
    key: &SigningKey,
) -> Cell {
    let story = Story::new(n, crash, outage, column);
    let case = story.case();
    let decision = story.decision();
    let (mut ground_truth, note_record) = story.ground_truth();
    let outcome = story.outcome();
    let hand_check_log = story.hand_check_log(&case);
    let (receipt, via, effect_id, journal_kinds) =
        story.interlock_evidence(key, &case, &decision, &mut ground_truth);
    let restart = json!({"status": outcome, "effect_id": effect_id});
    let mut cell = Cell {
        crash: crash.into(),
        outage: outage.into(),
        column: column.into(),
        repeat,
        outcome,
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
        timings: Some(story.timings()),
        decision: Some(decision),
        observations: story.observations(&ground_truth),
        outage_record: story.outage_record(note_record),
        stripe_ids: story.stripe_ids(&ground_truth),
        ground_truth,
        case,
        effect_id,
        journal_kinds,
        receipt,
        hand_check_log: hand_check_log.map(|log| log.iter().map(FreeForm::from_value).collect()),
        restart: Some(FreeForm::from_value(&restart)),
    };
    let report = cell.receipt.as_ref().map(|bundle| {
        verify::receipt::verify_bundle(bundle, &KeyCheck::Pinned(key.verifying_key()))
    });
    billing_credit::judge_in_place(&mut cell, report.as_ref());
    cell
}

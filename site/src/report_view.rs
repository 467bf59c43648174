//! View data derived from a verified results file: everything a page shows, already formatted.
//!
//! Nothing here reads a file or judges a receipt; it only arranges what [`crate::verification`]
//! accepted. Where the data would make a page say something untrue (a judged cell whose worker
//! was not SIGKILLed, a decider claimed as a model without a model name), building the model fails.

use crate::format::{dollars, ratio, seconds, utc_ms};
use crate::verification::{ReceiptCheck, Verified};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use verify::results::{Candidates, Cell, ResultsFile};
use verify::scenarios::billing_credit::status_says_sent;

/// The three premise candidates, in the order the reference page shows them.
pub const CANDIDATES: [&str; 3] = [
    "customer_balance",
    "compensation_by_others",
    "incident_compensation",
];

/// Everything the pages of one scenario show.
#[derive(Debug, Clone)]
pub struct Report {
    /// Scenario name, e.g. `billing_credit`.
    pub scenario: String,
    /// Page title.
    pub title: String,
    /// File name of the published results JSON (beside the pages, under `data/`).
    pub json_name: String,
    /// Where and how the run happened.
    pub env: EnvView,
    /// The run's backend and decider in one line, shown under every page's header.
    pub ran: String,
    /// Columns in display order.
    pub columns: Vec<String>,
    /// The main table.
    pub rows: Vec<RowView>,
    /// Per-column summary.
    pub summaries: Vec<SummaryView>,
    /// Rows where hand_check and interlock differ on the invariant; `None` when a column is missing.
    pub differing: Option<Vec<String>>,
    /// Premise candidates table.
    pub candidates: Vec<CandidateRow>,
    /// Decisions, one per cell.
    pub decisions: Vec<DecisionView>,
    /// Ids, one per cell.
    pub ids: Vec<IdsView>,
    /// One page per receipt.
    pub receipts: Vec<ReceiptView>,
    /// Cells whose worker was SIGKILLed (signal 9).
    pub sigkilled: usize,
    /// Cells judged (not HARNESS_ERROR).
    pub judged: usize,
    /// Cells that are HARNESS_ERROR.
    pub harness_errors: usize,
    /// Which checker verified the file.
    pub checker: String,
    /// Largest repeat count of any cell (1 when every cell ran once).
    pub repeats: u32,
    /// Whether the page comparing this run with real Stripe's answers exists.
    pub emulator_vs_stripe: bool,
    /// Whether a verified nemesis run of the scenario is published (the Nemesis page).
    pub nemesis: bool,
    /// The matrix's verdict in one sentence, from the facts ([`crate::overview::verdict_line`]).
    pub verdict_line: String,
    /// The nemesis run in one sentence, when one is published ([`crate::overview::nemesis_line`]).
    pub nemesis_line: Option<String>,
}

/// The run's environment, labelled truthfully.
#[derive(Debug, Clone)]
pub struct EnvView {
    /// `emulator` or `stripe_test_mode`.
    pub backend: String,
    /// What the backend was, in words.
    pub backend_label: String,
    /// Where the interlock column's journal was kept, in words.
    pub journal_label: String,
    /// How often the decider was asked, in words (empty for the policy asked per cell).
    pub decide_label: String,
    /// `policy` or `anthropic`.
    pub decider_kind: String,
    /// What decided, in words (names the model only when a model ran).
    pub decider_label: String,
    /// Pinned Stripe API version.
    pub stripe_api_version: String,
    /// When the run finished, as stated in the file.
    pub generated: String,
    /// Git commit of the code that ran.
    pub git_commit: String,
    /// Runner version.
    pub runner_version: String,
    /// Hex ed25519 public key that signed the run's journals and the file's manifest.
    pub signer: String,
    /// Its fingerprint (`verify::fingerprint`), as `verify` prints it.
    pub signer_fingerprint: String,
    /// Per-run key or the project's stable key, in words ([`crate::provenance::signer_label`]).
    pub signer_label: String,
    /// How the signer key was checked: pinned by the build or named by the file.
    pub key: crate::provenance::KeyPolicy,
    /// The `gh attestation verify` command for the published results file.
    pub attest_command: String,
    /// The command that reproduces the run.
    pub command: String,
    /// Seed.
    pub seed: u64,
    /// Worker parallelism.
    pub jobs: u32,
    /// Claim settings in words.
    pub claim: String,
    /// Where the cases' test clocks started, in words ([`clock_start_label`]).
    pub clock_start_label: String,
}

/// Where a run's test clocks started, in words: the recorded instant (RFC 3339 UTC), or, for a
/// file made before clocks had a fixed start, that each started at the wall time of its case.
pub fn clock_start_label(clock_start: Option<i64>) -> String {
    match clock_start {
        Some(s) => match time::OffsetDateTime::from_unix_timestamp(s)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            }) {
            Some(text) => text,
            None => format!("Unix time {s}"),
        },
        None => {
            "the wall time its case was opened (this run predates recorded clock starts)".into()
        }
    }
}

/// One row of the main table.
#[derive(Debug, Clone)]
pub struct RowView {
    /// `before_send / renewal`.
    pub label: String,
    /// Crash point.
    pub crash: String,
    /// Outage.
    pub outage: String,
    /// Per column (in [`Report::columns`] order), the cells of that column in this row (one per repeat).
    pub cells: Vec<Vec<CellView>>,
}

/// One cell of the main table.
#[derive(Debug, Clone)]
pub struct CellView {
    /// HTML id on the Ids page.
    pub anchor: String,
    /// `crash/outage/column` (plus `#repeat` when repeated).
    pub label: String,
    /// Column.
    pub column: String,
    /// Final status.
    pub outcome: String,
    /// Why the harness could not run the cell as designed.
    pub harness_error: Option<String>,
    /// The cell ran to a judgement (verify's [`Cell::judged`]).
    pub judged: bool,
    /// Interlock `via`.
    pub via: Option<String>,
    /// Case credits in Stripe.
    pub credits: u32,
    /// Their total.
    pub credits_dollars: String,
    /// Wanted count.
    pub want_count: u32,
    /// Wanted total.
    pub want_dollars: String,
    /// Invariant held.
    pub held: bool,
    /// Answer matches Stripe.
    pub answer: bool,
    /// The column's record proves what happened.
    pub proof: bool,
    /// Kind of record (`signed_chain`, `plain_log`, `none`).
    pub record: String,
    /// Crash to settled.
    pub crash_s: Option<String>,
    /// Restart to settled.
    pub restart_s: Option<String>,
    /// Link to the receipt page, relative to the scenario directory.
    pub receipt_href: Option<String>,
}

/// One column's summary line.
#[derive(Debug, Clone)]
pub struct SummaryView {
    /// Column.
    pub column: String,
    /// `k/n`.
    pub held: String,
    /// `k/n`.
    pub answers: String,
    /// `k/n`.
    pub proof: String,
    /// Median crash to settled.
    pub median_crash: String,
    /// Median restart to settled.
    pub median_restart: String,
    /// HARNESS_ERROR cells not counted.
    pub harness_errors: u32,
}

/// One row of the premise candidates table.
#[derive(Debug, Clone)]
pub struct CandidateRow {
    /// Row label.
    pub label: String,
    /// Wanted credit counts of the row's cells (distinct, ` / `-joined).
    pub want: String,
    /// One entry per [`CANDIDATES`].
    pub cells: Vec<CandidateCell>,
}

/// How one premise candidate would have done on one row.
#[derive(Debug, Clone)]
pub struct CandidateCell {
    /// Distinct `decision -> crash -> restart` triples, sorted, ` / `-joined.
    pub values: String,
    /// `a/n`: cells whose restart value differs from the decision value.
    pub refuses_at_restart: String,
    /// `b/n`, shown only when b > 0: cells whose crash value differs.
    pub refuses_at_crash: Option<String>,
    /// For every cell, refusing at restart equals the cell wanting no credit.
    pub right: bool,
}

/// One decision.
#[derive(Debug, Clone)]
pub struct DecisionView {
    /// Cell label.
    pub label: String,
    /// Who decided.
    pub decider: String,
    /// Amount, e.g. `1000 cents ($10)`; `None` when no decision was saved.
    pub amount: Option<String>,
    /// The description the decider wrote.
    pub description: String,
}

/// Every id of one cell.
#[derive(Debug, Clone)]
pub struct IdsView {
    /// HTML id.
    pub anchor: String,
    /// Cell label.
    pub label: String,
    /// (name, value) pairs: clock, customer, subscription, invoices, ...
    pub stripe: Vec<(String, String)>,
    /// What the outage did, as (name, value) pairs.
    pub outage: Vec<(String, String)>,
    /// Effect id (interlock).
    pub effect_id: Option<String>,
    /// `signal 9 (SIGKILL)`, `exit code N`, or `unknown`.
    pub worker_exit: String,
    /// Receipt summary re-derived at build time.
    pub receipt: Option<ReceiptCheck>,
    /// Link to the receipt page, relative to the scenario directory.
    pub receipt_href: Option<String>,
    /// Journal kinds, space-separated.
    pub journal: String,
    /// HARNESS_ERROR detail.
    pub harness_error: Option<String>,
    /// hand_check: number of lines in its plain log (published in full in the results JSON).
    pub hand_check_log: Option<usize>,
}

/// A receipt page.
#[derive(Debug, Clone)]
pub struct ReceiptView {
    /// Effect id.
    pub effect_id: String,
    /// File name of the page (`<effect id>.html`) under `receipts/`.
    pub page: String,
    /// File name of the raw bundle (`<effect id>.json`) under `receipts/`.
    pub json: String,
    /// The raw bundle, pretty-printed.
    pub bundle_json: String,
    /// Cell label.
    pub cell: String,
    /// Anchor of the cell on the Ids page.
    pub cell_anchor: String,
    /// Entries.
    pub entries: Vec<EntryView>,
    /// Summary re-derived at build time.
    pub summary: ReceiptCheck,
    /// The bundle's seal, in words (the head was checked with the receipt at build time).
    pub seal: String,
    /// Each Stripe credit of the cell and the anchor it carries, in words.
    pub anchors: Vec<String>,
}

/// The seal of a verified bundle, in words.
fn seal_words(bundle: &verify::entry::ReceiptBundle) -> String {
    match &bundle.head {
        Some(h) => format!(
            "yes: the signed head names {} entries ending in the entry whose hash is {}, so the receipt is complete",
            h.count, h.last
        ),
        None => "no: nothing shows the receipt is complete".to_owned(),
    }
}

/// Each credit of the cell with the DISPATCHED entry its anchor names, in words.
fn anchor_words(c: &verify::results::Cell, entries: &[EntryView]) -> Vec<String> {
    c.ground_truth
        .case_credits
        .iter()
        .map(|credit| match &credit.dispatch {
            Some(h) => match entries.iter().find(|e| e.kind == "DISPATCHED" && &e.hash == h) {
                Some(e) => format!(
                    "credit {} carries metadata[interlock_dispatch] = {h}, the hash of entry {} (DISPATCHED)",
                    credit.id, e.index
                ),
                None => format!("credit {} carries metadata[interlock_dispatch] = {h}", credit.id),
            },
            None => format!("credit {} carries no interlock_dispatch anchor", credit.id),
        })
        .collect()
}

/// One journal entry on a receipt page.
#[derive(Debug, Clone)]
pub struct EntryView {
    /// Position in the bundle, from 0.
    pub index: usize,
    /// Kind.
    pub kind: String,
    /// `ts_ms` as UTC.
    pub time: String,
    /// Kind fields as (name, compact JSON).
    pub fields: Vec<(String, String)>,
    /// Stored hash.
    pub hash: String,
    /// Stored prev (`null` for the first).
    pub prev: String,
    /// Hash recomputes.
    pub hash_ok: bool,
    /// Prev links.
    pub prev_ok: bool,
    /// Signature status in words.
    pub signature: String,
    /// Signature valid and by the run's key.
    pub signature_ok: bool,
}

/// Build the view of one verified results file. `json_name` is the file name it is published under.
pub fn build(verified: &Verified, json_name: &str) -> Result<Report, String> {
    let f = &verified.file;
    let env = env_view(f)?;
    let judged = f.cells.iter().filter(|c| c.judged()).count();
    let harness_errors = f.cells.len() - judged;
    let sigkilled = f
        .cells
        .iter()
        .filter(|c| c.judged() && c.worker_exit_signal == Some(9))
        .count();
    if let Some(c) = f
        .cells
        .iter()
        .find(|c| c.judged() && c.worker_exit_signal != Some(9))
    {
        return Err(format!(
            "cell {} is judged but its worker did not end by SIGKILL (signal {:?}, exit code {:?}); the page would claim a crash that did not happen",
            label(c, 2),
            c.worker_exit_signal,
            c.worker_exit_code
        ));
    }
    for c in &f.cells {
        if !f.columns.contains(&c.column) {
            return Err(format!(
                "cell {} is in column {:?}, which is not in `columns`",
                label(c, 2),
                c.column
            ));
        }
        if !f
            .rows
            .iter()
            .any(|r| r.crash == c.crash && r.outage == c.outage)
        {
            return Err(format!("cell {} is not in any of `rows`", label(c, 2)));
        }
    }
    let repeats = f.cells.iter().map(|c| c.repeat + 1).max().unwrap_or(1);
    let receipts = receipt_views(verified, repeats)?;
    let receipt_href = |c: &Cell| {
        c.receipt
            .as_ref()
            .map(|b| format!("receipts/{}.html", b.effect_id))
    };

    let rows = f
        .rows
        .iter()
        .map(|r| RowView {
            label: format!("{} / {}", r.crash, r.outage),
            crash: r.crash.clone(),
            outage: r.outage.clone(),
            cells: f
                .columns
                .iter()
                .map(|col| {
                    f.cells
                        .iter()
                        .filter(|c| c.crash == r.crash && c.outage == r.outage && &c.column == col)
                        .map(|c| cell_view(c, repeats, receipt_href(c)))
                        .collect()
                })
                .collect(),
        })
        .collect();

    let summaries = f
        .columns
        .iter()
        .map(|col| {
            let s = verified
                .summary
                .get(col)
                .ok_or_else(|| format!("summary has no column {col}"))?;
            Ok(SummaryView {
                column: col.clone(),
                held: ratio(s.held, s.cells),
                answers: ratio(s.answer_matches, s.cells),
                proof: ratio(s.proof, s.cells),
                median_crash: s.median_crash_to_settled_ms.map_or("n/a".into(), seconds),
                median_restart: s.median_restart_to_settled_ms.map_or("n/a".into(), seconds),
                harness_errors: s.harness_errors,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;

    let differing = differing_rows(f, "hand_check", "interlock", repeats);

    let decisions = f
        .cells
        .iter()
        .map(|c| match &c.decision {
            Some(d) => DecisionView {
                label: label(c, repeats),
                decider: decider_words(&d.decider.kind, d.decider.model.as_deref()),
                amount: Some(format!("{} cents ({})", d.amount, dollars(d.amount))),
                description: d.description.clone(),
            },
            None => DecisionView {
                label: label(c, repeats),
                decider: env.decider_label.clone(),
                amount: None,
                description: "no decision was saved".into(),
            },
        })
        .collect();

    let ids = f
        .cells
        .iter()
        .map(|c| {
            let s = &c.stripe_ids;
            let list = |v: &[String]| {
                if v.is_empty() {
                    "none".to_owned()
                } else {
                    v.join(", ")
                }
            };
            let o = &c.outage_record;
            let mut outage = Vec::new();
            let mut push = |k: &str, v: &Option<String>| {
                if let Some(v) = v {
                    outage.push((k.to_owned(), v.clone()));
                }
            };
            push("renewal_invoice", &o.renewal_invoice);
            push("credit_note", &o.credit_note);
            push("credit_note_incident", &o.credit_note_incident);
            push("downgraded_to_price", &o.downgraded_to_price);
            if let Some(t) = o.clock_time {
                outage.push(("clock_time".into(), t.to_string()));
            }
            IdsView {
                anchor: anchor(c),
                label: label(c, repeats),
                stripe: vec![
                    ("case".into(), c.case.case_id.clone()),
                    ("incident".into(), c.case.incident.clone()),
                    ("clock".into(), s.clock.clone()),
                    ("customer".into(), s.customer.clone()),
                    ("subscription".into(), s.subscription.clone()),
                    ("invoices".into(), list(&s.invoices)),
                    ("credit notes".into(), list(&s.credit_notes)),
                    ("case credits".into(), list(&s.case_credits)),
                ],
                outage,
                effect_id: c.effect_id.clone(),
                worker_exit: match (c.worker_exit_signal, c.worker_exit_code) {
                    (Some(9), _) => "signal 9 (SIGKILL)".into(),
                    (Some(sig), _) => format!("signal {sig}"),
                    (None, Some(code)) => format!("exit code {code}"),
                    (None, None) => "unknown".into(),
                },
                receipt: c
                    .receipt
                    .as_ref()
                    .and_then(|b| verified.receipts.get(&b.effect_id).cloned()),
                receipt_href: receipt_href(c),
                journal: if c.journal_kinds.is_empty() {
                    "none".into()
                } else {
                    c.journal_kinds.join(" ")
                },
                harness_error: c.harness_error.clone(),
                hand_check_log: c.hand_check_log.as_ref().map(Vec::len),
            }
        })
        .collect();

    Ok(Report {
        scenario: f.scenario.clone(),
        title: title(&f.scenario),
        json_name: json_name.to_owned(),
        ran: ran_line(&f.environment)?,
        env,
        columns: f.columns.clone(),
        rows,
        summaries,
        differing,
        candidates: candidate_rows(f),
        decisions,
        ids,
        receipts,
        sigkilled,
        judged,
        harness_errors,
        checker: verified.checker.to_owned(),
        repeats,
        emulator_vs_stripe: false,
        nemesis: false,
        verdict_line: String::new(),
        nemesis_line: None,
    })
}

/// The page title of a scenario.
pub fn title(scenario: &str) -> String {
    match scenario {
        "billing_credit" => "Scenario billing_credit: goodwill credit vs a billing run".into(),
        other => format!("Scenario {other}"),
    }
}

/// `crash/outage/column`, plus `#repeat` when cells were repeated.
pub fn label(c: &Cell, repeats: u32) -> String {
    if repeats > 1 {
        format!("{}/{}/{}#{}", c.crash, c.outage, c.column, c.repeat)
    } else {
        format!("{}/{}/{}", c.crash, c.outage, c.column)
    }
}

/// Row label of a cell, `crash / outage` (plus `#repeat` when repeated).
pub fn row_label(c: &Cell, repeats: u32) -> String {
    if repeats > 1 {
        format!("{} / {} #{}", c.crash, c.outage, c.repeat)
    } else {
        format!("{} / {}", c.crash, c.outage)
    }
}

/// The HTML id of a cell on the Ids page.
pub fn anchor(c: &Cell) -> String {
    format!("cell-{}-{}-{}-{}", c.crash, c.outage, c.column, c.repeat)
}

/// What a run's backend was, in words; an error for a backend the site does not know.
pub fn backend_words(backend: &str) -> Result<String, String> {
    match backend {
        "emulator" => {
            Ok("the project's Stripe emulator on loopback (not Stripe itself)".to_owned())
        }
        "stripe_test_mode" => Ok("Stripe test mode with test clocks".to_owned()),
        other => Err(format!(
            "environment.backend {other:?} is neither `emulator` nor `stripe_test_mode`"
        )),
    }
}

/// The line every page of a run carries under its header: what the run ran against and who
/// decided, so that a page's "Stripe" is never read as Stripe itself when it was the emulator.
pub fn ran_line(e: &verify::results::Environment) -> Result<String, String> {
    let decider = match (e.decider.kind.as_str(), e.decider.model.as_deref()) {
        ("anthropic", None) => {
            return Err("environment.decider is `anthropic` but names no model".into())
        }
        (kind, model) => decider_words(kind, model),
    };
    Ok(format!(
        "Ran against {}; decided by {decider}. Where a page says Stripe, it means that backend.",
        backend_words(&e.backend)?
    ))
}

fn env_view(f: &ResultsFile) -> Result<EnvView, String> {
    let e = &f.environment;
    let backend_label = backend_words(&e.backend)?;
    let decider_label = match e.decider.kind.as_str() {
        "policy" => decider_words("policy", None),
        "anthropic" => match &e.decider.model {
            Some(m) => decider_words("anthropic", Some(m)),
            None => return Err("environment.decider is `anthropic` but names no model".into()),
        },
        other => {
            return Err(format!(
                "environment.decider.kind {other:?} is neither `policy` nor `anthropic`"
            ))
        }
    };
    let replayed = f
        .cells
        .iter()
        .filter(|c| {
            c.decision
                .as_ref()
                .is_some_and(|d| d.replayed_from.is_some())
        })
        .count();
    let decide_label = match (replayed, e.decider.kind.as_str()) {
        (0, "policy") => String::new(),
        (0, _) => " It was asked in every cell, so a difference between columns may come from it.".into(),
        (n, _) => format!(
            " It was asked once per row; the row's other columns replayed that decision with their own case's ids ({n} cells, each naming the cell that decided)."
        ),
    };
    let journal_label = match e.journal.as_deref() {
        None => "one signed JSONL file per cell, on this machine".to_owned(),
        Some("postgresql") => {
            "PostgreSQL, one schema for the run shared by every worker (`--journal`)".to_owned()
        }
        Some(other) => {
            return Err(format!(
                "environment.journal {other:?} is not `postgresql` (absent means JSONL files)"
            ))
        }
    };
    let c = &e.claim;
    Ok(EnvView {
        journal_label,
        decide_label,
        backend: e.backend.clone(),
        backend_label,
        decider_kind: e.decider.kind.clone(),
        decider_label,
        stripe_api_version: e.stripe_api_version.clone(),
        generated: f.generated.clone(),
        git_commit: e.git_commit.clone().unwrap_or_else(|| "unknown".into()),
        runner_version: e.runner_version.clone(),
        signer: e.signer.clone(),
        signer_fingerprint: verify::entry::decode_lower_hex::<32>(&e.signer)
            .and_then(|b| ed25519_dalek::VerifyingKey::from_bytes(&b).ok())
            .map_or_else(|| "no valid key".into(), |k| verify::fingerprint(&k)),
        // Filled by the build, which knows the results directory and the repository.
        signer_label: String::new(),
        key: crate::provenance::KeyPolicy::SelfAttested,
        attest_command: String::new(),
        command: e.command.clone(),
        seed: e.seed,
        jobs: e.jobs,
        clock_start_label: clock_start_label(e.clock_start),
        claim: format!(
            "max in flight {}, claim TTL backstop {}, dedup window {}, dedup margin {}",
            seconds(c.max_in_flight_ms),
            seconds(c.claim_ttl_ms),
            seconds(c.dedup_window_ms),
            seconds(c.dedup_margin_ms)
        ),
    })
}

/// The decider in words; a model is named only when one ran.
pub fn decider_words(kind: &str, model: Option<&str>) -> String {
    match (kind, model) {
        ("anthropic", Some(m)) => format!("model {m} (Anthropic Messages API)"),
        ("policy", _) => "the deterministic policy decider (no model)".to_owned(),
        (other, _) => format!("decider {other}"),
    }
}

fn cell_view(c: &Cell, repeats: u32, receipt_href: Option<String>) -> CellView {
    let t = c.timings;
    CellView {
        anchor: anchor(c),
        label: label(c, repeats),
        column: c.column.clone(),
        outcome: c.outcome.clone(),
        judged: c.judged(),
        harness_error: c.harness_error.clone().or_else(|| {
            c.is_harness_error()
                .then(|| "no detail recorded".to_owned())
        }),
        via: c.via.clone(),
        credits: c.ground_truth.case_credit_count,
        credits_dollars: dollars(c.ground_truth.case_credit_cents),
        want_count: c.want.count,
        want_dollars: dollars(c.want.cents),
        held: c.invariant_held,
        answer: c.answer_matches,
        proof: c.proof,
        record: c.record.clone(),
        crash_s: t.map(|t| seconds(t.crash_to_settled_ms)),
        restart_s: t.map(|t| seconds(t.restart_to_settled_ms)),
        receipt_href,
    }
}

/// Row labels where columns `a` and `b` differ on `invariant_held` (judged cells, paired by row and
/// repeat); `None` when either column is absent from the file.
pub fn differing_rows(f: &ResultsFile, a: &str, b: &str, repeats: u32) -> Option<Vec<String>> {
    if !f.columns.iter().any(|c| c == a) || !f.columns.iter().any(|c| c == b) {
        return None;
    }
    let mut out = Vec::new();
    for ca in f.cells.iter().filter(|c| c.column == a && c.judged()) {
        let partner = f.cells.iter().find(|c| {
            c.column == b
                && c.crash == ca.crash
                && c.outage == ca.outage
                && c.repeat == ca.repeat
                && c.judged()
        });
        if let Some(cb) = partner {
            if ca.invariant_held != cb.invariant_held {
                out.push(row_label(ca, repeats));
            }
        }
    }
    Some(out)
}

fn candidate_value(c: &Candidates, name: &str) -> i64 {
    match name {
        "customer_balance" => c.customer_balance,
        "compensation_by_others" => c.compensation_by_others,
        _ => c.incident_compensation,
    }
}

/// The premise candidates table, computed as the original did (reference behaviour §5.5), with
/// each cell's own want: per row, the cells of every column pooled.
pub fn candidate_rows(f: &ResultsFile) -> Vec<CandidateRow> {
    let mut out = Vec::new();
    for r in &f.rows {
        let cells: Vec<(&Cell, Candidates, Option<Candidates>, Candidates)> = f
            .cells
            .iter()
            .filter(|c| c.crash == r.crash && c.outage == r.outage && c.judged())
            .filter_map(|c| {
                let o = &c.observations;
                Some((c, o.decision?, o.crash, o.restart?))
            })
            .collect();
        if cells.is_empty() {
            continue;
        }
        let n = cells.len() as u32;
        let wants: BTreeSet<u32> = cells.iter().map(|(c, ..)| c.want.count).collect();
        let candidate_cells = CANDIDATES
            .iter()
            .map(|name| {
                let mut triples = BTreeSet::new();
                let (mut at_restart, mut at_crash, mut right) = (0u32, 0u32, true);
                for (c, d, cr, re) in &cells {
                    let dv = candidate_value(d, name);
                    let crv = cr.map(|x| candidate_value(&x, name));
                    let rv = candidate_value(re, name);
                    let crs = crv.map_or("?".to_owned(), |v| v.to_string());
                    triples.insert((dv, crv, rv, format!("{dv} -> {crs} -> {rv}")));
                    let refuses = rv != dv;
                    if refuses {
                        at_restart += 1;
                    }
                    if crv.is_some_and(|v| v != dv) {
                        at_crash += 1;
                    }
                    if refuses != (c.want.count == 0) {
                        right = false;
                    }
                }
                CandidateCell {
                    values: triples
                        .into_iter()
                        .map(|t| t.3)
                        .collect::<Vec<_>>()
                        .join(" / "),
                    refuses_at_restart: ratio(at_restart, n),
                    refuses_at_crash: (at_crash > 0).then(|| ratio(at_crash, n)),
                    right,
                }
            })
            .collect();
        out.push(CandidateRow {
            label: format!("{} / {}", r.crash, r.outage),
            want: wants
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" / "),
            cells: candidate_cells,
        });
    }
    out
}

fn receipt_views(verified: &Verified, repeats: u32) -> Result<Vec<ReceiptView>, String> {
    let f = &verified.file;
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for c in &f.cells {
        let Some(bundle) = &c.receipt else { continue };
        let eid = &bundle.effect_id;
        if eid.is_empty() || !eid.chars().all(|ch| ch.is_ascii_hexdigit()) {
            return Err(format!(
                "cell {}: receipt effect id {eid:?} is not hex",
                label(c, repeats)
            ));
        }
        if !seen.insert(eid.clone()) {
            return Err(format!("effect id {eid} appears in more than one cell"));
        }
        let summary = verified
            .receipts
            .get(eid)
            .cloned()
            .ok_or_else(|| format!("receipt {eid} was not verified"))?;
        let entries = bundle
            .entries
            .iter()
            .zip(summary.entries.iter().cloned())
            .enumerate()
            .map(|(index, (e, chk))| entry_view(index, e, chk))
            .collect::<Vec<EntryView>>();
        let anchors = anchor_words(c, &entries);
        out.push(ReceiptView {
            effect_id: eid.clone(),
            page: format!("{eid}.html"),
            json: format!("{eid}.json"),
            bundle_json: serde_json::to_string_pretty(bundle).map_err(|e| e.to_string())?,
            cell: label(c, repeats),
            cell_anchor: anchor(c),
            entries,
            summary,
            seal: seal_words(bundle),
            anchors,
        });
    }
    Ok(out)
}

/// One entry of a receipt page: its fields but the chain's own, and its marks as `verify` found
/// them.
fn entry_view(index: usize, e: &Value, chk: crate::verification::EntryCheck) -> EntryView {
    let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let chain_field = |k: &str| {
        matches!(
            k,
            "v" | "ts_ms" | "kind" | "effect_id" | "prev" | "hash" | "sig" | "signer"
        )
    };
    let fields = e
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| !chain_field(k))
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect()
        })
        .unwrap_or_default();
    EntryView {
        index,
        kind: s("kind"),
        time: e
            .get("ts_ms")
            .and_then(Value::as_i64)
            .map_or("unknown".into(), utc_ms),
        fields,
        hash: s("hash"),
        prev: e
            .get("prev")
            .and_then(Value::as_str)
            .unwrap_or("null")
            .to_owned(),
        hash_ok: chk.hash_ok,
        prev_ok: chk.prev_ok,
        signature: chk.signature,
        signature_ok: chk.signature_ok,
    }
}

/// Per column, the judged cells (not HARNESS_ERROR).
pub fn judged_by_column(f: &ResultsFile) -> BTreeMap<&str, Vec<&Cell>> {
    let mut m: BTreeMap<&str, Vec<&Cell>> = BTreeMap::new();
    for col in &f.columns {
        m.insert(col.as_str(), Vec::new());
    }
    for c in f.cells.iter().filter(|c| c.judged()) {
        m.entry(c.column.as_str()).or_default().push(c);
    }
    m
}

/// Whether a status means the credit went out.
pub fn sent(status: &str) -> bool {
    status_says_sent(status)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::verification::summarize;
    use verify::receipt::KeyCheck;

    fn verified(f: ResultsFile) -> Verified {
        let report = verify::check::verify_results(&f, &KeyCheck::SelfAttested);
        let receipts = report
            .cell_reports
            .iter()
            .filter_map(|c| c.receipt.as_ref())
            .map(|r| (r.effect_id.clone(), summarize(r, &f.environment.signer)))
            .collect();
        Verified {
            file: f,
            receipts,
            checker: "test",
            summary: report.summary,
        }
    }

    fn synthetic() -> ResultsFile {
        synthetic::generate(&synthetic::Spec::default())
    }

    #[test]
    fn the_main_table_has_every_row_and_column() {
        let r = build(&verified(synthetic()), "billing_credit.json").unwrap();
        assert_eq!(r.rows.len(), 6);
        assert!(r
            .rows
            .iter()
            .all(|row| row.cells.len() == 3 && row.cells.iter().all(|c| c.len() == 1)));
        assert_eq!((r.judged, r.sigkilled, r.harness_errors), (18, 18, 0));
        assert_eq!(r.receipts.len(), 6);
        assert_eq!(r.differing, Some(vec![]));
        assert!(
            r.env.backend_label.contains("emulator") && !r.env.backend_label.starts_with("Stripe")
        );
        assert!(r.env.decider_label.contains("no model"));
    }

    #[test]
    fn candidates_follow_the_original_rule() {
        let mut f = synthetic();
        // after_send: our own credit moves the balance at the crash instant in one cell.
        let cell = f
            .cells
            .iter_mut()
            .find(|c| c.crash == "after_send" && c.outage == "renewal")
            .unwrap();
        cell.observations.crash.as_mut().unwrap().customer_balance = -1000;
        let rows = candidate_rows(&f);
        let row = rows
            .iter()
            .find(|r| r.label == "after_send / renewal")
            .unwrap();
        let balance = &row.cells[0];
        assert_eq!(balance.refuses_at_crash.as_deref(), Some("1/3"));
        assert_eq!(balance.refuses_at_restart, "0/3");
        assert!(
            balance.right,
            "not refusing at restart is right when credit is wanted"
        );
        assert!(balance.values.contains("0 -> -1000 -> 0") && balance.values.contains(" / "));
        let billing = rows
            .iter()
            .find(|r| r.label == "before_send / billing_credit")
            .unwrap();
        assert_eq!(billing.want, "0");
        let incident = &billing.cells[2];
        assert_eq!(incident.refuses_at_restart, "3/3");
        assert!(incident.right);
        assert!(incident.refuses_at_crash.is_none());
    }

    #[test]
    fn a_harness_error_is_shown_not_judged() {
        let mut f = synthetic();
        let c = &mut f.cells[0];
        c.outcome = verify::scenarios::billing_credit::HARNESS_ERROR.into();
        c.harness_error = Some("worker exited with code 1: boom".into());
        c.worker_exit_signal = None;
        c.worker_exit_code = Some(1);
        let r = build(&verified(f), "x.json").unwrap();
        assert_eq!((r.judged, r.harness_errors, r.sigkilled), (17, 1, 17));
        let cell = &r.rows[0].cells[0][0];
        assert_eq!(
            cell.harness_error.as_deref(),
            Some("worker exited with code 1: boom")
        );
        assert_eq!(r.ids[0].worker_exit, "exit code 1");
    }

    #[test]
    fn the_page_cannot_claim_a_crash_or_a_model_that_did_not_happen() {
        let mut f = synthetic();
        f.cells[3].worker_exit_signal = Some(15);
        let e = build(&verified(f), "x.json").unwrap_err();
        assert!(e.contains("did not end by SIGKILL"), "{e}");

        let mut f = synthetic();
        f.environment.decider.kind = "anthropic".into();
        f.environment.decider.model = None;
        assert!(build(&verified(f), "x.json")
            .unwrap_err()
            .contains("names no model"));

        let mut f = synthetic();
        f.environment.decider.kind = "anthropic".into();
        f.environment.decider.model = Some("claude-haiku-4-5-20251001".into());
        let r = build(&verified(f), "x.json").unwrap();
        assert!(r.env.decider_label.contains("claude-haiku-4-5-20251001"));

        let mut f = synthetic();
        f.environment.decider.model = Some("some-model".into());
        let r = build(&verified(f), "x.json").unwrap();
        assert!(
            !r.env.decider_label.contains("some-model"),
            "the policy ran: no model is named"
        );

        let mut f = synthetic();
        f.environment.backend = "stripe_live".into();
        assert!(build(&verified(f), "x.json").is_err());

        let mut f = synthetic();
        f.environment.backend = "stripe_test_mode".into();
        assert!(build(&verified(f), "x.json")
            .unwrap()
            .env
            .backend_label
            .starts_with("Stripe test mode"));
    }
}

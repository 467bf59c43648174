//! Binding a receipt to the world (DESIGN §3.4), outside the trusted core: sealing a bundle
//! (the writer of [`crate::seal`]), and the checks a results file adds to every interlock cell:
//! its receipt is sealed, and every credit the gate sent carries, in
//! `metadata[interlock_dispatch]`, the hash of the receipt's DISPATCHED entry it was sent under.

use crate::canonical::CanonicalError;
use crate::entry::{lower_hex, ReceiptBundle};
use crate::finding::{code as fcode, Finding};
use crate::results::{Cell, GroundTruth};
use crate::seal::{head_message, Head};
use crate::view::{BundleView, View};
use ed25519_dalek::{Signer, SigningKey};
use serde_json::Value;

/// Seal `bundle` as it now stands with `key` at `ts_ms` (replaces any earlier head).
pub fn seal_bundle(
    bundle: &mut ReceiptBundle,
    key: &SigningKey,
    ts_ms: u64,
) -> Result<(), CanonicalError> {
    let last = bundle.entries.last().and_then(|e| e.get("hash"));
    let mut head = Head {
        effect_id: bundle.effect_id.clone(),
        count: bundle.entries.len() as u64,
        last: last.and_then(Value::as_str).unwrap_or_default().to_owned(),
        ts_ms,
        signer: lower_hex(key.verifying_key().as_bytes()),
        sig: String::new(),
    };
    head.sig = lower_hex(&key.sign(&head_message(&head)?).to_bytes());
    bundle.head = Some(head);
    Ok(())
}

/// The hashes of the bundle's DISPATCHED entries in order, and the one the COMMITTED entry
/// closed (the last DISPATCHED before it), if the effect committed.
fn dispatches<'b>(bundle: &'b BundleView<'_>) -> (Vec<&'b str>, Option<&'b str>) {
    let (mut all, mut committed) = (Vec::new(), None);
    for e in &bundle.entries {
        match e.get("kind").and_then(View::as_str) {
            Some("DISPATCHED") => all.extend(e.get("hash").and_then(View::as_str)),
            Some("COMMITTED") if committed.is_none() => committed = all.last().copied(),
            _ => {}
        }
    }
    (all, committed)
}

/// A results file's interlock cell: the receipt is sealed, and every credit the gate sent (tagged
/// with this effect, or named by the COMMITTED evidence) carries the anchor of its dispatch. A
/// resend under an open dispatch carries that dispatch's hash, so one hash serves both sends.
pub fn check_cell(i: usize, base: &str, cell: &Cell, bundle: &ReceiptBundle, f: &mut Vec<Finding>) {
    check_cell_view(i, base, cell, &BundleView::of(bundle), f);
}

/// [`check_cell`] of a receipt read as a [`BundleView`] (as a results file's cells are read).
pub fn check_cell_view(
    i: usize,
    base: &str,
    cell: &Cell,
    bundle: &BundleView<'_>,
    f: &mut Vec<Finding>,
) {
    check_record_view(&format!("cell {i}"), base, &cell.ground_truth, bundle, f);
}

/// [`check_cell`] for any record that holds a receipt beside the ground truth it produced (a
/// cell, a nemesis trial): `what` names it in messages (`cell 3`), `base` is its JSON path.
pub fn check_record(
    what: &str,
    base: &str,
    truth: &GroundTruth,
    bundle: &ReceiptBundle,
    f: &mut Vec<Finding>,
) {
    check_record_view(what, base, truth, &BundleView::of(bundle), f);
}

/// [`check_record`] of a receipt read as a [`BundleView`].
pub fn check_record_view(
    what: &str,
    base: &str,
    truth: &GroundTruth,
    bundle: &BundleView<'_>,
    f: &mut Vec<Finding>,
) {
    if bundle.head.is_none() {
        let msg = format!("{what}: the receipt is not sealed, so nothing proves it is complete (a receipt cut short would read as its prefix)");
        f.push(Finding::new(
            format!("{base}.receipt.head"),
            fcode::RECEIPT_UNSEALED,
            msg,
        ));
    }
    let (all, committed) = dispatches(bundle);
    let evidence_credit = bundle
        .entries
        .iter()
        .find(|e| e.get("kind").and_then(View::as_str) == Some("COMMITTED"))
        .and_then(|e| e.get("evidence")?.get("credit")?.as_str());
    let (mut listed, mut unlisted) = (0usize, 0usize);
    for (k, credit) in truth.case_credits.iter().enumerate() {
        let by_gate = credit.effect_id.as_deref() == Some(bundle.effect_id.as_ref());
        let named = evidence_credit == Some(credit.id.as_str());
        if !by_gate && !named && credit.dispatch.is_none() {
            continue; // not the gate's credit: the judge counts it, no anchor to check
        }
        let found = credit.dispatch.as_deref().unwrap_or("none");
        // The committed credit must name the dispatch the COMMITTED closed; any other credit of
        // the gate, one of the receipt's dispatches.
        let (ok, expected) = match (named, committed) {
            (true, Some(h)) => (found == h, h.to_owned()),
            _ if all.is_empty() => (false, "no DISPATCHED entry".to_owned()),
            _ => (all.contains(&found), all.join(" or ")),
        };
        if !ok && listed >= crate::problem::LISTED_PER_CODE {
            unlisted += 1;
        } else if !ok {
            listed += 1;
            let msg = format!("{what}: credit {}'s metadata[interlock_dispatch] is not the hash of the receipt's DISPATCHED entry it was sent under", crate::display::shorten(&credit.id, 80));
            let path = format!("{base}.ground_truth.case_credits[{k}].dispatch");
            f.push(Finding::mismatch(
                path,
                fcode::ANCHOR_MISMATCH,
                msg,
                expected,
                found,
            ));
        }
    }
    if unlisted > 0 {
        f.push(Finding::new(
            format!("{base}.ground_truth.case_credits"),
            fcode::ANCHOR_MISMATCH,
            format!("{what}: {unlisted} more credits whose metadata[interlock_dispatch] is not a DISPATCHED entry's hash (not listed)"),
        ));
    }
}

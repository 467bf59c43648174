//! The receipt pages' views: each receipt's entries, seal and anchors as `verify` checked them.

use super::{anchor, label, ViewError};
use crate::format::utc_ms;
use crate::verification::{ReceiptCheck, Verified};
use serde_json::Value;
use std::collections::BTreeSet;

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

/// One page per receipt, in cell order; an error for an effect id that is not hex, appears in
/// two cells, or was not verified.
pub(super) fn receipt_views(
    verified: &Verified,
    repeats: u32,
) -> Result<Vec<ReceiptView>, ViewError> {
    let f = verified.file();
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for c in &f.cells {
        let Some(bundle) = &c.receipt else { continue };
        let eid = &bundle.effect_id;
        if eid.is_empty() || !eid.chars().all(|ch| ch.is_ascii_hexdigit()) {
            return Err(ViewError::EffectIdNotHex {
                cell: label(c, repeats),
                effect_id: eid.clone(),
            });
        }
        if !seen.insert(eid.clone()) {
            return Err(ViewError::DuplicateEffectId(eid.clone()));
        }
        let summary = verified
            .receipts()
            .get(eid)
            .cloned()
            .ok_or_else(|| ViewError::ReceiptUnverified(eid.clone()))?;
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
            bundle_json: serde_json::to_string_pretty(bundle)?,
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

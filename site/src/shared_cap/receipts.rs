//! A shared_cap run's receipt pages: one per interlock receipt, re-verified at build time.

use super::page;
use crate::error::SiteError;
use crate::pages::{Nav, VERSION};
use crate::verification::{receipt_check, EntryCheck, ReceiptCheck};
use askama::Template;
use verify::receipt::KeyCheck;
use verify::shared_cap::record::CapCell;

/// A receipt's page.
#[derive(Template)]
#[template(path = "cap_receipt.html")]
struct ReceiptPage<'a> {
    root: &'a str,
    version: &'a str,
    nav: Option<Nav>,
    effect_id: &'a str,
    /// `cell` or `trial`: what the receipt belongs to.
    of: &'static str,
    /// Where the receipt's cell (or trial) is described, relative to the receipt page.
    cell_href: String,
    cell_label: &'a str,
    ticket: &'a str,
    check: &'a ReceiptCheck,
    entries: Vec<EntryView>,
    json_name: &'a str,
}

/// One entry of a receipt page.
struct EntryView {
    index: usize,
    kind: String,
    fields: Vec<(String, String)>,
    check: EntryCheck,
}

pub(crate) type NavFn<'a> =
    dyn Fn(&str, &'static str, Vec<(String, String)>, String) -> Option<Nav> + 'a;

/// A cell whose receipts get pages: the cell, where it is described (relative to its
/// receipts' pages: `../ids.html#…` for a matrix cell, `../nemesis.html#…` for a trial), its
/// label, and the breadcrumb to that description.
pub(crate) struct ReceiptsOf<'a> {
    pub(crate) cell: &'a CapCell,
    /// `cell` (of the matrix) or `trial` (of a nemesis campaign).
    pub(crate) of: &'static str,
    pub(crate) href: String,
    pub(crate) label: String,
    pub(crate) crumb: (String, String),
}

/// One page per interlock receipt (each re-verified here against `key`), with its bundle.
pub(crate) fn receipt_pages(
    name: &str,
    cells: &[ReceiptsOf<'_>],
    public_key: &str,
    key: &KeyCheck,
    json_name: &str,
    nav: &NavFn<'_>,
) -> Result<Vec<(String, String, String)>, SiteError> {
    let mut receipts = Vec::new();
    for c in cells {
        for t in &c.cell.tickets {
            let Some(bundle) = &t.receipt else { continue };
            let checked = receipt_check(bundle, key, public_key);
            let entries = bundle
                .entries
                .iter()
                .zip(checked.entries.iter().cloned())
                .enumerate()
                .map(|(i, (e, check))| entry_view(i, e, check))
                .collect();
            let html = page(
                &format!("{name}/receipts"),
                &ReceiptPage {
                    root: "../../",
                    version: VERSION,
                    nav: nav(
                        "../",
                        "receipt",
                        vec![c.crumb.clone()],
                        format!("Receipt {}", &bundle.effect_id),
                    ),
                    effect_id: &bundle.effect_id,
                    of: c.of,
                    cell_href: c.href.clone(),
                    cell_label: &c.label,
                    ticket: &t.ticket_id,
                    check: &checked,
                    entries,
                    json_name,
                },
            )?;
            let json = serde_json::to_string_pretty(bundle).unwrap_or_default();
            receipts.push((bundle.effect_id.clone(), html, json));
        }
    }
    Ok(receipts)
}

/// An entry as the receipt page lists it: its kind and every field but the hash and signature.
fn entry_view(i: usize, e: &serde_json::Value, check: EntryCheck) -> EntryView {
    EntryView {
        index: i + 1,
        kind: e
            .get("kind")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("?")
            .to_owned(),
        fields: e
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "kind" | "hash" | "sig"))
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect()
            })
            .unwrap_or_default(),
        check,
    }
}

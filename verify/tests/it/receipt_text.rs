//! A results file's receipts are read apart from their cells, as views of the file's text
//! (`verify::load::read_cell_apart`): however a receipt is spelled in the text, the command's
//! path must report exactly what the typed file reports (`verify_results` over `load_results`,
//! whose entries are `serde_json` values), and refuse exactly what the strict reader refuses.

use serde_json::Value;
use verify::check::{verify_results, verify_results_text, Detail, ResultsReport};
use verify::load::{load_for_check, load_results, read_cell_apart, read_cell_scanned, Loaded};
use verify::receipt::KeyCheck;

/// The committed run when present, else a synthetic file, as compact text.
fn base() -> Value {
    let path =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../results/billing_credit.json");
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap(),
        Err(_) => serde_json::to_value(synthetic::generate(&Default::default())).unwrap(),
    }
}

/// The text path's report, `None` when a cell does not read (the command then reads the whole
/// file strictly); and the typed path's, `None` when the file does not load.
fn both(text: &str, key: &KeyCheck) -> (Option<ResultsReport>, Option<ResultsReport>) {
    let by_text = match load_for_check(text.as_bytes()) {
        Ok(Loaded::Results(file)) => verify_results_text(&file, key, Detail::Every).ok(),
        _ => None,
    };
    let typed = load_results(text.as_bytes())
        .ok()
        .map(|f| verify_results(&f, key));
    (by_text, typed)
}

/// Text edits of the first interlock cell's receipt: `(name, from, to)`, each applied once to
/// the compact text from the receipt's start on.
const EDITS: &[(&str, &str, &str)] = &[
    (
        "an escape in a kind",
        "\"kind\":\"PROPOSED\"",
        "\"kind\":\"PROPOS\\u0045D\"",
    ),
    (
        "an escaped key",
        "\"kind\":\"PROPOSED\"",
        "\"k\\u0069nd\":\"PROPOSED\"",
    ),
    (
        "an escaped receipt key",
        "\"receipt\":{",
        "\"rec\\u0065ipt\":{",
    ),
    (
        "whitespace in an entry",
        "\"kind\":\"PROPOSED\"",
        "\"kind\" :\n\t\"PROPOSED\" ",
    ),
    ("a version spelled 1.0", "\"v\":1,", "\"v\":1.0,"),
    ("a version spelled 1e0", "\"v\":1,", "\"v\":1e0,"),
    ("a version spelled -0", "\"v\":1,", "\"v\":-0,"),
    (
        "a key twice in an entry",
        "\"kind\":\"PROPOSED\"",
        "\"kind\":\"AUTHORIZED\",\"kind\":\"PROPOSED\"",
    ),
    (
        "the receipt twice",
        "\"receipt\":{",
        "\"receipt\":null,\"receipt\":{",
    ),
    (
        "a member the bundle does not have",
        "\"entries\":[",
        "\"extra\":1,\"entries\":[",
    ),
    (
        "entries not a list",
        "\"entries\":[",
        "\"entries\":{},\"x\":[",
    ),
    (
        "an escaped non-ASCII character",
        "\"kind\":\"PROPOSED\"",
        "\"kind\":\"PROPOSED\",\"n\":\"\\u00e9\\ud83d\\ude00\"",
    ),
    (
        "a raw non-ASCII character",
        "\"kind\":\"PROPOSED\"",
        "\"kind\":\"PROPOSED\",\"n\":\"é😀\u{202e}\"",
    ),
    (
        "a lone surrogate",
        "\"kind\":\"PROPOSED\"",
        "\"kind\":\"PROPOSED\",\"n\":\"\\ud800\"",
    ),
    (
        "an integer past 2^53",
        "\"v\":1,",
        "\"v\":9007199254740993,",
    ),
    (
        "a receipt that is null",
        "\"receipt\":{",
        "\"receipt\":null,\"was\":{",
    ),
];

#[test]
fn a_receipt_spelled_any_way_in_the_text_is_reported_as_the_typed_file_reports_it() {
    let d = base();
    let text = d.to_string();
    let first = d["cells"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| !c["receipt"].is_null())
        .unwrap();
    let key = verify::keys::parse_key(d["environment"]["signer"].as_str().unwrap()).unwrap();
    // The first interlock cell's text begins at its crash label; edit from its receipt on.
    let cell_text = d["cells"][first].to_string();
    let at = text.find(&cell_text).unwrap() + cell_text.find("\"receipt\":{").unwrap();
    for (name, from, to) in EDITS {
        let Some(offset) = text[at..].find(from) else {
            panic!("{name}: {from} is not in the receipt");
        };
        let edited = format!(
            "{}{}{}",
            &text[..at + offset],
            to,
            &text[at + offset + from.len()..]
        );
        for key in [KeyCheck::SelfAttested, KeyCheck::Pinned(key)] {
            let (by_text, typed) = both(&edited, &key);
            match (&by_text, &typed) {
                // A file the typed reader refuses may still be split; its cell must not read.
                (None, None) => {}
                _ => assert_eq!(by_text, typed, "{name}"),
            }
        }
    }
}

#[test]
fn a_cell_read_apart_is_the_typed_cell_with_its_receipt_beside_it() {
    let d = base();
    for (i, cell) in d["cells"].as_array().unwrap().iter().enumerate() {
        for text in [
            cell.to_string(),
            serde_json::to_string_pretty(cell).unwrap(),
        ] {
            let raw = serde_json::value::RawValue::from_string(text).unwrap();
            let typed = read_cell_scanned(i, &raw, false).unwrap();
            let (apart, receipt) = read_cell_apart(i, &raw, false).unwrap();
            assert!(apart.receipt.is_none());
            assert_eq!(receipt.map(|r| r.to_bundle()), typed.receipt, "cell {i}");
            let whole = verify::results::Cell {
                receipt: typed.receipt.clone(),
                ..apart
            };
            assert_eq!(whole, typed, "cell {i}");
        }
    }
    // What the typed reader refuses in a cell, the apart reader refuses too.
    let cell = d["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| !c["receipt"].is_null())
        .unwrap()
        .to_string();
    for (name, from, to) in EDITS {
        let Some(offset) = cell.find(from) else {
            continue;
        };
        let edited = format!("{}{}{}", &cell[..offset], to, &cell[offset + from.len()..]);
        let Ok(raw) = serde_json::value::RawValue::from_string(edited) else {
            continue;
        };
        let typed = read_cell_scanned(0, &raw, false);
        let apart = read_cell_apart(0, &raw, false);
        assert_eq!(typed.is_ok(), apart.is_ok(), "{name}");
        if let (Ok(typed), Ok((apart, receipt))) = (typed, apart) {
            assert_eq!(receipt.map(|r| r.to_bundle()), typed.receipt, "{name}");
            let whole = verify::results::Cell {
                receipt: typed.receipt.clone(),
                ..apart
            };
            assert_eq!(whole, typed, "{name}");
        }
    }
}

//! A results or nemesis file that does not read is refused by `verify::load::read_whole` exactly
//! as `load_document` refuses it (the same JSON path and message, line and column included),
//! though its cells or trials are never held together: edits before, inside and after the cells
//! or trials, of every kind of refusal, written compact and pretty; and a file that reads, reads.

use serde_json::{json, Value};
use verify::load::{load_document, read_whole};

/// An edit of a file as JSON, named.
type Edit = (&'static str, Box<dyn Fn(&mut Value)>);

/// Both readers refuse `bytes` alike, or both read them.
fn agrees(name: &str, bytes: &[u8]) {
    let whole = load_document(bytes);
    let apart = read_whole(bytes);
    assert_eq!(apart.is_ok(), whole.is_ok(), "{name}");
    assert_eq!(apart.err(), whole.err(), "{name}");
}

/// Every edit, written compact and pretty (other lines and columns), refused alike.
fn each_edit_agrees(file: &Value, array: &str, edits: &[Edit]) {
    for (name, edit) in edits {
        let mut edited = file.clone();
        edit(&mut edited);
        let compact = serde_json::to_vec(&edited).unwrap();
        let pretty = serde_json::to_vec_pretty(&edited).unwrap();
        agrees(&format!("{array}: {name}"), &compact);
        agrees(&format!("{array}: {name}, pretty"), &pretty);
        if *name != "the file as it is" {
            assert!(load_document(&compact).is_err(), "{name}: must not read");
        }
    }
}

/// The index of the first element of `array` that has a receipt.
fn with_receipt(file: &Value, array: &str) -> usize {
    let elements = file[array].as_array().unwrap();
    elements
        .iter()
        .position(|e| e["receipt"].is_object())
        .unwrap()
}

/// The edits both kinds of file are given, on their array `array`.
fn edits(file: &Value, array: &'static str, number: &'static str) -> Vec<Edit> {
    let last = file[array].as_array().unwrap().len() - 1;
    let r = with_receipt(file, array);
    let later = r + 1 + (last - r) / 2;
    vec![
        ("the file as it is", Box::new(|_| {})),
        (
            "the first element's number a string",
            Box::new(move |f| f[array][0][number] = json!("x")),
        ),
        (
            "the last element's number a string",
            Box::new(move |f| f[array][last][number] = json!("x")),
        ),
        (
            "an unknown member in an element",
            Box::new(move |f| f[array][later]["zz"] = json!(1)),
        ),
        (
            "a member missing from an element",
            Box::new(move |f| {
                f[array][later].as_object_mut().unwrap().remove(number);
            }),
        ),
        (
            "an element an array",
            Box::new(move |f| f[array][later] = json!([1, 2])),
        ),
        (
            "an element null",
            Box::new(move |f| f[array][last] = json!(null)),
        ),
        (
            "a receipt's entries not a list",
            Box::new(move |f| f[array][r]["receipt"]["entries"] = json!(5)),
        ),
        (
            "a receipt's effect id in capitals",
            Box::new(move |f| effect_id_in_capitals(f, array, r)),
        ),
        (
            "an effect id in capitals, and a later element of the wrong type",
            Box::new(move |f| {
                effect_id_in_capitals(f, array, r);
                f[array][last][number] = json!(-1);
            }),
        ),
        (
            "a receipt's head count a string",
            Box::new(move |f| f[array][r]["receipt"]["head"]["count"] = json!("x")),
        ),
        (
            "the array not an array",
            Box::new(move |f| f[array] = json!(5)),
        ),
        (
            "the summary not what it is",
            Box::new(|f| f["summary"] = json!(5)),
        ),
        (
            "the format's neighbour not a string",
            Box::new(|f| f["scenario"] = json!(5)),
        ),
        (
            "an unknown member after the array",
            Box::new(|f| f["zzz"] = json!(1)),
        ),
        (
            "the environment missing",
            Box::new(|f| {
                f.as_object_mut().unwrap().remove("environment");
            }),
        ),
    ]
}

#[test]
fn a_results_file_that_does_not_read_is_refused_as_the_whole_reading_refuses_it() {
    let bytes = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/billing_credit.json"),
    )
    .unwrap();
    let file: Value = serde_json::from_slice(&bytes).unwrap();
    let mut edits = edits(&file, "cells", "repeat");
    edits.push((
        "a ground truth count a string",
        Box::new(|f| f["cells"][3]["ground_truth"]["case_credit_count"] = json!("three")),
    ));
    edits.push((
        "the manifest missing",
        Box::new(|f| {
            f.as_object_mut().unwrap().remove("manifest");
        }),
    ));
    each_edit_agrees(&file, "cells", &edits);
}

#[test]
fn a_nemesis_file_that_does_not_read_is_refused_as_the_whole_reading_refuses_it() {
    let (nemesis, _) = crate::common::nemesis_file();
    let file = serde_json::to_value(&nemesis).unwrap();
    let mut edits = edits(&file, "trials", "index");
    edits.push((
        "the plan's trials a string",
        Box::new(|f| f["plan"]["trials"] = json!("x")),
    ));
    each_edit_agrees(&file, "trials", &edits);
}

/// The effect id of element `r`'s receipt written in capitals.
fn effect_id_in_capitals(f: &mut Value, array: &str, r: usize) {
    let id = f[array][r]["receipt"]["effect_id"]
        .as_str()
        .unwrap()
        .to_uppercase();
    f[array][r]["receipt"]["effect_id"] = json!(id);
}

/// The cell of element `i` of `array` (a shared_cap nemesis trial holds its cell in `cell`).
fn cap_cell<'v>(f: &'v mut Value, array: &str, i: usize) -> &'v mut Value {
    if array == "trials" {
        &mut f[array][i]["cell"]
    } else {
        &mut f[array][i]
    }
}

/// The index of the first element of `array` with a ticket that carries a receipt, and that
/// ticket's index.
fn cap_receipt(file: &Value, array: &str) -> (usize, usize) {
    let elements = file[array].as_array().unwrap();
    elements
        .iter()
        .enumerate()
        .find_map(|(i, e)| {
            let cell = if array == "trials" { &e["cell"] } else { e };
            let tickets = cell["tickets"].as_array()?;
            let j = tickets.iter().position(|t| t["receipt"].is_object())?;
            Some((i, j))
        })
        .unwrap()
}

/// The edits a shared_cap file (results or nemesis) is given, on its array `array`.
fn cap_edits(file: &Value, array: &'static str) -> Vec<Edit> {
    let last = file[array].as_array().unwrap().len() - 1;
    let (r, j) = cap_receipt(file, array);
    let later = r + 1 + (last - r) / 2;
    vec![
        ("the file as it is", Box::new(|_| {})),
        (
            "an unknown member in an element",
            Box::new(move |f| f[array][later]["zz"] = json!(1)),
        ),
        (
            "an element null",
            Box::new(move |f| f[array][last] = json!(null)),
        ),
        (
            "a column no plan has",
            Box::new(move |f| cap_cell(f, array, later)["column"] = json!("bogus")),
        ),
        (
            "a ticket's receipt's effect id in capitals",
            Box::new(move |f| {
                let receipt = &mut cap_cell(f, array, r)["tickets"][j]["receipt"];
                let id = receipt["effect_id"].as_str().unwrap().to_uppercase();
                receipt["effect_id"] = json!(id);
            }),
        ),
        (
            "a column no plan has, and a later element that does not read",
            Box::new(move |f| {
                cap_cell(f, array, r)["column"] = json!("bogus");
                f[array][last]["zz"] = json!(1);
            }),
        ),
        (
            "the summary not what it is",
            Box::new(|f| f["summary"] = json!(5)),
        ),
        (
            "an unknown member after the array",
            Box::new(|f| f["zzz"] = json!(1)),
        ),
    ]
}

/// shared_cap files are read a cell or trial at a time too (their receipts built for one at a
/// time): one that does not read is refused as the whole reading refuses it.
#[test]
fn a_shared_cap_file_that_does_not_read_is_refused_as_the_whole_reading_refuses_it() {
    let read = |path: &str| -> Value {
        let at = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        serde_json::from_slice(&std::fs::read(at).unwrap()).unwrap()
    };
    let file = read("../results/shared_cap.json");
    each_edit_agrees(&file, "cells", &cap_edits(&file, "cells"));
    let file = read("tests/fixtures/shared_cap_nemesis.json");
    let mut edits = cap_edits(&file, "trials");
    let last = file["trials"].as_array().unwrap().len() - 1;
    edits.push((
        "a nemesis no plan has",
        Box::new(|f| f["plan"]["nemeses"] = json!(["bogus"])),
    ));
    edits.push((
        "a nemesis no plan has, and a trial's column",
        Box::new(|f| {
            f["plan"]["nemeses"] = json!(["bogus"]);
            f["trials"][1]["cell"]["column"] = json!("bogus");
        }),
    ));
    edits.push((
        "a nemesis no plan has, and a trial that does not read",
        Box::new(move |f| {
            f["plan"]["nemeses"] = json!(["bogus"]);
            f["trials"][last]["zz"] = json!(1);
        }),
    ));
    each_edit_agrees(&file, "trials", &edits);
}

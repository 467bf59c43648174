//! A struct of a results file written as a JSON array of its fields' values, in their order (which
//! a derived reader would take as the struct), is refused as a wrong shape naming where: a cell,
//! a cell's receipt, a receipt's signed head, and a struct inside a cell. Whichever way the file
//! is read: whole, split into its cells, or by the command.

use serde_json::Value;
use std::path::PathBuf;
use verify::load::{load_document, load_for_check, read_cell, Document, LoadError, Loaded};

fn committed_run() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../results/billing_credit.json");
    let bytes = std::fs::read(path).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// The object at `pointer` replaced by the array of its members' values, in order.
fn as_array(file: &Value, pointer: &str) -> Vec<u8> {
    let mut file = file.clone();
    let object = file.pointer_mut(pointer).unwrap();
    let values: Vec<Value> = object.as_object().unwrap().values().cloned().collect();
    *object = Value::Array(values);
    serde_json::to_vec(&file).unwrap()
}

/// The first cell with a sealed receipt.
fn sealed_cell(file: &Value) -> usize {
    let cells = file["cells"].as_array().unwrap();
    cells
        .iter()
        .position(|c| c["receipt"]["head"].is_object())
        .unwrap()
}

/// Each array-shaped struct, the path the error must name, and the struct it expected.
fn cases(file: &Value) -> Vec<(Vec<u8>, String, &'static str)> {
    let i = sealed_cell(file);
    vec![
        (
            as_array(file, &format!("/cells/{i}")),
            format!("cells[{i}]"),
            "struct Cell",
        ),
        (
            as_array(file, &format!("/cells/{i}/receipt")),
            format!("cells[{i}].receipt"),
            "struct ReceiptBundle",
        ),
        (
            as_array(file, &format!("/cells/{i}/receipt/head")),
            format!("cells[{i}].receipt.head"),
            "struct Head",
        ),
        (
            as_array(file, &format!("/cells/{i}/case")),
            format!("cells[{i}].case"),
            "struct Case",
        ),
        (
            as_array(file, &format!("/cells/{i}/case/approval")),
            format!("cells[{i}].case.approval"),
            "struct Approval",
        ),
        (
            as_array(file, "/environment"),
            "environment".to_owned(),
            "struct Environment",
        ),
        (
            as_array(file, "/manifest"),
            "manifest".to_owned(),
            "struct Manifest",
        ),
    ]
}

#[test]
fn the_committed_run_reads_as_objects() {
    let bytes = serde_json::to_vec(&committed_run()).unwrap();
    assert!(matches!(load_document(&bytes), Ok(Document::Results(_))));
}

#[test]
fn an_array_shaped_struct_is_refused_naming_where() {
    let file = committed_run();
    for (bytes, path, expected) in cases(&file) {
        let err = load_document(&bytes).err();
        let Some(LoadError::Shape { path: at, message }) = &err else {
            panic!("{path}: {err:?}");
        };
        assert_eq!(at, &path);
        assert!(
            message.contains("invalid type: sequence") && message.contains(expected),
            "{path}: {message}"
        );
        // Split into its cells, the file does not read either: a head that is an array fails
        // the split, a cell that is one fails its read; either way the whole file is read.
        if let Ok(Loaded::Results(text)) = load_for_check(&bytes) {
            let unread = text.cells.iter().enumerate().any(|(k, c)| {
                read_cell(k, c).is_err() || verify::load::read_cell_apart(k, c, false).is_err()
            });
            assert!(unread, "{path}: every cell read");
        }
    }
}

#[test]
fn the_command_refuses_an_array_shaped_cell_receipt_or_head() {
    let file = committed_run();
    let dir = tempfile::tempdir().unwrap();
    for (k, (bytes, path, expected)) in cases(&file).into_iter().enumerate() {
        let name = dir.path().join(format!("a{k}.json"));
        std::fs::write(&name, &bytes).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_verify"))
            .arg(&name)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{path}: {text}");
        assert!(
            text.contains(&format!(
                "at {path}: invalid type: sequence, expected {expected}"
            )),
            "{path}: {text}"
        );
    }
}

/// A file of a scenario on the contract (`interlock-scenario/1`, here notify's committed run)
/// with a cell, its judgement, its receipt or the receipt's head written as an array is refused
/// by the command too, naming where (it was read as the struct, and passed pinned).
#[test]
fn a_scenario_file_with_an_array_shaped_struct_is_refused() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../results/notify.json");
    let file: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let with_receipt = file["cells"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["ticket"]["receipt"]["head"].is_object())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (k, pointer) in [
        "/cells/0".to_owned(),
        "/cells/0/judgement".to_owned(),
        format!("/cells/{with_receipt}/ticket/receipt"),
        format!("/cells/{with_receipt}/ticket/receipt/head"),
    ]
    .into_iter()
    .enumerate()
    {
        let name = dir.path().join(format!("s{k}.json"));
        std::fs::write(&name, as_array(&file, &pointer)).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_verify"))
            .arg(&name)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{pointer}: {text}");
        assert!(
            text.contains("invalid type: sequence, expected"),
            "{pointer}: {text}"
        );
    }
}

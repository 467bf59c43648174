//! Inputs under 1 MB of gzip whose text is dense with small values where `verify` builds them
//! (from the forger's review of the memory promise): in one receipt entry of one cell, in a typed
//! list of a cell, in the head, in one trial of a nemesis file; in many cells or trials each just
//! under the limit of values one may hold; and in many cells with the last one broken, so that
//! the file is read whole to name the error. Each is refused or checked within 64 MB (the
//! binary's peak resident size, GNU time), on two threads and on eight. Before, they took 100 to
//! 380 MB: one cell of 1.9 million values was built as three trees of them on its way to the
//! manifest's finding, every thread held a group of up to 51 such cells, and the whole-file
//! reading that names a broken cell held every cell.

use super::gzip_input::{gz, incompressible_strings, refused, verify_on, MB};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// How many small values each input holds: about what 1 MB of gzip can carry within 16 times
/// and one value per 8 bytes.
const VALUES: usize = 1_500_000;

/// Small values of eight bytes each with their comma (`1000000,`).
fn values(n: usize) -> Value {
    Value::Array(vec![json!(1_000_000); n])
}

/// Strings of eight bytes each with their comma (`"ABCDE",`).
fn strings(n: usize) -> Value {
    Value::Array(vec![json!("ABCDE"); n])
}

/// Strings that do not compress, enough for `values` values of eight bytes to stay within 16
/// times once packed: they take about 3/4 of their size gzipped, the values almost nothing.
fn padding(values: usize) -> Value {
    let strings = 8 * values / 11 / 40_000 + 1;
    let text = incompressible_strings(strings, 40_000, 0x5DEE_CE66_D1CE_4E5B);
    serde_json::from_slice(&[&b"["[..], &text, b"]"].concat()).unwrap()
}

/// `file` written, packed and stored as `name` in `dir`: under 1 MB, within 16 times and within
/// one value per 8 bytes.
fn store(dir: &Path, name: &str, file: &Value) -> PathBuf {
    let text = serde_json::to_vec(file).unwrap();
    let packed = gz(&text);
    assert!(packed.len() < MB, "{name}: {} bytes packed", packed.len());
    let ratio = verify::input::MAX_RATIO;
    assert!(text.len() as u64 <= packed.len() as u64 * ratio, "{name}");
    assert!(verify::load::within_limits(&text).is_ok(), "{name}");
    let path = dir.join(name);
    std::fs::write(&path, packed).unwrap();
    path
}

/// The committed results file, its cells `times` times over.
fn results(times: usize) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/billing_credit.json");
    let mut file: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let cells = file["cells"].as_array().unwrap().clone();
    file["cells"] = Value::Array((0..times).flat_map(|_| cells.clone()).collect());
    file
}

/// A nemesis file built as the runner writes one, its trials `times` times over.
fn nemesis(times: usize) -> Value {
    let (file, _) = crate::common::nemesis_file();
    let mut file = serde_json::to_value(&file).unwrap();
    let trials = file["trials"].as_array().unwrap().clone();
    file["trials"] = Value::Array((0..times).flat_map(|_| trials.clone()).collect());
    file
}

/// The indices of the elements of `array` that carry a receipt.
fn with_receipts(file: &Value, array: &str) -> Vec<usize> {
    let elements = file[array].as_array().unwrap();
    (0..elements.len())
        .filter(|&i| elements[i]["receipt"].is_object())
        .collect()
}

/// The effect of the first entry of the receipt of element `i` of `array`.
fn effect<'f>(file: &'f mut Value, array: &str, i: usize) -> &'f mut Value {
    &mut file[array][i]["receipt"]["entries"][0]["effect"]
}

/// `file` with `VALUES` values spread over the receipts of its first `receipts` elements of
/// `array` that have one (each just under the limit at 30), and the padding in the first.
fn spread(mut file: Value, array: &str, receipts: usize) -> Value {
    let at = with_receipts(&file, array);
    assert!(at.len() >= receipts, "{} receipts", at.len());
    for &i in at.iter().take(receipts) {
        effect(&mut file, array, i)["values"] = values(VALUES / receipts);
    }
    effect(&mut file, array, at[0])["pad"] = padding(VALUES);
    file
}

/// Refused (exit 2) as holding more values than one element or member may, naming `at`,
/// within the promise on two and on eight threads.
fn refused_at(path: &Path, at: &str) {
    let err = refused(path);
    assert!(
        err.contains(&format!("at {at}: about ")) && err.contains("more than the limit of 65536"),
        "{err}"
    );
    let (code, _, _, peak) = verify_on(&[path.to_str().unwrap()], Some(8));
    assert_eq!(code, Some(2));
    if let Some(peak) = peak {
        assert!(peak <= 64 * MB, "on 8 threads: {} MB", peak / MB);
    }
}

/// Checked to the end (exit 1: the edited receipts fail) within the promise, on two and on
/// eight threads.
fn checked_within_the_promise(path: &Path) {
    for threads in [2, 8] {
        let (code, stdout, stderr, peak) = verify_on(&[path.to_str().unwrap()], Some(threads));
        assert_eq!(code, Some(1), "{threads} threads: {stdout}{stderr}");
        assert!(stdout.contains("FAILED"), "{stdout}");
        if let Some(peak) = peak {
            assert!(peak <= 64 * MB, "on {threads} threads: {} MB", peak / MB);
        }
    }
}

/// 1.5 million values in one receipt entry's effect (the forger's input: 359 MB before), in a
/// cell's list of journal kinds, in the head's list of columns, and in one nemesis trial's
/// receipt: refused before anything is built from them, naming where they are.
#[test]
fn values_past_the_limit_in_one_cell_trial_or_member_are_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = results(1);
    let cell = with_receipts(&file, "cells")[0];
    let one_cell = spread(file.clone(), "cells", 1);
    refused_at(
        &store(dir.path(), "effect.json.gz", &one_cell),
        &format!("cells[{cell}]"),
    );
    let mut kinds = file.clone();
    kinds["cells"][0]["journal_kinds"] = strings(VALUES);
    effect(&mut kinds, "cells", cell)["pad"] = padding(VALUES);
    refused_at(&store(dir.path(), "kinds.json.gz", &kinds), "cells[0]");
    let mut head = file;
    head["columns"] = strings(VALUES);
    effect(&mut head, "cells", cell)["pad"] = padding(VALUES);
    refused_at(&store(dir.path(), "head.json.gz", &head), "columns");
    let trials = nemesis(1);
    let trial = with_receipts(&trials, "trials")[0];
    let one_trial = spread(trials, "trials", 1);
    refused_at(
        &store(dir.path(), "trial.json.gz", &one_trial),
        &format!("trials[{trial}]"),
    );
}

/// The same values over 30 cells, each just under the limit (50,000 values): every cell is read,
/// its receipt checked and hashed (its text is not the signed one), within the promise
/// whatever the number of threads (100 MB on two threads before, as every thread held a group
/// of such cells and each cell's hash copied it into trees of values).
#[test]
fn many_cells_just_under_the_limit_are_checked_within_the_promise() {
    let dir = tempfile::tempdir().unwrap();
    let file = spread(results(5), "cells", 30);
    checked_within_the_promise(&store(dir.path(), "cells.json.gz", &file));
}

/// The same over 30 trials of a nemesis file.
#[test]
fn many_trials_just_under_the_limit_are_checked_within_the_promise() {
    let dir = tempfile::tempdir().unwrap();
    let file = nemesis(1);
    let times = 30usize.div_ceil(with_receipts(&file, "trials").len());
    let file = spread(nemesis(times), "trials", 30);
    checked_within_the_promise(&store(dir.path(), "trials.json.gz", &file));
}

/// Many cells just under the limit and the last one of the wrong shape: the file is refused as
/// the whole file's strict reading refuses it (the same path and message), without holding
/// every cell (165 MB before).
#[test]
fn a_broken_last_cell_is_named_without_holding_every_cell() {
    let dir = tempfile::tempdir().unwrap();
    let mut file = spread(results(5), "cells", 30);
    let last = file["cells"].as_array().unwrap().len() - 1;
    file["cells"][last]["repeat"] = json!("not a number");
    let path = store(dir.path(), "broken.json.gz", &file);
    let err = refused(&path);
    let text = serde_json::to_vec(&file).unwrap();
    let whole = verify::load::load_document(&text)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains(&format!("could not check: {whole}")),
        "{err}\n{whole}"
    );
    assert!(err.contains(&format!("at cells[{last}].repeat: ")), "{err}");
}

/// A results file whose cells are 1.5 million bare values (eight bytes each): refused at its
/// first cell without a list of them being kept (16 bytes each: 78 MB before).
#[test]
fn cells_that_are_bare_values_are_refused_without_listing_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut file = results(1);
    let mut cells = vec![padding(VALUES)];
    cells.extend(values(VALUES).as_array().unwrap().iter().cloned());
    file["cells"] = Value::Array(cells);
    let path = store(dir.path(), "bare.json.gz", &file);
    let err = refused(&path);
    assert!(err.contains("at cells[0]: invalid type: sequence"), "{err}");
    let (code, _, _, peak) = verify_on(&[path.to_str().unwrap()], Some(8));
    assert_eq!(code, Some(2));
    if let Some(peak) = peak {
        assert!(peak <= 64 * MB, "on 8 threads: {} MB", peak / MB);
    }
}

/// A value nested `levels` deep (arrays in arrays).
fn nested(levels: usize) -> Value {
    (1..levels).fold(json!([]), |inner, _| Value::Array(vec![inner]))
}

/// Many cells (trials) just under the limit and the last with a receipt nested 110 levels deep
/// inside itself (in an entry's effect):
/// past what a cell or trial read on its own may nest (100), within what the whole file may
/// (128). It is refused naming the array, within the promise on two and on eight threads,
/// without every cell being built at once to check the file whole (246 MB for the cells, 183 MB
/// for the trials, before: from the forger review of the memory change).
#[test]
fn a_last_element_nested_past_its_own_depth_is_refused_without_building_every_one() {
    let dir = tempfile::tempdir().unwrap();
    let cells = spread(results(5), "cells", 30);
    let file = nemesis(1);
    let times = 30usize.div_ceil(with_receipts(&file, "trials").len());
    let trials = spread(nemesis(times), "trials", 30);
    for (array, mut file) in [("cells", cells), ("trials", trials)] {
        // In a receipt entry's effect, which may hold any value.
        let last = *with_receipts(&file, array).last().unwrap();
        effect(&mut file, array, last)["deep"] = nested(110);
        let path = store(dir.path(), &format!("deep_{array}.json.gz"), &file);
        let err = refused(&path);
        assert!(
            err.contains(&format!(
                "at {array}: an element of {array} does not read on its own"
            )),
            "{err}"
        );
        let (code, _, _, peak) = verify_on(&[path.to_str().unwrap()], Some(8));
        assert_eq!(code, Some(2));
        if let Some(peak) = peak {
            assert!(peak <= 64 * MB, "{array} on 8 threads: {} MB", peak / MB);
        }
    }
}

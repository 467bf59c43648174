//! Compressed input (`*.json.gz`, or any file that starts with the gzip magic bytes): the
//! `verify` binary reads it as its decompressed text, gives the same report as for the plain
//! file (apart from the file's name), and refuses a gzip bomb, a truncated file and a corrupt one
//! as could-not-check (exit 2), naming the file and the limit, within the resource promises (no
//! more than 64 MB of memory and 1 MB printed for an input under 1 MB).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub(super) const MB: usize = 1024 * 1024;
/// Where GNU time is: it measures the binary's own peak resident size.
const TIME: &str = "/usr/bin/time";

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// Runs `verify` with `args`: exit code, standard output, standard error, peak resident size in
/// bytes (`None` without GNU time).
pub(super) fn verify(args: &[&str]) -> (Option<i32>, String, String, Option<usize>) {
    verify_on(args, None)
}

/// [`verify`] on `threads` threads (`RAYON_NUM_THREADS`) when given.
pub(super) fn verify_on(
    args: &[&str],
    threads: Option<usize>,
) -> (Option<i32>, String, String, Option<usize>) {
    let dir = tempfile::tempdir().unwrap();
    let measured = dir.path().join("rss");
    let timed = Path::new(TIME).exists();
    let mut cmd = if timed {
        let mut c = Command::new(TIME);
        c.arg("-f").arg("%M").arg("-o").arg(&measured);
        c.arg(env!("CARGO_BIN_EXE_verify"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_verify"))
    };
    if let Some(threads) = threads {
        cmd.env("RAYON_NUM_THREADS", threads.to_string());
    }
    let out = cmd.args(args).output().unwrap();
    let peak = std::fs::read_to_string(&measured)
        .ok()
        .and_then(|t| t.lines().last()?.trim().parse::<usize>().ok())
        .map(|kb| kb * 1024);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        peak,
    )
}

pub(super) fn gz(bytes: &[u8]) -> Vec<u8> {
    verify::input::compress(bytes).unwrap()
}

/// A genuine file and its compressed copy (under another name) give the same report, in text
/// and in `--json`, once the file names are set aside.
#[test]
fn a_compressed_file_gives_the_plain_files_report() {
    let dir = tempfile::tempdir().unwrap();
    for (name, source) in [
        ("results", "results/billing_credit.json"),
        (
            "shared_cap_nemesis",
            "verify/tests/fixtures/shared_cap_nemesis.json",
        ),
        (
            "receipt_original",
            "verify/tests/fixtures/billing_credit.original.json",
        ),
    ] {
        let plain = dir.path().join(format!("{name}.json"));
        let packed = dir.path().join(format!("{name}.json.gz"));
        let bytes = std::fs::read(repo(source)).unwrap();
        std::fs::write(&plain, &bytes).unwrap();
        std::fs::write(&packed, gz(&bytes)).unwrap();
        let (plain_s, packed_s) = (plain.to_str().unwrap(), packed.to_str().unwrap());
        for json in [false, true] {
            let flags: &[&str] = if json { &["--json"] } else { &[] };
            let a = verify(&[flags, &[plain_s]].concat());
            let b = verify(&[flags, &[packed_s]].concat());
            assert_eq!(a.0, b.0, "{name}: exit codes ({json})");
            assert!(matches!(a.0, Some(0 | 1)), "{name}: {a:?}");
            assert_eq!(
                a.1.replace(plain_s, "FILE"),
                b.1.replace(packed_s, "FILE"),
                "{name}: reports ({json})"
            );
            assert!(!a.1.is_empty(), "{name}: printed nothing");
        }
    }
}

/// What `verify` printed on standard error for a file it could not check: exit 2, one line
/// naming the file, within the promises (64 MB, 1 MB printed, no control character).
pub(super) fn refused(path: &Path) -> String {
    let (code, stdout, stderr, peak) = verify(&[path.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.len() <= MB);
    assert!(stderr.contains(&path.display().to_string()), "{stderr}");
    assert!(
        !stderr.chars().any(|c| c.is_control() && c != '\n'),
        "{stderr}"
    );
    if let Some(peak) = peak {
        assert!(peak <= 64 * MB, "used {} MB", peak / MB);
    }
    stderr
}

/// A gzip bomb: a few KB that expand to 4 MB (past the 1 MB any file may reach), and one of
/// under 1 MB that expands to 100 MB (past 16 times its size). Each is one member, as the
/// runner writes (several members are refused before any is read). Each is refused, naming the
/// limit, before its text is held: within 64 MB.
#[test]
fn a_gzip_bomb_is_refused_within_the_memory_promise() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let few_kb = dir.path().join("bomb.json.gz");
    std::fs::write(&few_kb, gz(&vec![b' '; 4 * MB])).unwrap();
    let big = dir.path().join("bomb-big.json");
    let mut encoder = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    let chunk = vec![b' '; MB];
    for _ in 0..100 {
        encoder.write_all(&chunk).unwrap();
    }
    let bomb = encoder.finish().unwrap();
    assert!(bomb.len() < MB, "{}", bomb.len());
    std::fs::write(&big, bomb).unwrap();
    for path in [&few_kb, &big] {
        let err = refused(path);
        assert!(
            err.contains("decompress past the limit of")
                && err.contains("gunzip -k")
                && err.contains("could not check"),
            "{err}"
        );
    }
    let err = refused(&few_kb);
    assert!(err.contains("limit of 1048576 bytes"), "{err}");
}

/// A truncated compressed file and a corrupt one: could not check, saying so and what to do.
#[test]
fn a_truncated_or_corrupt_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let full = gz(&std::fs::read(repo("results/billing_credit.json")).unwrap());
    let truncated = dir.path().join("truncated.json.gz");
    std::fs::write(&truncated, &full[..full.len() / 2]).unwrap();
    let mut bad = full.clone();
    bad[full.len() / 3] ^= 0xff;
    let corrupt = dir.path().join("corrupt.gz");
    std::fs::write(&corrupt, &bad).unwrap();
    // Two bytes of magic and nothing else.
    let magic = dir.path().join("magic.json");
    std::fs::write(&magic, [0x1f, 0x8b]).unwrap();
    for path in [&truncated, &corrupt, &magic] {
        let err = refused(path);
        assert!(
            err.contains("does not decompress") && err.contains("truncated or corrupt"),
            "{err}"
        );
    }
}

/// From the forger's review: a compressed file under 1 MB, within the ratio, whose `format`
/// member is an array of 700,000 small objects (padded with text that does not compress).
/// Its format was built as a tree before it was refused (860 MB at the old ratio); now it is
/// refused before anything is built, within 64 MB: as a member past the limit of values one
/// member may hold (`load::MAX_ELEMENT_VALUES`; a smaller one as not a string).
#[test]
fn a_format_member_that_is_a_huge_array_is_refused_without_being_built() {
    let mut text = b"{\"format\":[".to_vec();
    // Two values per 17 bytes: within the density limit (one value per 8 bytes at most).
    for _ in 0..700_000 {
        text.extend_from_slice(b"{\"a\":0}         ,");
    }
    text.extend_from_slice(b"{}],\"pad\":[");
    text.extend_from_slice(&incompressible_strings(26, 48_000, 0x2545_F491_4F6C_DD1D));
    text.extend_from_slice(b"]}");
    let packed = gz(&text);
    assert!(packed.len() < MB, "{}", packed.len());
    assert!(
        text.len() as u64 <= packed.len() as u64 * verify::input::MAX_RATIO,
        "within the ratio: {} of {}",
        text.len(),
        packed.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("format.json.gz");
    std::fs::write(&path, packed).unwrap();
    let err = refused(&path);
    assert!(
        err.contains("at format: about 1400002 JSON values") && err.contains("limit of 65536"),
        "{err}"
    );
}

/// Text that does not compress: `strings` strings of `each` base64-like letters from a fixed
/// generator started at `seed` (each under the 64 KB string limit), joined by commas.
pub(super) fn incompressible_strings(strings: usize, each: usize, seed: u64) -> Vec<u8> {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x = seed;
    let mut text = Vec::with_capacity(strings * (each + 3));
    for s in 0..strings {
        if s > 0 {
            text.push(b',');
        }
        text.push(b'"');
        for _ in 0..each {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            text.push(alphabet[(x % 64) as usize]);
        }
        text.push(b'"');
    }
    text
}

/// A results file under 1 MB of gzip whose 16 MB of text is mostly bare small values in its
/// `cells` (a forger's input): the density count refuses it before any list of its cells is
/// built. The cell reader once listed every element on each thread first and used 107 MB.
#[test]
fn dense_cells_in_a_small_gzip_are_refused_before_the_cells_are_listed() {
    let mut text = b"{\"format\":\"interlock-results/2\",\"pad\":[".to_vec();
    text.extend_from_slice(&incompressible_strings(33, 40_000, 0x9E37_79B9_7F4A_7C15));
    text.extend_from_slice(b"],\"cells\":[{\"a\":0},");
    // Objects every 1/64 of the array, where a part of the split may start.
    for _ in 0..64 {
        text.extend_from_slice(b"{\"a\":0},{\"a\":0},");
        text.extend_from_slice(&b"100,".repeat(56_000));
    }
    text.extend_from_slice(b"0]}");
    let packed = gz(&text);
    assert!(packed.len() < MB, "{}", packed.len());
    assert!(
        text.len() as u64 <= packed.len() as u64 * verify::input::MAX_RATIO,
        "within the ratio: {} of {}",
        text.len(),
        packed.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dense.json.gz");
    std::fs::write(&path, packed).unwrap();
    let err = refused(&path);
    assert!(err.contains("more than one per 8 bytes"), "{err}");
}

/// A results file under 1 MB of gzip whose text is 300,000 top-level members, each a short
/// string (within the density limit: a forger's input). Listed as members, with the set of keys
/// for the duplicate check, they took many times their text; the split stops past a thousand
/// and the file is read whole, which refuses it at its first unknown member, within 64 MB.
#[test]
fn many_top_level_members_in_a_small_gzip_are_refused_without_being_listed() {
    let mut text = b"{\"format\":\"interlock-results/2\"".to_vec();
    let value = "a".repeat(20);
    for i in 0..300_000u32 {
        text.extend_from_slice(format!(",\"k{i}\":\"{value}\"").as_bytes());
    }
    text.extend_from_slice(b"}");
    let packed = gz(&text);
    assert!(packed.len() < MB, "{}", packed.len());
    assert!(
        text.len() as u64 <= packed.len() as u64 * verify::input::MAX_RATIO,
        "within the ratio: {} of {}",
        text.len(),
        packed.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("members.json.gz");
    std::fs::write(&path, packed).unwrap();
    let err = refused(&path);
    assert!(err.contains("unknown field `k0`"), "{err}");
}

/// A fixed generator of bytes (xorshift), for texts that compress only so far.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// One in `one_in` times a byte of `choices`, otherwise `usual`.
    fn byte(&mut self, usual: u8, choices: &[u8], one_in: u64) -> u8 {
        let x = self.next();
        if x.is_multiple_of(one_in) {
            choices[((x >> 32) % choices.len() as u64) as usize]
        } else {
            usual
        }
    }
}

/// Writes `text` gzipped to a file in `dir` named `name`, checking that it is a forger's input
/// within the promise: under 1 MB, and within the ratio the reader allows.
fn small_gzip(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
    let packed = gz(text);
    assert!(packed.len() < MB, "{name}: {}", packed.len());
    assert!(
        text.len() as u64 <= packed.len() as u64 * verify::input::MAX_RATIO,
        "{name} within the ratio: {} of {}",
        text.len(),
        packed.len()
    );
    let path = dir.join(name);
    std::fs::write(&path, packed).unwrap();
    path
}

/// `count` copies of `item` joined by commas, each comma followed by `pad` bytes of whitespace
/// that varies (one in `one_in` is not a space), so that the list compresses no more than the
/// reader allows.
fn noisy_list(item: &[u8], count: usize, pad: usize, noise: &mut Noise, one_in: u64) -> Vec<u8> {
    let mut list = Vec::with_capacity(count * (item.len() + 1 + pad));
    for k in 0..count {
        if k > 0 {
            list.push(b',');
            for _ in 0..pad {
                list.push(noise.byte(b' ', b" \t\n\r", one_in));
            }
        }
        list.extend_from_slice(item);
    }
    list
}

/// The committed file `path` with its `cells` replaced by `copies` copies of its first cell that
/// `pick` takes, in which `mark` sets a one-element array `["@"]` whose element is replaced by
/// `inner`.
fn with_cells(
    path: &str,
    pick: impl Fn(&serde_json::Value) -> bool,
    mark: impl Fn(&mut serde_json::Value),
    inner: &[u8],
    copies: usize,
) -> Vec<u8> {
    let committed = std::fs::read_to_string(repo(path)).unwrap();
    let file: serde_json::Value = serde_json::from_str(&committed).unwrap();
    with_copies(file, "cells", pick, mark, inner, copies)
}

/// `file` with its array `array` (its last member once written) replaced by `copies` copies of
/// its first element that `pick` takes, in which `mark` sets a one-element array `["@"]` whose
/// element is replaced by `inner`.
fn with_copies(
    mut file: serde_json::Value,
    array: &str,
    pick: impl Fn(&serde_json::Value) -> bool,
    mark: impl Fn(&mut serde_json::Value),
    inner: &[u8],
    copies: usize,
) -> Vec<u8> {
    let elements = file.as_object_mut().unwrap().remove(array).unwrap();
    let mut element = elements
        .as_array()
        .unwrap()
        .iter()
        .find(|c| pick(c))
        .unwrap()
        .clone();
    mark(&mut element);
    let element = serde_json::to_string(&element).unwrap();
    let (before, after) = element.split_once("\"@\"").unwrap();
    let head = serde_json::to_string(&file).unwrap();
    let mut text = head.strip_suffix('}').unwrap().as_bytes().to_vec();
    text.extend_from_slice(format!(",\"{array}\":[").as_bytes());
    for k in 0..copies {
        if k > 0 {
            text.push(b',');
        }
        text.extend_from_slice(before.as_bytes());
        text.extend_from_slice(inner);
        text.extend_from_slice(after.as_bytes());
    }
    text.extend_from_slice(b"]}");
    text
}

/// `text` gzipped as `name` in `dir` ([`small_gzip`]) is refused within the promise, with an
/// error holding every one of `wanted`.
fn refused_naming(dir: &Path, name: &str, text: &[u8], wanted: &[&str]) {
    let err = refused(&small_gzip(dir, name, text));
    assert!(wanted.iter().all(|w| err.contains(w)), "{name}: {err}");
}

/// A string of 15 MB holding an escape, as a top-level key and as a top-level value (a forger's
/// input, from the review of the split). Decoding it makes a copy as long as its text: as a
/// key, the split copied it three times over (110 MB) and the strict reading's path once more;
/// as a value, the head's copy and the reader's decoding of it took 66 MB. Its text alone shows
/// it is past the limit, and it is refused before anything reads it, within 64 MB.
#[test]
fn a_string_past_the_limit_is_refused_before_it_is_decoded() {
    let alphanumeric = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut noise = Noise(0x2545_F491_4F6C_DD1D);
    let long: Vec<u8> = (0..15_000_000)
        .map(|_| noise.byte(b'a', alphanumeric, 40))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    for (name, before, after) in [
        ("value.json.gz", "\"pad\":\"\\n", "\"}"),
        ("key.json.gz", "\"\\n", "\":0}"),
    ] {
        let mut text = format!("{{\"format\":\"interlock-results/2\",{before}").into_bytes();
        text.extend_from_slice(&long);
        text.extend_from_slice(after.as_bytes());
        let wanted = ["the string at line 1 column", "limit of 65536 bytes"];
        refused_naming(dir.path(), name, &text, &wanted);
    }
}

/// A results file whose `columns` holds 1.9 million short strings (past the limit of values
/// of a member) and that the split does not take: its cells are too small to be a run's, or it
/// has more than a thousand members (a forger's input, from the review of the split). Read
/// whole, it was built past the limit (126 MB of a 1 MB gzip); the whole reading now applies
/// the split's limits first, and refuses it naming the member, within 64 MB.
#[test]
fn a_member_past_its_limit_is_refused_when_the_file_is_read_whole() {
    // Eight bytes a value, as the density limit allows.
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let columns = noisy_list(b"\"a\"", 1_900_001, 4, &mut noise, 10);
    let members: String = (0..1100).map(|i| format!(",\"k{i}\":0")).collect();
    let dir = tempfile::tempdir().unwrap();
    for (name, tail) in [
        (
            "tiny_cells.json.gz",
            ",\"cells\":[0,0,0,0,0,0,0,0]".to_owned(),
        ),
        ("many_members.json.gz", members),
    ] {
        let mut text = b"{\"format\":\"interlock-results/2\",\"columns\":[".to_vec();
        text.extend_from_slice(&columns);
        text.push(b']');
        text.extend_from_slice(tail.as_bytes());
        text.push(b'}');
        let wanted = ["at columns: about 1900002 JSON values", "limit of 65536"];
        refused_naming(dir.path(), name, &text, &wanted);
    }
}

/// An original results file (the Python implementation's format, read whole as a tree of
/// values) of 29 cells, each with 65,000 short strings in its `hand_check_log`: every cell just
/// under the limit of an element, so the split refuses none (a forger's input, from the review
/// of the split). Built whole it took 392 MB of a 1 MB gzip, and verified; such a file is now
/// refused by its count of values before it is built, within 64 MB.
#[test]
fn an_original_results_file_past_its_count_of_values_is_refused_before_it_is_built() {
    let mut noise = Noise(0xD1B5_4A32_D192_ED03);
    let log = noisy_list(b"\"a\"", 65_001, 4, &mut noise, 10);
    let text = with_cells(
        "results/reference/billing_credit.original.json",
        |c| c["hand_check_log"] == serde_json::json!([]),
        |c| c["hand_check_log"] = serde_json::json!(["@"]),
        &log,
        29,
    );
    let dir = tempfile::tempdir().unwrap();
    let wanted = ["more than the 65536 an original results file may hold"];
    refused_naming(dir.path(), "original.json.gz", &text, &wanted);
}

/// A results file of 24 copies of a committed cell whose receipt's entries are 62,000 bare
/// zeros each (within the limit of values of a cell; a forger's input, from the review of the
/// split). Every cell fails, and the report kept of each for the text output held a finding, a
/// problem and a listed kind for each bad entry, up to their caps (109 MB of a 1 MB gzip; with
/// `--json`, every report whole, 250 MB): a failing cell's report kept for the text output now
/// holds its first finding only, and `--json` keeps reports whole up to its output's budget.
#[test]
fn failing_cells_keep_no_more_than_the_text_output_prints() {
    let mut noise = Noise(0x0123_4567_89AB_CDEF);
    let entries = noisy_list(b"0", 62_000, 6, &mut noise, 13);
    let text = with_cells(
        "results/billing_credit.json",
        |c| c["receipt"]["entries"].is_array(),
        |c| c["receipt"]["entries"] = serde_json::json!(["@"]),
        &entries,
        24,
    );
    let dir = tempfile::tempdir().unwrap();
    let path = small_gzip(dir.path(), "bad_entries.json.gz", &text);
    let (code, stdout, stderr, peak) = verify(&[path.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("malformed_entry"), "{stdout}");
    assert!(stdout.len() + stderr.len() <= MB);
    if let Some(peak) = peak {
        assert!(peak <= 64 * MB, "used {} MB", peak / MB);
    }
    // With `--json` every report was kept whole (250 MB): now only up to the output's budget,
    // and the report says how many cells' reports were cut.
    let (code, stdout, stderr, peak) = verify(&["--json", path.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.len() + stderr.len() <= MB);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let cut = &report["files"][0]["report"]["cell_reports_cut"];
    assert!(cut.as_u64().is_some_and(|n| n > 0), "{cut}");
    if let Some(peak) = peak {
        assert!(peak <= 64 * MB, "--json used {} MB", peak / MB);
    }
    // Which reports are cut depends on the file alone, not on the threads.
    for threads in [1, 3] {
        let (_, other, _, _) = verify_on(&["--json", path.to_str().unwrap()], Some(threads));
        assert!(other == stdout, "{threads} threads");
    }
}

/// From the second forger review: a nemesis file's trials were read typed with their receipts'
/// entries as trees of values (some 300 bytes a one-member object), and hashed for the file's
/// signature as trees of values once more: 26 trials whose receipts list 31,000 `{"a":0}` each,
/// within the limit of values of a trial, took 75 MB of a 1 MB gzip. Each trial's receipt is now
/// read apart as a view of the text and hashed from it: checked to the end (the receipts and
/// the signature fail) within 64 MB, on two threads and on eight.
#[test]
fn nemesis_trials_whose_receipts_list_many_small_objects_are_checked_within_the_promise() {
    let (file, _) = crate::common::nemesis_file();
    let file = serde_json::to_value(&file).unwrap();
    let mut noise = Noise(0x0F1E_2D3C_4B5A_6978);
    let entries = noisy_list(br#"{"a":0}"#, 31_000, 8, &mut noise, 12);
    let text = with_copies(
        file,
        "trials",
        |t| t["receipt"]["entries"].is_array(),
        |t| t["receipt"]["entries"] = serde_json::json!(["@"]),
        &entries,
        26,
    );
    let dir = tempfile::tempdir().unwrap();
    let path = small_gzip(dir.path(), "small_objects.json.gz", &text);
    for threads in [2, 8] {
        let (code, stdout, stderr, peak) = verify_on(&[path.to_str().unwrap()], Some(threads));
        assert_eq!(code, Some(1), "{threads} threads: {stdout}{stderr}");
        assert!(stdout.contains("nemesis_receipt"), "{stdout}");
        assert!(stdout.len() + stderr.len() <= MB);
        if let Some(peak) = peak {
            assert!(peak <= 64 * MB, "on {threads} threads: {} MB", peak / MB);
        }
    }
}

/// A ticket of `element` (a shared_cap cell, or a nemesis trial's `cell`) carries a receipt.
fn has_receipt(element: &serde_json::Value) -> bool {
    let cell = element.get("cell").unwrap_or(element);
    cell["tickets"]
        .as_array()
        .is_some_and(|t| t.iter().any(|k| k["receipt"]["entries"].is_array()))
}

/// The first receipt's entries of `element` set to `["@"]`.
fn mark_receipt(element: &mut serde_json::Value) {
    let cell = match element.get("cell") {
        Some(_) => &mut element["cell"],
        None => element,
    };
    let tickets = cell["tickets"].as_array_mut().unwrap();
    let ticket = tickets
        .iter_mut()
        .find(|k| k["receipt"]["entries"].is_array())
        .unwrap();
    ticket["receipt"]["entries"] = serde_json::json!(["@"]);
}

/// A shared_cap file (results or nemesis, `path` holding `array`) with 26 copies of an element
/// whose receipt lists 31,000 `{"a":0}`, each within the limit of values of an element, in a
/// 1 MB gzip.
fn cap_small_objects(path: &str, array: &str) -> Vec<u8> {
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo(path)).unwrap()).unwrap();
    let mut noise = Noise(0x1357_9BDF_0246_8ACE);
    let entries = noisy_list(br#"{"a":0}"#, 31_000, 8, &mut noise, 12);
    with_copies(file, array, has_receipt, mark_receipt, &entries, 26)
}

/// From the forger reviews: shared_cap results and nemesis files were read whole, every
/// receipt's entries built as trees of values (some 300 bytes a one-member object) before the
/// signature was checked: 26 cells or trials whose receipts list 31,000 `{"a":0}` each took
/// 242 MB of a 1 MB gzip, pinned too. They are now read a cell or trial at a time: checked to
/// the end (the receipts and the signature fail) within 64 MB on two and on eight threads, and
/// with `--json`; pinned to the genuine key, stopped at the signature within 64 MB.
#[test]
fn shared_cap_files_whose_receipts_list_many_small_objects_are_checked_within_the_promise() {
    let dir = tempfile::tempdir().unwrap();
    for (path, array, name) in [
        ("results/shared_cap.json", "cells", "cap.json.gz"),
        (
            "verify/tests/fixtures/shared_cap_nemesis.json",
            "trials",
            "cap_nemesis.json.gz",
        ),
    ] {
        let text = cap_small_objects(path, array);
        let file = small_gzip(dir.path(), name, &text);
        let file = file.to_str().unwrap();
        let runs: [(&[&str], Option<usize>); 3] = [
            (&[file], Some(2)),
            (&[file], Some(8)),
            (&["--json", file], None),
        ];
        for (args, threads) in runs {
            let (code, stdout, stderr, peak) = verify_on(args, threads);
            assert_eq!(code, Some(1), "{name} {args:?}: {stdout}{stderr}");
            assert!(stdout.contains("signature"), "{name}: {stdout}");
            assert!(stdout.len() + stderr.len() <= MB);
            if let Some(peak) = peak {
                assert!(peak <= 64 * MB, "{name} {args:?}: {} MB", peak / MB);
            }
        }
        let genuine: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(repo(path)).unwrap()).unwrap();
        let key = genuine["environment"]["public_key"].as_str().unwrap();
        let (code, stdout, stderr, peak) = verify(&["--key", key, file]);
        assert_eq!(code, Some(1), "{name} pinned: {stdout}{stderr}");
        if let Some(peak) = peak {
            assert!(peak <= 64 * MB, "{name} pinned: {} MB", peak / MB);
        }
    }
}

/// The same shared_cap file with its last cell not reading (a member no cell has) is refused
/// naming that cell, within 64 MB: its cells are never built together to find it.
#[test]
fn a_shared_cap_file_whose_last_cell_does_not_read_is_refused_within_the_promise() {
    let mut text = cap_small_objects("results/shared_cap.json", "cells");
    let end = text.len() - b"}]}".len();
    assert_eq!(&text[end..], b"}]}");
    text.splice(end..end + 1, b",\"forged\":1}".iter().copied());
    let dir = tempfile::tempdir().unwrap();
    refused_naming(
        dir.path(),
        "cap_last.json.gz",
        &text,
        &["cells[25]", "forged"],
    );
}

/// From the second forger review of the split: the first pass kept every shared_cap cell
/// (trial) without its receipts for the summary, and so every ticket's other lists: 28 cells
/// whose first ticket lists 52,000 journal kinds `"a"` took 104 MB of a 1 MB gzip, pinned too.
/// Nothing of a cell is kept now but its counts: checked within 64 MB, pinned or not.
#[test]
fn shared_cap_cells_with_long_lists_of_short_strings_are_checked_within_the_promise() {
    let dir = tempfile::tempdir().unwrap();
    for (path, array, name) in [
        ("results/shared_cap.json", "cells", "kinds.json.gz"),
        (
            "verify/tests/fixtures/shared_cap_nemesis.json",
            "trials",
            "kinds_nemesis.json.gz",
        ),
    ] {
        let genuine: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(repo(path)).unwrap()).unwrap();
        let key = genuine["environment"]["public_key"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut noise = Noise(0x2468_ACE0_1357_9BDF);
        let kinds = noisy_list(br#""a""#, 52_000, 5, &mut noise, 9);
        let mark = |element: &mut serde_json::Value| {
            let cell = match element.get("cell") {
                Some(_) => &mut element["cell"],
                None => element,
            };
            cell["tickets"][0]["journal_kinds"] = serde_json::json!(["@"]);
        };
        let text = with_copies(genuine, array, |_| true, mark, &kinds, 28);
        let file = small_gzip(dir.path(), name, &text);
        let file = file.to_str().unwrap();
        for args in [vec![file], vec!["--key", key.as_str(), file]] {
            let (code, stdout, stderr, peak) = verify(&args);
            assert_eq!(code, Some(1), "{name} {args:?}: {stdout}{stderr}");
            if let Some(peak) = peak {
                assert!(peak <= 64 * MB, "{name} {args:?}: {} MB", peak / MB);
            }
        }
    }
}

/// A string of `len` bytes, mostly `a`, one in `one_in` another letter: text that compresses
/// about as much as the reader allows.
fn noisy_string(len: usize, noise: &mut Noise, one_in: u64) -> String {
    (0..len)
        .map(|_| char::from(noise.byte(b'a', b"bcdefghijklmnopq", one_in)))
        .collect()
}

/// From the third forger review: a file's head (its members but the cells or trials) was bounded
/// in values, not in bytes, and is held as text, typed, and hashed through a tree of values and
/// a canonical copy: 250 strings of 60,000 bytes as keys of a results file's summary took 95 MB
/// of a 1 MB gzip, pinned too (the same in a campaign's summary 73 MB, in a results file's
/// manifest 63 MB). A head past 4 MiB, or a manifest past its bytes per cell, is refused before
/// anything is built from it, by the split and by the whole reading alike.
#[test]
fn a_head_or_manifest_of_long_strings_is_refused_before_it_is_built() {
    let committed = std::fs::read_to_string(repo("results/billing_credit.json")).unwrap();
    let genuine: serde_json::Value = serde_json::from_str(&committed).unwrap();
    let mut noise = Noise(0x0DDB_A11C_0FFE_E000);
    let dir = tempfile::tempdir().unwrap();
    let mut summary = genuine.clone();
    let column = summary["summary"]["hand_check"].clone();
    for _ in 0..250 {
        let key = noisy_string(60_000, &mut noise, 33);
        summary["summary"][key] = column.clone();
    }
    let mut manifest = genuine.clone();
    let hashes = manifest["manifest"]["cells"].as_array_mut().unwrap();
    for _ in 0..240 {
        hashes.push(serde_json::json!(noisy_string(60_000, &mut noise, 33)));
    }
    for (name, file, at) in [
        ("long_head.json.gz", summary, "at $: "),
        ("long_manifest.json.gz", manifest, "at manifest: "),
    ] {
        let text = serde_json::to_vec(&file).unwrap();
        refused_naming(dir.path(), name, &text, &[at, "bytes of text"]);
        // The whole reading refuses it by the same rule.
        let whole = verify::load::load_document(&text).unwrap_err().to_string();
        assert!(whole.contains(at.trim_end_matches(": ")), "{name}: {whole}");
        assert!(whole.contains("bytes of text"), "{name}: {whole}");
    }
}

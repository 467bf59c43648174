//! The contract seen without its types: what the loader, the command line and the site's index
//! need of every registered scenario.

use super::errors::ReadError;
use super::file::ScenarioFile;
use super::stages::{check, Report};
use super::Scenario;
use crate::finding::Finding;
use crate::receipt::KeyCheck;
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;

/// A registered scenario, by name.
pub trait Registered: Sync {
    /// [`Scenario::NAME`].
    fn name(&self) -> &'static str;
    /// Reads a file of this scenario from its JSON text and runs the pipeline over it. `Err`
    /// names where the text is not a file of this scenario.
    fn check_text(&self, text: &[u8], key: &KeyCheck) -> Result<ScenarioReport, ReadError>;
}

/// A registry line: `&Entry::<MyScenario>::NEW`.
pub struct Entry<S>(PhantomData<fn() -> S>);

impl<S> Entry<S> {
    /// The line's value.
    pub const NEW: Entry<S> = Entry(PhantomData);
}

impl<S: Scenario> Registered for Entry<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }

    fn check_text(&self, text: &[u8], key: &KeyCheck) -> Result<ScenarioReport, ReadError> {
        Ok(match check(read::<S>(text)?, key) {
            Ok(verified) => ScenarioReport::from(verified.report()),
            Err(report) => ScenarioReport::from(&*report),
        })
    }
}

/// Reads a file of scenario `S` from its JSON text, strictly (no unknown member, no duplicate
/// key, within the limits of [`crate::load::within_limits`]).
pub fn read<S: Scenario>(text: &[u8]) -> Result<ScenarioFile<S>, ReadError> {
    // The limits every older format is read under, before anything is built: no duplicate key
    // (a map or an environment read twice would keep only its last), no long string, no file
    // denser than the runner writes.
    crate::load::within_limits(text).map_err(|e| ReadError::Limits(e.to_string()))?;
    containers_within_budget(text)?;
    let mut de = serde_json::Deserializer::from_slice(text);
    // Structs from objects only, as every other format is read (a cell or a receipt written as
    // an array of its values is not the file its schema describes).
    let file: ScenarioFile<S> = serde_path_to_error::deserialize(crate::load::MapOnly(&mut de))
        .map_err(|e| ReadError::Shape {
            path: crate::display::shorten(&e.path().to_string(), 120),
            why: crate::display::shorten(&e.inner().to_string(), crate::finding::SHOWN_CHARS),
        })?;
    de.end().map_err(|e| ReadError::Trailing(e.to_string()))?;
    Ok(file)
}

/// At least this many bytes of text per JSON object or array of a scenario file (plus
/// [`CONTAINER_ALLOWANCE`]): the runner's files hold one per 110 to 190 bytes, and every
/// container becomes a map or a vector in memory, built twice for the file's hash (a file of
/// nested `{"k":{…}}` holds one per 9 bytes and would take tens of times its size).
pub const MIN_BYTES_PER_CONTAINER: usize = 96;
/// Containers any scenario file may hold whatever its size.
pub const CONTAINER_ALLOWANCE: usize = 4096;
/// How deep a scenario file may nest objects and arrays (the runner's files nest at most 11).
pub const MAX_DEPTH: usize = 32;

/// Refuses a scenario file with more objects and arrays than its size allows, or nested deeper
/// than [`MAX_DEPTH`], counted in one pass over its text before anything is built.
fn containers_within_budget(text: &[u8]) -> Result<(), ReadError> {
    let (mut in_string, mut escaped) = (false, false);
    let (mut depth, mut deepest, mut containers) = (0usize, 0usize, 0usize);
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                containers += 1;
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let allowed = text.len() / MIN_BYTES_PER_CONTAINER + CONTAINER_ALLOWANCE;
    if containers > allowed {
        return Err(ReadError::Limits(format!(
            "limit: {containers} JSON objects and arrays in {} bytes: more than one per \
             {MIN_BYTES_PER_CONTAINER} bytes (at most {allowed}); the runner's files hold one \
             per 110 bytes or more",
            text.len()
        )));
    }
    if deepest > MAX_DEPTH {
        return Err(ReadError::Limits(format!(
            "limit: objects and arrays nested {deepest} deep, more than {MAX_DEPTH}"
        )));
    }
    Ok(())
}

/// Why a scenario file on the contract is refused when it comes compressed: read plain, its
/// text is its size on disk, and the checks hold at most a few times that; a compressed one
/// could expand to sixteen times its size, which its object trees and the hashing of each cell
/// would hold ten times over (a forger's review: 947 KB of gzip, 680 MB).
pub const COMPRESSED_REFUSED: &str = "a scenario file on the contract (interlock-scenario/1) is \
     read plain, never compressed: its text is then its size on disk, which bounds what the \
     checks hold; decompress it (gzip -d) and check the .json";

/// Why a text did not become a [`super::Verified`].
#[derive(Debug)]
pub enum Refused<S: Scenario> {
    /// It is not a file of the scenario.
    Unreadable(ReadError),
    /// It is one, and the pipeline found problems (the report names them).
    Unverified(Box<Report<S>>),
}

/// Reads a file of scenario `S` and runs the pipeline over it: what a renderer calls, so that
/// it renders only what passed.
pub fn read_and_check<S: Scenario>(
    text: &[u8],
    key: &KeyCheck,
) -> Result<super::Verified<S>, Refused<S>> {
    let file = read::<S>(text).map_err(Refused::Unreadable)?;
    check(file, key).map_err(Refused::Unverified)
}

/// [`Report`] without the scenario's types: the summary as JSON.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioReport {
    /// The scenario.
    pub scenario: &'static str,
    /// `pinned` or `self-attested`.
    pub key: &'static str,
    /// The key checked against (hex), once accepted.
    pub signer: Option<String>,
    /// Its fingerprint.
    pub fingerprint: Option<String>,
    /// The file's and every receipt's signatures verify.
    pub signed: bool,
    /// Read past the signature.
    pub read: bool,
    /// Cells in the file.
    pub cells: usize,
    /// Cells judged.
    pub judged: usize,
    /// Receipts verified.
    pub receipts: usize,
    /// No finding.
    pub ok: bool,
    /// Every finding (capped).
    pub findings: Vec<Finding>,
    /// The derived summary.
    pub summary: Option<serde_json::Value>,
}

impl<S: Scenario> From<&Report<S>> for ScenarioReport {
    fn from(r: &Report<S>) -> ScenarioReport {
        ScenarioReport {
            scenario: r.scenario,
            key: r.key,
            signer: r.signer.clone(),
            fingerprint: r.fingerprint.clone(),
            signed: r.signed,
            read: r.read,
            cells: r.cells,
            judged: r.judged,
            receipts: r.receipts,
            ok: r.ok,
            findings: r.findings.clone(),
            summary: r
                .summary
                .as_ref()
                .and_then(|s| serde_json::to_value(s).ok()),
        }
    }
}

/// What a command needs of a scenario file before checking it: which scenario, who it names
/// as signer, when and from which commit it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHead {
    /// The scenario the file states.
    pub scenario: String,
    /// The signer the file names (`signature.signer`).
    pub signer: Option<String>,
    /// `generated_at`.
    pub generated_at: String,
    /// `environment.git_commit` (`None` when not recorded).
    pub commit: Option<String>,
}

/// Whether `needle` occurs in `text`. Blocks of 64 bytes without the needle's rarest byte (its
/// `/`, or its first) are passed over whole, a test the compiler does many bytes at a time; in
/// the others every place is compared.
fn contains(text: &[u8], needle: &[u8]) -> bool {
    let k = needle.iter().position(|&b| b == b'/').unwrap_or(0);
    let Some(&mark) = needle.get(k) else {
        return true;
    };
    const BLOCK: usize = 64;
    text.chunks(BLOCK).enumerate().any(|(n, block)| {
        let hit = block.iter().fold(false, |hit, &b| hit | (b == mark));
        hit && block.iter().enumerate().any(|(j, &b)| {
            let at = (n * BLOCK + j).wrapping_sub(k);
            b == mark && text.get(at..).is_some_and(|rest| rest.starts_with(needle))
        })
    })
}

/// The head of a file on the contract ([`super::FORMAT`]); `None` for any other text, which is
/// then read as one of the older formats.
pub fn read_head(text: &[u8]) -> Option<FileHead> {
    #[derive(Deserialize)]
    struct Signature {
        signer: Option<String>,
    }
    #[derive(Deserialize)]
    struct Head {
        format: String,
        scenario: Option<String>,
        generated_at: Option<String>,
        // Kept as its text: the head is read before any limit is checked, so nothing of the
        // file is built as a tree here (every other member is skipped unbuilt).
        environment: Option<Box<serde_json::value::RawValue>>,
        signature: Option<Signature>,
    }
    #[derive(Deserialize)]
    struct Environment {
        git_commit: Option<String>,
    }
    // Only a text that names the format at all is parsed here: the older formats go on to their
    // own readers without a second parse.
    let named = contains(text, super::FORMAT.as_bytes());
    if !named {
        return None;
    }
    let head: Head = serde_json::from_slice(text).ok()?;
    if head.format != super::FORMAT {
        return None;
    }
    let commit = head
        .environment
        .and_then(|e| serde_json::from_str::<Environment>(e.get()).ok())
        .and_then(|e| e.git_commit);
    Some(FileHead {
        scenario: head.scenario.unwrap_or_default(),
        signer: head.signature.and_then(|s| s.signer),
        generated_at: head.generated_at.unwrap_or_default(),
        commit,
    })
}

#[cfg(test)]
mod search_tests {
    use super::contains;

    proptest::proptest! {
        /// The block-wise search finds exactly what comparing at every place finds.
        #[test]
        fn contains_finds_what_every_place_finds(text in "[ab/c]{0,200}", needle in "[ab/c]{0,5}") {
            let (text, needle) = (text.as_bytes(), needle.as_bytes());
            let everywhere = needle.is_empty() || text.windows(needle.len()).any(|w| w == needle);
            proptest::prop_assert_eq!(contains(text, needle), everywhere);
        }
    }

    #[test]
    fn contains_finds_the_format_across_blocks() {
        let needle = super::super::FORMAT.as_bytes();
        for at in 0..130 {
            let mut text = vec![b'x'; 200];
            text.splice(at..at + needle.len(), needle.iter().copied());
            assert!(contains(&text, needle), "{at}");
            assert!(!contains(&text[..at + needle.len() - 1], needle), "{at}");
        }
    }
}

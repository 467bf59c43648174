//! A failed check of a results file, bound to the JSON path of the value it is about.

use crate::problem::Problem;
use serde::Serialize;

/// One failed check of a results file: where (JSON path, entry), what (code), and the sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// JSON path of the value the check is about, e.g. `cells[4].invariant_held`.
    pub path: String,
    /// Machine code (a receipt problem code, or one of [`code`]).
    pub code: String,
    /// One sentence naming the cell, receipt or column.
    pub message: String,
    /// Entry index, when the finding is about one receipt entry.
    pub entry: Option<usize>,
    /// What the verifier derived, when the finding compares a stated value.
    pub expected: Option<String>,
    /// What the file states.
    pub found: Option<String>,
}

/// How much of a compared value a finding keeps (a long value is shown once, cut, with its size).
pub const SHOWN_CHARS: usize = 300;

/// How much of its message a finding keeps: a message quotes names a file chose (a trial id, a
/// credit id), and a file must not make every finding carry a long one.
pub const MESSAGE_CHARS: usize = 600;

/// A list of findings of one kind that a file can repeat (one per case credit, say): at most
/// [`crate::problem::LISTED_PER_CODE`] are kept, the rest only counted ([`Capped::finish`]).
#[derive(Debug, Default)]
pub struct Capped {
    listed: usize,
    left_out: usize,
}

impl Capped {
    /// Adds the finding `make` builds to `f`, or counts it once the list is full.
    pub fn push(&mut self, f: &mut Vec<Finding>, make: impl FnOnce() -> Finding) {
        if self.listed < crate::problem::LISTED_PER_CODE {
            self.listed += 1;
            f.push(make());
        } else {
            self.left_out += 1;
        }
    }

    /// Says, at `path` with `code`, how many findings were left out (`what`: what they are).
    pub fn finish(self, f: &mut Vec<Finding>, path: String, code: &str, what: &str) {
        if self.left_out > 0 {
            f.push(Finding::new(
                path,
                code,
                format!(
                    "{} more {what} (not listed; the first {} are)",
                    self.left_out,
                    crate::problem::LISTED_PER_CODE
                ),
            ));
        }
    }
}

impl Finding {
    /// A finding without a comparison.
    pub fn new(path: impl Into<String>, code: &str, message: impl Into<String>) -> Finding {
        Finding {
            path: path.into(),
            code: code.to_owned(),
            message: crate::display::shorten(&message.into(), MESSAGE_CHARS),
            entry: None,
            expected: None,
            found: None,
        }
    }

    /// A stated value differs from the derived one.
    pub fn mismatch(
        path: impl Into<String>,
        code: &str,
        message: impl Into<String>,
        expected: impl std::fmt::Display,
        found: impl std::fmt::Display,
    ) -> Finding {
        Finding {
            path: path.into(),
            code: code.to_owned(),
            message: crate::display::shorten(&message.into(), MESSAGE_CHARS),
            entry: None,
            expected: Some(crate::display::shorten(&expected.to_string(), SHOWN_CHARS)),
            found: Some(crate::display::shorten(&found.to_string(), SHOWN_CHARS)),
        }
    }

    /// A receipt problem, placed under the receipt at `receipt_path`.
    pub fn from_problem(receipt_path: &str, p: &Problem) -> Finding {
        let path = match p.entry {
            Some(e) => format!("{receipt_path}.entries[{e}]"),
            None => receipt_path.to_owned(),
        };
        Finding {
            path,
            code: p.code.clone(),
            message: crate::display::shorten(&p.message, MESSAGE_CHARS),
            entry: p.entry,
            expected: None,
            found: None,
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A finding about the file as a whole has no path to name.
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        write!(f, "[{}] {}", self.code, self.message)?;
        if let (Some(e), Some(x)) = (&self.expected, &self.found) {
            write!(f, " (expected {e}, found {x})")?;
        }
        Ok(())
    }
}

/// The machine codes of results-file findings (receipt findings use [`crate::problem::code`]).
pub mod code {
    /// An interlock cell has no receipt, or a receipt sits where none belongs.
    pub const RECEIPT_MISSING: &str = "receipt_missing";
    /// The receipt's effect id is not the one derived from the cell's case.
    pub const RECEIPT_NOT_BOUND: &str = "receipt_not_bound";
    /// The receipt's PROPOSED does not match the cell's case or decision.
    pub const PROPOSAL_MISMATCH: &str = "proposal_mismatch";
    /// The cell states a receipt-derived value (effect id, via, journal kinds, verify output) the
    /// receipt does not give.
    pub const RECEIPT_CLAIM_MISMATCH: &str = "receipt_claim_mismatch";
    /// The ground truth contradicts itself (credits, counts, sums).
    pub const GROUND_TRUTH_INCONSISTENT: &str = "ground_truth_inconsistent";
    /// `want` is not what the want rule derives.
    pub const WANT_MISMATCH: &str = "want_mismatch";
    /// `invariant_held` is not what the data gives.
    pub const INVARIANT_MISMATCH: &str = "invariant_mismatch";
    /// `answer_matches` is not what the data gives.
    pub const ANSWER_MISMATCH: &str = "answer_mismatch";
    /// `proof` is not what the record gives.
    pub const PROOF_MISMATCH: &str = "proof_mismatch";
    /// `outcome` disagrees with the receipt's final entry or the log.
    pub const OUTCOME_MISMATCH: &str = "outcome_mismatch";
    /// A summary number is not what the cells give.
    pub const SUMMARY_MISMATCH: &str = "summary_mismatch";
    /// The file's own structure is inconsistent (columns, signer key, cell fields).
    pub const FILE_INCONSISTENT: &str = "file_inconsistent";
    /// The file is not what the run signed in its manifest (or the manifest does not verify).
    pub const MANIFEST_MISMATCH: &str = "manifest_mismatch";
    /// The cells are not exactly the run's plan (rows x columns, or the selection, x repeats).
    pub const CELL_SET_MISMATCH: &str = "cell_set_mismatch";
    /// A fact the cell states differs from what its signed receipt records.
    pub const SIGNED_FACT_MISMATCH: &str = "signed_fact_mismatch";
    /// A judged cell was not ended by the runner's SIGKILL, or a HARNESS_ERROR carries no evidence.
    pub const CRASH_NOT_PROVEN: &str = "crash_not_proven";
    /// A sum over the file's numbers leaves the range of a 64-bit integer.
    pub const ARITHMETIC_OVERFLOW: &str = "arithmetic_overflow";
    /// A receipt in a results file carries no signed head, so nothing proves it is complete.
    pub const RECEIPT_UNSEALED: &str = "receipt_unsealed";
    /// A credit's `interlock_dispatch` anchor is missing or is not the receipt's DISPATCHED hash.
    pub const ANCHOR_MISMATCH: &str = "anchor_mismatch";
}

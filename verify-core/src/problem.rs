//! A problem found in a receipt: which entry, which kind, a machine code and one sentence.
//!
//! Every code a receipt check can produce is a constant in [`code`], so callers (and tests) can
//! match on them without spelling strings.

use serde::Serialize;

/// One failed check of a receipt, bound to the entry it was found in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Index of the entry in the bundle, or `None` for a problem of the whole receipt.
    pub entry: Option<usize>,
    /// The entry's `kind` as stored (when it had one).
    pub kind: Option<String>,
    /// Machine code, one of the constants in [`code`].
    pub code: String,
    /// One sentence naming the effect and the entry.
    pub message: String,
}

impl Problem {
    /// A problem of the receipt as a whole (no single entry to blame).
    pub fn receipt(code: &str, message: impl Into<String>) -> Problem {
        Problem {
            entry: None,
            kind: None,
            code: code.to_owned(),
            message: message.into(),
        }
    }

    /// A problem found in entry `index` (of kind `kind`, when it has one).
    pub fn at(index: usize, kind: Option<&str>, code: &str, message: impl Into<String>) -> Problem {
        Problem {
            entry: Some(index),
            kind: kind.map(shown_kind),
            code: code.to_owned(),
            message: message.into(),
        }
    }

    /// A problem found in entry `index` of effect `eid`, its message naming both:
    /// `effect <eid>: entry <index> (<kind>) <what>`.
    pub fn in_entry(
        eid: &str,
        index: usize,
        kind: Option<&str>,
        code: &str,
        what: &str,
    ) -> Problem {
        let shown = kind
            .map(|k| format!(" ({})", shown_kind(k)))
            .unwrap_or_default();
        let message = format!("effect {eid}: entry {index}{shown} {what}");
        Problem::at(index, kind, code, message)
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.entry, &self.kind) {
            (Some(i), Some(k)) => write!(f, "entry {i} ({k}): ")?,
            (Some(i), None) => write!(f, "entry {i}: ")?,
            _ => {}
        }
        write!(f, "[{}] {}", self.code, self.message)
    }
}

/// An entry's `kind` as a problem shows it: cut to 40 characters, so a long forged kind is not
/// repeated in full by every problem of its entry.
pub fn shown_kind(kind: &str) -> String {
    crate::text::shorten(kind, 40)
}

/// At most this many problems of one code are listed per stage of a receipt's check (its
/// entries, its replay, its signatures); the rest are counted in one [`code::PROBLEMS_NOT_LISTED`].
/// A receipt of a few hundred thousand empty entries then costs a few hundred problems, not a
/// few per entry.
pub const LISTED_PER_CODE: usize = 64;

/// The problems one stage of a receipt's check found: at most [`LISTED_PER_CODE`] of each code
/// kept, the rest only counted. Never empty once a problem was pushed, so a receipt with a
/// problem stays invalid however many are left out.
#[derive(Debug, Default)]
pub struct Listing {
    listed: Vec<Problem>,
    /// Per code seen: how many problems of it were pushed.
    seen: Vec<(String, usize)>,
}

impl Listing {
    /// Keep `problem` if fewer than [`LISTED_PER_CODE`] of its code are kept; count it either way.
    pub fn push(&mut self, problem: Problem) {
        let count = match self.seen.iter_mut().find(|(c, _)| *c == problem.code) {
            Some((_, n)) => n,
            None => {
                self.seen.push((problem.code.clone(), 0));
                match self.seen.last_mut() {
                    Some((_, n)) => n,
                    None => return,
                }
            }
        };
        *count += 1;
        if *count <= LISTED_PER_CODE {
            self.listed.push(problem);
        }
    }

    /// The problems kept, then one problem of the receipt per code with problems left out,
    /// naming the code and how many.
    pub fn into_problems(self, eid: &str) -> Vec<Problem> {
        let mut problems = self.listed;
        for (c, n) in self.seen {
            if let Some(more) = n.checked_sub(LISTED_PER_CODE).filter(|m| *m > 0) {
                let what = format!(
                    "effect {eid}: {more} more problems of code {c} are not listed (the first {LISTED_PER_CODE} are)"
                );
                problems.push(Problem::receipt(code::PROBLEMS_NOT_LISTED, what));
            }
        }
        problems
    }
}

/// The machine codes of receipt problems.
pub mod code {
    /// The bundle's `format` is neither `interlock-receipt/1` nor the original Python format.
    pub const UNKNOWN_FORMAT: &str = "unknown_format";
    /// The bundle's effect id has the wrong shape for its format.
    pub const BAD_EFFECT_ID: &str = "bad_effect_id";
    /// The bundle holds no entries.
    pub const EMPTY_RECEIPT: &str = "empty_receipt";
    /// An entry is not an object, or a field has the wrong type or is missing.
    pub const MALFORMED_ENTRY: &str = "malformed_entry";
    /// An entry's `v` is not a version this verifier knows.
    pub const UNKNOWN_VERSION: &str = "unknown_version";
    /// An entry's `effect_id` is not the bundle's.
    pub const FOREIGN_ENTRY: &str = "foreign_entry";
    /// An entry's `kind` is not one this verifier knows.
    pub const UNKNOWN_KIND: &str = "unknown_kind";
    /// An entry's stored `hash` is not the hash of its content.
    pub const HASH_MISMATCH: &str = "hash_mismatch";
    /// An entry cannot be put into canonical form (a float, an unsafe integer).
    pub const UNCANONICAL_ENTRY: &str = "uncanonical_entry";
    /// An entry's `prev` is not the hash of the entry before it.
    pub const BROKEN_LINK: &str = "broken_link";
    /// An entry's `signer` is not a valid ed25519 public key.
    pub const BAD_SIGNER: &str = "bad_signer";
    /// The signing key is weak (small order) or has a torsion component.
    pub const WEAK_KEY: &str = "weak_key";
    /// The signer is not the pinned (or published) key.
    pub const WRONG_SIGNER: &str = "wrong_signer";
    /// Entries of one receipt are signed by different keys.
    pub const MIXED_SIGNERS: &str = "mixed_signers";
    /// An entry's `sig` is malformed or does not verify for its signer.
    pub const BAD_SIGNATURE: &str = "bad_signature";
    /// The first entry is not PROPOSED.
    pub const FIRST_NOT_PROPOSED: &str = "first_not_proposed";
    /// A DISPATCHED with no AUTHORIZED before it.
    pub const DISPATCH_WITHOUT_AUTHORIZATION: &str = "dispatch_without_authorization";
    /// A DISPATCHED while an earlier dispatch was still open (a second send).
    pub const DISPATCH_WHILE_OPEN: &str = "dispatch_while_open";
    /// A DISPATCHED after the effect was already COMMITTED.
    pub const DISPATCH_AFTER_COMMIT: &str = "dispatch_after_commit";
    /// A COMMITTED that closes no open dispatch (for example a forged lone commit).
    pub const COMMIT_WITHOUT_DISPATCH: &str = "commit_without_dispatch";
    /// More than one COMMITTED.
    pub const MULTIPLE_COMMITS: &str = "multiple_commits";
    /// A resolving REFUSED that closes no open dispatch.
    pub const RESOLVES_NOTHING: &str = "resolves_nothing";
    /// An AMBIGUOUS that closes no open dispatch.
    pub const AMBIGUOUS_WITHOUT_DISPATCH: &str = "ambiguous_without_dispatch";
    /// A DISPATCHED sends a payload other than the one the first PROPOSED fixed.
    pub const PAYLOAD_CHANGED: &str = "payload_changed";
    /// The effect id is not derived from the first PROPOSED's `request_id` (or `effect`).
    pub const EFFECT_ID_MISMATCH: &str = "effect_id_mismatch";
    /// A send that counts was not covered by a live, unrevoked grant within its cap.
    pub const UNAUTHORIZED_SEND: &str = "unauthorized_send";
    /// A send that counts recorded premise violations (or none at all).
    pub const PREMISES_VIOLATED: &str = "premises_violated_at_send";
    /// A COMMITTED's `via` is not one of the known ways.
    pub const UNKNOWN_VIA: &str = "unknown_via";
    /// A settling entry's in-flight bound was counted from before the last resend answer that
    /// said a request under the key was still executing (`resend_answers`, DESIGN §4.10).
    pub const BOUND_BEFORE_IN_USE: &str = "bound_before_in_use";
    /// A settling entry that rests on the in-flight bound was written before the bound had
    /// passed since it was counted: the "not found" it trusted came too early to mean anything.
    pub const BOUND_NOT_WAITED: &str = "bound_not_waited";
    /// A REFUSED target_failed_at_recovery whose last resend answer said the request was still
    /// executing: recovery gave up on a request the service said was in flight.
    pub const GAVE_UP_WHILE_IN_USE: &str = "gave_up_while_in_use";
    /// More problems of one code than [`super::LISTED_PER_CODE`]: the rest are counted, not listed.
    pub const PROBLEMS_NOT_LISTED: &str = "problems_not_listed";
}

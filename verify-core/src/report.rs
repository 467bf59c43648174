//! What one receipt proves, as the core derives it: the report its checks fill in (data only)
//! and how its values print.

use crate::entry::ReceiptBundle;
use crate::problem::Problem;
use serde::{Serialize, Serializer};
use serde_json::Value;

/// Whether the effect happened at the target, as the receipt proves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Happened {
    /// A COMMITTED entry records it.
    Yes,
    /// Nothing was sent, or every send was refused as never landed.
    No,
    /// An AMBIGUOUS entry, or a dispatch still open: nobody can know.
    Unknown,
}

impl Happened {
    /// Whether this agrees with the target holding (`true`) or not holding the effect.
    /// `Unknown` agrees with neither.
    pub fn agrees_with(self, exists: bool) -> bool {
        matches!(
            (self, exists),
            (Happened::Yes, true) | (Happened::No, false)
        )
    }
}

impl Serialize for Happened {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Happened::Yes => s.serialize_bool(true),
            Happened::No => s.serialize_bool(false),
            Happened::Unknown => s.serialize_str("unknown"),
        }
    }
}

impl std::fmt::Display for Happened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Happened::Yes => "true",
            Happened::No => "false",
            Happened::Unknown => "unknown",
        })
    }
}

/// The last refusal of an effect that did not happen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// Machine code (`None` in the original format, which had none).
    pub code: Option<String>,
    /// The human reason (a list of reasons in the original is joined with `"; "`).
    pub reason: String,
}

/// What one receipt proves, and every problem found in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReceiptReport {
    /// The bundle's effect id.
    pub effect_id: String,
    /// `interlock-receipt/1` or `python-original` (or the unknown format found).
    pub format: String,
    /// No problem was found.
    pub valid: bool,
    /// Every entry belongs to the effect, its hash recomputes and its `prev` links.
    pub chain_consistent: bool,
    /// Every entry carries a valid signature; `None` for the unsigned original format.
    pub signed: Option<bool>,
    /// `pinned`, `self-attested`, or `none` (unsigned format).
    pub key: String,
    /// The signer named by the entries (hex), if any.
    pub signer: Option<String>,
    /// Whether the effect happened, as the receipt proves it. Only a sealed receipt can prove
    /// that it did not: without a verified seal a receipt cut short reads as its prefix, so an
    /// unsealed one is at most [`Happened::Unknown`] where its entries say [`Happened::No`].
    pub happened: Happened,
    /// What the entries by themselves say happened, seal or no seal (a receipt cut after
    /// AUTHORIZED says `No`). Not a proof: kept to compare with verifiers that had no seal (the
    /// original Python implementation's statements).
    pub entries_say: Happened,
    /// Never committed twice, never dispatched while a dispatch was open or after a commit.
    pub happened_once: bool,
    /// Every send that counts had a live grant that covers it; `None` if nothing was sent.
    pub authorized_when_fired: Option<bool>,
    /// Every send that counts recorded no premise violation; `None` if nothing was sent.
    pub assumptions_held: Option<bool>,
    /// The last refusal, when the effect did not happen.
    pub refused: Option<Refusal>,
    /// The COMMITTED entry's evidence (`evidence`, or `result`/`found` in the original).
    pub evidence: Option<Value>,
    /// The COMMITTED entry's `via`.
    pub via: Option<String>,
    /// The kind of the last entry.
    pub final_kind: Option<String>,
    /// The last `rechecked` recorded (the checks at recovery).
    pub rechecked_at_recovery: Option<Value>,
    /// The entries' kinds, in order (`?` for an entry without one).
    pub journal_kinds: Vec<String>,
    /// Every problem, ordered by entry.
    pub problems: Vec<Problem>,
}

impl ReceiptReport {
    /// A report before any check: not valid, nothing proven, no problem yet.
    pub fn empty(bundle: &ReceiptBundle, key: &str) -> ReceiptReport {
        ReceiptReport::empty_for(&bundle.format, &bundle.effect_id, key)
    }

    /// [`ReceiptReport::empty`] of a bundle of this `format` and `effect_id`.
    pub fn empty_for(format: &str, effect_id: &str, key: &str) -> ReceiptReport {
        ReceiptReport {
            effect_id: effect_id.to_owned(),
            format: format.to_owned(),
            valid: false,
            chain_consistent: false,
            signed: None,
            key: key.to_owned(),
            signer: None,
            happened: Happened::Unknown,
            entries_say: Happened::Unknown,
            happened_once: true,
            authorized_when_fired: None,
            assumptions_held: None,
            refused: None,
            evidence: None,
            via: None,
            final_kind: None,
            rechecked_at_recovery: None,
            journal_kinds: Vec::new(),
            problems: Vec::new(),
        }
    }
}

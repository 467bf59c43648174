//! The journal as the model holds it: one effect's lines, each naming its own position (its
//! "hash") and the one before it (`prev`), and the state the gate folds them into.

use interlock::decide::EffectFacts;
use interlock::{RefusalCode, Via};
use serde_json::json;

/// What a line records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Entry {
    /// PROPOSED with this payload.
    Proposed(u8),
    /// DISPATCHED of this payload, written at this instant.
    Dispatched {
        /// The payload the dispatch sends.
        payload: u8,
        /// When it was written.
        at: u8,
    },
    /// COMMITTED via this.
    Committed(Via),
    /// REFUSED with this code; `resolves` when it closes an open dispatch.
    Refused {
        /// The refusal code.
        code: RefusalCode,
        /// It closes the open dispatch.
        resolves: bool,
    },
    /// AMBIGUOUS.
    Ambiguous,
}

impl Entry {
    /// The entry closes an open dispatch.
    pub fn resolves(self) -> bool {
        matches!(
            self,
            Entry::Committed(_) | Entry::Ambiguous | Entry::Refused { resolves: true, .. }
        )
    }
}

/// One journal line. The gate's lines carry a hash of their content and the hash of the
/// effect's previous line; here a line's identity is the position it was written at, so a
/// replayed copy of an old line keeps its old `id` and `prev` wherever it lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Line {
    /// The line's identity (its "hash"): the position it was first written at.
    pub id: u8,
    /// The identity of the line before it, `None` for the first.
    pub prev: Option<u8>,
    /// What it records.
    pub entry: Entry,
}

/// A filler for the journal's unused slots (never read: see `crate::bounded::Bounded`).
impl Default for Line {
    fn default() -> Line {
        Line {
            id: 0,
            prev: None,
            entry: Entry::Ambiguous,
        }
    }
}

/// What the gate derives from an effect's lines (`interlock`'s journal index does the same).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fold {
    /// Any line was read.
    pub seen: bool,
    /// The position of the open DISPATCHED.
    pub open: Option<usize>,
    /// A COMMITTED was read.
    pub committed: bool,
    /// An AMBIGUOUS was read.
    pub ambiguous: bool,
    /// A resolving REFUSED `target_error` was read.
    pub target_rejected: bool,
    /// The payload of the first PROPOSED.
    pub first_payload: Option<u8>,
    /// The first line that failed the hash/prev check, when lines are checked.
    pub corrupt_at: Option<usize>,
}

impl Fold {
    /// The admission facts for a proposal of `payload`, as `interlock`'s gate builds them.
    pub fn facts(&self, payload: u8) -> Option<EffectFacts> {
        self.seen.then(|| EffectFacts {
            open: self.open.is_some(),
            committed: self.committed,
            ambiguous: self.ambiguous,
            target_rejected: self.target_rejected,
            payload_differs: self.first_payload.is_some_and(|p| p != payload),
        })
    }
}

/// Fold the lines as the gate reads them. With `checked`, every line must be the next link
/// (its identity is its position, its `prev` the line before) and a DISPATCHED may not open a
/// second dispatch; the first that is not stops the fold as corrupt. Without, every line is
/// trusted (the broken reader).
pub fn fold(lines: &[Line], checked: bool) -> Fold {
    let mut f = Fold::default();
    for (i, line) in lines.iter().enumerate() {
        if checked {
            let links = usize::from(line.id) == i && line.prev.map(usize::from) == i.checked_sub(1);
            let double_open = matches!(line.entry, Entry::Dispatched { .. }) && f.open.is_some();
            if !links || double_open {
                f.corrupt_at = Some(i);
                return f;
            }
        }
        f.seen = true;
        match line.entry {
            Entry::Proposed(p) => {
                f.first_payload.get_or_insert(p);
            }
            Entry::Dispatched { .. } => f.open = Some(i),
            Entry::Committed(_) => {
                f.open = None;
                f.committed = true;
            }
            Entry::Ambiguous => {
                f.open = None;
                f.ambiguous = true;
            }
            Entry::Refused { code, resolves } => {
                if resolves {
                    f.open = None;
                    if code == RefusalCode::TargetError {
                        f.target_rejected = true;
                    }
                }
            }
        }
    }
    f
}

/// The line that closed the dispatch written at position `at`, if any: the first resolving
/// line after it (before any other DISPATCHED).
pub fn closing(lines: &[Line], at: usize) -> Option<Entry> {
    lines
        .iter()
        .skip(at + 1)
        .map(|l| l.entry)
        .take_while(|e| !matches!(e, Entry::Dispatched { .. }))
        .find(|e| e.resolves())
}

/// The genuine lines (a replayed copy is reported corrupt by the gate, never read) as the
/// entries `interlock::status_of` reads (kind, via, code, resolves).
pub fn as_entries(lines: &[Line]) -> Vec<serde_json::Value> {
    lines
        .iter()
        .enumerate()
        .filter(|(i, l)| usize::from(l.id) == *i)
        .map(|(_, l)| l)
        .map(|l| match l.entry {
            Entry::Proposed(_) => json!({"kind": "PROPOSED"}),
            Entry::Dispatched { .. } => json!({"kind": "DISPATCHED"}),
            Entry::Committed(via) => json!({"kind": "COMMITTED", "via": via.as_str()}),
            Entry::Refused { code, resolves } => {
                json!({"kind": "REFUSED", "code": code.as_str(), "resolves": resolves})
            }
            Entry::Ambiguous => json!({"kind": "AMBIGUOUS"}),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: u8, entry: Entry) -> Line {
        Line {
            id,
            prev: id.checked_sub(1),
            entry,
        }
    }

    #[test]
    fn a_replayed_dispatched_is_corrupt_when_checked_and_reopens_when_trusted() {
        let mut lines = vec![
            line(0, Entry::Proposed(0)),
            line(1, Entry::Dispatched { payload: 0, at: 0 }),
            line(2, Entry::Committed(Via::Send)),
        ];
        lines.push(lines[1]);
        let checked = fold(&lines, true);
        assert_eq!(checked.corrupt_at, Some(3));
        assert_eq!(checked.open, None);
        let trusted = fold(&lines, false);
        assert_eq!(trusted.open, Some(3));
        assert_eq!(closing(&lines, 1), Some(Entry::Committed(Via::Send)));
    }
}

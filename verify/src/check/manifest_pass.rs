//! Stage 2, under a pin only: every cell's hash compared with the signed manifest before any cell
//! is read further. Its output says, per group of cells, how each was found signed.

use crate::finding::Finding;
use crate::load::ElementGroup;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What the first pass under a pin established about one cell: its hash is the one the run
/// signed at its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Signed {
    /// By the canonical hash of its text (so its text also passes the strict scan).
    Text,
    /// By the typed cell's hash (its text's differs or has none, e.g. a field written as `null`
    /// that the typed cell leaves out).
    Typed,
}

/// How a group of cells compares with the manifest.
pub(super) enum Hashed {
    /// Every cell is the one the run signed, each as [`Signed`] says.
    Signed(Vec<Signed>),
    /// The first cell that is not (its finding).
    Differs(Finding),
}

/// Where the cells of a file come from, a group at a time: `hash` compares each cell of a range
/// with the manifest (the first pass under a pin); `read` gives the range's cells typed, told
/// what the first pass found of them (nothing, `&[]`, when it did not run).
pub(super) struct CellSource<H, R> {
    pub(super) hash: H,
    pub(super) read: R,
}

/// The first pass under a pin: every cell's hash compared with the manifest, in file order,
/// stopping at the first cell that differs (`Ok(Err(finding))`); otherwise what each group's
/// cells were found to be. Groups are hashed on several threads; one after a group where a cell
/// already differed (or did not read) is skipped. A cell that does not read is the error.
pub(super) fn hash_cells<E: Send>(
    groups: &[ElementGroup],
    hash: &(impl Fn(Range<usize>) -> Result<Hashed, E> + Sync),
) -> Result<Result<Vec<Vec<Signed>>, Finding>, E> {
    let stop = AtomicUsize::new(usize::MAX);
    let hashed: Vec<Result<Hashed, E>> = groups
        .par_iter()
        .map(|group| {
            let range = &group.elements;
            // Never reached by the walk below: it ends at or before the group that set `stop`.
            if range.start > stop.load(Ordering::Relaxed) {
                return Ok(Hashed::Signed(Vec::new()));
            }
            let hashed = hash(range.clone());
            if !matches!(hashed, Ok(Hashed::Signed(_))) {
                stop.fetch_min(range.start, Ordering::Relaxed);
            }
            hashed
        })
        .collect();
    let mut signed = Vec::with_capacity(groups.len());
    for group in hashed {
        match group? {
            Hashed::Signed(s) => signed.push(s),
            Hashed::Differs(f) => return Ok(Err(f)),
        }
    }
    Ok(Ok(signed))
}

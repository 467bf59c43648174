//! Per-row decisions (`runner --decide per-row`): the first cell of each row asks the decider,
//! the row's other cells wait for its saved decision and replay it.

use crate::cell::CellAbort;
use crate::matrix::CellSpec;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// A row's decision: the deciding cell's `decision.json` and label, or why it has none.
type RowDecision = Result<(PathBuf, String), NoRowDecision>;

/// Why a row has no decision to replay (the row's other cells are HARNESS_ERRORs that say so).
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum NoRowDecision {
    /// The deciding cell's decide worker did not end as designed; its problem.
    #[error("{0}")]
    Worker(String),
    /// The deciding cell's worker ended well but saved no decision.
    #[error("cell {0} saved no decision")]
    Unsaved(String),
    /// The deciding cell could not run.
    #[error("cell {0} did not run")]
    DidNotRun(String),
}

/// Per-row decisions: the first cell of each row (in plan order) asks the decider; the row's
/// other cells wait for its saved decision and replay it (DESIGN §4.6, issue: one decision per
/// row, so a difference between columns cannot come from the model).
pub struct RowDecisions {
    /// For each cell: the index of the cell that decides for its row (itself for that cell).
    source: Vec<usize>,
    /// Source cell index → its `decision.json` and label, or why it has none.
    published: Mutex<HashMap<usize, RowDecision>>,
    ready: Condvar,
}

impl RowDecisions {
    /// The sources for `cells`: the first cell with the same crash point, outage and repeat.
    pub fn new(cells: &[CellSpec]) -> RowDecisions {
        let source = cells
            .iter()
            .map(|c| {
                cells
                    .iter()
                    .position(|d| (d.crash, d.outage, d.repeat) == (c.crash, c.outage, c.repeat))
                    .unwrap_or(0)
            })
            .collect();
        RowDecisions {
            source,
            published: Mutex::new(HashMap::new()),
            ready: Condvar::new(),
        }
    }

    /// For a cell that replays its row's decision: that decision (waited for), or why there is
    /// none. `None` for the cell that decides.
    pub(crate) fn for_cell(
        &self,
        index: usize,
        cancel: &AtomicBool,
    ) -> Result<Option<RowDecision>, CellAbort> {
        match self.source.get(index).copied().filter(|&s| s != index) {
            Some(source) => self.wait(source, cancel).map(Some),
            None => Ok(None),
        }
    }

    /// For the cell that decides: publishes its saved decision at `path`, or why it has none
    /// (`decide` is the decide worker's problem, if any, or `Err` when it did not run).
    pub(crate) fn publish_saved<E>(
        &self,
        index: usize,
        path: &std::path::Path,
        label: &str,
        decide: Result<Option<&str>, E>,
    ) {
        if self.source.get(index) != Some(&index) {
            return;
        }
        let result = match decide {
            Ok(_) if path.is_file() => Ok((path.to_path_buf(), label.to_owned())),
            Ok(Some(problem)) => Err(NoRowDecision::Worker(problem.to_owned())),
            Ok(None) => Err(NoRowDecision::Unsaved(label.to_owned())),
            Err(_) => Err(NoRowDecision::DidNotRun(label.to_owned())),
        };
        self.publish(index, result);
    }

    fn publish(&self, index: usize, result: RowDecision) {
        if let Ok(mut map) = self.published.lock() {
            map.insert(index, result);
        }
        self.ready.notify_all();
    }

    /// Waits for the decision of cell `source` (the source runs before: cells are taken in
    /// plan order, so this never waits on a cell nobody runs).
    pub(crate) fn wait(
        &self,
        source: usize,
        cancel: &AtomicBool,
    ) -> Result<RowDecision, CellAbort> {
        let mut map = self
            .published
            .lock()
            .map_err(|_| CellAbort::Setup("a row decision lock was poisoned".into()))?;
        loop {
            if let Some(r) = map.get(&source) {
                return Ok(r.clone());
            }
            if cancel.load(Ordering::SeqCst) {
                return Err(CellAbort::Cancelled);
            }
            map = self
                .ready
                .wait_timeout(map, Duration::from_millis(200))
                .map_err(|_| CellAbort::Setup("a row decision lock was poisoned".into()))?
                .0;
        }
    }
}

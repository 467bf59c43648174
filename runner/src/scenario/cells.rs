//! What the contract scenarios' runs share: the planned cells run on `--jobs` threads and
//! gathered in plan order, and the nemesis list read from `--nemesis`.

use crate::cell::CellAbort;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Why a run of cells stopped before its end.
#[derive(Debug)]
pub(crate) enum CellsStopped {
    /// A cell could not even set up: the run cannot go on.
    CouldNotContinue(String),
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

/// Runs `one` on every planned cell on `jobs` threads (stopping when `cancel` is set or a
/// cell's setup fails), printing a line per cell; returns the cells in plan order.
pub(crate) fn run_cells<P: Sync, C: Send>(
    plan: &[P],
    jobs: usize,
    cancel: &AtomicBool,
    label: &(impl Fn(&P) -> String + Sync),
    one: &(impl Fn(usize, &P) -> Result<C, CellAbort> + Sync),
    line: &(impl Fn(&C) -> String + Sync),
) -> Result<Vec<C>, CellsStopped> {
    let n = plan.len();
    let slots = Mutex::new((0..n).map(|_| None).collect::<Vec<_>>());
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                if cancel.load(Ordering::SeqCst) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(p) = plan.get(i) else { break };
                let result = one(i, p);
                let shown = match &result {
                    Ok(c) => line(c),
                    Err(abort) => format!("{abort:?}"),
                };
                eprintln!("  [{}/{n}] {} {shown}", i + 1, label(p));
                if matches!(result, Err(CellAbort::Setup(_))) {
                    cancel.store(true, Ordering::SeqCst);
                }
                if let Ok(mut slots) = slots.lock() {
                    slots[i] = Some(result);
                }
            });
        }
    });
    let slots = slots.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut cells = Vec::with_capacity(n);
    for slot in slots {
        match slot {
            Some(Ok(c)) => cells.push(c),
            Some(Err(CellAbort::Setup(e))) => return Err(CellsStopped::CouldNotContinue(e)),
            Some(Err(CellAbort::Cancelled)) | None => return Err(CellsStopped::Interrupted),
        }
    }
    Ok(cells)
}

/// The nemeses `list` names: `all` (every one of `known`), or comma-separated names of
/// `known`; `Err` gives the first name that is not known (or the list, when it names none).
pub(crate) fn nemesis_names(list: &str, known: &[&str]) -> Result<Vec<String>, String> {
    if list.trim() == "all" {
        return Ok(known.iter().map(|n| (*n).to_owned()).collect());
    }
    let names: Vec<String> = list
        .split(',')
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .collect();
    match names.iter().find(|n| !known.contains(&n.as_str())) {
        Some(bad) => Err(bad.clone()),
        None if names.is_empty() => Err(list.to_owned()),
        None => Ok(names),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_nemesis_list_is_all_or_known_names_and_the_first_unknown_one_is_named() {
        let known = ["a", "b"];
        assert_eq!(super::nemesis_names("all", &known).unwrap(), ["a", "b"]);
        assert_eq!(super::nemesis_names(" b, a ", &known).unwrap(), ["b", "a"]);
        assert_eq!(super::nemesis_names("a,c", &known).unwrap_err(), "c");
        assert_eq!(super::nemesis_names(" , ", &known).unwrap_err(), " , ");
    }
}

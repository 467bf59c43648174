//! The shared_cap matrix: which cells a run has.

/// Where worker `a` is SIGKILLed: right before or right after its refund POST.
pub const CRASH_POINTS: [&str; 2] = ["before_send", "after_send"];
/// How the two workers overlap.
pub const OVERLAPS: [&str; 2] = ["sequential", "concurrent"];
/// The columns, in display order.
pub const COLUMNS: [&str; 5] = [
    "no_check",
    "hand_check",
    "hand_lock",
    HAND_PG_LOCK,
    "interlock",
];

/// The hand-written check under a PostgreSQL advisory lock, in the database the interlock
/// column's journal is in: the one column that needs the run's database.
pub const HAND_PG_LOCK: &str = "hand_pg_lock";

/// `environment.journal` of a run whose journal is the run's PostgreSQL database.
pub const DATABASE_JOURNAL: &str = "postgresql";

/// Whether `column` runs only where the run's journal is its PostgreSQL database (its lock lives
/// there).
pub fn needs_database(column: &str) -> bool {
    column == HAND_PG_LOCK
}

/// Why a `column` cell cannot be in a run whose journal is `journal`: the column needs the run's
/// database and the run had none (its lock would have been nowhere).
pub fn database_problem(column: &str, journal: &str) -> Option<String> {
    (needs_database(column) && journal != DATABASE_JOURNAL).then(|| {
        format!(
            "{column} takes its lock in the run's PostgreSQL database; this run's journal is \
             {:?}",
            crate::display::shorten(journal, 40)
        )
    })
}

/// The columns a run whose journal is `journal` runs, in display order: every column, but
/// `hand_pg_lock` only on a [`DATABASE_JOURNAL`].
pub fn columns_for(journal: &str) -> Vec<&'static str> {
    COLUMNS
        .into_iter()
        .filter(|c| journal == DATABASE_JOURNAL || !needs_database(c))
        .collect()
}

/// Every step at which worker `a` can be killed, per column: the steps that column passes, in
/// the order it passes them (`--every-step`). `premises` is the hand-written columns' cap check.
pub fn kill_steps(column: &str) -> &'static [&'static str] {
    match column {
        "no_check" => &["decision_saved", "before_send", "after_send"],
        "hand_check" | "hand_lock" | HAND_PG_LOCK => &[
            "decision_saved",
            "lookup",
            "approval",
            "premises",
            "send_logged",
            "before_send",
            "after_send",
            "sent_logged",
        ],
        "interlock" => &[
            "decision_saved",
            "proposed",
            "authorized",
            "dispatched",
            "before_send",
            "after_send",
            "committed",
        ],
        _ => &[],
    }
}

/// One cell of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PlannedCell {
    /// One of [`CRASH_POINTS`].
    pub crash_point: &'static str,
    /// One of [`OVERLAPS`].
    pub overlap: &'static str,
    /// One of [`COLUMNS`].
    pub column: &'static str,
    /// Repeat index.
    pub repeat: u32,
}

/// The default matrix: every crash point × overlap × one of `columns` (in [`COLUMNS`]),
/// `repeats` times, rows first.
pub fn plan(repeats: u32, columns: &[&'static str]) -> Vec<PlannedCell> {
    let mut out = Vec::new();
    for repeat in 0..repeats {
        for crash_point in CRASH_POINTS {
            for overlap in OVERLAPS {
                for &column in columns {
                    out.push(PlannedCell {
                        crash_point,
                        overlap,
                        column,
                        repeat,
                    });
                }
            }
        }
    }
    out
}

/// `--every-step`: worker `a` killed at every step its column passes ([`kill_steps`]) × overlap,
/// for each of `columns`, `repeats` times.
pub fn every_step_plan(repeats: u32, columns: &[&'static str]) -> Vec<PlannedCell> {
    let mut out = Vec::new();
    for repeat in 0..repeats {
        for overlap in OVERLAPS {
            for &column in columns {
                for &crash_point in kill_steps(column) {
                    out.push(PlannedCell {
                        crash_point,
                        overlap,
                        column,
                        repeat,
                    });
                }
            }
        }
    }
    out
}

/// A cell's labels are the plan's: a known column, a known overlap, and a step its column
/// passes. `Err((field, why))` names the first that is not (the loader refuses the file, so no
/// report ever repeats an unknown label).
pub fn labels_known(c: &super::record::CapCell) -> Result<(), (&'static str, String)> {
    if !COLUMNS.contains(&c.column.as_str()) {
        return Err(("column", format!("not one of {}", COLUMNS.join(", "))));
    }
    if !OVERLAPS.contains(&c.overlap.as_str()) {
        return Err(("overlap", format!("not one of {}", OVERLAPS.join(", "))));
    }
    if !is_kill_step(&c.column, &c.crash_point) {
        return Err((
            "crash_point",
            format!(
                "not a step the {} column passes ({})",
                c.column,
                kill_steps(&c.column).join(", ")
            ),
        ));
    }
    Ok(())
}

/// Whether worker `a` may be killed at `step` in `column`'s cells.
pub fn is_kill_step(column: &str, step: &str) -> bool {
    kill_steps(column).contains(&step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_plan_is_every_row_times_every_column() {
        let p = plan(2, &COLUMNS);
        assert_eq!(p.len(), 2 * 2 * 2 * 5);
        let distinct: std::collections::HashSet<_> = p.iter().collect();
        assert_eq!(distinct.len(), p.len());
        assert_eq!(p[0].column, "no_check");
        assert_eq!(p[3].column, HAND_PG_LOCK);
        assert_eq!(p[4].column, "interlock");
        assert_eq!(p[5].overlap, "concurrent");
    }

    #[test]
    fn hand_pg_lock_is_planned_only_on_a_database_journal_and_passes_hand_checks_steps() {
        assert_eq!(columns_for(DATABASE_JOURNAL), COLUMNS.to_vec());
        let on_files = columns_for("file");
        assert_eq!(on_files.len(), COLUMNS.len() - 1);
        assert!(!on_files.contains(&HAND_PG_LOCK));
        assert!(plan(1, &on_files).iter().all(|c| c.column != HAND_PG_LOCK));
        assert_eq!(kill_steps(HAND_PG_LOCK), kill_steps("hand_check"));
    }

    #[test]
    fn every_step_covers_each_columns_steps_and_the_named_points() {
        let p = every_step_plan(1, &COLUMNS);
        assert_eq!(p.len(), 2 * (3 + 8 + 8 + 8 + 7));
        for c in COLUMNS {
            for point in CRASH_POINTS {
                assert!(is_kill_step(c, point), "{c} {point}");
            }
        }
        assert!(!is_kill_step("no_check", "lookup"));
        assert!(is_kill_step("interlock", "dispatched"));
    }
}

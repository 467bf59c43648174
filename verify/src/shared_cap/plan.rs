//! The shared_cap matrix: which cells a run has.

/// Where worker `a` is SIGKILLed: right before or right after its refund POST.
pub const CRASH_POINTS: [&str; 2] = ["before_send", "after_send"];
/// How the two workers overlap.
pub const OVERLAPS: [&str; 2] = ["sequential", "concurrent"];
/// The columns, in display order.
pub const COLUMNS: [&str; 4] = ["no_check", "hand_check", "hand_lock", "interlock"];

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

/// The default matrix: every crash point × overlap × column, `repeats` times, rows first.
pub fn plan(repeats: u32) -> Vec<PlannedCell> {
    let mut out = Vec::new();
    for repeat in 0..repeats {
        for crash_point in CRASH_POINTS {
            for overlap in OVERLAPS {
                for column in COLUMNS {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_plan_is_every_row_times_every_column() {
        let p = plan(2);
        assert_eq!(p.len(), 2 * 2 * 2 * 4);
        let distinct: std::collections::HashSet<_> = p.iter().collect();
        assert_eq!(distinct.len(), p.len());
        assert_eq!(p[0].column, "no_check");
        assert_eq!(p[3].column, "interlock");
        assert_eq!(p[4].overlap, "concurrent");
    }
}

//! The experiment matrix: crash points, outages, columns, and the `--cells` spec language.
//!
//! A cell spec is `crash:outage:column`, e.g. `before_send:renewal:interlock`. Any position may be
//! `*` (all values of that position); `*` in the column position is the common case
//! (`after_send:proration:*` runs the row in all three columns).

pub use scenarios::billing_credit::{default_rows, Column, CrashPoint, Outage};

/// One cell to run: a row, a column and a repeat index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellSpec {
    /// Crash point.
    pub crash: CrashPoint,
    /// Outage.
    pub outage: Outage,
    /// Column.
    pub column: Column,
    /// Repeat index, from 0.
    pub repeat: u32,
}

impl CellSpec {
    /// `crash/outage/column` (plus `#repeat` when repeat > 0), for progress lines and errors.
    pub fn label(&self) -> String {
        let base = format!("{}/{}/{}", self.crash, self.outage, self.column);
        if self.repeat > 0 {
            format!("{base}#{}", self.repeat)
        } else {
            base
        }
    }
}

/// The planned run: rows and columns in display order and the cells in run order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Distinct (crash, outage) rows, in order of first mention (default: the reference order).
    pub rows: Vec<(CrashPoint, Outage)>,
    /// Columns used, in the canonical order no_check, hand_check, interlock.
    pub columns: Vec<Column>,
    /// Cells row-major, columns in canonical order, repeats innermost.
    pub cells: Vec<CellSpec>,
}

/// A `--cells` spec that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// Not three `:`-separated parts.
    #[error(
        "cell spec #{index} `{spec}`: expected crash:outage:column (three parts separated by `:`), \
         e.g. `before_send:renewal:interlock` or `after_send:proration:*`"
    )]
    Shape {
        /// 1-based position among the specs.
        index: usize,
        /// The spec as given.
        spec: String,
    },
    /// One part names no known value.
    #[error(
        "cell spec #{index} `{spec}`: unknown {what} `{value}`; use one of: {accepted}, or `*` for all"
    )]
    Unknown {
        /// 1-based position among the specs.
        index: usize,
        /// The spec as given.
        spec: String,
        /// `crash point`, `outage` or `column`.
        what: &'static str,
        /// The unknown value.
        value: String,
        /// The accepted values, comma separated.
        accepted: String,
    },
    /// `--cells` was given without any spec.
    #[error("--cells needs at least one spec, e.g. `--cells 'before_send:renewal:*'`")]
    Empty,
    /// `--repeat 0`.
    #[error("--repeat must be at least 1")]
    ZeroRepeat,
}

fn expand<T: Copy>(
    part: &str,
    all: &[T],
    parse: fn(&str) -> Option<T>,
    names: &[&str],
    what: &'static str,
    index: usize,
    spec: &str,
) -> Result<Vec<T>, SpecError> {
    let part = part.trim();
    if part == "*" {
        return Ok(all.to_vec());
    }
    parse(part)
        .map(|v| vec![v])
        .ok_or_else(|| SpecError::Unknown {
            index,
            spec: spec.to_string(),
            what,
            value: part.to_string(),
            accepted: names.join(", "),
        })
}

/// Parses `--cells` specs into (crash, outage, column) triples, in order, without duplicates.
pub fn parse_cells(specs: &[String]) -> Result<Vec<(CrashPoint, Outage, Column)>, SpecError> {
    if specs.is_empty() {
        return Err(SpecError::Empty);
    }
    let crash_names: Vec<&str> = CrashPoint::ALL.iter().map(|c| c.as_str()).collect();
    let outage_names: Vec<&str> = Outage::ALL.iter().map(|o| o.as_str()).collect();
    let column_names: Vec<&str> = Column::ALL.iter().map(|c| c.as_str()).collect();
    let mut out = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let index = i + 1;
        let parts: Vec<&str> = spec.trim().split(':').collect();
        if parts.len() != 3 || parts.iter().any(|p| p.trim().is_empty()) {
            return Err(SpecError::Shape {
                index,
                spec: spec.clone(),
            });
        }
        let crashes = expand(
            parts[0],
            &CrashPoint::ALL,
            |s| CrashPoint::parse(s).ok(),
            &crash_names,
            "crash point",
            index,
            spec,
        )?;
        let outages = expand(
            parts[1],
            &Outage::ALL,
            |s| Outage::parse(s).ok(),
            &outage_names,
            "outage",
            index,
            spec,
        )?;
        let columns = expand(
            parts[2],
            &Column::ALL,
            |s| Column::parse(s).ok(),
            &column_names,
            "column",
            index,
            spec,
        )?;
        for &crash in &crashes {
            for &outage in &outages {
                for &column in &columns {
                    let triple = (crash, outage, column);
                    if !out.contains(&triple) {
                        out.push(triple);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Builds the plan: the given triples (or the default matrix when `None`), each repeated.
pub fn plan(
    triples: Option<Vec<(CrashPoint, Outage, Column)>>,
    repeat: u32,
) -> Result<Plan, SpecError> {
    if repeat == 0 {
        return Err(SpecError::ZeroRepeat);
    }
    let triples = triples.unwrap_or_else(|| {
        default_rows()
            .into_iter()
            .flat_map(|(c, o)| Column::ALL.iter().map(move |&col| (c, o, col)))
            .collect()
    });
    let mut rows: Vec<(CrashPoint, Outage)> = Vec::new();
    for &(c, o, _) in &triples {
        if !rows.contains(&(c, o)) {
            rows.push((c, o));
        }
    }
    let columns: Vec<Column> = Column::ALL
        .into_iter()
        .filter(|col| triples.iter().any(|t| t.2 == *col))
        .collect();
    let mut cells = Vec::new();
    for &(c, o) in &rows {
        for &col in &columns {
            if triples.contains(&(c, o, col)) {
                for r in 0..repeat {
                    cells.push(CellSpec {
                        crash: c,
                        outage: o,
                        column: col,
                        repeat: r,
                    });
                }
            }
        }
    }
    Ok(Plan {
        rows,
        columns,
        cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn default_plan_is_the_reference_matrix() {
        let p = plan(None, 1).unwrap();
        assert_eq!(p.rows, default_rows());
        assert_eq!(p.columns, Column::ALL.to_vec());
        assert_eq!(p.cells.len(), 18);
        assert_eq!(p.cells[0].label(), "before_send/renewal/no_check");
        assert_eq!(p.cells[2].label(), "before_send/renewal/interlock");
        assert_eq!(
            p.cells[17].label(),
            "before_send/unrelated_credit/interlock"
        );
    }

    #[test]
    fn star_expands_columns_and_plan_keeps_first_mention_order() {
        let t = parse_cells(&s(&[
            "after_send:proration:interlock",
            "before_send:renewal:*",
        ]))
        .unwrap();
        assert_eq!(t.len(), 4);
        let p = plan(Some(t), 2).unwrap();
        assert_eq!(
            p.rows,
            vec![
                (CrashPoint::AfterSend, Outage::Proration),
                (CrashPoint::BeforeSend, Outage::Renewal)
            ]
        );
        assert_eq!(p.columns, Column::ALL.to_vec());
        assert_eq!(p.cells.len(), 8);
        assert_eq!(p.cells[0].label(), "after_send/proration/interlock");
        assert_eq!(p.cells[1].label(), "after_send/proration/interlock#1");
        assert_eq!(p.cells[2].label(), "before_send/renewal/no_check");
    }

    #[test]
    fn duplicates_are_dropped_and_stars_work_everywhere() {
        let t = parse_cells(&s(&["*:*:*", "before_send:renewal:no_check"])).unwrap();
        assert_eq!(t.len(), 2 * 4 * 3);
        let only_interlock =
            plan(Some(parse_cells(&s(&["*:renewal:interlock"])).unwrap()), 1).unwrap();
        assert_eq!(only_interlock.columns, vec![Column::Interlock]);
        assert_eq!(only_interlock.cells.len(), 2);
    }

    #[test]
    fn bad_specs_say_what_where_and_how_to_fix() {
        let e = parse_cells(&s(&["before_send:renewal:*", "before_send:renewal"])).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("#2"), "{text}");
        assert!(text.contains("crash:outage:column"), "{text}");

        let e = parse_cells(&s(&["mid_send:renewal:*"])).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("unknown crash point `mid_send`"), "{text}");
        assert!(text.contains("before_send, after_send"), "{text}");

        let e = parse_cells(&s(&["after_send:outage:*"])).unwrap_err();
        assert!(e.to_string().contains("unrelated_credit"));

        let e = parse_cells(&s(&["after_send:renewal:gate"])).unwrap_err();
        assert!(e.to_string().contains("no_check, hand_check, interlock"));

        assert_eq!(parse_cells(&[]).unwrap_err(), SpecError::Empty);
        assert!(matches!(
            parse_cells(&s(&["a::b"])).unwrap_err(),
            SpecError::Shape { .. }
        ));
        assert_eq!(plan(None, 0).unwrap_err(), SpecError::ZeroRepeat);
    }

    #[test]
    fn names_round_trip() {
        for c in CrashPoint::ALL {
            assert_eq!(CrashPoint::parse(c.as_str()).ok(), Some(c));
        }
        for o in Outage::ALL {
            assert_eq!(Outage::parse(o.as_str()).ok(), Some(o));
        }
        for c in Column::ALL {
            assert_eq!(Column::parse(&c.to_string()).ok(), Some(c));
        }
    }
}

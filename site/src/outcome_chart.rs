//! The outcomes figure: one row per fault, one bar per column, each bar the column's trials (or
//! cells) under that fault split by outcome: held or violated, within or beyond the column's
//! assumptions. Inline SVG with a title and a description, and the same figures as a table (its
//! text alternative). The counts are handed in; this module only draws them.

use crate::scenarios::Table;
use std::fmt::Write as _;

const WIDTH: u64 = 760;
const LABEL_W: u64 = 180;
const NUMBER_W: u64 = 58;
const ROW_H: u64 = 20;
const BAR_H: u64 = 13;
const TOP: u64 = 26;

/// What became of a trial or cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The invariant held, within the column's assumptions.
    Held,
    /// The invariant was violated within the column's assumptions: a failure of the column.
    Violated,
    /// Beyond the column's assumptions, and the invariant held all the same.
    BeyondHeld,
    /// Beyond the column's assumptions, and the invariant was violated.
    BeyondViolated,
    /// Counted apart: the fault never landed.
    Apart,
}

impl Outcome {
    /// Every outcome, in the order the bars stack them.
    pub const ALL: [Outcome; 5] = [
        Outcome::Held,
        Outcome::Violated,
        Outcome::BeyondHeld,
        Outcome::BeyondViolated,
        Outcome::Apart,
    ];

    /// The outcome in words, as the key and the table write it.
    pub fn words(self) -> &'static str {
        match self {
            Outcome::Held => "held",
            Outcome::Violated => "violated",
            Outcome::BeyondHeld => "beyond assumptions, held",
            Outcome::BeyondViolated => "beyond assumptions, violated",
            Outcome::Apart => "fault never landed (apart)",
        }
    }

    fn fill(self) -> &'static str {
        match self {
            Outcome::Held => "#2e7d4f",
            Outcome::Violated => "#a3161a",
            Outcome::BeyondHeld => "#a9cdb6",
            Outcome::BeyondViolated => "#e39a8f",
            Outcome::Apart => "#c8c8cc",
        }
    }

    fn violated(self) -> bool {
        matches!(self, Outcome::Violated | Outcome::BeyondViolated)
    }
}

/// One column's bar under one fault: how many trials or cells had each outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeBar {
    /// The column.
    pub column: String,
    /// Outcome and count, in [`Outcome::ALL`]'s order; zero counts may be left out.
    pub parts: Vec<(Outcome, u32)>,
}

impl OutcomeBar {
    fn total(&self) -> u64 {
        self.parts.iter().map(|(_, n)| u64::from(*n)).sum()
    }

    fn violated(&self) -> u64 {
        self.parts
            .iter()
            .filter(|(o, _)| o.violated())
            .map(|(_, n)| u64::from(*n))
            .sum()
    }

    /// The bar in words: `300: 280 held, 20 beyond assumptions, violated`.
    fn sentence(&self) -> String {
        let parts: Vec<String> = self
            .parts
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(o, n)| format!("{n} {}", o.words()))
            .collect();
        if parts.is_empty() {
            "none".to_owned()
        } else {
            format!("{}: {}", self.total(), parts.join(", "))
        }
    }
}

/// One fault's row: a bar per column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeRow {
    /// The fault (a nemesis, or a crash point and outage).
    pub fault: String,
    /// A bar per column, in the figure's column order.
    pub bars: Vec<OutcomeBar>,
}

/// The figure, ready to print: caption, SVG, a one-paragraph description and the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeFigure {
    /// What the figure shows.
    pub caption: String,
    /// The `<svg>` element: a panel per column side by side, for a wide screen.
    pub svg: String,
    /// The same figures for a narrow screen: a block per column, one under the other, each with
    /// a bar per fault, so no column is off the screen's edge.
    pub svg_narrow: String,
    /// The figure in words: what its bars are and how to read them.
    pub description: String,
    /// The figure's counts as a table (its text alternative).
    pub table: Table,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The figure of `rows` (every row's bars in `columns`' order); `id` keeps its SVG ids apart
/// from other figures on the page; `unit` is what a bar counts (`trials`, `cells`).
pub fn figure(
    id: &str,
    caption: &str,
    unit: &str,
    columns: &[String],
    rows: &[OutcomeRow],
) -> OutcomeFigure {
    let description = format!(
        "One row per fault, one bar per column; each bar is that column's {unit} under that fault, \
         split by outcome: dark green held, red violated, light green and pink the same beyond \
         the column's assumptions, grey a fault that never landed. The number after each bar is \
         the {unit} that violated the invariant over all its {unit}; the same figures are in \
         the table below."
    );
    OutcomeFigure {
        caption: caption.to_owned(),
        svg: svg(id, caption, &description, columns, rows),
        svg_narrow: svg_narrow(
            &format!("{id}-narrow"),
            caption,
            &description,
            columns,
            rows,
        ),
        description,
        table: Table {
            caption: format!("{caption}, as a table"),
            headers: std::iter::once("fault".to_owned())
                .chain(columns.iter().cloned())
                .collect(),
            rows: rows
                .iter()
                .map(|r| {
                    std::iter::once(r.fault.clone())
                        .chain(columns.iter().map(|c| {
                            r.bars
                                .iter()
                                .find(|b| &b.column == c)
                                .map_or_else(|| "not run".to_owned(), OutcomeBar::sentence)
                        }))
                        .collect()
                })
                .collect(),
        },
    }
}

fn svg(
    id: &str,
    caption: &str,
    description: &str,
    columns: &[String],
    rows: &[OutcomeRow],
) -> String {
    let n = u64::try_from(columns.len().max(1)).unwrap_or(1);
    let panel = (WIDTH - LABEL_W) / n;
    let bar_w = panel.saturating_sub(NUMBER_W).max(20);
    let mut body = String::new();
    for (i, c) in (0u64..).zip(columns) {
        let _ = writeln!(
            body,
            "<text x=\"{}\" y=\"14\" font-weight=\"bold\">{}</text>",
            LABEL_W + i * panel,
            esc(c)
        );
    }
    let mut y = TOP;
    for row in rows {
        let _ = writeln!(
            body,
            "<text x=\"0\" y=\"{}\">{}</text>",
            y + BAR_H - 2,
            esc(&row.fault)
        );
        for (i, c) in (0u64..).zip(columns) {
            let x0 = LABEL_W + i * panel;
            match row.bars.iter().find(|b| &b.column == c) {
                Some(bar) => draw_bar(&mut body, bar, x0, y, bar_w),
                None => {
                    let _ = writeln!(
                        body,
                        "<text x=\"{x0}\" y=\"{}\" fill=\"#5b5b60\">not run</text>",
                        y + BAR_H - 2
                    );
                }
            }
        }
        y += ROW_H;
    }
    let key = key(y + 8);
    let height = y + 36;
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart outcomes" viewBox="0 0 {WIDTH} {height}" role="img" aria-labelledby="{id}-title {id}-desc">
<title id="{id}-title">{}</title>
<desc id="{id}-desc">{}</desc>
<g font-size="11" font-family="sans-serif">
{body}{key}</g>
</svg>"#,
        esc(caption),
        esc(description)
    )
}

/// Narrow-screen drawing: the width of its viewBox, of its fault labels and of its bars.
const NARROW_WIDTH: u64 = 360;
const NARROW_LABEL_W: u64 = 150;
const NARROW_BAR_W: u64 = 150;

/// The figure for a narrow screen: for each column, its name, then one row per fault (the
/// fault's label, the column's bar under it, its violations over its total); the key below.
fn svg_narrow(
    id: &str,
    caption: &str,
    description: &str,
    columns: &[String],
    rows: &[OutcomeRow],
) -> String {
    let mut body = String::new();
    let mut y = 14;
    for c in columns {
        let _ = writeln!(
            body,
            "<text x=\"0\" y=\"{y}\" font-weight=\"bold\">{}</text>",
            esc(c)
        );
        y += 8;
        for row in rows {
            let _ = writeln!(
                body,
                "<text x=\"0\" y=\"{}\">{}</text>",
                y + BAR_H - 2,
                esc(&shorten_label(&row.fault, 26))
            );
            match row.bars.iter().find(|b| &b.column == c) {
                Some(bar) => draw_bar(&mut body, bar, NARROW_LABEL_W, y, NARROW_BAR_W),
                None => {
                    let _ = writeln!(
                        body,
                        "<text x=\"{NARROW_LABEL_W}\" y=\"{}\" fill=\"#5b5b60\">not run</text>",
                        y + BAR_H - 2
                    );
                }
            }
            y += ROW_H;
        }
        y += 14;
    }
    let key = key_stacked(y + 4);
    let height = y + 4 + 16 * u64::try_from(Outcome::ALL.len()).unwrap_or(5);
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart outcomes-narrow" viewBox="0 0 {NARROW_WIDTH} {height}" role="img" aria-labelledby="{id}-title {id}-desc">
<title id="{id}-title">{}</title>
<desc id="{id}-desc">{}</desc>
<g font-size="11" font-family="sans-serif">
{body}{key}</g>
</svg>"#,
        esc(caption),
        esc(description)
    )
}

/// `label` cut to `max` characters (an ellipsis last) for a narrow figure's fault column; the
/// table under the figure keeps it whole.
fn shorten_label(label: &str, max: usize) -> String {
    if label.chars().count() <= max {
        return label.to_owned();
    }
    let mut cut: String = label.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The key, one outcome per line, its first line's baseline at `y`.
fn key_stacked(y: u64) -> String {
    let mut key = String::new();
    for (i, o) in (0u64..).zip(Outcome::ALL) {
        let line = y + 16 * i;
        let _ = writeln!(
            key,
            "<rect x=\"0\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"16\" y=\"{line}\">{}</text>",
            line - 10,
            o.fill(),
            esc(o.words())
        );
    }
    key
}

/// One bar at (`x0`, `y`), `w` wide: its outcomes stacked in proportion, then its violations
/// over its total.
fn draw_bar(body: &mut String, bar: &OutcomeBar, x0: u64, y: u64, w: u64) {
    let total = bar.total();
    let _ = writeln!(
        body,
        "<rect x=\"{x0}\" y=\"{y}\" width=\"{w}\" height=\"{BAR_H}\" fill=\"none\" stroke=\"#d8d8dc\"/>"
    );
    let mut done = 0u64;
    for (o, n) in &bar.parts {
        let n = u64::from(*n);
        // Each part from its cumulative start to its cumulative end, so the parts add up to the
        // whole bar without gaps from rounding (no part when the bar counts nothing).
        let (Some(start), Some(end)) = (
            (done * w).checked_div(total),
            ((done + n) * w).checked_div(total),
        ) else {
            continue;
        };
        done += n;
        if n == 0 {
            continue;
        }
        let _ = writeln!(
            body,
            "<rect x=\"{}\" y=\"{y}\" width=\"{}\" height=\"{BAR_H}\" fill=\"{}\"/>",
            x0 + start,
            (end - start).max(1),
            o.fill()
        );
    }
    let _ = writeln!(
        body,
        "<text x=\"{}\" y=\"{}\">{}/{total}</text>",
        x0 + w + 4,
        y + BAR_H - 2,
        bar.violated()
    );
}

fn key(y: u64) -> String {
    let mut key = String::new();
    let mut x = 0;
    for o in Outcome::ALL {
        let _ = writeln!(
            key,
            "<rect x=\"{x}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{y}\">{}</text>",
            y - 10,
            o.fill(),
            x + 16,
            esc(o.words())
        );
        x += 16 + 6 * u64::try_from(o.words().len()).unwrap_or(20) + 14;
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(column: &str, parts: &[(Outcome, u32)]) -> OutcomeBar {
        OutcomeBar {
            column: column.into(),
            parts: parts.to_vec(),
        }
    }

    #[test]
    fn the_table_says_what_each_bar_draws_and_a_missing_column_is_not_run() {
        let cols = vec!["a".to_owned(), "b".to_owned()];
        let rows = vec![OutcomeRow {
            fault: "kill".into(),
            bars: vec![bar(
                "a",
                &[
                    (Outcome::Held, 8),
                    (Outcome::Violated, 0),
                    (Outcome::BeyondViolated, 2),
                ],
            )],
        }];
        let f = figure("x", "Outcomes", "trials", &cols, &rows);
        assert_eq!(f.table.headers, ["fault", "a", "b"]);
        assert_eq!(
            f.table.rows[0],
            [
                "kill",
                "10: 8 held, 2 beyond assumptions, violated",
                "not run"
            ]
        );
        assert!(f.svg.contains(">2/10</text>"), "{}", f.svg);
        assert!(f.svg.contains("role=\"img\""));
        // The narrow figure draws the same bar, and says the missing column is not run.
        assert!(f.svg_narrow.contains(">2/10</text>"), "{}", f.svg_narrow);
        assert!(f.svg_narrow.contains(">not run</text>"), "{}", f.svg_narrow);
        assert!(f.svg_narrow.contains("id=\"x-narrow-title\""));
    }

    #[test]
    fn the_parts_of_a_bar_fill_it_exactly() {
        let mut body = String::new();
        draw_bar(
            &mut body,
            &bar(
                "a",
                &[
                    (Outcome::Held, 1),
                    (Outcome::Violated, 1),
                    (Outcome::Apart, 1),
                ],
            ),
            0,
            0,
            100,
        );
        assert!(body.contains("x=\"0\" y=\"0\" width=\"33\""), "{body}");
        assert!(body.contains("x=\"66\" y=\"0\" width=\"34\""), "{body}");
    }
}

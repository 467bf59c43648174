//! The timing chart: inline SVG, no JavaScript. One bar per cell, grouped by row, coloured by
//! column: the length is crash → settled, the hatched start is the outage the runner ran while
//! the worker was dead, and the rest is recovery (restart included).
//!
//! Cells that settle in milliseconds and cells that take seconds cannot share one linear axis
//! (the fast bars shrink to a pixel), so [`timing_panels`] splits them into two panels, each
//! with its own linear axis: the cells under a tenth of the slowest, and the rest.

use crate::format::seconds;
use std::fmt::Write as _;
use verify::results::ResultsFile;

const WIDTH: u64 = 760;
const LABEL_W: u64 = 250;
const VALUE_W: u64 = 150;
const BAR_H: u64 = 14;
const LINE_H: u64 = 20;
const GROUP_GAP: u64 = 12;
const TOP: u64 = 28;

/// Fill colour of a column's bars (the outage part is drawn over it, hatched).
fn colour(column: &str) -> &'static str {
    match column {
        "no_check" => "#b35c00",
        "hand_check" => "#4a6fa5",
        "interlock" => "#2e7d4f",
        _ => "#666666",
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick step (ms) giving at most six ticks up to `max`.
fn tick_step(max: u64) -> u64 {
    let steps = [
        1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 30_000, 60_000,
        120_000, 300_000, 600_000,
    ];
    steps
        .into_iter()
        .find(|s| max / s <= 6)
        .unwrap_or(max.div_ceil(6).max(1))
}

/// One panel of the timing chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Panel {
    /// What the panel holds, in words (`cells that settled within 0.552 s`).
    pub caption: String,
    /// The `<svg>` element.
    pub svg: String,
}

/// A cell's time on the chart: crash → settled, never shorter than its outage.
fn extent(c: &verify::results::Cell) -> Option<u64> {
    match c.timings {
        Some(t) if c.judged() => Some(t.crash_to_settled_ms.max(t.outage_ms)),
        _ => None,
    }
}

/// The chart in one or two panels: when the slowest cell takes more than ten times as long as
/// the fastest, the cells within a tenth of the slowest get a panel (and an axis) of their own,
/// so that millisecond and second cells are both visible. HARNESS_ERROR and untimed cells are
/// listed in the first panel.
pub fn timing_panels(f: &ResultsFile) -> Vec<Panel> {
    let max = f.cells.iter().filter_map(extent).max().unwrap_or(0).max(1);
    let split = max / 10;
    let fast = |c: &verify::results::Cell| extent(c).is_none_or(|ms| ms <= split);
    let has_fast = f
        .cells
        .iter()
        .any(|c| extent(c).is_some_and(|ms| ms <= split));
    if !has_fast {
        return vec![Panel {
            caption: "every cell".into(),
            svg: panel_svg(f, "t1", &|_| true),
        }];
    }
    vec![
        Panel {
            caption: format!("cells that settled within {}", seconds(split)),
            svg: panel_svg(f, "t1", &fast),
        },
        Panel {
            caption: format!("cells that took longer than {}", seconds(split)),
            svg: panel_svg(f, "t2", &|c| !fast(c)),
        },
    ]
}

/// Width of the bar area: what is left of the chart after the labels and the values.
const BAR_W: u64 = WIDTH - LABEL_W - VALUE_W;

/// `ms` as a bar length on an axis that ends at `max`.
fn scaled(ms: u64, max: u64) -> u64 {
    (ms.min(max) * BAR_W) / max
}

/// One panel as an `<svg>` element, over the cells `keep` selects (ids prefixed by `id`).
fn panel_svg(f: &ResultsFile, id: &str, keep: &dyn Fn(&verify::results::Cell) -> bool) -> String {
    let max = f
        .cells
        .iter()
        .filter(|c| keep(c))
        .filter_map(extent)
        .max()
        .unwrap_or(0)
        .max(1);
    let (body, y) = bars(f, id, keep, max);
    let axis = axis(max, y);
    let legend = legend(&f.columns, id, y);
    let height = y + 30;
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {height}" role="img" aria-labelledby="{id}-title">
<title id="{id}-title">Seconds from the SIGKILL to the cell settled, per cell; the hatched part is the outage</title>
<defs><pattern id="{id}-outage" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff" fill-opacity="0.55"/><line x1="0" y1="0" x2="0" y2="6" stroke="#333" stroke-width="2"/></pattern></defs>
<g font-size="11" font-family="sans-serif">
{axis}{body}{legend}</g>
</svg>"##
    )
}

/// The bars of the cells `keep` selects, grouped by row under the row's label, from the top;
/// with the y below the last group.
fn bars(
    f: &ResultsFile,
    id: &str,
    keep: &dyn Fn(&verify::results::Cell) -> bool,
    max: u64,
) -> (String, u64) {
    let mut body = String::new();
    let mut y = TOP;
    for row in &f.rows {
        let cells: Vec<_> = f
            .columns
            .iter()
            .flat_map(|col| {
                f.cells.iter().filter(move |c| {
                    c.crash == row.crash && c.outage == row.outage && &c.column == col && keep(c)
                })
            })
            .collect();
        if cells.is_empty() {
            continue;
        }
        let _ = writeln!(
            body,
            "<text x=\"0\" y=\"{}\" class=\"group\">{} / {}</text>",
            y + BAR_H - 2,
            esc(&row.crash),
            esc(&row.outage)
        );
        y += LINE_H;
        for c in cells {
            cell_line(&mut body, c, id, y, max);
            y += LINE_H;
        }
        y += GROUP_GAP;
    }
    (body, y)
}

/// One cell's line at height `y`: its name, then its bar (a judged, timed cell) or its outcome.
fn cell_line(body: &mut String, c: &verify::results::Cell, id: &str, y: u64, max: u64) {
    let name = if c.repeat > 0 {
        format!("{} #{}", c.column, c.repeat)
    } else {
        c.column.clone()
    };
    let _ = writeln!(
        body,
        "<text x=\"16\" y=\"{}\">{}</text>",
        y + BAR_H - 2,
        esc(&name)
    );
    match c.timings {
        Some(t) if c.judged() => {
            let total = scaled(t.crash_to_settled_ms, max).max(1);
            let outage = scaled(t.outage_ms, max).min(total);
            let title = format!(
                "{}/{}/{}: {} crash to settled, of which outage {}, restart to settled {}",
                c.crash,
                c.outage,
                c.column,
                seconds(t.crash_to_settled_ms),
                seconds(t.outage_ms),
                seconds(t.restart_to_settled_ms)
            );
            let _ = write!(
                body,
                r#"<g><title>{}</title><rect x="{LABEL_W}" y="{y}" width="{total}" height="{BAR_H}" fill="{}"/><rect x="{LABEL_W}" y="{y}" width="{outage}" height="{BAR_H}" fill="url(#{id}-outage)"/></g>
<text x="{}" y="{}">{} ({} after restart)</text>
"#,
                esc(&title),
                colour(&c.column),
                LABEL_W + total + 6,
                y + BAR_H - 2,
                seconds(t.crash_to_settled_ms),
                seconds(t.restart_to_settled_ms)
            );
        }
        _ => {
            let _ = writeln!(
                body,
                "<text x=\"{LABEL_W}\" y=\"{}\">{}</text>",
                y + BAR_H - 2,
                esc(&c.outcome)
            );
        }
    }
}

/// The axis: a grid line down to `bottom` and a label per tick, up to `max`.
fn axis(max: u64, bottom: u64) -> String {
    let y = bottom;
    let mut axis = String::new();
    let step = tick_step(max);
    let mut t = 0;
    while t <= max {
        let x = LABEL_W + scaled(t, max);
        let _ = write!(
            axis,
            r##"<line x1="{x}" y1="{}" x2="{x}" y2="{y}" stroke="#ccc"/>
<text x="{x}" y="{}" text-anchor="middle">{}</text>
"##,
            TOP - 6,
            TOP - 10,
            seconds(t)
        );
        t += step;
    }
    axis
}

/// The legend below the bars (which end at `bottom`): a swatch per column, then the outage's.
fn legend(columns: &[String], id: &str, bottom: u64) -> String {
    let legend_y = bottom + 12;
    let mut legend = String::new();
    let mut x = 0;
    for col in columns {
        let _ = write!(
            legend,
            r#"<rect x="{x}" y="{}" width="12" height="12" fill="{}"/>
<text x="{}" y="{}">{}</text>
"#,
            legend_y - 10,
            colour(col),
            x + 16,
            legend_y,
            esc(col)
        );
        x += 130;
    }
    let _ = write!(
        legend,
        r##"<rect x="{x}" y="{}" width="12" height="12" fill="#888"/>
<rect x="{x}" y="{}" width="12" height="12" fill="url(#{id}-outage)"/>
<text x="{}" y="{legend_y}">outage (worker dead)</text>
"##,
        legend_y - 10,
        legend_y - 10,
        x + 16
    );
    legend
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bar_per_timed_cell_with_its_outage_shaded() {
        let f = synthetic::generate(&synthetic::Spec::default());
        let panels = timing_panels(&f);
        let svg: String = panels.iter().map(|p| p.svg.as_str()).collect();
        let timed = f.cells.iter().filter(|c| c.timings.is_some()).count();
        assert_eq!(svg.matches("<g><title>").count(), timed);
        assert_eq!(
            svg.matches(r#"-outage)""#).count(),
            timed + panels.len(),
            "one per bar plus one per legend"
        );
        for p in &panels {
            assert!(p.svg.starts_with("<svg") && p.svg.ends_with("</svg>"));
        }
        assert!(!svg.contains("<script"));
    }

    #[test]
    fn ticks_are_few() {
        for max in [1, 900, 4_000, 41_000, 3_600_000] {
            assert!(max / tick_step(max) <= 6, "{max}");
        }
    }
}

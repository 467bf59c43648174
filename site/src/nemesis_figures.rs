//! Figures of the Nemesis pages, as inline SVG (no JavaScript): the heat map's cell colours, the
//! histogram of where kills landed, the settle-time percentiles, and a trial's timeline.
//!
//! Every number drawn comes from the verified nemesis file: the summaries `verify` recomputed,
//! or the trials' own recorded events. The one figure the summaries do not give, the heat map's
//! colour, is [`violation_rate_ppm`]: violations within assumptions over trials within them,
//! both from the verified summary.

use std::fmt::Write as _;
use verify::nemesis::{Event, NemesisSummary, Trial};

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Violations within assumptions per trial within them, in parts per million, from the verified
/// summary; `None` when no trial was within assumptions.
pub fn violation_rate_ppm(s: &NemesisSummary) -> Option<u64> {
    verify::figures::nemesis::within_violation_rate_ppm(s)
}

/// The heat map's class for a cell: `n/a`, none, or one of four bands of the rate.
pub fn heat_class(s: &NemesisSummary) -> &'static str {
    heat_band(violation_rate_ppm(s))
}

/// The heat map's class for a violation rate in parts per million (`None`: no trial to rate).
pub fn heat_band(rate_ppm: Option<u64>) -> &'static str {
    match rate_ppm {
        None => "heat-na",
        Some(0) => "heat-0",
        Some(r) if r <= 10_000 => "heat-1",
        Some(r) if r <= 50_000 => "heat-2",
        Some(r) if r <= 200_000 => "heat-3",
        Some(_) => "heat-4",
    }
}

/// Column colours, as in the report's timing chart.
fn colour(column: &str) -> &'static str {
    match column {
        "no_check" => "#b35c00",
        "hand_check" => "#4a6fa5",
        "interlock" => "#2e7d4f",
        _ => "#666666",
    }
}

/// A horizontal bar histogram: one group per label, one bar per column (counts), with the
/// count written after each bar.
pub fn kill_histogram(id: &str, columns: &[String], rows: &[(String, Vec<u32>)]) -> String {
    const W: u64 = 720;
    const LABEL: u64 = 300;
    const BAR: u64 = 10;
    let max = rows
        .iter()
        .flat_map(|(_, c)| c.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1);
    let scale = |n: u32| u64::from(n) * (W - LABEL - 50) / u64::from(max);
    let mut body = String::new();
    let mut y = 4;
    for (label, counts) in rows {
        let _ = writeln!(
            body,
            r#"<text x="0" y="{}">{}</text>"#,
            y + BAR + 2,
            esc(label)
        );
        for (col, n) in columns.iter().zip(counts) {
            let w = scale(*n);
            let _ = writeln!(
                body,
                r#"<g><title>{}: {} kill(s) landed at {}</title><rect x="{LABEL}" y="{y}" width="{w}" height="{BAR}" fill="{}"/><text x="{}" y="{}">{n}</text></g>"#,
                esc(col),
                n,
                esc(label),
                colour(col),
                LABEL + w + 4,
                y + BAR - 1
            );
            y += BAR + 2;
        }
        y += 8;
    }
    let legend = legend(columns, y + 12);
    let h = y + 24;
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart small" viewBox="0 0 {W} {h}" role="img" aria-labelledby="{id}-title">
<title id="{id}-title">Where the kills landed, by step: one bar per column</title>
<g font-size="11" font-family="sans-serif">
{body}{legend}</g>
</svg>"#
    )
}

fn legend(columns: &[String], y: u64) -> String {
    let mut out = String::new();
    let mut x = 0;
    for col in columns {
        let _ = writeln!(
            out,
            r#"<rect x="{x}" y="{}" width="10" height="10" fill="{}"/><text x="{}" y="{y}">{}</text>"#,
            y - 9,
            colour(col),
            x + 14,
            esc(col)
        );
        x += 120;
    }
    out
}

/// Settle-time percentiles per column as a small chart: a line from p50 to max, a dot at p50, a
/// bar at p95, values written beside; columns without settle times say so.
pub fn settle_chart(id: &str, rows: &[&NemesisSummary]) -> String {
    const W: u64 = 720;
    const LABEL: u64 = 110;
    const ROW: u64 = 26;
    let max = rows
        .iter()
        .filter_map(|s| s.settle_max_ms)
        .max()
        .unwrap_or(0)
        .max(1);
    let plot = W - LABEL - 230;
    let x = |ms: u64| LABEL + ms.min(max) * plot / max;
    let mut body = String::new();
    let mut y = 22;
    let _ = writeln!(
        body,
        r##"<line x1="{LABEL}" y1="8" x2="{LABEL}" y2="{}" stroke="#999"/><text x="{LABEL}" y="8" text-anchor="start">0 ms</text><text x="{}" y="8" text-anchor="end">{max} ms</text>"##,
        14 + ROW * rows.len() as u64,
        LABEL + plot
    );
    for s in rows {
        let _ = writeln!(
            body,
            r#"<text x="0" y="{}">{}</text>"#,
            y + 4,
            esc(&s.column)
        );
        match (s.settle_p50_ms, s.settle_p95_ms, s.settle_max_ms) {
            (Some(p50), Some(p95), Some(mx)) => {
                let c = colour(&s.column);
                let _ = writeln!(
                    body,
                    r##"<g><title>{}: p50 {p50} ms, p95 {p95} ms, max {mx} ms</title><line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{c}" stroke-width="2"/><circle cx="{}" cy="{y}" r="5" fill="{c}"/><rect x="{}" y="{}" width="3" height="14" fill="{c}"/><line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{c}" stroke-width="2"/></g><text x="{}" y="{}">p50 {p50} · p95 {p95} · max {mx} ms</text>"##,
                    esc(&s.column),
                    x(p50),
                    x(mx),
                    x(p50),
                    x(p95).saturating_sub(1),
                    y - 7,
                    x(mx),
                    y - 4,
                    x(mx),
                    y + 4,
                    LABEL + plot + 10,
                    y + 4
                );
            }
            _ => {
                let _ = writeln!(
                    body,
                    r#"<text x="{LABEL}" y="{}">no settle times</text>"#,
                    y + 4
                );
            }
        }
        y += ROW;
    }
    let h = y;
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart small" viewBox="0 0 {W} {h}" role="img" aria-labelledby="{id}-title">
<title id="{id}-title">Settle time per column: dot at the median, bar at the 95th percentile, line to the maximum</title>
<g font-size="11" font-family="sans-serif">
{body}</g>
</svg>"#
    )
}

/// What an event is, in a few words (the timeline's row label).
fn event_label(kind: &str, what: &str) -> String {
    match kind {
        "read" => format!("read {what}"),
        "post" => "credit POST".to_owned(),
        "answered" => "POST answered".to_owned(),
        "step" => format!("step {what}"),
        "pause" => format!("paused at {what}"),
        "resume" => format!("resumed {what}"),
        "kill" => format!("SIGKILL {what}"),
        "stop" => format!("SIGSTOP {what}"),
        "cont" => format!("SIGCONT {what}"),
        "tear" => "torn journal tail".to_owned(),
        "disk" => "disk full".to_owned(),
        "dedup" => "idempotency keys forgotten".to_owned(),
        "outage" => format!("outage {what}"),
        "change" => format!("world changed {what}"),
        other => format!("{other} {what}"),
    }
}

/// Fill colour of an event kind on the timeline.
fn event_colour(kind: &str) -> &'static str {
    match kind {
        "read" => "#4a6fa5",
        "post" | "answered" => "#6a3d9a",
        "kill" | "stop" | "tear" | "disk" | "dedup" => "#a3161a",
        "change" => "#b35c00",
        "pause" | "resume" | "cont" => "#8a6d00",
        "outage" => "#777777",
        _ => "#444444",
    }
}

/// Width of the timeline.
const TIMELINE_W: u64 = 760;
/// Width of the timeline's row labels.
const TIMELINE_LABEL: u64 = 280;
/// Height of one timeline row.
const TIMELINE_ROW: u64 = 16;
/// Where the timeline's first row starts.
const TIMELINE_TOP: u64 = 20;

/// The timeline's time axis: `end` µs (the trial's last instant) spread over the plot's width.
#[derive(Clone, Copy)]
struct TimeAxis {
    end: u64,
}

impl TimeAxis {
    /// The x of an instant `us` µs after the trial began.
    fn x(self, us: u64) -> u64 {
        let plot = TIMELINE_W - TIMELINE_LABEL - 10;
        TIMELINE_LABEL + us.min(self.end) * plot / self.end
    }
}

/// A trial's timeline as a chart: one row per recorded event, in order, labelled with who and
/// what; its position on a shared time axis (ms since the trial began); an interval (a read, a
/// change, an outage, a POST the service held until it landed) as a bar, an instant as a mark.
pub fn trial_timeline(t: &Trial) -> String {
    let end = t
        .timeline
        .iter()
        .map(|e| e.until_us.unwrap_or(e.at_us).max(e.at_us))
        .max()
        .unwrap_or(0)
        .max(1);
    let axis = TimeAxis { end };
    let bottom = TIMELINE_TOP + TIMELINE_ROW * t.timeline.len() as u64;
    let mut body = timeline_ticks(axis, bottom);
    let mut y = TIMELINE_TOP;
    for e in &t.timeline {
        timeline_event(&mut body, e, axis, y);
        y += TIMELINE_ROW;
    }
    let h = bottom + 8;
    let w = TIMELINE_W;
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart timeline" viewBox="0 0 {w} {h}" role="img" aria-labelledby="timeline-title">
<title id="timeline-title">Timeline of the trial: one row per event; bars are intervals (reads, changes, outages, a held POST), diamonds instants</title>
<g font-size="11" font-family="sans-serif">
{body}</g>
</svg>"#
    )
}

/// The axis: five ticks, each a grid line down to `bottom` and its time in ms.
fn timeline_ticks(axis: TimeAxis, bottom: u64) -> String {
    let mut body = String::new();
    let top = TIMELINE_TOP;
    let end = axis.end;
    for i in 0..=4u64 {
        let us = end * i / 4;
        let _ = writeln!(
            body,
            r##"<line x1="{0}" y1="{1}" x2="{0}" y2="{bottom}" stroke="#ddd"/><text x="{0}" y="{2}" text-anchor="{3}">{4}.{5} ms</text>"##,
            axis.x(us),
            top - 6,
            top - 9,
            if i == 0 {
                "start"
            } else if i == 4 {
                "end"
            } else {
                "middle"
            },
            us / 1000,
            (us % 1000) / 100
        );
    }
    body
}

/// One event's row at height `y`: its label, then a bar for an interval or a diamond for an
/// instant.
fn timeline_event(body: &mut String, e: &Event, axis: TimeAxis, y: u64) {
    let x = |us: u64| axis.x(us);
    let label = format!("{}: {}", e.actor, event_label(&e.kind, &e.what));
    let c = event_colour(&e.kind);
    let at = format!("{}.{:03} ms", e.at_us / 1000, e.at_us % 1000);
    let _ = write!(body, r#"<text x="0" y="{}">{}</text>"#, y + 11, esc(&label));
    match e.until_us.filter(|u| *u > e.at_us) {
        Some(until) => {
            let w = (x(until) - x(e.at_us)).max(2);
            let _ = writeln!(
                body,
                r#"<g><title>{} from {at} until {}.{:03} ms</title><rect x="{}" y="{}" width="{w}" height="10" fill="{c}"{}/></g>"#,
                esc(&label),
                until / 1000,
                until % 1000,
                x(e.at_us),
                y + 3,
                if e.kind == "outage" {
                    r#" fill-opacity="0.5""#
                } else {
                    ""
                }
            );
        }
        None => {
            let cx = x(e.at_us);
            let _ = writeln!(
                body,
                r#"<g><title>{} at {at}</title><path d="M{} {} l5 5 l-5 5 l-5 -5 z" fill="{c}"/></g>"#,
                esc(&label),
                cx,
                y + 3
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(within: u32, violations: u32) -> NemesisSummary {
        NemesisSummary {
            nemesis: "n".into(),
            column: "c".into(),
            trials: within,
            nothing_decided: 0,
            judged: within,
            within_assumptions: within,
            violations,
            violation_upper95_ppm: 0,
            violations_within: violations,
            within_upper95_ppm: 0,
            distinct: 0,
            distinct_within: 0,
            distinct_violating_within: 0,
            within_distinct_upper95_ppm: 0,
            wrong_answers: 0,
            unresolved: 0,
            ambiguous: 0,
            harness_errors: 0,
            settle_p50_ms: None,
            settle_p95_ms: None,
            settle_max_ms: None,
        }
    }

    #[test]
    fn no_trial_within_assumptions_is_not_a_clean_cell() {
        assert_eq!(heat_class(&summary(0, 0)), "heat-na");
        assert_eq!(heat_class(&summary(10, 0)), "heat-0");
        assert_eq!(heat_class(&summary(200, 1)), "heat-1");
        assert_eq!(heat_class(&summary(10, 5)), "heat-4");
        assert_eq!(violation_rate_ppm(&summary(4, 1)), Some(250_000));
    }
}

//! Each trial's faults are the ones its seed draws: the checker draws the trial again
//! ([`super::draw::draw_for`]) and compares the draw with what the trial records of it — the
//! outage, the service fault and its hold, the decide kill's step or instant, the restarts' kill
//! steps, and the parameters its faults' details name (the stop, the free pages, the hours
//! passed, the revocation's instant, the pause's step). A trial whose recorded plan is not its
//! draw was not run from its seed, so `runner --replay ID` would not run it again.
//!
//! A stage of [`super::check::verify_nemesis`], run for every trial.

use super::check::code;
use super::draw::{draw_for_span, Draw, ServiceFault, WorldFault};
use super::nemeses::Nemesis;
use super::Trial;
use crate::finding::Finding;

/// The kinds a trial's service fault is recorded as, one per [`ServiceFault`].
pub const SERVICE_FAULT_KINDS: [&str; 4] = [
    "delay",
    "commit_then_error",
    "commit_then_drop",
    "rate_limit",
];

impl ServiceFault {
    /// The `kind` a trial records the fault as (one of [`SERVICE_FAULT_KINDS`]).
    pub fn kind(self) -> &'static str {
        match self {
            ServiceFault::Delay { .. } => SERVICE_FAULT_KINDS[0],
            ServiceFault::CommitThenError { .. } => SERVICE_FAULT_KINDS[1],
            ServiceFault::CommitThenDrop => SERVICE_FAULT_KINDS[2],
            ServiceFault::RateLimit => SERVICE_FAULT_KINDS[3],
        }
    }
}

/// Compares trial `t` (at `base`, e.g. `trials[3]`) with the draw of its seed; each difference
/// is a finding of code [`code::DRAW`]. `span_ms`: the plan's exposure span.
pub fn check_drawn(base: &str, t: &Trial, span_ms: u64, f: &mut Vec<Finding>) {
    let Some(nemesis) = Nemesis::from_name(&t.nemesis) else {
        f.push(Finding::new(
            format!("{base}.nemesis"),
            code::DRAW,
            format!(
                "trial {}: {:?} is not a nemesis this checker draws",
                t.id, t.nemesis
            ),
        ));
        return;
    };
    let Some(d) = draw_for_span(nemesis, &t.column, t.seed, span_ms) else {
        f.push(Finding::new(
            format!("{base}.column"),
            code::DRAW,
            format!(
                "trial {}: {:?} is not a column this checker draws",
                t.id, t.column
            ),
        ));
        return;
    };
    let mut differ = |path: &str, what: &str, drawn: String, recorded: String| {
        f.push(Finding::mismatch(
            format!("{base}.{path}"),
            code::DRAW,
            format!("trial {}: {what} is not what its seed draws", t.id),
            drawn,
            recorded,
        ));
    };
    if t.outage != d.outage {
        differ(
            "outage",
            "the outage",
            d.outage.to_owned(),
            t.outage.clone(),
        );
    }
    if let Some((drawn, recorded)) = service_difference(t, &d) {
        differ(
            "faults",
            "the service fault (kind, held ms)",
            drawn,
            recorded,
        );
    }
    for (path, what, drawn, recorded) in kill_differences(t, &d) {
        differ(&path, what, drawn, recorded);
    }
    // A trial that could not run may stop before its faults' details are written.
    if t.is_harness_error() {
        return;
    }
    if let Some((drawn, recorded)) = decide_kill_count(t, &d) {
        differ("kills", "the number of decide kills", drawn, recorded);
    }
    for (kind, want) in detail_parameters(&d) {
        let detail = t
            .faults
            .iter()
            .find(|x| x.kind == kind)
            .map_or("", |x| x.detail.as_str());
        if !detail.contains(&want) {
            differ(
                "faults",
                "a fault's parameter",
                format!("{kind}: ...{want}..."),
                format!("{kind}: {detail}"),
            );
        }
    }
}

/// Whether the draw kills the decide worker: at a step, at an instant, or at `before_send` by
/// the worker's own pause; not when it pauses the worker or changes the world under it instead
/// (those end the worker some other way).
fn draws_a_decide_kill(d: &Draw) -> bool {
    d.decide_at_before_send
        || (d.pause_at.is_none()
            && d.world_at_us.is_none()
            && (d.kill_at_step.is_some() || d.decide_kill_ms.is_some()))
}

/// The drawn and the recorded number of decide kills, when they differ: a trial that ran records
/// the kill its seed draws (delivered, or not when the worker had finished first) and no other.
fn decide_kill_count(t: &Trial, d: &Draw) -> Option<(String, String)> {
    let recorded = t.kills.iter().filter(|k| k.worker == "decide").count();
    let drawn = usize::from(draws_a_decide_kill(d));
    (recorded != drawn).then(|| (drawn.to_string(), recorded.to_string()))
}

/// The drawn and the recorded service fault (kind, and hold for a delay), when they differ.
fn service_difference(t: &Trial, d: &Draw) -> Option<(String, String)> {
    let drawn: Vec<(&str, Option<u64>)> = d
        .service
        .iter()
        .map(|s| match s {
            ServiceFault::Delay { ms } => (s.kind(), Some(*ms)),
            _ => (s.kind(), None),
        })
        .collect();
    let recorded: Vec<(&str, Option<u64>)> = service_faults(t)
        .iter()
        .map(|s| (s.kind.as_str(), s.held_ms.filter(|_| s.kind == "delay")))
        .collect();
    (recorded != drawn).then(|| (format!("{drawn:?}"), format!("{recorded:?}")))
}

/// The trial's recorded service faults (those of a [`SERVICE_FAULT_KINDS`] kind).
fn service_faults(t: &Trial) -> Vec<&super::Fault> {
    t.faults
        .iter()
        .filter(|x| SERVICE_FAULT_KINDS.contains(&x.kind.as_str()))
        .collect()
}

/// Where the recorded kills differ from the drawn ones: the decide kill's step (or its anchor
/// and instant, for a timed kill), each restart's kill step, and no more restarts killed than
/// drawn. As (path, what, drawn, recorded).
fn kill_differences(t: &Trial, d: &Draw) -> Vec<(String, &'static str, String, String)> {
    let mut out = Vec::new();
    if let Some(kill) = t.kills.iter().find(|k| k.worker == "decide") {
        let after = kill.after.as_str();
        match (d.kill_at_step, d.decide_kill_ms) {
            (Some(step), _) if after != step => out.push((
                "kills".to_owned(),
                "the decide kill's step",
                step.to_owned(),
                after.to_owned(),
            )),
            (None, Some(ms))
                if !d.decide_at_before_send && (after, kill.at_ms) != (d.kill_after, ms) =>
            {
                out.push((
                    "kills".to_owned(),
                    "the decide kill's anchor and instant",
                    format!("{} +{ms} ms", d.kill_after),
                    format!("{after} +{} ms", kill.at_ms),
                ))
            }
            _ => {}
        }
    }
    for (i, step) in d.restart_kill_steps.iter().enumerate() {
        let worker = format!("restart-{}", i + 1);
        if let Some(kill) = t.kills.iter().find(|k| k.worker == worker) {
            if kill.after != *step {
                out.push((
                    "kills".to_owned(),
                    "a restart kill's step",
                    format!("{worker} at {step}"),
                    format!("{worker} at {}", kill.after),
                ));
            }
        }
    }
    let restarts = t
        .kills
        .iter()
        .filter(|k| k.worker.starts_with("restart-"))
        .count();
    if restarts > d.restart_kill_steps.len() {
        out.push((
            "kills".to_owned(),
            "the number of restarts killed",
            format!("at most {}", d.restart_kill_steps.len()),
            restarts.to_string(),
        ));
    }
    out
}

/// The drawn parameters a judged trial's fault details name, as (fault kind, text its detail
/// contains).
fn detail_parameters(d: &Draw) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(ms) = d.stop_ms {
        out.push(("stop", format!(" for {ms} ms")));
    }
    if let Some(pages) = d.disk_free_pages {
        out.push(("disk_full", format!(" {pages} pages")));
    }
    if let Some(s) = d.dedup_passed_s {
        out.push(("dedup_expired", format!(" {s} s passed")));
    }
    if let Some(w) = d.write_fault {
        let kind = if w.sync { "fsync_eio" } else { "write_enospc" };
        out.push((kind, format!("drawn call {} ", w.nth)));
    }
    if let Some(us) = d.world_at_us {
        out.push((
            "revocation",
            format!(" {}.{:03} ms after", us / 1_000, us % 1_000),
        ));
    }
    if let Some(step) = d.pause_at {
        let kind = match d.world {
            Some(WorldFault::CreditNote) => "credit_note",
            _ => "revocation",
        };
        out.push((kind, format!("paused at {step}")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed() -> super::super::NemesisFile {
        let bytes = crate::input::committed_campaign("billing_credit");
        crate::load::load_nemesis(&bytes).unwrap()
    }

    fn findings_over(t: &Trial, span_ms: u64) -> Vec<(String, String)> {
        let mut f = Vec::new();
        check_drawn("trials[0]", t, span_ms, &mut f);
        f.into_iter().map(|x| (x.code, x.path)).collect()
    }

    /// Every trial of the committed run records what its seed draws; a trial of each kind of
    /// draw, edited in one drawn field, does not.
    #[test]
    fn every_committed_trial_is_its_draw_and_an_edited_one_is_not() {
        let file = committed();
        let span = file.plan.exposure_span_ms();
        let findings = |t: &Trial| findings_over(t, span);
        let mut stop = None;
        let mut timed = None;
        let mut held = None;
        for (i, t) in file.trials.iter().enumerate() {
            assert_eq!(
                findings(t),
                Vec::<(String, String)>::new(),
                "trials[{i}] {}",
                t.id
            );
            if t.is_harness_error() {
                continue;
            }
            match t.nemesis.as_str() {
                "stop_holder" => stop = stop.or(Some(i)),
                "kill_random" if t.kills.iter().any(|k| k.worker == "decide") => {
                    timed = timed.or(Some(i))
                }
                "kill_in_flight" => held = held.or(Some(i)),
                _ => {}
            }
        }
        let draw = |p: &str| vec![(code::DRAW.to_owned(), format!("trials[0].{p}"))];
        let (stop, timed, held) = (stop.unwrap(), timed.unwrap(), held.unwrap());

        let mut t = file.trials[timed].clone();
        t.outage = if t.outage == "renewal" {
            "proration"
        } else {
            "renewal"
        }
        .to_owned();
        assert_eq!(findings(&t), draw("outage"));

        let mut t = file.trials[timed].clone();
        let kill = t.kills.iter_mut().find(|k| k.worker == "decide").unwrap();
        kill.at_ms += 1;
        assert_eq!(findings(&t), draw("kills"));

        let mut t = file.trials[held].clone();
        let delay = t.faults.iter_mut().find(|x| x.kind == "delay").unwrap();
        delay.held_ms = delay.held_ms.map(|ms| ms + 1);
        assert_eq!(findings(&t), draw("faults"));

        let mut t = file.trials[held].clone();
        t.faults.retain(|x| x.kind != "delay");
        assert_eq!(findings(&t), draw("faults"));

        let mut t = file.trials[stop].clone();
        let s = t.faults.iter_mut().find(|x| x.kind == "stop").unwrap();
        s.detail = s.detail.replace(" ms", "0 ms");
        assert_eq!(findings(&t), draw("faults"));

        let mut t = file.trials[timed].clone();
        t.nemesis = "kill_everything".to_owned();
        assert_eq!(findings(&t), draw("nemesis"));
    }
}

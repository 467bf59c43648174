//! The whole-file check of a shared_cap nemesis file: the run's signature, the plan's every
//! trial exactly once with the draws its seed gives, kills only where drawn, and every trial's
//! judgement re-derived by the matrix's rules.

use super::draw::{draw, restart_steps, trial_id};
use super::record::{CapNemesisFile, CapTrial};
use super::summary::{NemesisSummary, Tally};
use super::{FORMAT, NEMESES, SIGNATURE_CONTEXT};
use crate::canonical;
use crate::load::{read_cap_trial, CapNemesisText, LoadError};
use crate::receipt::KeyCheck;
use crate::shared_cap::check::{
    check_judgement, check_signature, digest, digest_each, element_digest, file_key, head_findings,
    SigningError,
};
use crate::shared_cap::plan::{is_kill_step, COLUMNS, OVERLAPS};
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde::Serialize;
use std::borrow::Cow;
use std::convert::Infallible;

/// `cell.crash_point` of a trial whose worker `a` is not killed in its first phase.
pub const NO_KILL: &str = "none";

/// What the check found.
#[derive(Debug, Clone, Serialize)]
pub struct CapNemesisReport {
    /// Nothing was found wrong.
    pub ok: bool,
    /// `pinned` or `self-attested`.
    pub key: String,
    /// The key the file and its receipts were checked against (hex).
    pub signer: String,
    /// Trials in the file.
    pub trials: usize,
    /// Trials judged (not harness errors).
    pub judged: usize,
    /// The file's signature verifies under the key.
    pub signed: bool,
    /// The summary as re-derived.
    pub summary: Vec<NemesisSummary>,
    /// Every problem, each naming its place in the file.
    pub findings: Vec<String>,
}

/// The bytes the run's key signs: the context, then the canonical JSON of
/// `{"v": 1, "head": H, "trials": [T0, T1, ...]}`, `H` the hex SHA-256 of the canonical JSON of
/// every top-level member but `trials` and `signature`, `Ti` that of `trials[i]`.
pub fn signing_message(file: &CapNemesisFile) -> Result<Vec<u8>, SigningError> {
    let mut trials = Vec::with_capacity(file.trials.len());
    for (i, t) in file.trials.iter().enumerate() {
        trials.push(element_digest(&format!("trials[{i}]"), t)?);
    }
    message_of(file, trials)
}

/// [`signing_message`] of a file whose trials' digests are `trials` (`file.trials` is not read).
fn message_of(file: &CapNemesisFile, trials: Vec<String>) -> Result<Vec<u8>, SigningError> {
    let head = serde_json::json!({
        "format": file.format,
        "scenario": file.scenario,
        "generated_at": file.generated_at,
        "environment": file.environment,
        "want": file.want,
        "plan": file.plan,
        "summary": file.summary,
    });
    let body = serde_json::json!({"v": 1, "head": digest(&head)?, "trials": trials});
    let mut out = SIGNATURE_CONTEXT.as_bytes().to_vec();
    out.extend(canonical::to_vec(&body)?);
    Ok(out)
}

/// Signs the file with the run's key (sets `signature`, hex).
pub fn sign(file: &mut CapNemesisFile, key: &SigningKey) -> Result<(), SigningError> {
    let message = signing_message(file)?;
    file.signature = Some(hex::encode(key.sign(&message).to_bytes()));
    Ok(())
}

/// A trial's labels are the plan's vocabulary: a known nemesis, column and overlap, and every
/// kill at a step its worker's column passes. `Err((field, why))` names the first that is not
/// (the loader refuses the file, so no report repeats an unknown label).
pub fn labels_known(t: &CapTrial) -> Result<(), (&'static str, String)> {
    let column = t.cell.column.as_str();
    if !NEMESES.contains(&t.nemesis.as_str()) {
        return Err(("nemesis", format!("not one of {}", NEMESES.join(", "))));
    }
    if !COLUMNS.contains(&column) {
        return Err(("cell.column", format!("not one of {}", COLUMNS.join(", "))));
    }
    for (field, value) in [
        ("draw.overlap", &t.draw.overlap),
        ("cell.overlap", &t.cell.overlap),
    ] {
        if !OVERLAPS.contains(&value.as_str()) {
            return Err((field, format!("not one of {}", OVERLAPS.join(", "))));
        }
    }
    // A held trial kills worker `a` where the service holds its POST, a step no worker
    // announces; every other kill is at a step its column passes.
    let held = t.draw.hold_a_ms.is_some();
    let step_ok = |s: &str| is_kill_step(column, s);
    let a_step_ok = |s: &str| step_ok(s) || (held && s == super::HELD_STEP);
    let first_kills = [
        ("draw.kill_a", t.draw.kill_a.as_deref(), true),
        ("draw.kill_b", t.draw.kill_b.as_deref(), false),
        (
            "cell.tickets[0].killed_at",
            t.cell.tickets.first().and_then(|x| x.killed_at.as_deref()),
            true,
        ),
        (
            "cell.tickets[1].killed_at",
            t.cell.tickets.get(1).and_then(|x| x.killed_at.as_deref()),
            false,
        ),
    ];
    for (field, step, of_a) in first_kills {
        let ok = |s: &str| if of_a { a_step_ok(s) } else { step_ok(s) };
        if step.is_some_and(|s| !ok(s)) {
            return Err((field, format!("not a step the {column} column passes")));
        }
    }
    if t.cell.crash_point != NO_KILL && !a_step_ok(&t.cell.crash_point) {
        return Err((
            "cell.crash_point",
            format!("neither {NO_KILL:?} nor a step of {column}"),
        ));
    }
    for (field, step) in [
        ("draw.kill_restart", t.draw.kill_restart.as_deref()),
        ("restart_killed_at", t.restart_killed_at.as_deref()),
    ] {
        if step.is_some_and(|s| !restart_steps(column).contains(&s)) {
            return Err((field, format!("not a step a {column} restart passes")));
        }
    }
    Ok(())
}

/// The plan names only known nemeses and columns, each once (the loader refuses any other plan,
/// so nothing is built per name before it is checked). `Err((field, why))`.
pub fn plan_known(plan: &super::record::Campaign) -> Result<(), (&'static str, String)> {
    let mut seen = std::collections::HashSet::new();
    for n in &plan.nemeses {
        if !NEMESES.contains(&n.as_str()) || !seen.insert(n.as_str()) {
            return Err((
                "nemeses",
                format!("each of {} at most once", NEMESES.join(", ")),
            ));
        }
    }
    for c in &plan.columns {
        if !COLUMNS.contains(&c.as_str()) || !seen.insert(c.as_str()) {
            return Err((
                "columns",
                format!("each of {} at most once", COLUMNS.join(", ")),
            ));
        }
    }
    Ok(())
}

/// The trials the plan holds, in order: (nemesis, column, index); lazily, so a plan that claims
/// billions of trials costs nothing until it is compared with the trials recorded.
fn planned(file: &CapNemesisFile) -> impl Iterator<Item = (&String, &String, u32)> {
    let p = &file.plan;
    p.nemeses.iter().flat_map(move |n| {
        p.columns
            .iter()
            .flat_map(move |c| (0..p.trials).map(move |i| (n, c, i)))
    })
}

/// The plan against the file: its labels known, its size the trials' `count`, its columns'
/// journal; then `trials_found`, what [`check_planned_trial`] found of each trial.
fn check_plan(
    file: &CapNemesisFile,
    count: usize,
    trials_found: Vec<String>,
    findings: &mut Vec<String>,
) {
    let p = &file.plan;
    if let Err((field, why)) = plan_known(p) {
        findings.push(format!("plan.{field}: {why}"));
        return;
    }
    let planned_len = (p.nemeses.len() as u128) * (p.columns.len() as u128) * u128::from(p.trials);
    if planned_len != count as u128 {
        findings.push(format!(
            "trials: {count} recorded, the plan ({} nemeses x {} columns x {}) has {planned_len}",
            p.nemeses.len(),
            p.columns.len(),
            p.trials,
        ));
    }
    for c in &p.columns {
        if let Some(why) = crate::shared_cap::plan::database_problem(c, &file.environment.journal) {
            findings.push(format!("plan.columns: {why}"));
        }
    }
    findings.extend(trials_found);
}

/// Trial `i`, `t`, is the plan's trial at its place, `(n, c, index)`, with the draws its seed
/// gives.
fn check_planned_trial(
    plan: &super::record::Campaign,
    (i, t): (usize, &CapTrial),
    (n, c, index): (&String, &String, u32),
    findings: &mut Vec<String>,
) {
    let want_id = trial_id(plan.seed, n, c, index);
    if t.nemesis != *n || t.cell.column != *c || t.index != index || t.id != want_id {
        findings.push(format!(
            "trials[{i}]: is {} ({}, {}, #{}); the plan's trial here is {want_id}",
            crate::display::shorten(&t.id, crate::shared_cap::check::ID_CHARS),
            t.nemesis,
            t.cell.column,
            t.index
        ));
        return;
    }
    if draw(plan.seed, n, c, index).as_ref() != Some(&t.draw) {
        findings.push(format!(
            "{}: its draw is not what the seed draws for it",
            trial_label(i, t)
        ));
    }
}

/// Kills only where drawn: worker `a` at `kill_a` (its cell's crash point), `b` at `kill_b`,
/// `a`'s restart at `kill_restart` and only after `a` was killed; the cell's overlap and
/// repeat are the draw's and the index.
fn check_kills(i: usize, t: &CapTrial, findings: &mut Vec<String>) {
    let at = trial_label(i, t);
    let want_crash = t.draw.kill_a.as_deref().unwrap_or(NO_KILL);
    if t.cell.crash_point != want_crash
        || t.cell.overlap != t.draw.overlap
        || t.cell.repeat != t.index
    {
        findings.push(format!(
            "{at}: the cell's crash point, overlap or repeat is not the draw's"
        ));
    }
    let names: Vec<&str> = t.cell.tickets.iter().map(|x| x.name.as_str()).collect();
    if names != ["a", "b"] {
        findings.push(format!("{at}: tickets are {names:?}, expected a then b"));
        return;
    }
    let drawn = [t.draw.kill_a.as_deref(), t.draw.kill_b.as_deref()];
    for (j, (ticket, want)) in t.cell.tickets.iter().zip(drawn).enumerate() {
        if let Some(k) = ticket.killed_at.as_deref() {
            if Some(k) != want {
                findings.push(format!(
                    "{at}: tickets[{j}] records a kill at {k:?}; its draw is {want:?}"
                ));
            }
        }
    }
    if let Some(k) = &t.restart_killed_at {
        let a_killed = t.cell.tickets[0].killed_at.is_some();
        if Some(k) != t.draw.kill_restart.as_ref() || !a_killed {
            findings.push(format!(
                "{at}: a restart killed at {k:?}, but the draw is {:?}{}",
                t.draw.kill_restart,
                if a_killed {
                    ""
                } else {
                    " and worker a was never killed"
                }
            ));
        }
    }
}

/// A held trial's record of its held POST: present exactly when the draw holds one; a kill of
/// `a` at the held step only after the service took its POST; and a POST that landed leaves
/// worker `a`'s refund at Stripe (the rule is the ground truth's, not the runner's word).
fn check_held(i: usize, t: &CapTrial, findings: &mut Vec<String>) {
    let at = trial_label(i, t);
    let Some(held) = &t.held else {
        if t.draw.hold_a_ms.is_some() {
            findings.push(format!(
                "{at}: the draw holds a's refund; no record of the hold"
            ));
        }
        return;
    };
    if t.draw.hold_a_ms.is_none() {
        findings.push(format!("{at}: records a held refund; its draw holds none"));
        return;
    }
    let a = t.cell.tickets.first();
    let killed_held = a.and_then(|x| x.killed_at.as_deref()) == Some(super::HELD_STEP);
    if killed_held && !(held.taken && held.killed_after_ms.is_some()) {
        findings.push(format!(
            "{at}: worker a is recorded killed while its refund was held, but the service never \
             took it"
        ));
    }
    let a_refunded = a.is_some_and(|x| t.cell.truth.of_ticket(&x.ticket_id).next().is_some());
    if t.cell.judged() && held.landed && !a_refunded {
        findings.push(format!(
            "{at}: the held refund is recorded as landed; Stripe holds no refund of worker a's \
             ticket"
        ));
    }
}

/// How findings name trial `i`: its index and its id, cut.
fn trial_label(i: usize, t: &CapTrial) -> String {
    format!(
        "trials[{i}] ({})",
        crate::display::shorten(&t.id, crate::shared_cap::check::ID_CHARS)
    )
}

/// Checks a shared_cap nemesis file against `key`.
pub fn check(file: &CapNemesisFile, key: &KeyCheck) -> CapNemesisReport {
    let read = |i: usize| Ok::<_, Infallible>(file.trials.get(i).map(Cow::Borrowed));
    match check_trials(file, file.trials.len(), read, key) {
        Ok(report) => report,
        Err(never) => match never {},
    }
}

/// [`check`] of a file whose trials are still text ([`crate::load::load_for_check`]): a trial
/// is read, checked and dropped at a time, and nothing of it is kept but its counts in the
/// summary and what the plan's check found of it. The checks and the report are those of
/// [`check`]. `Err` when a trial cannot be read; the caller then reads the whole file strictly
/// to name where.
pub fn check_text(
    file: &CapNemesisText<'_>,
    key: &KeyCheck,
) -> Result<CapNemesisReport, LoadError> {
    let read = |i: usize| {
        let raw = file.trials.get(i);
        raw.map(|raw| read_cap_trial(i, raw).map(Cow::Owned))
            .transpose()
    };
    check_trials(&file.head, file.trials.len(), read, key)
}

/// Every check of a shared_cap nemesis file whose `count` trials `read` gives one at a time
/// (`head`'s own `trials` are not read), in two passes as a results file's cells
/// ([`crate::shared_cap::check::check_text`]).
fn check_trials<'t, E>(
    head: &CapNemesisFile,
    count: usize,
    read: impl Fn(usize) -> Result<Option<Cow<'t, CapTrial>>, E>,
    key: &KeyCheck,
) -> Result<CapNemesisReport, E> {
    let found = (head.format.as_str(), head.scenario.as_str());
    let mut findings = head_findings(found, FORMAT, &head.environment);
    let resolved: Option<VerifyingKey> = file_key(&head.environment.public_key, key, &mut findings);
    // The signature covers every trial: a first pass hashes each, compares it with the plan's
    // trial at its place and counts it in the summary (when the plan's labels are known).
    let known = plan_known(&head.plan).is_ok();
    let mut tally = known.then(|| Tally::new(&head.plan.nemeses, &head.plan.columns));
    let (mut planned, mut trials_found) = (planned(head), Vec::new());
    let digests = digest_each("trials", count, &read, |i, t| {
        if let (true, Some(place)) = (known, planned.next()) {
            check_planned_trial(&head.plan, (i, t), place, &mut trials_found);
        }
        if let Some(tally) = tally.as_mut() {
            tally.add(t);
        }
    })?;
    let message = digests.and_then(|d| message_of(head, d));
    let signed = resolved
        .as_ref()
        .is_some_and(|k| check_signature(head.signature.as_deref(), message, k, &mut findings));
    let mut report = CapNemesisReport {
        ok: false,
        key: crate::shared_cap::check::key_name(key).into(),
        signer: resolved
            .map(|k| hex::encode(k.as_bytes()))
            .unwrap_or_default(),
        trials: count,
        judged: 0,
        signed,
        summary: Vec::new(),
        findings: Vec::new(),
    };
    // Under a pin, a file that is not what the key signed is not read further.
    if matches!(key, KeyCheck::Pinned(_)) && !signed {
        report.findings = findings;
        return Ok(report);
    }
    check_plan(head, count, trials_found, &mut findings);
    let mut listing = crate::shared_cap::check::Listing::default();
    listing.keep_listed(&mut findings);
    for i in 0..count {
        let Some(t) = read(i)? else { continue };
        listing.keep_listed(&mut findings);
        check_kills(i, &t, &mut findings);
        check_held(i, &t, &mut findings);
        let at = trial_label(i, &t);
        crate::shared_cap::bind::check_tickets(&at, &t.cell, resolved.as_ref(), &mut findings);
        if !t.cell.judged() {
            continue;
        }
        report.judged += 1;
        if let Some(k) = &resolved {
            check_judgement(&at, &t.cell, k, &mut findings);
        }
    }
    report.summary = tally.map(Tally::finish).unwrap_or_default();
    if report.summary != head.summary {
        findings.push(
            "summary: differs from the summary the trials give (re-derived by verify)".into(),
        );
    }
    listing.finish(&mut findings);
    report.ok = findings.is_empty();
    report.findings = findings;
    Ok(report)
}

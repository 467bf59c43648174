//! Counterexamples as readable traces: each step says which actor did what (and, for a gate
//! process, what `interlock::decide` told it to do), then what the world looks like after it.

use crate::gate::{Activity, State};
use crate::journal::Entry;
use crate::{Action, Bug, GateModel};
use interlock::decide::{
    next_recovery_step, next_submit_step, Next, SendAnswer, SubmitNext, SubmitStep,
};
use std::fmt::Write;

/// One line about the world: clock, journal, claim, lease, premises, service.
pub fn summary(s: &State) -> String {
    let mut j = String::new();
    for (i, l) in s.journal.iter().enumerate() {
        let replayed = if usize::from(l.id) == i {
            ""
        } else {
            "(replayed)"
        };
        let e = match l.entry {
            Entry::Proposed(p) => format!("PROPOSED({p})"),
            Entry::Dispatched { payload, at } => format!("DISPATCHED#{}({payload})@t{at}", l.id),
            Entry::Committed(via) => format!("COMMITTED({via})"),
            Entry::Refused { code, resolves } => {
                format!(
                    "REFUSED({code}{})",
                    if resolves { ", resolves" } else { "" }
                )
            }
            Entry::Ambiguous => "AMBIGUOUS".to_owned(),
        };
        let _ = write!(j, "{}{e}{replayed}", if i == 0 { "" } else { " " });
    }
    let pending: Vec<String> = s
        .service
        .requests
        .iter()
        .map(|r| {
            format!(
                "#{}@t{}{}",
                r.dispatch,
                r.sent_at,
                match r.outcome {
                    None => " in flight".to_owned(),
                    Some(o) => format!(" {o:?}"),
                }
            )
        })
        .collect();
    let lost: Vec<String> = s
        .procs
        .iter()
        .enumerate()
        .filter(|(_, p)| p.lost)
        .map(|(i, _)| format!(" (p{i} lost it)"))
        .collect();
    format!(
        "t={} journal=[{j}] claim={}{} lease={} premises={} landed={} requests=[{}]",
        s.now,
        s.claim.map_or("free".to_owned(), |p| format!("p{p}")),
        lost.concat(),
        if s.lease_live { "live" } else { "revoked" },
        if s.premises_hold { "hold" } else { "changed" },
        s.service.landings.len(),
        pending.join(", ")
    )
}

fn yes_no(b: bool, yes: &str, no: &str) -> String {
    if b { yes } else { no }.to_owned()
}

/// What process `p`'s next step asks and what the world answers, as `interlock::decide` names
/// the step.
fn step(m: &GateModel, before: &State, p: u8) -> String {
    let proc = before.procs.get(usize::from(p));
    match proc.map(|x| x.act) {
        Some(Activity::Submitting(sub)) => match next_submit_step(&sub.facts) {
            SubmitNext::Do(step) => {
                let answer = match step {
                    SubmitStep::RecordProposal => "PROPOSED, or the call ends".to_owned(),
                    SubmitStep::CheckLease => yes_no(before.lease_live, "live", "revoked"),
                    SubmitStep::CheckPremises => {
                        yes_no(before.premises_hold, "they hold", "one changed")
                    }
                    SubmitStep::TakeClaim => yes_no(before.claim.is_none(), "taken", "held"),
                    SubmitStep::AdmitUnderClaim | SubmitStep::CheckLeaseUnderClaim => {
                        if m.bug == Some(Bug::LeaseOnlyBeforePremises) {
                            "admitted; the lease is not asked again (the answer from before the premise reads stands)".to_owned()
                        } else {
                            format!(
                                "admission, then the lease again: {}",
                                yes_no(before.lease_live, "live", "revoked")
                            )
                        }
                    }
                    SubmitStep::Send | SubmitStep::LookupRejected => {
                        send_answer(m, before, p, sub.deadline)
                    }
                };
                format!("p{p} submit: {step:?} → {answer}")
            }
            SubmitNext::Finish(end) => format!("p{p} submit ends: {end:?}"),
        },
        Some(Activity::Recovering(r)) => {
            let f = m.recovery_facts(before, &r, proc.and_then(|x| x.memory));
            let next = next_recovery_step(&f);
            let answer = match next {
                Next::CheckPremises => {
                    yes_no(before.premises_hold, " → they hold", " → one changed")
                }
                Next::CheckLease | Next::CheckLeaseBeforeResend => {
                    yes_no(before.lease_live, " → live", " → revoked")
                }
                Next::Lookup => yes_no(before.service.found(), " → found", " → not found"),
                Next::Resend(_) => format!(" → {}", send_answer(m, before, p, r.deadline)),
                Next::WaitInFlight { .. } => " → the round ends Blocked".to_owned(),
                _ => String::new(),
            };
            format!("p{p} recover: {next:?}{answer}")
        }
        _ => format!("p{p} idles"),
    }
}

/// What a send step does: confirm the claim (where it can be lost), or check the deadline and
/// let the request leave.
fn send_answer(m: &GateModel, before: &State, p: u8, deadline: Option<u8>) -> String {
    let lost = before.procs.get(usize::from(p)).is_some_and(|x| x.lost);
    match (m.send_window, deadline) {
        (None, _) => "the request leaves".to_owned(),
        (Some(_), None) if lost => {
            "confirm the claim → its session was lost: nothing is sent".to_owned()
        }
        (Some(window), None) => format!(
            "confirm the claim → held: send before t{}",
            before.now.saturating_add(window)
        ),
        (Some(_), Some(by)) if m.bug == Some(Bug::NoSendDeadline) => {
            format!("the request leaves (the deadline t{by} is not checked)")
        }
        (Some(_), Some(by)) if before.now >= by => {
            format!("the deadline t{by} has passed: not sent")
        }
        (Some(_), Some(by)) => format!("t{} < deadline t{by}: the request leaves", before.now),
    }
}

fn describe(m: &GateModel, before: &State, action: Action) -> String {
    match action {
        Action::Propose(p) => format!(
            "p{p} calls submit with payload {}: RecordProposal → PROPOSED, or the call ends",
            before
                .procs
                .get(usize::from(p))
                .and_then(|x| x.todo)
                .unwrap_or_default()
        ),
        Action::Step(p) => step(m, before, p),
        Action::Answer(p, SendAnswer::Unknown) => {
            format!("p{p} hears nothing usable (timeout, lost answer or 5xx): Unknown")
        }
        Action::Answer(p, a) => format!("p{p} hears {a:?}"),
        Action::Recover(p) => format!("p{p} starts a recovery round and takes the claim"),
        Action::Crash(p) => format!("p{p} crashes (its claim is released)"),
        Action::End(i, o) => {
            let r = before.service.requests.get(usize::from(i));
            format!(
                "service: the request of dispatch #{} sent at t{} ends {o:?}",
                r.map_or(0, |r| r.dispatch),
                r.map_or(0, |r| r.sent_at)
            )
        }
        Action::Revoke => "lease store: the lease is revoked".to_owned(),
        Action::ChangePremises => "world: a premise changes".to_owned(),
        Action::ReplayLine => "journal: an old DISPATCHED line is copied back in".to_owned(),
        Action::Tick => "clock: one tick passes".to_owned(),
        Action::LoseClaim => format!(
            "store: the claim's session ends while its holder p{} lives (the lock is free; it does not know)",
            before.claim.unwrap_or(u8::MAX)
        ),
    }
}

/// A counterexample path as numbered steps, each with the world after it.
pub fn narrate(m: &GateModel, path: &[(State, Option<Action>)]) -> String {
    let mut out = String::new();
    if let Some((first, _)) = path.first() {
        let _ = writeln!(out, "   start: {}", summary(first));
    }
    for (n, w) in path.windows(2).enumerate() {
        let [(before, Some(action)), (after, _)] = w else {
            continue;
        };
        let _ = writeln!(out, "{:>3}. {}", n + 1, describe(m, before, *action));
        let _ = writeln!(out, "     {}", summary(after));
    }
    out
}

/// For a state where the protocol, left alone, does not settle: the first 40 steps it takes
/// (with answers delivered, then with every answer lost).
pub fn left_alone(m: &GateModel, s: &State) -> String {
    let mut out = String::new();
    for hostile in [false, true] {
        let mut path = Vec::new();
        if !m.continue_alone(s, hostile, Some(&mut path)) {
            path.truncate(40);
            let _ = writeln!(
                out,
                "   left alone from there ({}), it does not settle:",
                if hostile {
                    "every answer lost"
                } else {
                    "answers delivered"
                }
            );
            out.push_str(&narrate(m, &path));
        }
    }
    out
}

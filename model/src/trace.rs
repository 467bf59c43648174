//! Counterexamples as readable traces: each step says which actor did what (and, for a gate
//! process, what `interlock::decide` told it to do), then what the world looks like after it.

use crate::gate::{Activity, State};
use crate::journal::Entry;
use crate::{Action, GateModel};
use interlock::decide::{next_recovery_step, next_submit_step, SendAnswer};
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
    format!(
        "t={} journal=[{j}] claim={} lease={} premises={} landed={} requests=[{}]",
        s.now,
        s.claim.map_or("free".to_owned(), |p| format!("p{p}")),
        if s.lease_live { "live" } else { "revoked" },
        if s.premises_hold { "hold" } else { "changed" },
        s.service.landings.len(),
        pending.join(", ")
    )
}

fn describe(m: &GateModel, before: &State, action: Action) -> String {
    match action {
        Action::Propose(p) => format!("p{p} calls submit"),
        Action::Step(p) => match before.procs.get(usize::from(p)).map(|x| x.act) {
            Some(Activity::Submitting(sub)) => {
                format!("p{p} submit: {:?}", next_submit_step(&sub.facts))
            }
            Some(Activity::Recovering(r)) => {
                let memory = before.procs.get(usize::from(p)).and_then(|x| x.memory);
                let f = m.recovery_facts(before, &r, memory);
                format!("p{p} recover: {:?}", next_recovery_step(&f))
            }
            _ => format!("p{p} idles"),
        },
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

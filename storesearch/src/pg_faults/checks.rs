//! The checks, over what a run recorded: every answer a caller was given, every durable step a
//! gate reported, and after recovery each effect's journal and the target's record.
//!
//! 1. No effect lands twice (the target's record).
//! 2. No answer is contradicted by what recovery decided afterwards, nor by the target's record:
//!    a committed answer needs the effect committed and landed; a refusal needs it refused and
//!    never landed; AMBIGUOUS needs it left ambiguous. The journal's own final word is held
//!    against the target's record the same way.
//! 3. No acknowledged entry is lost: each answer's entry, and each step a gate reported
//!    durable, is in the journal a fresh gate opens without error.
//!
//! Recovery on a direct connection must also settle every dispatch it can see.

use interlock::{status_of, Status, Step};
use serde_json::Value;
use std::fmt;

/// Which call gave an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// `submit`.
    Submit,
    /// `recover` (a dispatch it resolved).
    Recover,
}

/// An answer a caller was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The gate (`A`, `B`, or `R` for the final recovery).
    pub gate: char,
    /// The call.
    pub call: Call,
    /// The effect's number in the run.
    pub effect: usize,
    /// What it said.
    pub status: Status,
    /// The sentence that came with it, if any.
    pub detail: Option<String>,
    /// Milliseconds since the run's workload started.
    pub at_ms: u128,
}

/// A durable step a gate reported (through its observer) while submitting an effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acked {
    /// The gate.
    pub gate: char,
    /// The effect's number in the run.
    pub effect: usize,
    /// The step.
    pub step: Step,
}

/// One effect after the final recovery.
#[derive(Debug, Clone, PartialEq)]
pub struct Final {
    /// Its number in the run.
    pub effect: usize,
    /// Its entries, as the fresh gate read them.
    pub entries: Vec<Value>,
    /// How many times it landed at the target.
    pub landed: usize,
    /// How many sends reached the target.
    pub sends: usize,
    /// Why recovery could not settle it, if it could not.
    pub blocked: Option<String>,
}

impl Final {
    /// What the journal says now.
    pub fn status(&self) -> Option<Status> {
        status_of(&self.entries)
    }

    /// How many entries of `kind` (`PROPOSED`, …) it has, and of those how many say
    /// `field` = `value` (when given).
    fn count(&self, kind: &str, field: Option<(&str, &str)>) -> usize {
        self.entries
            .iter()
            .filter(|e| e.get("kind").and_then(Value::as_str) == Some(kind))
            .filter(|e| field.is_none_or(|(k, v)| e.get(k).and_then(Value::as_str) == Some(v)))
            .count()
    }

    /// The entries in a line: `PROPOSED AUTHORIZED DISPATCHED REFUSED:target_error`.
    pub fn summary(&self) -> String {
        self.entries
            .iter()
            .map(|e| {
                let kind = e.get("kind").and_then(Value::as_str).unwrap_or("?");
                match (e.get("code"), e.get("via")) {
                    (Some(Value::String(c)), _) => format!("{kind}:{c}"),
                    (_, Some(Value::String(v))) => format!("{kind}({v})"),
                    _ => kind.to_owned(),
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Which check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// An effect landed more than once.
    LandedTwice,
    /// An answer, or the journal's final word, is contradicted.
    Contradicted,
    /// An acknowledged entry is missing.
    EntryLost,
    /// Recovery on a direct connection left a dispatch open.
    Unsettled,
    /// The journal could not be opened after the faults.
    Unopened,
}

impl Check {
    /// Short name, as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::LandedTwice => "landed twice",
            Check::Contradicted => "answer contradicted",
            Check::EntryLost => "acknowledged entry lost",
            Check::Unsettled => "left unsettled",
            Check::Unopened => "journal unopened",
        }
    }
}

/// A failed check, in one sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Which check.
    pub check: Check,
    /// The effect, if one.
    pub effect: Option<usize>,
    /// What was found.
    pub sentence: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.effect {
            Some(n) => write!(
                f,
                "{} (effect #{n}): {}",
                self.check.as_str(),
                self.sentence
            ),
            None => write!(f, "{}: {}", self.check.as_str(), self.sentence),
        }
    }
}

/// Run every check.
pub fn check(finals: &[Final], answers: &[Answer], acked: &[Acked]) -> Vec<Failure> {
    let mut out = Vec::new();
    for f in finals {
        world_and_journal(f, &mut out);
    }
    for a in answers {
        let Some(f) = finals.iter().find(|f| f.effect == a.effect) else {
            continue;
        };
        answer_holds(a, f, &mut out);
    }
    for f in finals {
        steps_kept(f, acked, &mut out);
    }
    out
}

fn fail(out: &mut Vec<Failure>, check: Check, effect: usize, sentence: String) {
    out.push(Failure {
        check,
        effect: Some(effect),
        sentence,
    });
}

/// The target's record against itself and against the journal's final word.
fn world_and_journal(f: &Final, out: &mut Vec<Failure>) {
    if f.landed > 1 {
        fail(
            out,
            Check::LandedTwice,
            f.effect,
            format!("the target's record shows it landed {} times", f.landed),
        );
    }
    match f.status() {
        Some(Status::InFlight) => fail(
            out,
            Check::Unsettled,
            f.effect,
            format!(
                "recovery on a direct connection left its dispatch open ({})",
                f.blocked.as_deref().unwrap_or("no reason given")
            ),
        ),
        Some(s) if s.is_committed() && f.landed == 0 => fail(
            out,
            Check::Contradicted,
            f.effect,
            format!("the journal says {} but it never landed", s.as_str()),
        ),
        Some(s @ Status::Refused(_)) if f.landed > 0 && f.count("DISPATCHED", None) > 0 => fail(
            out,
            Check::Contradicted,
            f.effect,
            format!(
                "the journal settles it {} but it landed ({} send(s) reached the target)",
                s.as_str(),
                f.sends
            ),
        ),
        _ => {}
    }
}

/// One answer against the journal's final word, the target's record, and the entry it rests on.
fn answer_holds(a: &Answer, f: &Final, out: &mut Vec<Failure>) {
    let said = a.status.as_str();
    let who = format!(
        "gate {}'s {} answered {said}",
        a.gate,
        match a.call {
            Call::Submit => "submit",
            Call::Recover => "recovery",
        }
    );
    let now = f.status();
    let (journal_agrees, world_agrees) = match a.status {
        Status::InFlight => (true, true),
        s if s.is_committed() => (now.is_some_and(Status::is_committed), f.landed > 0),
        Status::Refused(_) => (matches!(now, Some(Status::Refused(_))), f.landed == 0),
        _ => (now == Some(Status::Ambiguous), true),
    };
    let mut but = Vec::new();
    if !journal_agrees {
        but.push(format!(
            "the journal now says {}",
            now.map_or("nothing", Status::as_str)
        ));
    }
    if !world_agrees {
        but.push(format!(
            "the target's record shows it landed {} time(s)",
            f.landed
        ));
    }
    if !but.is_empty() {
        fail(
            out,
            Check::Contradicted,
            a.effect,
            format!("{who}, but {}", but.join(" and ")),
        );
    }
    let (kind, field) = match a.status {
        Status::InFlight => return,
        s if s.is_committed() => ("COMMITTED", None),
        Status::Refused(code) => ("REFUSED", Some(("code", code.as_str()))),
        _ => ("AMBIGUOUS", None),
    };
    if f.count(kind, field) == 0 {
        fail(
            out,
            Check::EntryLost,
            a.effect,
            format!("{who}, but the journal holds no {kind} entry for it"),
        );
    }
}

/// Every durable step the gates reported for `f` is among its entries (as many of each kind).
fn steps_kept(f: &Final, acked: &[Acked], out: &mut Vec<Failure>) {
    for (step, kind) in [
        (Step::Proposed, "PROPOSED"),
        (Step::Authorized, "AUTHORIZED"),
        (Step::Dispatched, "DISPATCHED"),
        (Step::Committed, "COMMITTED"),
    ] {
        let reported: Vec<char> = acked
            .iter()
            .filter(|a| a.effect == f.effect && a.step == step)
            .map(|a| a.gate)
            .collect();
        let kept = f.count(kind, None);
        if reported.len() > kept {
            fail(
                out,
                Check::EntryLost,
                f.effect,
                format!(
                    "{} {kind} entr{} reported durable (by gate {}), {kept} in the journal",
                    reported.len(),
                    if reported.len() == 1 { "y" } else { "ies" },
                    reported
                        .iter()
                        .map(char::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use interlock::RefusalCode;
    use serde_json::json;

    fn fin(kinds: &[Value], landed: usize) -> Final {
        Final {
            effect: 0,
            entries: kinds.to_vec(),
            landed,
            sends: landed,
            blocked: None,
        }
    }

    fn answer(status: Status) -> Answer {
        Answer {
            gate: 'A',
            call: Call::Submit,
            effect: 0,
            status,
            detail: None,
            at_ms: 0,
        }
    }

    fn dispatched() -> Vec<Value> {
        vec![
            json!({"kind": "PROPOSED"}),
            json!({"kind": "AUTHORIZED"}),
            json!({"kind": "DISPATCHED"}),
        ]
    }

    fn refused() -> Value {
        json!({"kind": "REFUSED", "code": "target_error", "resolves": true})
    }

    #[test]
    fn a_refusal_then_a_landing_is_a_contradicted_answer() {
        let mut entries = dispatched();
        entries.push(refused());
        let f = fin(&entries, 1);
        let found = check(
            &[f],
            &[answer(Status::Refused(RefusalCode::TargetError))],
            &[],
        );
        let checks: Vec<_> = found.iter().map(|x| x.check).collect();
        assert_eq!(checks, vec![Check::Contradicted, Check::Contradicted]);
        assert!(found[1]
            .to_string()
            .contains("gate A's submit answered REFUSED:target_error"));
    }

    #[test]
    fn a_settled_run_passes() {
        let mut entries = dispatched();
        entries.push(json!({"kind": "COMMITTED", "via": "send"}));
        let f = fin(&entries, 1);
        let acked = [
            Step::Proposed,
            Step::Authorized,
            Step::Dispatched,
            Step::Committed,
        ]
        .map(|step| Acked {
            gate: 'A',
            effect: 0,
            step,
        });
        let answers = [answer(Status::Committed), answer(Status::DuplicateIgnored)];
        assert_eq!(check(&[f], &answers, &acked), vec![]);
    }

    #[test]
    fn a_landing_twice_an_open_dispatch_and_a_lost_entry_are_each_found() {
        let f = fin(&dispatched(), 2);
        let acked = [Acked {
            gate: 'B',
            effect: 0,
            step: Step::Committed,
        }];
        let found: Vec<_> = check(&[f], &[answer(Status::Committed)], &acked)
            .into_iter()
            .map(|x| x.check)
            .collect();
        assert_eq!(
            found,
            vec![
                Check::LandedTwice,
                Check::Unsettled,
                Check::Contradicted,
                Check::EntryLost,
                Check::EntryLost
            ]
        );
    }

    #[test]
    fn an_in_flight_answer_promises_nothing() {
        let mut entries = dispatched();
        entries.push(json!({"kind": "COMMITTED", "via": "retry-idempotent"}));
        let f = fin(&entries, 1);
        assert_eq!(check(&[f], &[answer(Status::InFlight)], &[]), vec![]);
    }
}

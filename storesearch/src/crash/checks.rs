//! What every crash state must satisfy, checked by opening a gate on it (as a restarted
//! process would), asking `status`, running recovery against the world as the crash left it,
//! and asking again:
//!
//! - no effect lands twice;
//! - no answer a caller was given is contradicted: an effect answered committed (or
//!   `DUPLICATE_IGNORED`), refused or ambiguous has that status before and after recovery, a
//!   committed one landed once, and recovery sends nothing more of a refused or ambiguous one;
//! - no acknowledged append is missing from a journal the gate opens.

use super::model::CrashState;
use super::workloads::{self, Workload, JOURNAL};
use super::world::World;
use interlock::{Status, Tier};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The world's events up to a cut: what landed, what callers were told, what was acknowledged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Told {
    /// Each landed send's effect, in order.
    pub landed: Vec<String>,
    /// The last answer given per effect (its status string).
    pub answers: BTreeMap<String, String>,
    /// Acknowledged appends: (effect, entry hash).
    pub acked: Vec<(String, String)>,
}

impl Told {
    /// Take in one of the workload's events (`land`, `answer`, `acked`).
    pub fn take(&mut self, note: &str) {
        let words: Vec<&str> = note.split(' ').collect();
        match words.as_slice() {
            ["land", e] => self.landed.push((*e).to_owned()),
            ["answer", e, s] => {
                // An answer that settles nothing (IN_FLIGHT) after one that did takes nothing
                // back: the earlier one still has to hold.
                let keeps_earlier = settled(s).is_none()
                    && self.answers.get(*e).is_some_and(|a| settled(a).is_some());
                if !keeps_earlier {
                    self.answers.insert((*e).to_owned(), (*s).to_owned());
                }
            }
            ["acked", e, h] => self.acked.push(((*e).to_owned(), (*h).to_owned())),
            _ => {}
        }
    }
}

/// What an answer (or a status) says about an effect, for matching answers with statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    Landed,
    Refused,
    Ambiguous,
}

fn settled(status: &str) -> Option<Settled> {
    match status {
        "COMMITTED"
        | "DUPLICATE_IGNORED"
        | "COMMITTED_ON_QUERY"
        | "COMMITTED_BY_RETRY"
        | "REAPPLIED_AFTER_QUERY" => Some(Settled::Landed),
        "AMBIGUOUS" => Some(Settled::Ambiguous),
        s if s.starts_with("REFUSED") => Some(Settled::Refused),
        _ => None,
    }
}

fn status_text(s: Option<Status>) -> String {
    s.map_or_else(|| "unknown".to_owned(), |s| s.as_str().to_owned())
}

/// Check one crash state, materialised in `dir` (empty); returns what failed, in words.
pub fn check(w: &Workload, state: &CrashState, told: &Told, dir: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    if let Err(e) = materialise(state, dir) {
        return vec![format!("the state could not be written out: {e}")];
    }
    let world = Arc::new(World::after(w.tier, told.landed.clone()));
    // The restarted gate's clock is an hour on: every in-flight bound has passed, so recovery
    // acts on every open dispatch rather than waiting.
    let gate = match workloads::gate_at(
        w,
        &dir.join(JOURNAL),
        &world,
        workloads::CLOCK_MS + 3_600_000,
    ) {
        Ok(g) => g,
        Err(e) => return vec![format!("the gate refuses the journal: {e}")],
    };
    for (effect, hash) in &told.acked {
        let entries = gate.entries(effect).unwrap_or_default();
        let found = entries
            .iter()
            .any(|e| e.get("hash").and_then(|h| h.as_str()) == Some(hash.as_str()));
        if !found {
            failures.push(format!("the acknowledged entry {hash} of {effect} is gone"));
        }
    }
    let answer_held = |when: &str, failures: &mut Vec<String>| {
        for (effect, answer) in &told.answers {
            let Some(want) = settled(answer) else {
                continue;
            };
            let now = gate.status(effect);
            let now_text = match &now {
                Ok(s) => status_text(*s),
                Err(e) => format!("error ({e})"),
            };
            let got = now.ok().flatten().and_then(|s| settled(s.as_str()));
            if got != Some(want) {
                failures.push(format!(
                    "{effect}: a caller was told {answer}, {when} its status is {now_text}"
                ));
            }
        }
    };
    answer_held("before recovery", &mut failures);
    if let Err(e) = gate.recover() {
        failures.push(format!("recovery failed: {e}"));
    }
    answer_held("after recovery", &mut failures);
    let mut effects: Vec<&String> = told.landed.iter().collect();
    effects.extend(told.answers.keys());
    effects.sort();
    effects.dedup();
    for effect in effects {
        let n = world.count(effect);
        let before = told.landed.iter().filter(|e| *e == effect).count();
        if n > 1 && w.tier != Tier::One {
            failures.push(format!("{effect} landed {n} times"));
        }
        match told.answers.get(effect).and_then(|a| settled(a)) {
            Some(Settled::Landed) if n != 1 => failures.push(format!(
                "{effect}: a caller was told it landed; it landed {n} times"
            )),
            Some(Settled::Refused | Settled::Ambiguous) if n != before => failures.push(format!(
                "{effect}: a caller was told {}; recovery sent it again",
                told.answers.get(effect).map_or("", String::as_str)
            )),
            _ => {}
        }
    }
    failures
}

fn materialise(state: &CrashState, dir: &Path) -> std::io::Result<()> {
    for d in &state.dirs {
        std::fs::create_dir_all(dir.join(d))?;
    }
    for (path, bytes) in &state.files {
        let to = dir.join(path);
        if let Some(p) = to.parent() {
            std::fs::create_dir_all(p)?;
        }
        std::fs::write(to, bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_callers_were_told_is_read_from_the_workloads_events() {
        let mut told = Told::default();
        for note in [
            "land e1",
            "answer e1 COMMITTED",
            "answer e2 REFUSED:lease",
            "acked e3 h3",
            "other",
        ] {
            told.take(note);
        }
        assert_eq!(told.landed, vec!["e1".to_owned()]);
        assert_eq!(
            told.answers.get("e2").map(String::as_str),
            Some("REFUSED:lease")
        );
        assert_eq!(told.acked, vec![("e3".to_owned(), "h3".to_owned())]);
    }

    #[test]
    fn answers_are_matched_with_statuses_by_what_they_say_happened() {
        assert_eq!(settled("DUPLICATE_IGNORED"), settled("COMMITTED_ON_QUERY"));
        assert_eq!(settled("REFUSED:stale_premise"), Some(Settled::Refused));
        assert_eq!(settled("AMBIGUOUS"), Some(Settled::Ambiguous));
        assert_eq!(settled("IN_FLIGHT"), None);
        assert_ne!(settled("COMMITTED"), settled("AMBIGUOUS"));
    }

    #[test]
    fn a_state_that_lost_what_an_answer_rested_on_fails_and_one_that_kept_it_passes() {
        #![allow(clippy::unwrap_used)]
        let w = workloads::ALL[0];
        // A crash that kept nothing, after a caller was told COMMITTED.
        let empty = CrashState {
            cut: 0,
            variant: "nothing kept".into(),
            files: Default::default(),
            dirs: Default::default(),
        };
        let effect = interlock::effect_id(&workloads::proposal("a", None));
        let mut told = Told::default();
        told.take(&format!("land {effect}"));
        told.take(&format!("answer {effect} COMMITTED"));
        let dir = tempfile::tempdir().unwrap();
        let failed = check(&w, &empty, &told, dir.path());
        assert!(
            failed
                .iter()
                .any(|f| f.contains("was told COMMITTED, before recovery")),
            "{failed:?}"
        );
        // The whole search of that workload finds nothing wrong, and checked something.
        let report = super::super::search(&w, super::super::model::TearStride(64)).unwrap();
        assert!(report.failures.is_empty(), "{:?}", report.failures);
        assert!(report.distinct > 10 && report.answers == 1, "{report:?}");
    }
}

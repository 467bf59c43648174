//! The opening of every report and of the front page: what Interlock is, what was tested, what
//! was found in plain words, and how to check it; then the terms the numbers below use, defined
//! before the first number that uses them; then one figure of the outcomes per column and fault.
//!
//! An [`Opening`] is a view: each scenario builds its own from the figures `verify` derived
//! (`results` for billing_credit's format, [`crate::shared_cap`]'s for a shared_cap run, a
//! scenario on the contract through [`crate::scenarios::Views::opening`]), and the templates
//! `opening.html` and `outcomes.html` only print it. Nothing here counts: the words are chosen
//! by comparing figures that were handed in.

pub mod results;

use crate::outcome_chart::OutcomeFigure;

/// What Interlock is, in two sentences: the same on every page that opens with it.
pub const INTERLOCK_IS: &str = "Interlock is a commit gate for the side effects an AI agent \
    decides, such as a refund, a merge or an email: before anything is sent it records, signed \
    and hash-chained, what was decided and re-checks the facts the decision rested on, and after \
    a crash it settles every effect from that record instead of guessing. These reports test \
    that claim with real SIGKILLs, beside a careful hand-written check and a column with no \
    check at all, and every figure on them was re-derived from the published data when this \
    site was built.";

/// The gate's column, in every scenario.
pub const GATE: &str = "interlock";

/// A term the page's numbers use, with its meaning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// The term, as the tables write it.
    pub term: String,
    /// What it means, one or two sentences.
    pub meaning: String,
}

impl Definition {
    /// A definition of `term`.
    pub fn new(term: impl Into<String>, meaning: impl Into<String>) -> Definition {
        Definition {
            term: term.into(),
            meaning: meaning.into(),
        }
    }
}

/// The opening of one report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Opening {
    /// What was tested: the story, the columns compared, the faults, the service and decider.
    pub tested: String,
    /// What was found, one plain sentence (or two) each, the verdict first.
    pub found: Vec<String>,
    /// The published results file's name under `data/`.
    pub data_file: String,
    /// The command that checks the published results file offline.
    pub check: String,
    /// The terms the page's numbers use: the invariant, the columns, the assumptions.
    pub definitions: Vec<Definition>,
    /// The outcomes per column and fault, drawn, with its text alternative.
    pub figure: Option<OutcomeFigure>,
    /// How many of the findings the front page repeats (at least the verdict).
    pub on_front: usize,
}

impl Opening {
    /// What Interlock is ([`INTERLOCK_IS`]), for the templates.
    pub fn interlock_is(&self) -> &'static str {
        INTERLOCK_IS
    }

    /// The command that installs the verifier from a clone of the repository.
    pub fn install(&self) -> &'static str {
        INSTALL_VERIFIER
    }

    /// The findings the front page repeats ([`Opening::on_front`], the verdict at least), as
    /// one paragraph.
    pub fn front_lines(&self) -> String {
        if self.found.is_empty() {
            return self.verdict().to_owned();
        }
        self.found[..self.on_front.clamp(1, self.found.len())].join(" ")
    }

    /// The verdict: the first finding, or a sentence saying there is none.
    pub fn verdict(&self) -> &str {
        self.found
            .first()
            .map_or("No cell was judged, so nothing was found.", String::as_str)
    }
}

/// The command that installs the verifier alone, from a clone of the repository.
pub const INSTALL_VERIFIER: &str = "cargo install --path verify --locked --bin interlock-verify";

/// The command that checks a published file offline, as the report prints it.
pub fn verify_command(data_file: &str) -> String {
    format!("interlock-verify data/{data_file}")
}

/// The meaning of a column, by the name every scenario gives it; `None` for a column this site
/// has no words for (its scenario's Setup describes it).
pub fn column_meaning(column: &str) -> Option<&'static str> {
    Some(match column {
        "no_check" => {
            "no check: the worker saves its decision, sends it, and after a crash sends the \
             saved decision again (under the service's idempotency key where there is one)."
        }
        "hand_check" => {
            "a careful hand-written check, as a good engineer would write it: before every send \
             it looks its own effect up, re-reads the approval and the facts the decision rested \
             on, and logs each step to a plain file."
        }
        "hand_lock" => {
            "hand_check under a file lock both workers take around check-and-send: correct on \
             one host only."
        }
        "hand_pg_lock" => {
            "hand_check under a PostgreSQL advisory lock both workers take around \
             check-and-send: a lock that holds across hosts."
        }
        "hand_resend" => {
            "a hand-written check that, when its log shows a send begun and not ended, sends \
             again rather than hand the case to a person."
        }
        "native" => {
            "relies on the service's own precondition alone (the merge's expected head sha), \
             with no check of its own."
        }
        "interlock" => {
            "the gate: every send goes through Interlock's journal, and every restart through its \
             recovery, which settles the effect from the signed record."
        }
        _ => return None,
    })
}

/// A definition per column, in the order given: the column's meaning, or a pointer to the
/// scenario's Setup when this site has no words for it.
pub fn column_definitions(columns: &[String]) -> Vec<Definition> {
    columns
        .iter()
        .map(|c| {
            Definition::new(
                c.clone(),
                column_meaning(c).unwrap_or("a column of this scenario; its Setup describes it."),
            )
        })
        .collect()
}

/// What "within" and "beyond a column's assumptions" mean, for every scenario.
pub fn assumptions_definition() -> Definition {
    Definition::new(
        "within / beyond assumptions",
        "every column rests on two assumptions no check on the client can remove: a request that \
         left a dead sender lands, if at all, within the service's declared in-flight bound; and \
         nothing changes a fact between the column's last read of it and its send. A trial that \
         breaks one is labelled beyond that column's assumptions by one rule in verify, and \
         reported apart, as measured, never hidden.",
    )
}

/// What a wrong answer is, for every scenario.
pub fn wrong_answer_definition() -> Definition {
    Definition::new(
        "wrong answer",
        "a final answer that contradicts what the service holds: it says sent when nothing \
         landed, or the reverse. An answer that says it cannot know is never wrong: it hands the \
         case to a person.",
    )
}

/// What a scenario on the contract states of itself, for its opening.
#[derive(Debug, Clone, Copy)]
pub struct Stated<'a> {
    /// What the scenario tests (its `ABOUT`).
    pub about: &'a str,
    /// What its figures show, the verdict first (its notes).
    pub notes: &'a [String],
    /// The file's environment: the service (`backend_detail`) and the decider (`decider`).
    pub environment: &'a std::collections::BTreeMap<String, String>,
    /// The columns the file's plan names.
    pub columns: &'a [String],
    /// The results file's name under `data/`.
    pub json_name: &'a str,
}

/// The opening a scenario on the contract gets unless it gives its own: its `ABOUT`, the
/// service and decider its environment names (never assumed), its notes as the findings, and
/// the definitions every scenario shares.
pub fn stated(s: Stated<'_>) -> Opening {
    let said = |k: &str| s.environment.get(k).map_or("not stated", String::as_str);
    let decider = match s.environment.get("decider").map(String::as_str) {
        Some(kind) => {
            crate::report_view::decider_words(kind, s.environment.get("model").map(String::as_str))
        }
        None => "a decider the file does not state".to_owned(),
    };
    let mut definitions = vec![Definition::new(
        "the invariant",
        "what the scenario's want rule allows, judged from what the service itself holds, never \
         from a column's own bookkeeping: an effect made twice, or made when it should not have \
         been, or not made when it should, breaks it.",
    )];
    definitions.extend(column_definitions(s.columns));
    definitions.push(assumptions_definition());
    definitions.push(wrong_answer_definition());
    Opening {
        tested: format!(
            "{} Columns: {}. Ran against {}; decided by {decider}.",
            s.about,
            words(s.columns),
            said("backend_detail")
        ),
        found: s.notes.iter().take(2).cloned().collect(),
        data_file: s.json_name.to_owned(),
        check: verify_command(s.json_name),
        definitions,
        figure: None,
        on_front: 1,
    }
}

/// The columns a file's plan names (`params.columns`), read from its parameters as the file
/// states them; none when the plan names none.
pub fn planned_columns(params: &impl serde::Serialize) -> Vec<String> {
    serde_json::to_value(params)
        .ok()
        .and_then(|v| {
            v.get("columns").and_then(|c| c.as_array()).map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// The front page's opening: what was tested over every report, each report's verdict linked
/// to it, and the terms every report shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Front {
    /// What the reports test, in one paragraph.
    pub tested: String,
    /// Per report, in the page's order: its folder, title and verdict.
    pub found: Vec<FrontFinding>,
    /// The terms every report uses.
    pub definitions: Vec<Definition>,
}

impl Front {
    /// What Interlock is ([`INTERLOCK_IS`]), for the template.
    pub fn interlock_is(&self) -> &'static str {
        INTERLOCK_IS
    }

    /// The command that installs the verifier from a clone of the repository.
    pub fn install(&self) -> &'static str {
        INSTALL_VERIFIER
    }
}

/// One report's verdict on the front page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontFinding {
    /// The report's folder.
    pub folder: String,
    /// The report's title.
    pub title: String,
    /// Its verdict ([`Opening::verdict`]) and the findings after it the front page repeats.
    pub verdict: String,
}

/// The front page's opening over `reports` (folder, title, opening), in the page's order.
pub fn front(reports: &[(&str, &str, &Opening)]) -> Front {
    let mut columns: Vec<String> = Vec::new();
    for (_, _, o) in reports {
        for d in &o.definitions {
            if column_meaning(&d.term).is_some() && !columns.contains(&d.term) {
                columns.push(d.term.clone());
            }
        }
    }
    let mut definitions = vec![Definition::new(
        "the invariant",
        "each report's own rule for what the side effect may do (a credit at most once, refunds \
         within a cap, one merge of the reviewed head, one email), judged from what the service \
         itself holds, never from a column's own bookkeeping. Each report defines its own first.",
    )];
    definitions.extend(column_definitions(&columns));
    definitions.push(assumptions_definition());
    definitions.push(wrong_answer_definition());
    Front {
        tested: format!(
            "{}, each a side effect an agent decides, sent through crashes by columns that \
             guard it in different ways: {}.",
            crate::format::count(reports.len(), "report", "reports"),
            // Titles hold colons and commas of their own: a semicolon between them.
            reports
                .iter()
                .map(|(_, t, _)| (*t).to_owned())
                .collect::<Vec<_>>()
                .join("; ")
        ),
        found: reports
            .iter()
            .map(|(folder, title, o)| FrontFinding {
                folder: (*folder).to_owned(),
                title: (*title).to_owned(),
                verdict: o.front_lines(),
            })
            .collect(),
        definitions,
    }
}

/// `a`, `a and b`, `a, b and c`.
pub fn words(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_is_the_first_finding() {
        let o = Opening {
            found: vec!["first".into(), "second".into()],
            ..Opening::default()
        };
        assert_eq!(o.verdict(), "first");
        assert!(Opening::default().verdict().starts_with("No cell"));
    }

    #[test]
    fn every_known_column_has_words_and_an_unknown_one_points_to_the_setup() {
        let defs = column_definitions(&["interlock".into(), "mystery".into()]);
        assert!(defs[0].meaning.starts_with("the gate"));
        assert!(defs[1].meaning.contains("Setup"));
    }

    #[test]
    fn lists_read_as_words() {
        let l = |v: &[&str]| words(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(l(&[]), "");
        assert_eq!(l(&["a"]), "a");
        assert_eq!(l(&["a", "b", "c"]), "a, b and c");
    }
}

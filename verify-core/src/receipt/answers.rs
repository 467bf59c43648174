//! The service's answers to recovery's resends, as a settling entry lists them
//! (`resend_answers`, DESIGN §4.10), and the two rules they bind: the in-flight bound a "not
//! found" rested on was counted from no earlier than the last answer that said a request under
//! the key was still executing, and recovery never refused a dispatch after the service said a
//! request under its key was executing unless the service then replayed that request's saved
//! failure (a refusal otherwise rests on the bound alone against the service's own word: the
//! gate answers AMBIGUOUS there).

use crate::view::{Object, View};

/// The answer classes an entry may list.
pub const ANSWER_CLASSES: [&str; 6] = [
    "applied", "rejected", "unknown", "in_use", "replayed", "not_sent",
];

/// What is wrong with a settling entry's `resend_answers`, as a problem code and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswersProblem {
    /// The problem's machine code.
    pub code: &'static str,
    /// What is wrong, in words.
    pub what: String,
}

/// A settling entry that rests on the in-flight bound (`assumed_max_in_flight_ms`, counted from
/// `counted_from_ms`) was written no earlier than the bound after that instant: recovery trusts a
/// "not found" only then, and the entry comes after the lookup it rests on. `None` when it holds
/// or the entry states no such bound.
pub fn waited(obj: &Object<'_>) -> Option<AnswersProblem> {
    let bound = obj.get("assumed_max_in_flight_ms").and_then(View::as_u64)?;
    let from = obj.get("counted_from_ms").and_then(View::as_u64)?;
    let at = obj.get("ts_ms").and_then(View::as_u64)?;
    (at < from.saturating_add(bound)).then(|| AnswersProblem {
        code: crate::problem::code::BOUND_NOT_WAITED,
        what: format!(
            "rests on an in-flight bound of {bound} ms counted from {from} ms, but was written at \
             {at} ms, before the bound had passed"
        ),
    })
}

/// Check the `resend_answers` of a settling entry (`kind` COMMITTED, REFUSED or AMBIGUOUS);
/// `None` when it has none or they hold.
pub fn check(kind: &str, obj: &Object<'_>) -> Option<AnswersProblem> {
    let listed = obj.get("resend_answers")?;
    let malformed = |what: &str| {
        Some(AnswersProblem {
            code: crate::problem::code::MALFORMED_ENTRY,
            what: format!("has resend_answers that {what}"),
        })
    };
    let Some(answers) = listed.get("answers").and_then(View::as_array) else {
        return malformed("hold no list of answers");
    };
    let Some(dropped) = listed.get("dropped").and_then(View::as_u64) else {
        return malformed("do not say how many were dropped");
    };
    // How many of the dropped answers said "in use": required once any was dropped (a dropped
    // "in use" answer must still count).
    let dropped_in_use = match listed.get("dropped_in_use") {
        Some(v) => match v.as_u64() {
            Some(n) if n <= dropped => n,
            _ => return malformed("give a dropped_in_use that is not a count within dropped"),
        },
        None if dropped == 0 => 0,
        None => return malformed("dropped answers without saying how many of them were 'in use'"),
    };
    // Nothing below depends on the list's order: answers are compared by their times (the gate
    // writes every instant of an entry with one clock offset).
    let mut last_in_use: Option<u64> = None;
    let mut last_replayed: Option<u64> = None;
    for a in answers {
        let class = a.get("answer").and_then(View::as_str);
        let at = a.get("at_ms").and_then(View::as_u64);
        let (Some(class), Some(at), true) = (class, at, a.get("said").is_some_and(View::is_string))
        else {
            return malformed("list an answer without a class, a time or what was said");
        };
        if !ANSWER_CLASSES.contains(&class) {
            return malformed("list an answer of no known class");
        }
        if class == "in_use" {
            last_in_use = Some(last_in_use.map_or(at, |t| t.max(at)));
        }
        if class == "replayed" {
            last_replayed = Some(last_replayed.map_or(at, |t| t.max(at)));
        }
    }
    let counted_from = obj.get("counted_from_ms").and_then(View::as_u64);
    if let (None, Some(in_use), true) = (
        counted_from,
        last_in_use,
        obj.contains_key("assumed_max_in_flight_ms"),
    ) {
        return Some(AnswersProblem {
            code: crate::problem::code::BOUND_BEFORE_IN_USE,
            what: format!(
                "rests on an in-flight bound without saying from when it counted, but the service said at {in_use} ms that a request under the key was still executing"
            ),
        });
    }
    if let (Some(from), Some(in_use)) = (counted_from, last_in_use) {
        if from < in_use {
            return Some(AnswersProblem {
                code: crate::problem::code::BOUND_BEFORE_IN_USE,
                what: format!(
                    "rests on an in-flight bound counted from {from} ms, but the service said at {in_use} ms that a request under the key was still executing"
                ),
            });
        }
    }
    // Told "in use" (a kept answer, or a dropped one: older than every kept answer), and no
    // replayed failure at or after the last such answer: the request may still land.
    let told_in_use = last_in_use.is_some() || dropped_in_use > 0;
    let replayed_since = match (last_in_use, last_replayed) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(in_use), Some(replayed)) => replayed >= in_use,
    };
    if kind == "REFUSED" && told_in_use && !replayed_since {
        return Some(AnswersProblem {
            code: crate::problem::code::GAVE_UP_WHILE_IN_USE,
            what: "refuses the dispatch, but the service said a request under its key was still executing and never replayed how that request ended (it may still land: AMBIGUOUS is the answer there)".into(),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The entry `fields` as the checks read it (kept for the whole test run: tests only).
    fn entry(fields: Value) -> Object<'static> {
        let fields: &'static Value = Box::leak(Box::new(fields));
        View::of(fields).as_object().cloned().unwrap_or_default()
    }

    fn answers(list: Value) -> Value {
        json!({"answers": list, "dropped": 0})
    }

    #[test]
    fn an_entry_without_answers_or_with_consistent_ones_passes() {
        assert_eq!(check("COMMITTED", &entry(json!({"via": "send"}))), None);
        let e = entry(json!({
            "code": "ambiguous",
            "counted_from_ms": 20,
            "resend_answers": answers(json!([
                {"answer": "in_use", "said": "409", "at_ms": 10},
                {"answer": "in_use", "said": "409", "at_ms": 20},
            ])),
        }));
        assert_eq!(check("AMBIGUOUS", &e), None);
    }

    #[test]
    fn a_bound_counted_before_the_last_in_use_answer_is_a_problem() {
        let e = entry(json!({
            "code": "lease_at_recovery",
            "counted_from_ms": 19,
            "resend_answers": answers(json!([{"answer": "in_use", "said": "409", "at_ms": 20}])),
        }));
        let p = check("REFUSED", &e).map(|p| p.code);
        assert_eq!(p, Some(crate::problem::code::BOUND_BEFORE_IN_USE));
        // The last "in use" answer by its time, wherever the list puts it.
        let e = entry(json!({
            "code": "ambiguous",
            "counted_from_ms": 15,
            "resend_answers": answers(json!([
                {"answer": "in_use", "said": "409", "at_ms": 20},
                {"answer": "in_use", "said": "409", "at_ms": 10},
            ])),
        }));
        let p = check("AMBIGUOUS", &e).map(|p| p.code);
        assert_eq!(p, Some(crate::problem::code::BOUND_BEFORE_IN_USE));
    }

    /// From the gate review: "in use", then unknown answers that ended the resends, then a
    /// refusal. Whatever the code and wherever the "in use" answer stands, a refusal after one
    /// with no replayed failure is a problem.
    #[test]
    fn any_refusal_after_an_in_use_answer_without_a_replayed_failure_is_a_problem() {
        for (code, list) in [
            (
                "target_failed_at_recovery",
                json!([
                    {"answer": "unknown", "said": "timeout", "at_ms": 10},
                    {"answer": "in_use", "said": "409", "at_ms": 16},
                    {"answer": "unknown", "said": "timeout", "at_ms": 22},
                    {"answer": "unknown", "said": "timeout", "at_ms": 28},
                ]),
            ),
            (
                "lease_at_recovery",
                json!([{"answer": "in_use", "said": "409", "at_ms": 16}]),
            ),
            (
                "target_failed_at_recovery",
                json!([
                    {"answer": "in_use", "said": "409", "at_ms": 16},
                    {"answer": "rejected", "said": "401", "at_ms": 17},
                ]),
            ),
        ] {
            let e = entry(json!({
                "code": code,
                "counted_from_ms": 40,
                "resend_answers": answers(list),
            }));
            let p = check("REFUSED", &e).map(|p| p.code);
            assert_eq!(p, Some(crate::problem::code::GAVE_UP_WHILE_IN_USE), "{e:?}");
            assert_eq!(check("AMBIGUOUS", &e), None, "{e:?}");
        }
    }

    #[test]
    fn giving_up_as_failed_right_after_an_in_use_answer_is_a_problem() {
        let e = entry(json!({
            "code": "target_failed_at_recovery",
            "counted_from_ms": 40,
            "resend_answers": answers(json!([
                {"answer": "unknown", "said": "timeout", "at_ms": 10},
                {"answer": "in_use", "said": "409", "at_ms": 20},
            ])),
        }));
        let p = check("REFUSED", &e).map(|p| p.code);
        assert_eq!(p, Some(crate::problem::code::GAVE_UP_WHILE_IN_USE));
        let e = entry(json!({
            "code": "target_failed_at_recovery",
            "counted_from_ms": 40,
            "resend_answers": answers(json!([
                {"answer": "in_use", "said": "409", "at_ms": 20},
                {"answer": "replayed", "said": "500", "at_ms": 30},
            ])),
        }));
        assert_eq!(check("REFUSED", &e), None);
    }

    #[test]
    fn the_latest_answer_is_found_by_its_time_and_a_bound_must_say_where_it_counted_from() {
        let reordered = entry(json!({
            "code": "target_failed_at_recovery",
            "counted_from_ms": 40,
            "resend_answers": answers(json!([
                {"answer": "in_use", "said": "409", "at_ms": 20},
                {"answer": "unknown", "said": "timeout", "at_ms": 10},
            ])),
        }));
        let p = check("REFUSED", &reordered).map(|p| p.code);
        assert_eq!(p, Some(crate::problem::code::GAVE_UP_WHILE_IN_USE));
        let tie = entry(json!({
            "code": "target_failed_at_recovery",
            "counted_from_ms": 40,
            "resend_answers": answers(json!([
                {"answer": "unknown", "said": "timeout", "at_ms": 20},
                {"answer": "in_use", "said": "409", "at_ms": 20},
                {"answer": "not_sent", "said": "", "at_ms": 0},
            ])),
        }));
        let p = check("REFUSED", &tie).map(|p| p.code);
        assert_eq!(p, Some(crate::problem::code::GAVE_UP_WHILE_IN_USE));
        let unsaid = entry(json!({
            "code": "lease_at_recovery",
            "assumed_max_in_flight_ms": 5500,
            "resend_answers": answers(json!([{"answer": "in_use", "said": "409", "at_ms": 9000}])),
        }));
        let p = check("REFUSED", &unsaid).map(|p| p.code);
        assert_eq!(p, Some(crate::problem::code::BOUND_BEFORE_IN_USE));
    }

    /// From the forger's review: an "in use" answer the gate dropped (more than 32 answers)
    /// still counts, and a replayed failure before the last "in use" answer proves nothing of
    /// the request that was still executing after it.
    #[test]
    fn a_dropped_in_use_answer_counts_and_a_replay_must_come_after_the_last_one() {
        let dropped = entry(json!({
            "code": "target_failed_at_recovery",
            "counted_from_ms": 40,
            "resend_answers": {"answers": [
                {"answer": "unknown", "said": "timeout", "at_ms": 30},
            ], "dropped": 1, "dropped_in_use": 1},
        }));
        let p = check("REFUSED", &dropped).map(|p| p.code);
        assert_eq!(p, Some(crate::problem::code::GAVE_UP_WHILE_IN_USE));
        let unsaid = entry(json!({
            "code": "target_failed_at_recovery",
            "resend_answers": {"answers": [], "dropped": 1},
        }));
        let p = check("REFUSED", &unsaid).map(|p| p.code);
        assert_eq!(p, Some(crate::problem::code::MALFORMED_ENTRY));
        let replay_before = entry(json!({
            "code": "target_failed_at_recovery",
            "counted_from_ms": 40,
            "resend_answers": answers(json!([
                {"answer": "replayed", "said": "500", "at_ms": 10},
                {"answer": "in_use", "said": "409", "at_ms": 20},
                {"answer": "unknown", "said": "timeout", "at_ms": 40},
            ])),
        }));
        let p = check("REFUSED", &replay_before).map(|p| p.code);
        assert_eq!(p, Some(crate::problem::code::GAVE_UP_WHILE_IN_USE));
        let replay_after = entry(json!({
            "code": "target_failed_at_recovery",
            "counted_from_ms": 40,
            "resend_answers": {"answers": [
                {"answer": "replayed", "said": "500", "at_ms": 30},
            ], "dropped": 2, "dropped_in_use": 2},
        }));
        assert_eq!(check("REFUSED", &replay_after), None);
        // A replay at the same instant as the last "in use" answer came after it.
        let tie = entry(json!({
            "code": "target_failed_at_recovery",
            "counted_from_ms": 40,
            "resend_answers": answers(json!([
                {"answer": "in_use", "said": "409", "at_ms": 20},
                {"answer": "replayed", "said": "500", "at_ms": 20},
            ])),
        }));
        assert_eq!(check("REFUSED", &tie), None);
        // More "in use" answers dropped than answers dropped.
        let over = entry(json!({
            "code": "ambiguous",
            "resend_answers": {"answers": [], "dropped": 1, "dropped_in_use": 2},
        }));
        let p = check("AMBIGUOUS", &over).map(|p| p.code);
        assert_eq!(p, Some(crate::problem::code::MALFORMED_ENTRY));
    }

    #[test]
    fn malformed_answers_are_named() {
        for bad in [
            json!({"answers": "x", "dropped": 0}),
            json!({"answers": [], "dropped": -1}),
            json!({"answers": [{"answer": "maybe", "said": "", "at_ms": 1}], "dropped": 0}),
            json!({"answers": [{"answer": "in_use", "at_ms": 1}], "dropped": 0}),
        ] {
            let e = entry(json!({"resend_answers": bad}));
            let p = check("AMBIGUOUS", &e).map(|p| p.code);
            assert_eq!(p, Some(crate::problem::code::MALFORMED_ENTRY), "{e:?}");
        }
    }

    #[test]
    fn a_settling_entry_written_before_its_bound_had_passed_is_refused() {
        let waited_out = entry(json!({
            "kind": "COMMITTED", "ts_ms": 2_100, "assumed_max_in_flight_ms": 2_000,
            "counted_from_ms": 100,
        }));
        assert_eq!(waited(&waited_out), None);
        let early = entry(json!({
            "kind": "COMMITTED", "ts_ms": 2_099, "assumed_max_in_flight_ms": 2_000,
            "counted_from_ms": 100,
        }));
        let p = waited(&early).map(|p| p.code);
        assert_eq!(p, Some(crate::problem::code::BOUND_NOT_WAITED));
        // No bound stated, or no instant it was counted from: nothing to hold it to.
        assert_eq!(
            waited(&entry(json!({"kind": "COMMITTED", "ts_ms": 1}))),
            None
        );
    }
}

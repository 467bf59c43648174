//! What the service answered each resend of an open dispatch, kept by the recoverer and written
//! on the entry that settles the dispatch (`resend_answers`, DESIGN §4.10): a reader of the
//! receipt sees every answer recovery acted on, and verify checks that the in-flight bound was
//! counted from the last answer that said a request was still executing.

use crate::target::TargetError;
use serde_json::{json, Value};

/// At most this many answers are kept per dispatch (the oldest are dropped first, and counted).
pub(crate) const KEPT_ANSWERS: usize = 32;

/// The class of a resend's answer, as the receipt names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AnswerClass {
    /// The service applied it (or answered with the saved success of an earlier request).
    Applied,
    /// The service said no before executing it.
    Rejected,
    /// No usable answer (timeout, lost connection, 5xx).
    Unknown,
    /// An earlier request under the key was still executing (a 409 "in use").
    InUse,
    /// The saved failure of an earlier request under the key.
    Replayed,
    /// The request never left (its send deadline had passed).
    NotSent,
}

impl AnswerClass {
    /// The class of an answer.
    pub(crate) fn of(answer: &Result<Value, TargetError>) -> AnswerClass {
        match answer {
            Ok(_) => AnswerClass::Applied,
            Err(TargetError::Rejected { .. }) => AnswerClass::Rejected,
            Err(TargetError::Unknown { .. }) => AnswerClass::Unknown,
            Err(TargetError::InFlight { .. }) => AnswerClass::InUse,
            Err(TargetError::Replayed { .. }) => AnswerClass::Replayed,
            Err(TargetError::NotSent { .. }) => AnswerClass::NotSent,
        }
    }

    /// The name written in the receipt.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AnswerClass::Applied => "applied",
            AnswerClass::Rejected => "rejected",
            AnswerClass::Unknown => "unknown",
            AnswerClass::InUse => "in_use",
            AnswerClass::Replayed => "replayed",
            AnswerClass::NotSent => "not_sent",
        }
    }
}

/// One resend's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResendAnswer {
    /// Its class.
    pub class: AnswerClass,
    /// What the service said, in words (cut to [`SAID_CHARS`] characters); empty when it applied.
    pub said: String,
    /// When the answer came back, on the monotonic clock the in-flight bound is counted on.
    /// Written as Unix ms converted with one offset for the whole entry (see
    /// [`Answers::field`]), so a step of the wall clock between two answers never reorders them
    /// or the bound's start against them.
    pub mono_ms: u64,
}

/// The longest `said` kept.
pub(crate) const SAID_CHARS: usize = 500;

impl ResendAnswer {
    /// The answer to a resend, heard at `mono_ms` (monotonic).
    pub(crate) fn new(answer: &Result<Value, TargetError>, mono_ms: u64) -> ResendAnswer {
        let said = match answer {
            Ok(_) => String::new(),
            Err(e) => e.reason().chars().take(SAID_CHARS).collect(),
        };
        ResendAnswer {
            class: AnswerClass::of(answer),
            said,
            mono_ms,
        }
    }

    /// As written in the receipt, its instant converted by `to_wall`.
    pub(crate) fn to_json(&self, to_wall: &dyn Fn(u64) -> u64) -> Value {
        json!({"answer": self.class.as_str(), "said": self.said, "at_ms": to_wall(self.mono_ms)})
    }
}

/// The answers a recoverer heard for one dispatch, oldest first, with how many older ones were
/// dropped to keep at most [`KEPT_ANSWERS`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Answers {
    /// The kept answers, oldest first.
    pub kept: Vec<ResendAnswer>,
    /// Older answers dropped.
    pub dropped: u64,
    /// Of those, "in use" answers: a reader must know the service said so even when the answer
    /// itself was dropped (a forger's review: an early "in use" followed by 32 others vanished,
    /// and with it the rule against refusing after one).
    pub dropped_in_use: u64,
}

impl Answers {
    /// Keep one more answer.
    pub(crate) fn push(&mut self, answer: ResendAnswer) {
        if self.kept.len() >= KEPT_ANSWERS {
            let oldest = self.kept.remove(0);
            self.dropped = self.dropped.saturating_add(1);
            if oldest.class == AnswerClass::InUse {
                self.dropped_in_use = self.dropped_in_use.saturating_add(1);
            }
        }
        self.kept.push(answer);
    }

    /// The last answer heard, if any.
    pub(crate) fn last(&self) -> Option<&ResendAnswer> {
        self.kept.last()
    }

    /// The `resend_answers` field of a settling entry (`None` when no resend was answered),
    /// every instant converted by the one `to_wall` the entry's other instants use.
    pub(crate) fn field(&self, to_wall: &dyn Fn(u64) -> u64) -> Option<Value> {
        if self.kept.is_empty() {
            return None;
        }
        let list: Vec<Value> = self.kept.iter().map(|a| a.to_json(to_wall)).collect();
        Some(
            json!({"answers": list, "dropped": self.dropped, "dropped_in_use": self.dropped_in_use}),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_use(_at_ms: u64) -> Result<Value, TargetError> {
        Err(TargetError::InFlight {
            reason: "409 idempotency_key_in_use".into(),
        })
    }

    #[test]
    fn each_answer_has_its_class_and_what_the_service_said() {
        let a = ResendAnswer::new(&in_use(0), 1);
        assert_eq!(
            a.to_json(&|mono| mono + 6),
            json!({"answer": "in_use", "said": "409 idempotency_key_in_use", "at_ms": 7})
        );
        let ok = ResendAnswer::new(&Ok(json!({"id": "x"})), 2);
        assert_eq!(ok.class, AnswerClass::Applied);
        assert_eq!(ok.said, "");
    }

    #[test]
    fn a_long_answer_is_cut_and_old_answers_are_counted_when_dropped() {
        let long = Err(TargetError::Unknown {
            reason: "x".repeat(1000),
        });
        assert_eq!(ResendAnswer::new(&long, 0).said.len(), SAID_CHARS);
        let mut answers = Answers::default();
        for at in 0..40 {
            answers.push(ResendAnswer::new(&in_use(at), at + 1000));
        }
        assert_eq!(answers.kept.len(), KEPT_ANSWERS);
        assert_eq!(answers.dropped, 8);
        assert_eq!(answers.dropped_in_use, 8);
        assert_eq!(answers.kept.first().map(|a| a.mono_ms), Some(1008));
        assert_eq!(answers.last().map(|a| a.mono_ms), Some(1039));
        let field = answers.field(&|mono| mono - 1000).unwrap();
        assert_eq!(field["answers"][0]["at_ms"], json!(8));
        assert_eq!(field["dropped"], json!(8));
    }
}

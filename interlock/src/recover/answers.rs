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
    /// When the answer came back (Unix ms, on this recoverer's clock).
    pub at_ms: u64,
    /// The same instant on the monotonic clock the in-flight bound is counted on (not written:
    /// it names the answer the bound counts from, so the entry can give that answer's `at_ms`).
    pub mono_ms: u64,
}

/// The longest `said` kept.
pub(crate) const SAID_CHARS: usize = 500;

impl ResendAnswer {
    /// The answer to a resend, heard at `at_ms` (wall) = `mono_ms` (monotonic).
    pub(crate) fn new(
        answer: &Result<Value, TargetError>,
        at_ms: u64,
        mono_ms: u64,
    ) -> ResendAnswer {
        let said = match answer {
            Ok(_) => String::new(),
            Err(e) => e.reason().chars().take(SAID_CHARS).collect(),
        };
        ResendAnswer {
            class: AnswerClass::of(answer),
            said,
            at_ms,
            mono_ms,
        }
    }

    /// As written in the receipt.
    pub(crate) fn to_json(&self) -> Value {
        json!({"answer": self.class.as_str(), "said": self.said, "at_ms": self.at_ms})
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
}

impl Answers {
    /// Keep one more answer.
    pub(crate) fn push(&mut self, answer: ResendAnswer) {
        if self.kept.len() >= KEPT_ANSWERS {
            self.kept.remove(0);
            self.dropped = self.dropped.saturating_add(1);
        }
        self.kept.push(answer);
    }

    /// The last answer heard, if any.
    pub(crate) fn last(&self) -> Option<&ResendAnswer> {
        self.kept.last()
    }

    /// The wall-clock instant of the last "in use" answer heard at monotonic `mono_ms`: the
    /// instant the in-flight bound counts from when it counts from that answer.
    pub(crate) fn in_use_at(&self, mono_ms: u64) -> Option<u64> {
        self.kept
            .iter()
            .rev()
            .find(|a| a.class == AnswerClass::InUse && a.mono_ms == mono_ms)
            .map(|a| a.at_ms)
    }

    /// The `resend_answers` field of a settling entry (`None` when no resend was answered).
    pub(crate) fn field(&self) -> Option<Value> {
        if self.kept.is_empty() {
            return None;
        }
        let list: Vec<Value> = self.kept.iter().map(ResendAnswer::to_json).collect();
        Some(json!({"answers": list, "dropped": self.dropped}))
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
        let a = ResendAnswer::new(&in_use(0), 7, 1);
        assert_eq!(
            a.to_json(),
            json!({"answer": "in_use", "said": "409 idempotency_key_in_use", "at_ms": 7})
        );
        let ok = ResendAnswer::new(&Ok(json!({"id": "x"})), 9, 2);
        assert_eq!(ok.class, AnswerClass::Applied);
        assert_eq!(ok.said, "");
    }

    #[test]
    fn a_long_answer_is_cut_and_old_answers_are_counted_when_dropped() {
        let long = Err(TargetError::Unknown {
            reason: "x".repeat(1000),
        });
        assert_eq!(ResendAnswer::new(&long, 0, 0).said.len(), SAID_CHARS);
        let mut answers = Answers::default();
        for at in 0..40 {
            answers.push(ResendAnswer::new(&in_use(at), at, at + 1000));
        }
        assert_eq!(answers.kept.len(), KEPT_ANSWERS);
        assert_eq!(answers.dropped, 8);
        assert_eq!(answers.kept.first().map(|a| a.at_ms), Some(8));
        assert_eq!(answers.last().map(|a| a.at_ms), Some(39));
        assert_eq!(answers.in_use_at(1039), Some(39));
        assert_eq!(answers.in_use_at(5), None);
    }
}

//! The service the effect lands at: requests in flight that land, fail or are rejected at any
//! later step (within the declared bound unless the model lets them land late), dedup by key
//! for tier 1, a lookup, and a saved failure replayed under the key.

use crate::bounded::Bounded;
use interlock::decide::SendAnswer;

/// How a request ended at the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// It took effect (or, under a key that already took effect, was answered with that
    /// success without a second effect).
    Landed,
    /// It executed and failed without effect; the client sees a 5xx. A service that dedupes
    /// saves the failure under the key.
    Failed,
    /// The service said no; no effect.
    Rejected,
    /// Answered with the failure saved under its key; no effect.
    Replayed,
    /// Answered 409 "in progress": an earlier request under the same key is still executing;
    /// no effect.
    InProgress,
}

impl Outcome {
    /// What the client hears when the answer reaches it.
    pub fn answer(self) -> SendAnswer {
        match self {
            Outcome::Landed => SendAnswer::Applied,
            Outcome::Failed => SendAnswer::Unknown,
            Outcome::Rejected => SendAnswer::Rejected,
            Outcome::Replayed => SendAnswer::Replayed,
            Outcome::InProgress => SendAnswer::InFlight,
        }
    }
}

/// A request that left a gate process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Request {
    /// The identity of the DISPATCHED it was sent under.
    pub dispatch: u8,
    /// The payload it carries.
    pub payload: u8,
    /// When it left.
    pub sent_at: u8,
    /// The process still waiting for its answer, if any.
    pub waiter: Option<u8>,
    /// How it ended, once it has.
    pub outcome: Option<Outcome>,
}

/// The most requests the service holds at once (not ended, or awaited), and the most landings
/// a state records: bounds of the inline lists, past every configuration's reach (a push past
/// one stops the check with a message).
pub const MAX_REQUESTS: usize = 8;
/// See [`MAX_REQUESTS`].
pub const MAX_LANDINGS: usize = 8;

/// The service's state for the one effect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Service {
    /// Requests that have not ended, or whose answer a process still waits for.
    pub requests: Bounded<Request, MAX_REQUESTS>,
    /// Every time the effect took effect: the dispatch the landing request was sent under.
    pub landings: Bounded<u8, MAX_LANDINGS>,
    /// A failure is saved under the key (tier 1): every later request is answered with it.
    pub saved_failure: bool,
}

impl Service {
    /// The lookup by effect id: found when it took effect.
    pub fn found(&self) -> bool {
        !self.landings.is_empty()
    }

    /// The outcomes pending request `i` can still have, in a fixed order. Under a key (tier 1)
    /// the service answers a saved failure or a saved success, and a request that arrives while
    /// an earlier one under the key still executes gets "in progress".
    pub fn possible(
        &self,
        i: usize,
        dedup: bool,
        failures: bool,
        rejects: bool,
    ) -> impl Iterator<Item = Outcome> {
        let only = if dedup && self.saved_failure {
            Some(Outcome::Replayed)
        } else if dedup && self.found() {
            Some(Outcome::Landed)
        } else if dedup && self.requests.iter().take(i).any(|r| r.outcome.is_none()) {
            Some(Outcome::InProgress)
        } else {
            None
        };
        let outcomes = match only {
            Some(o) => [Some(o), None, None],
            None => [
                Some(Outcome::Landed),
                failures.then_some(Outcome::Failed),
                rejects.then_some(Outcome::Rejected),
            ],
        };
        outcomes.into_iter().flatten()
    }

    /// End request `i` with `outcome`; drop it when nobody waits for its answer.
    pub fn resolve(&mut self, i: usize, outcome: Outcome, dedup: bool) {
        let Some(r) = self.requests.get_mut(i) else {
            return;
        };
        r.outcome = Some(outcome);
        match outcome {
            Outcome::Landed if !dedup || self.landings.is_empty() => self.landings.push(r.dispatch),
            Outcome::Failed if dedup => self.saved_failure = true,
            _ => {}
        }
        if r.waiter.is_none() {
            self.requests.remove(i);
        }
    }

    /// Process `p` stops waiting (it got its answer, gave up, or died): an ended request is
    /// dropped, a pending one goes on executing.
    pub fn forget_waiter(&mut self, p: u8) {
        self.requests.retain_mut(|r| {
            if r.waiter == Some(p) {
                r.waiter = None;
                r.outcome.is_none()
            } else {
                true
            }
        });
    }

    /// The request process `p` waits for.
    pub fn awaited_by(&self, p: u8) -> Option<&Request> {
        self.requests.iter().find(|r| r.waiter == Some(p))
    }
}

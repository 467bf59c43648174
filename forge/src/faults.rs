//! Faults injected into the next merge request of one pull request, each taken once.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// What happens to the next merge request (`PUT .../pulls/{n}/merge`) of a pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Hold the request this long after it arrived and before it is applied (the request is in
    /// flight at the service; a client that times out does not stop it from landing).
    Hold {
        /// Milliseconds to hold it.
        ms: u64,
    },
    /// Apply the merge, then answer 500 (the client cannot tell it from a failure before).
    FailAfterCommit,
    /// Apply the merge, then close the connection without any answer.
    DropAfterCommit,
}

/// The faults waiting for a merge request, by repository and pull request.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    waiting: Mutex<HashMap<(String, u64), Fault>>,
}

impl Faults {
    /// Sets the fault for the next merge request of `repo`'s pull `pull` (replacing one not yet
    /// taken).
    pub(crate) fn set(&self, repo: &str, pull: u64, fault: Fault) {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.insert((repo.to_string(), pull), fault);
    }

    /// Whether a fault is still waiting for a merge request of `repo`'s pull `pull` (none has
    /// taken it yet).
    pub(crate) fn waiting(&self, repo: &str, pull: u64) -> bool {
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.contains_key(&(repo.to_string(), pull))
    }

    /// Takes the fault waiting for a merge request of `repo`'s pull `pull`, if any.
    pub(crate) fn take(&self, repo: &str, pull: u64) -> Option<Fault> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.remove(&(repo.to_string(), pull))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_is_taken_once_and_only_by_its_pull_request() {
        let faults = Faults::default();
        faults.set("a", 1, Fault::FailAfterCommit);
        assert!(faults.waiting("a", 1) && !faults.waiting("a", 2));
        assert_eq!(faults.take("a", 2), None);
        assert_eq!(faults.take("b", 1), None);
        assert_eq!(faults.take("a", 1), Some(Fault::FailAfterCommit));
        assert_eq!(faults.take("a", 1), None);
        assert!(!faults.waiting("a", 1));
    }
}

//! Faults injected into the next merge request of one pull request, each taken once.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The longest a [`Fault::HoldUntilReleased`] request waits for its release before it goes on
/// by itself (a harness that never releases it does not hang the service).
pub const RELEASE_LIMIT: Duration = Duration::from_secs(120);

/// How long the harness waits, after releasing a held request, for its merge to be applied.
const LANDED_LIMIT: Duration = Duration::from_secs(30);

/// A request held until released: when it was taken, and the channel its release comes on
/// (carrying where to say that the merge was applied).
#[derive(Debug)]
struct Held {
    since: Instant,
    go: tokio::sync::oneshot::Sender<mpsc::Sender<()>>,
}

/// What a held request waits on: its release, carrying where to say it was applied.
pub(crate) type Release = tokio::sync::oneshot::Receiver<mpsc::Sender<()>>;

/// What happens to the next merge request (`PUT .../pulls/{n}/merge`) of a pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Hold the request this long after it arrived and before it is applied (the request is in
    /// flight at the service; a client that times out does not stop it from landing).
    Hold {
        /// Milliseconds to hold it.
        ms: u64,
    },
    /// Hold the request until the harness releases it ([`Faults::release`]), at most
    /// [`RELEASE_LIMIT`]: the harness decides the instant the held merge lands (e.g. at a drawn
    /// step of a restart), and learns when it has landed.
    HoldUntilReleased,
    /// Apply the merge, then answer 500 (the client cannot tell it from a failure before).
    FailAfterCommit,
    /// Apply the merge, then close the connection without any answer.
    DropAfterCommit,
}

/// The faults waiting for a merge request, by repository and pull request.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    waiting: Mutex<HashMap<(String, u64), Fault>>,
    held: Mutex<HashMap<(String, u64), Held>>,
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

    /// Registers the request that took a [`Fault::HoldUntilReleased`]: it waits on the returned
    /// receiver.
    pub(crate) fn hold(&self, repo: &str, pull: u64) -> Release {
        let (go, wait) = tokio::sync::oneshot::channel();
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let since = Instant::now();
        held.insert((repo.to_string(), pull), Held { since, go });
        wait
    }

    /// Releases the request held for `repo`'s pull `pull` and waits until its merge was
    /// applied or refused; returns how long it was held, or `None` when no request is held (or
    /// it did not finish within a limit).
    pub(crate) fn release(&self, repo: &str, pull: u64) -> Option<Duration> {
        let entry = {
            let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            held.remove(&(repo.to_string(), pull))
        }?;
        let held_for = entry.since.elapsed();
        let (landed, on_landed) = mpsc::channel();
        entry.go.send(landed).ok()?;
        on_landed.recv_timeout(LANDED_LIMIT).ok()?;
        Some(held_for)
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

    #[test]
    fn a_release_of_nothing_held_says_so() {
        let faults = Faults::default();
        assert_eq!(faults.release("a", 1), None);
        let wait = faults.hold("a", 1);
        drop(wait);
        // The request is gone: the release cannot be delivered.
        assert_eq!(faults.release("a", 1), None);
        assert_eq!(faults.release("a", 1), None);
    }
}

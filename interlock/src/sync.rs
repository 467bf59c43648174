//! The locks of the file store's journal (its mutex and the condition its threads wait on), and
//! its pause between tries for another process's `flock`: the standard library's, or — with the
//! `shuttle` feature, for the thread-schedule tests (`tests/schedules.rs`) — a controlled
//! scheduler's, which decides at each of them which thread runs next.

#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::{Condvar, Mutex, MutexGuard};

/// Wait `d` before trying again for a lock another process holds (under the controlled
/// scheduler: let another thread run instead; its time is not modelled).
pub(crate) fn nap(d: std::time::Duration) {
    #[cfg(not(feature = "shuttle"))]
    std::thread::sleep(d);
    #[cfg(feature = "shuttle")]
    {
        let _ = d;
        shuttle::thread::yield_now();
    }
}

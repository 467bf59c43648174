//! The workloads' threads: the standard library's, or — with the `shuttle` feature — a
//! controlled scheduler's, so that the schedule search decides at every lock of the store which
//! thread runs next.

/// Run every job on a thread of its own and wait for all of them.
pub fn run_all<'a>(jobs: Vec<Box<dyn FnOnce() + Send + 'a>>) {
    #[cfg(not(feature = "shuttle"))]
    std::thread::scope(|s| {
        for job in jobs {
            s.spawn(job);
        }
    });
    #[cfg(feature = "shuttle")]
    shuttle::thread::scope(|s| {
        for job in jobs {
            s.spawn(job);
        }
    });
}

/// Let another thread run here (under the controlled scheduler, a point where it may switch).
pub fn yield_now() {
    #[cfg(not(feature = "shuttle"))]
    std::thread::yield_now();
    #[cfg(feature = "shuttle")]
    shuttle::thread::yield_now();
}

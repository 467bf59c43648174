//! On how many threads the groups of a file's cells or trials are checked.
//!
//! Each group holds at most [`VALUES_PER_GROUP`] values, but every thread checks a group of its
//! own, and each thread's allocator keeps what its largest group took: on eight threads, a file
//! made of large cells took twice the memory it took on two. So a file's groups are checked on
//! no more threads than its budget holds groups as large as its largest ([`threads_for`]), on a
//! pool of only those threads ([`on_threads`]). A file of small cells is checked on every
//! thread, as before.

use crate::load::{ElementGroup, VALUES_PER_GROUP};

/// Bytes of a file's text for each value its checks may hold at once beyond the least
/// ([`budget`]): what is held then stays within about the size of the file itself.
const BYTES_PER_VALUE_HELD: usize = 128;

/// The values the checks of a file of `bytes` bytes of text may hold at once: two full groups,
/// or one value per [`BYTES_PER_VALUE_HELD`] bytes of text when that is more (a large file's
/// groups are then checked on as many threads as before). For 16 MB of text (a 1 MB gzip at the
/// most it may expand) it is two full groups.
pub(crate) fn budget(bytes: usize) -> usize {
    (2 * VALUES_PER_GROUP).max(bytes / BYTES_PER_VALUE_HELD)
}

/// On how many threads to check `groups`, of a file of `bytes` bytes of text: as many as there
/// are, but no more than the [`budget`] holds groups as large as the largest; at least one.
pub(crate) fn threads_for(groups: &[ElementGroup], bytes: usize) -> usize {
    let largest = groups.iter().map(|g| g.values).max().unwrap_or(0).max(1);
    (budget(bytes) / largest).clamp(1, rayon::current_num_threads().max(1))
}

/// `work` run with its parallel parts on at most `threads` threads: on a pool of its own when
/// that is fewer than there are; otherwise, or when no thread can be started for that pool, as
/// it is.
pub(crate) fn on_threads<R: Send>(threads: usize, work: impl FnOnce() -> R + Send) -> R {
    if threads >= rayon::current_num_threads() {
        return work();
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build();
    match pool {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(values: usize) -> ElementGroup {
        ElementGroup {
            elements: 0..1,
            values,
        }
    }

    /// A small file of large groups is checked on two threads; one of small groups, or a large
    /// file, on every thread.
    #[test]
    fn large_groups_of_a_small_file_are_checked_on_two_threads() {
        let threads = rayon::current_num_threads();
        let large = [group(10), group(VALUES_PER_GROUP), group(3)];
        assert_eq!(threads_for(&large, 16 << 20), 2.min(threads));
        let small = [group(VALUES_PER_GROUP / 64), group(1)];
        assert_eq!(threads_for(&small, 16 << 20), threads.min(128));
        assert_eq!(threads_for(&large, 1 << 40), threads);
        assert_eq!(threads_for(&[], 0), threads);
        assert_eq!(budget(1 << 30), (1 << 30) / 128);
    }

    /// The work runs on no more threads than asked, and gives its result.
    #[test]
    fn work_runs_on_at_most_the_threads_asked() {
        for threads in [1, 2, 64] {
            let seen = on_threads(threads, rayon::current_num_threads);
            assert!(
                seen <= threads.max(rayon::current_num_threads()),
                "{threads}"
            );
            if threads < rayon::current_num_threads() {
                assert_eq!(seen, threads);
            }
        }
    }
}

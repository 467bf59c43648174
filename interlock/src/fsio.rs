//! Every file operation of the file store that changes what a crash leaves (writes, truncations,
//! syncs, creations, renames, removals) goes through here, so that a test can record them in
//! the order they happen (`testing::record`, with the `testing` feature) and build every crash
//! state from the recording. Without an active recording each function is the plain call.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

#[cfg(feature = "testing")]
use crate::testing::record::{self, Op};

/// Write all of `bytes` at offset `at` of `file` (named `path`).
#[cfg_attr(not(feature = "testing"), allow(unused_variables))]
pub(crate) fn write_at(file: &File, path: &Path, bytes: &[u8], at: u64) -> io::Result<()> {
    #[cfg(feature = "testing")]
    if record::active() {
        return record::around(
            path,
            || file.write_all_at(bytes, at),
            |p| Op::Write {
                path: p,
                at,
                bytes: bytes.to_vec(),
            },
        );
    }
    file.write_all_at(bytes, at)
}

/// Cut or extend `file` (named `path`) to `len` bytes.
#[cfg_attr(not(feature = "testing"), allow(unused_variables))]
pub(crate) fn set_len(file: &File, path: &Path, len: u64) -> io::Result<()> {
    #[cfg(feature = "testing")]
    if record::active() {
        return record::around(path, || file.set_len(len), |p| Op::SetLen { path: p, len });
    }
    file.set_len(len)
}

/// Make what was written to `file` (named `path`) durable: `fdatasync`, or `fsync` when `all`.
#[cfg_attr(not(feature = "testing"), allow(unused_variables))]
pub(crate) fn sync(file: &File, path: &Path, all: bool) -> io::Result<()> {
    let call = || {
        if all {
            file.sync_all()
        } else {
            file.sync_data()
        }
    };
    #[cfg(feature = "testing")]
    if record::syncs_skipped() {
        return Ok(());
    }
    #[cfg(feature = "testing")]
    if record::active() {
        return record::around(path, call, |p| Op::Sync { path: p });
    }
    call()
}

/// Open `path` with `options` (recorded as a creation when the call created the file).
pub(crate) fn open(options: &OpenOptions, path: &Path) -> io::Result<File> {
    #[cfg(feature = "testing")]
    if record::active() {
        let existed = path.exists();
        return record::around(
            path,
            || options.open(path),
            |p| {
                if existed {
                    Op::Open { path: p }
                } else {
                    Op::Create { path: p }
                }
            },
        );
    }
    options.open(path)
}

/// Make the directory entries of `dir` durable (`fsync` of the directory), best effort: a
/// failure leaves them as durable as the file system makes them anyway.
pub(crate) fn sync_dir(dir: &Path) {
    let call = || File::open(dir).and_then(|d| d.sync_all());
    #[cfg(feature = "testing")]
    if record::syncs_skipped() {
        return;
    }
    #[cfg(feature = "testing")]
    if record::active() {
        let _ = record::around(dir, call, |p| Op::SyncDir { dir: p });
        return;
    }
    let _ = call();
}

/// Make the directory entry of `file` durable (see [`sync_dir`]).
pub(crate) fn sync_parent(file: &Path) {
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        sync_dir(dir);
    }
}

/// Rename `from` to `to` (replacing it).
pub(crate) fn rename(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(feature = "testing")]
    if record::active() {
        let to_rel = record::relative(to);
        return record::around_maybe(
            from,
            || std::fs::rename(from, to),
            |p, _| to_rel.map(|to| Op::Rename { from: p, to }),
        );
    }
    std::fs::rename(from, to)
}

/// Remove the file `path`.
pub(crate) fn remove_file(path: &Path) -> io::Result<()> {
    #[cfg(feature = "testing")]
    if record::active() {
        return record::around(
            path,
            || std::fs::remove_file(path),
            |p| Op::Remove { path: p },
        );
    }
    std::fs::remove_file(path)
}

/// Create the directory `path` and its missing parents.
pub(crate) fn create_dir_all(path: &Path) -> io::Result<()> {
    #[cfg(feature = "testing")]
    if record::active() {
        let existed = path.exists();
        return record::around_maybe(
            path,
            || std::fs::create_dir_all(path),
            |p, _| (!existed).then_some(Op::Mkdir { path: p }),
        );
    }
    std::fs::create_dir_all(path)
}

/// Try to take an exclusive `flock` on `file` (named `path`) without waiting.
#[cfg_attr(not(feature = "testing"), allow(unused_variables))]
pub(crate) fn try_lock(file: &File, path: &Path) -> Result<(), TryLockError> {
    #[cfg(feature = "testing")]
    if record::active() {
        let taken = record::around_maybe(
            path,
            || match file.try_lock() {
                Ok(()) => Ok(true),
                Err(TryLockError::WouldBlock) => Ok(false),
                Err(TryLockError::Error(e)) => Err(e),
            },
            |p, taken| taken.then_some(Op::Lock { path: p }),
        );
        return match taken {
            Ok(true) => Ok(()),
            Ok(false) => Err(TryLockError::WouldBlock),
            Err(e) => Err(TryLockError::Error(e)),
        };
    }
    file.try_lock()
}

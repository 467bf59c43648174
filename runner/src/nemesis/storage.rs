//! The storage and clock faults of a trial, made from outside the worker: a record's last line
//! cut as a crash mid-append leaves it (torn_tail), the case's directory on a small tmpfs that
//! fills up (disk_full), and the library that runs a restart's wall clock ahead (dedup_expired).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a storage fault could not be made, or this machine cannot make it (and how to fix that).
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A file or directory could not be read, opened, cut, created or filled.
    #[error("cannot {action} {path}: {source}")]
    File {
        /// What was being done ("read", "tear", "create", "fill", "free").
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A record could not be opened to cut its last line.
    #[error("cannot open {path} to tear it: {source}")]
    OpenToTear {
        /// The record.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `mount` could not be run at all.
    #[error("cannot run mount: {0}")]
    RunMount(std::io::Error),
    /// `mount` refused the tmpfs.
    #[error("cannot mount a {kib} KiB tmpfs on {dir} (disk_full needs root): {stderr}")]
    Mount {
        /// The tmpfs's size.
        kib: u64,
        /// Where.
        dir: PathBuf,
        /// What `mount` said.
        stderr: String,
    },
    /// The tmpfs's free space could not be read.
    #[error("cannot stat {dir}: {source}")]
    Stat {
        /// The tmpfs.
        dir: PathBuf,
        /// Why.
        source: rustix::io::Errno,
    },
    /// disk_full cannot run on this machine.
    #[error("{0}; run as root, or leave disk_full out of --nemesis")]
    NoTmpfs(#[source] Box<StorageError>),
    /// dedup_expired cannot run on this machine.
    #[error("dedup_expired runs its restart with libfaketime, which is not installed: `apt-get install faketime`, or leave dedup_expired out of --nemesis")]
    NoFaketime,
    /// write_enospc and fsync_eio preload the workspace's write-fault library.
    #[error("write_enospc and fsync_eio preload the write-fault library, which is not built at {}: `cargo build --release -p write-fault` (or without --release, as the runner was built), or leave them out of --nemesis", .0.display())]
    NoWriteFault(PathBuf),
}

/// A [`StorageError::File`] for `action` on `path`.
fn file_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StorageError {
    let path = path.to_owned();
    move |source| StorageError::File {
        action,
        path,
        source,
    }
}

/// Cuts the last line of `path` so that `permille` thousandths of its bytes stay (its newline
/// always goes): what a writer killed in the middle of its append leaves. Returns the line's
/// length, how many of its bytes stayed and, for a journal entry, its hash; `None` when the file
/// is missing or empty.
pub(super) fn tear_last_line(
    path: &Path,
    permille: u32,
) -> Result<Option<(u64, u64, Option<String>)>, StorageError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(file_error("read", path)(e)),
    };
    let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    if body.is_empty() {
        return Ok(None);
    }
    let start = body.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let hash = serde_json::from_slice::<serde_json::Value>(&body[start..])
        .ok()
        .and_then(|v| v.get("hash")?.as_str().map(str::to_owned));
    let line = (body.len() - start) as u64;
    let kept = line * u64::from(permille.min(999)) / 1_000;
    let file = fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|source| StorageError::OpenToTear {
            path: path.to_owned(),
            source,
        })?;
    file.set_len(start as u64 + kept)
        .and_then(|()| file.sync_all())
        .map_err(file_error("tear", path))?;
    Ok(Some((line, kept, hash)))
}

/// A directory mounted as a small tmpfs, unmounted when dropped.
pub(super) struct SmallDisk {
    dir: PathBuf,
    filler: PathBuf,
}

/// The page size tmpfs hands out space in.
const PAGE: u64 = 4096;

impl SmallDisk {
    /// Mounts a `kib` KiB tmpfs on `dir` (which must exist and be empty). Needs root.
    pub(super) fn mount(dir: &Path, kib: u64) -> Result<SmallDisk, StorageError> {
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={kib}k,mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .output()
            .map_err(StorageError::RunMount)?;
        if !out.status.success() {
            return Err(StorageError::Mount {
                kib,
                dir: dir.to_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(SmallDisk {
            dir: dir.to_path_buf(),
            filler: dir.join(".filler"),
        })
    }

    /// Free pages now.
    pub(super) fn free_pages(&self) -> Result<u64, StorageError> {
        let st = rustix::fs::statvfs(&self.dir).map_err(|source| StorageError::Stat {
            dir: self.dir.clone(),
            source,
        })?;
        Ok(st.f_bavail.saturating_mul(st.f_frsize) / PAGE)
    }

    /// Fills the disk until `pages` pages are free (or fewer, if fewer already are).
    pub(super) fn fill_until(&self, pages: u64) -> Result<u64, StorageError> {
        let free = self.free_pages()?;
        let fill = free.saturating_sub(pages) * PAGE;
        let mut f = fs::File::create(&self.filler).map_err(file_error("create", &self.filler))?;
        let chunk = vec![0u8; PAGE as usize];
        for _ in 0..fill / PAGE {
            f.write_all(&chunk).map_err(file_error("fill", &self.dir))?;
        }
        f.sync_all().map_err(file_error("fill", &self.dir))?;
        self.free_pages()
    }

    /// Frees the space the filler took (as an operator would before restarting).
    pub(super) fn free(&self) -> Result<(), StorageError> {
        fs::remove_file(&self.filler).map_err(file_error("free", &self.dir))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        // Lazily: a worker that is still being reaped may hold a file open.
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// Whether this machine can run `nemeses`, before any trial starts: disk_full mounts a tmpfs
/// (root only), dedup_expired runs a restart's clock ahead with libfaketime. `Err` says what is
/// missing and how to get it.
pub(super) fn preflight(
    nemeses: &[super::Nemesis],
    scratch: &Path,
    exe: &Path,
) -> Result<(), StorageError> {
    let writes = [super::Nemesis::WriteEnospc, super::Nemesis::FsyncEio];
    let library = super::write_fault::library(exe);
    if nemeses.iter().any(|n| writes.contains(n)) && !library.is_file() {
        return Err(StorageError::NoWriteFault(library));
    }
    if nemeses.contains(&super::Nemesis::DiskFull) {
        let dir = scratch.join("disk-preflight");
        fs::create_dir_all(&dir).map_err(file_error("create", &dir))?;
        SmallDisk::mount(&dir, 64).map_err(|e| StorageError::NoTmpfs(Box::new(e)))?;
    }
    if nemeses.contains(&super::Nemesis::DedupExpired) && faketime_library().is_none() {
        return Err(StorageError::NoFaketime);
    }
    Ok(())
}

/// Where libfaketime is (Debian's `faketime` package), if it is installed.
pub(super) fn faketime_library() -> Option<PathBuf> {
    [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
        "/usr/local/lib/faketime/libfaketime.so.1",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// The environment that runs a process's wall clock `seconds` ahead with libfaketime, its
/// monotonic clock untouched (the trial's timeline is on it).
pub(super) fn clock_ahead_env(library: &Path, seconds: u64) -> Vec<(&'static str, String)> {
    vec![
        ("LD_PRELOAD", library.display().to_string()),
        ("FAKETIME", format!("+{seconds}s")),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_owned()),
        ("FAKETIME_NO_CACHE", "1".to_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_line_keeps_its_drawn_share_and_loses_its_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        fs::write(&path, "{\"a\":1}\n{\"bcdefghij\":2}\n").unwrap();
        assert_eq!(tear_last_line(&path, 500).unwrap(), Some((15, 7, None)));
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":1}\n{\"bcdef");
        fs::write(&path, "{\"a\":1}\n").unwrap();
        assert_eq!(tear_last_line(&path, 0).unwrap(), Some((7, 0, None)));
        assert_eq!(fs::read_to_string(&path).unwrap(), "");
        assert_eq!(tear_last_line(&dir.path().join("none"), 10).unwrap(), None);
    }
}

//! Per-effect claims bound to the holder's life (DESIGN §2.4).
//!
//! A claim is an exclusive `flock` on `<journal>.claims/<effect_id>`, held by the process that
//! sends (or recovers) the effect for as long as a send can be in progress. The kernel drops it
//! when the process dies, so whoever can take the lock knows no live process is sending.
//! The same file holds a small record — owner, pid, expiry (the TTL backstop), the DISPATCHED it
//! covers and when the last send left — so a process that cannot take the lock can say who holds
//! it and until when. Records are written and read under the journal lock, so they are never seen
//! half-written. Claim files are never deleted (deleting a lock file races with a process that
//! has it open); they are a few hundred bytes per effect.
//!
//! Lock order: a claim is always taken (with a non-blocking try) before the journal lock, and the
//! journal lock is never held while waiting for a claim, so the two cannot deadlock. The sender
//! takes its claim, then — under the journal lock — re-checks the blockers, writes DISPATCHED and
//! its claim record: to every other process that is one atomic step.

use crate::journal::JournalError;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The record stored in a claim file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRecord {
    /// `host:pid:nonce/send` or `host:pid:nonce/recover`.
    pub owner: String,
    /// The holder's process id.
    pub pid: u32,
    /// When the claim's TTL backstop runs out (Unix ms).
    pub expires_ms: u64,
    /// Hash of the DISPATCHED entry the claim covers.
    pub dispatch: String,
    /// When the last send of that dispatch left (Unix ms).
    pub last_send_ms: u64,
}

/// The directory of claim files of one journal: `<journal>.claims/`.
#[derive(Debug, Clone)]
pub(crate) struct ClaimDir {
    dir: PathBuf,
}

/// A claim this process holds; dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct HeldClaim {
    file: File,
    path: PathBuf,
}

fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> JournalError + 'a {
    move |source| JournalError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

impl ClaimDir {
    /// The claim directory beside `journal`, created if missing.
    pub fn beside(journal: &Path) -> Result<ClaimDir, JournalError> {
        let mut s = journal.as_os_str().to_owned();
        s.push(".claims");
        let dir = PathBuf::from(s);
        std::fs::create_dir_all(&dir).map_err(io_err("create the claim directory", &dir))?;
        Ok(ClaimDir { dir })
    }

    fn path(&self, effect_id: &str) -> PathBuf {
        self.dir.join(effect_id)
    }

    fn open(&self, effect_id: &str) -> Result<(File, PathBuf), JournalError> {
        let path = self.path(effect_id);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_err("open the claim file", &path))?;
        Ok((file, path))
    }

    /// Take the effect's claim if no process holds it; `None` if one does.
    pub fn try_take(&self, effect_id: &str) -> Result<Option<HeldClaim>, JournalError> {
        let (file, path) = self.open(effect_id)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(HeldClaim { file, path })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(io_err("lock the claim file", &path)(e)),
        }
    }

    /// The record in the effect's claim file, if there is a readable one.
    pub fn read_record(&self, effect_id: &str) -> Option<ClaimRecord> {
        let bytes = std::fs::read(self.path(effect_id)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

impl HeldClaim {
    /// Replace the record (fsynced: `last_send_ms` must survive a crash of this process).
    pub fn write_record(&self, record: &ClaimRecord) -> Result<(), JournalError> {
        let bytes = serde_json::to_vec(record).map_err(|e| JournalError::Io {
            action: "encode the claim record for",
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        self.file
            .set_len(0)
            .map_err(io_err("truncate the claim file", &self.path))?;
        self.file
            .write_all_at(&bytes, 0)
            .map_err(io_err("write the claim file", &self.path))?;
        self.file
            .sync_data()
            .map_err(io_err("sync the claim file", &self.path))
    }
}

impl Drop for HeldClaim {
    fn drop(&mut self) {
        // Closing the file would release the lock as well; unlocking first makes the release
        // independent of any other descriptor of the same open file.
        let _ = self.file.unlock();
    }
}

/// `host:pid:nonce`: names this process (and this gate instance) in claim records.
pub(crate) fn process_owner() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!(
        "{host}:{}:{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_excludes_a_second_taker_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let claims = ClaimDir::beside(&dir.path().join("j.jsonl")).unwrap();
        let held = claims.try_take("e").unwrap().unwrap();
        assert!(claims.try_take("e").unwrap().is_none());
        assert!(claims.try_take("other").unwrap().is_some());
        let rec = ClaimRecord {
            owner: "h:1:0/send".into(),
            pid: 1,
            expires_ms: 10,
            dispatch: "d".into(),
            last_send_ms: 5,
        };
        held.write_record(&rec).unwrap();
        assert_eq!(claims.read_record("e"), Some(rec));
        drop(held);
        assert!(claims.try_take("e").unwrap().is_some());
    }
}

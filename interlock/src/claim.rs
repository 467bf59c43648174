//! Per-effect claims bound to the holder's life (DESIGN §2.4).
//!
//! A claim is an exclusive `flock` on `<canonical journal path>.claims/<effect_id>`, held by the
//! process that sends (or recovers) the effect for as long as a send can be in progress. The
//! kernel drops it when the process dies, so whoever can take the lock knows no live process is
//! sending. The folder is derived from the journal's canonical path, so every spelling of one
//! journal (a symlink, a relative path) shares one set of claims.
//!
//! The claim file holds a small record — who holds it, the TTL backstop, the DISPATCHED it covers,
//! for a recoverer the instant its in-flight count runs from, and whether its holder let it go
//! with nothing left to send — so a process that cannot
//! take the lock can say who holds it, and the next recoverer can go on counting from where a
//! dead recoverer left off. Every holder writes its record (fsynced) before any target call
//! under the claim. Records are written and read under the
//! journal lock, so they are never seen half-written.
//!
//! Claim files of settled effects are removed by the holder that settles them. Removing a lock
//! file races with a process that opened it before the removal and locks it after; so a taker
//! checks, once it holds the lock, that the path still names the file it locked, and retries on
//! the new file if not.
//!
//! Lock order: a claim is always taken (with a non-blocking try) before the journal lock, and the
//! journal lock is never held while waiting for a claim, so the two cannot deadlock.

use crate::journal::{io_err, JournalError};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A process, named so that a reused pid is never taken for it: host, pid, and the process's
/// start time (clock ticks since boot, from `/proc/<pid>/stat`; 0 where unknown), plus a nonce
/// per gate instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Owner {
    /// Host name.
    pub host: String,
    /// Process id.
    pub pid: u32,
    /// Start time of the process in clock ticks since boot (0 if unknown).
    pub start_ticks: u64,
    /// Random per gate instance, so two gates of one process are told apart.
    pub nonce: u32,
    /// The PID namespace the pid is in (`/proc/self/ns/pid`, e.g. `pid:[4026531836]`); empty
    /// where unknown. A pid of another namespace (a container with the host's name) says
    /// nothing when it is missing from this `/proc`.
    #[serde(default)]
    pub pid_ns: String,
    /// The boot of the kernel the pid is on (`/proc/sys/kernel/random/boot_id`); empty where
    /// unknown. Two machines with one host name share the initial PID namespace's name, never a
    /// boot id: a pid of another boot says nothing when it is missing from this `/proc`.
    #[serde(default)]
    pub boot: String,
}

impl Owner {
    /// This process (a fresh nonce).
    pub fn current() -> Owner {
        let pid = std::process::id();
        Owner {
            host: host_name(),
            pid,
            start_ticks: start_ticks(pid).unwrap_or(0),
            nonce: rand::random::<u32>(),
            pid_ns: pid_namespace(),
            boot: kernel_boot(),
        }
    }

    /// Whether this owner may still be alive: always true on another host, another boot (a
    /// machine that shares this one's host name), or in another (or an unknown) PID namespace;
    /// on this host, boot and namespace, a process with that pid exists and started at the
    /// recorded time.
    pub fn may_be_alive(&self) -> bool {
        let elsewhere = self.host != host_name()
            || self.boot.is_empty()
            || self.boot != kernel_boot()
            || self.pid_ns.is_empty()
            || self.pid_ns != pid_namespace();
        if elsewhere {
            return true;
        }
        match start_ticks(self.pid) {
            None => false,
            Some(t) => self.start_ticks == 0 || t == self.start_ticks,
        }
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{} (started at tick {}, gate {:08x})",
            self.host, self.pid, self.start_ticks, self.nonce
        )
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// The kernel's boot id, or empty where it cannot be read.
fn kernel_boot() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// This process's PID namespace (`/proc/self/ns/pid`), or empty where it cannot be read.
fn pid_namespace() -> String {
    std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Field 22 of `/proc/<pid>/stat` (the process's start time in clock ticks since boot).
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after its end.
    let after = stat.get(stat.rfind(')')? + 1..)?;
    after.split_whitespace().nth(19)?.parse().ok()
}

/// What a claim's holder is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `submit`: dispatching and sending.
    Send,
    /// `recover`: settling an open dispatch.
    Recover,
}

/// An instant of one host's monotonic clock (`CLOCK_MONOTONIC`, shared by every process of the
/// host until it reboots), with the boot it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonoInstant {
    /// `/proc/sys/kernel/random/boot_id` of the host when it was read.
    pub boot: String,
    /// Milliseconds of the monotonic clock.
    pub ms: u64,
}

/// The name of the monotonic clock this process reads: the boot id and the offsets of the time
/// namespace it runs in (`/proc/self/timens_offsets`: two processes of one boot in different
/// time namespaces read different monotonic clocks). Empty where the kernel names no boot: then
/// no instant is ever inherited. Where the kernel has no time namespaces, the boot id alone.
pub(crate) fn boot_id() -> String {
    let boot = kernel_boot();
    if boot.is_empty() {
        return boot;
    }
    match std::fs::read_to_string("/proc/self/timens_offsets") {
        Ok(offsets) => {
            let offsets: Vec<&str> = offsets.split_whitespace().collect();
            format!("{boot} timens {}", offsets.join(" "))
        }
        Err(_) => boot,
    }
}

/// The host's monotonic clock in milliseconds.
pub(crate) fn monotonic_ms() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(t.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1000).saturating_add(nanos / 1_000_000)
}

/// The record stored in a claim file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRecord {
    /// Who holds (or last held) the claim.
    pub owner: Owner,
    /// Sending or recovering.
    pub role: Role,
    /// When the claim's TTL backstop runs out (Unix ms): past it, a holder that still holds the
    /// lock is alive but hung.
    pub expires_ms: u64,
    /// Hash of the DISPATCHED entry the claim covers.
    pub dispatch: String,
    /// Recovery only: an instant by which every request of this dispatch had left its client —
    /// when this holder found the claim free (all earlier holders were dead by then), or its
    /// own last send, written before that send. The next recoverer of the same host and boot
    /// counts the in-flight bound from it; anyone else counts from when it found the claim
    /// free. `None` for a sender (it may stall between DISPATCHED and its send).
    pub in_flight_from: Option<MonoInstant>,
    /// The holder let the claim go itself, with every send of its own returned (none can still
    /// leave). `false` while held, and in the record of a holder that died or lost its claim (it
    /// could not say): a recoverer then treats a holder that may still live as able to send until
    /// the store's send window runs out.
    #[serde(default)]
    pub released: bool,
    /// Until when an earlier holder of this dispatch that may still live (its claim lost, not
    /// its life) can send, on this holder's monotonic clock. A later holder of the same host and
    /// boot waits it out; any other waits the store's send window from its own take-over.
    #[serde(default)]
    pub earlier_sends_until: Option<MonoInstant>,
    /// The record's generation: one more than the record it replaced. The store keeps the
    /// latest generation of each effect where the record cannot be put back (the file store in
    /// the journal's marks, PostgreSQL in a column only a later generation may overwrite), and a
    /// record whose generation is not the latest — an older one replayed — is not believed.
    #[serde(default)]
    pub gen: u64,
    /// A resend of this dispatch was answered "in use" (a request under its key was still
    /// executing), by this holder or one before it: every later recoverer is told too, and
    /// never refuses the dispatch on a "not found" (a gate review: a recoverer that took over
    /// after the one that was told refused, and the held request landed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub told_in_use: bool,
    /// The public key (hex) of the gate that wrote the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// Its ed25519 signature (hex) over the record's canonical JSON without `sig`: a record
    /// edited or made up by anyone without a trusted key is not believed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

impl ClaimRecord {
    /// The record signed with `key` (its `signer` and `sig` replaced).
    pub(crate) fn signed(mut self, key: &ed25519_dalek::SigningKey) -> ClaimRecord {
        use ed25519_dalek::Signer;
        self.signer = Some(hex::encode(key.verifying_key().as_bytes()));
        self.sig = None;
        self.sig = self
            .signed_bytes()
            .map(|bytes| hex::encode(key.sign(&bytes).to_bytes()));
        self
    }

    fn signed_bytes(&self) -> Option<Vec<u8>> {
        let mut value = serde_json::to_value(self).ok()?;
        value.as_object_mut()?.remove("sig");
        verify::canonical::to_vec(&value).ok()
    }

    /// Why the record is not to be believed, if it is not: unsigned, signed by a key outside
    /// `trusted`, or a signature that does not cover what it says.
    pub(crate) fn untrusted(
        &self,
        trusted: &[ed25519_dalek::VerifyingKey],
    ) -> Option<&'static str> {
        let (Some(signer), Some(sig)) = (&self.signer, &self.sig) else {
            return Some("the claim record is not signed");
        };
        let Some(key) = trusted
            .iter()
            .find(|k| hex::encode(k.as_bytes()) == *signer)
        else {
            return Some("the claim record's signer is not a trusted key");
        };
        let sig = hex::decode(sig)
            .ok()
            .and_then(|b| ed25519_dalek::Signature::from_slice(&b).ok());
        let Some(sig) = sig else {
            return Some("the claim record's signature is malformed");
        };
        let Some(bytes) = self.signed_bytes() else {
            return Some("the claim record cannot be put in canonical form");
        };
        match key.verify_strict(&bytes, &sig) {
            Ok(()) => None,
            Err(_) => Some("the claim record's signature does not verify (edited, or made up)"),
        }
    }
}

/// The directory of claim files of one journal.
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

/// Whether `path` still names `file` (same device and inode): `false` once it was removed or
/// replaced.
fn still_named(file: &File, path: &Path) -> Result<bool, JournalError> {
    let held = file
        .metadata()
        .map_err(io_err("inspect the claim file", path))?;
    match std::fs::metadata(path) {
        Ok(now) => Ok(now.dev() == held.dev() && now.ino() == held.ino()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_err("inspect the claim file", path)(e)),
    }
}

impl ClaimDir {
    /// The claim directory of the journal whose canonical path is `canonical_journal`:
    /// `<canonical_journal>.claims/`, created if missing.
    pub fn beside(canonical_journal: &Path) -> Result<ClaimDir, JournalError> {
        let mut s = canonical_journal.as_os_str().to_owned();
        s.push(".claims");
        let dir = PathBuf::from(s);
        crate::fsio::create_dir_all(&dir).map_err(io_err("create the claim directory", &dir))?;
        Ok(ClaimDir { dir })
    }

    fn path(&self, effect_id: &str) -> PathBuf {
        self.dir.join(effect_id)
    }

    /// Take the effect's claim if no process holds it; `None` if one does.
    pub fn try_take(&self, effect_id: &str) -> Result<Option<HeldClaim>, JournalError> {
        let path = self.path(effect_id);
        // A removal between our open and our lock leaves us holding an unlinked file: retry on
        // the file the path names now. Bounded: each retry follows a removal by a holder.
        for _ in 0..64 {
            let file = crate::fsio::open(
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false),
                &path,
            )
            .map_err(io_err("open the claim file", &path))?;
            match crate::fsio::try_lock(&file, &path) {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => return Ok(None),
                Err(TryLockError::Error(e)) => return Err(io_err("lock the claim file", &path)(e)),
            }
            if still_named(&file, &path)? {
                return Ok(Some(HeldClaim { file, path }));
            }
        }
        Ok(None)
    }

    /// The record in the effect's claim file, if there is a readable one.
    pub fn read_record(&self, effect_id: &str) -> Option<ClaimRecord> {
        let bytes = std::fs::read(self.path(effect_id)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// How many claim files the directory holds (for tests of compaction).
    #[cfg(test)]
    pub fn count(&self) -> usize {
        std::fs::read_dir(&self.dir).map_or(0, |d| d.count())
    }
}

impl HeldClaim {
    /// Check, right before a send, that the claim's path still names the file this holder
    /// locked: a claim file replaced or removed under a live holder lets another process lock a
    /// new file of the same name, and two holders would then send.
    pub fn confirm(&self) -> Result<(), JournalError> {
        match still_named(&self.file, &self.path) {
            Ok(true) => Ok(()),
            _ => Err(JournalError::Poisoned {
                path: self.path.clone(),
                reason: "the claim file was replaced or removed while this process held it; \
                         another process may hold the effect now, so this one must not send"
                    .into(),
            }),
        }
    }

    /// Replace the record (fsynced: it must survive a crash of this process).
    pub fn write_record(&self, record: &ClaimRecord) -> Result<(), JournalError> {
        let bytes = serde_json::to_vec(record).map_err(|e| JournalError::Io {
            action: "encode the claim record for",
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        crate::fsio::set_len(&self.file, &self.path, 0)
            .map_err(io_err("truncate the claim file", &self.path))?;
        crate::fsio::write_at(&self.file, &self.path, &bytes, 0)
            .map_err(io_err("write the claim file", &self.path))?;
        crate::fsio::sync(&self.file, &self.path, false)
            .map_err(io_err("sync the claim file", &self.path))
    }

    /// Remove the claim file (the effect is settled), then release the lock. A process that
    /// opened the file before the removal notices when it locks it (see [`ClaimDir::try_take`]).
    pub fn remove(self) {
        let _ = crate::fsio::remove_file(&self.path);
    }
}

impl Drop for HeldClaim {
    fn drop(&mut self) {
        // Closing the file would release the lock as well; unlocking first makes the release
        // independent of any other descriptor of the same open file.
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ms: u64) -> ClaimRecord {
        ClaimRecord {
            owner: Owner::current(),
            role: Role::Recover,
            expires_ms: 10,
            dispatch: "d".into(),
            in_flight_from: Some(MonoInstant {
                boot: boot_id(),
                ms,
            }),
            released: false,
            earlier_sends_until: None,
            gen: 1,
            told_in_use: false,
            signer: None,
            sig: None,
        }
    }

    #[test]
    fn a_record_is_believed_only_as_its_trusted_signer_wrote_it() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
        let other = ed25519_dalek::SigningKey::from_bytes(&[8u8; 32]);
        let trusted = [key.verifying_key()];
        let signed = record(1234).signed(&key);
        assert_eq!(signed.untrusted(&trusted), None);
        let mut edited = signed.clone();
        if let Some(m) = edited.in_flight_from.as_mut() {
            m.ms = 0;
        }
        assert!(edited
            .untrusted(&trusted)
            .is_some_and(|w| w.contains("does not verify")));
        let mut released = signed.clone();
        released.released = true;
        assert!(released.untrusted(&trusted).is_some());
        assert!(record(1234)
            .untrusted(&trusted)
            .is_some_and(|w| w.contains("not signed")));
        let by_other = record(1234).signed(&other);
        assert!(by_other
            .untrusted(&trusted)
            .is_some_and(|w| w.contains("not a trusted")));
        // Signing again (a released record) makes it whole again.
        assert_eq!(released.signed(&key).untrusted(&trusted), None);
    }

    #[test]
    fn a_claim_excludes_a_second_taker_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let claims = ClaimDir::beside(&dir.path().join("j.jsonl")).unwrap();
        let held = claims.try_take("e").unwrap().unwrap();
        assert!(claims.try_take("e").unwrap().is_none());
        assert!(claims.try_take("other").unwrap().is_some());
        let rec = record(7);
        held.write_record(&rec).unwrap();
        assert_eq!(claims.read_record("e"), Some(rec));
        drop(held);
        assert!(claims.try_take("e").unwrap().is_some());
    }

    #[test]
    fn a_removed_claim_file_is_not_held_by_a_late_locker() {
        let dir = tempfile::tempdir().unwrap();
        let claims = ClaimDir::beside(&dir.path().join("j.jsonl")).unwrap();
        let held = claims.try_take("e").unwrap().unwrap();
        // A late taker opened the old file before the removal: it must end up on the new one.
        let stale = File::open(claims.path("e")).unwrap();
        held.remove();
        assert_eq!(claims.count(), 0);
        let again = claims.try_take("e").unwrap().unwrap();
        assert!(
            stale.try_lock().is_ok(),
            "the old inode is unlinked and free"
        );
        assert!(
            claims.try_take("e").unwrap().is_none(),
            "the new file is held"
        );
        drop(again);
    }

    #[test]
    fn the_monotonic_clock_moves_forward_and_the_boot_is_named() {
        let a = monotonic_ms();
        let b = monotonic_ms();
        assert!(b >= a && a > 0);
        assert!(!boot_id().is_empty());
        // The clock is named by the kernel's boot first (time-namespace offsets may follow).
        assert!(boot_id().starts_with(&kernel_boot()), "{}", boot_id());
        assert_eq!(kernel_boot().len(), 36);
    }

    #[test]
    fn this_process_may_be_alive_and_a_made_up_start_time_is_not() {
        let me = Owner::current();
        assert!(me.may_be_alive());
        assert!(me.start_ticks > 0);
        let reused = Owner {
            start_ticks: me.start_ticks + 1,
            ..me.clone()
        };
        assert!(!reused.may_be_alive());
        // The same pid and start in another PID namespace (or an unknown one) is not judged by
        // this /proc: it may be alive.
        for ns in ["pid:[1]", ""] {
            let elsewhere = Owner {
                pid_ns: ns.to_owned(),
                ..reused.clone()
            };
            assert!(elsewhere.may_be_alive(), "{ns:?}");
        }
        // Nor on another host, whatever its pid says here.
        let other_host = Owner {
            host: format!("{}-elsewhere", me.host),
            ..reused.clone()
        };
        assert!(other_host.may_be_alive());
        // What this process is named by is read from the kernel.
        assert!(me.pid_ns.starts_with("pid:["), "{:?}", me.pid_ns);
        // The kernel's boot id: a UUID, as /proc gives it.
        assert_eq!(me.boot.len(), 36, "{:?}", me.boot);
        assert_eq!(me.boot.matches('-').count(), 4, "{:?}", me.boot);
        // Nor on another machine that shares this host name and the initial PID namespace's
        // name (its boot differs), or where the boot is unknown.
        for boot in ["00000000-0000-0000-0000-000000000000", ""] {
            let other_machine = Owner {
                boot: boot.to_owned(),
                ..reused.clone()
            };
            assert!(other_machine.may_be_alive(), "{boot:?}");
        }
    }
}

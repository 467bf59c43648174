//! The run's signing key and the per-cell Stripe API keys.
//!
//! One ed25519 key signs every journal entry of a run. By default it is generated per run from the
//! operating system's randomness, never from `--seed`: the seed is published in the results file,
//! and a key derived from it would let anyone forge entries. A per-run key proves only that the
//! file was not changed after the run; runs published from CI are signed with the project's
//! stable key instead (`--signing-key FILE` or `INTERLOCK_SIGNING_KEY`, [`stable_key`]), whose
//! public half is listed in `results/SIGNERS`. The private key is never written to disk: the
//! runner holds it in an anonymous in-memory file (`memfd_create`, mode 0600, sealed against
//! writes), which its workers read through `/proc/<runner>/fd/<n>` while the runner lives; it goes
//! with the runner's last reference, on success, on error, on Ctrl-C and on a SIGKILL alike
//! ([`RunKey`]). The public key is published as `environment.signer`.

use ed25519_dalek::{SigningKey, VerifyingKey};
use rand::rngs::SysRng;
use rand::TryRng;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The run's signing key, held in an anonymous in-memory file of the runner that its workers
/// read by path while the runner lives. Nothing of it is on disk; closing it (drop, or the
/// runner's death) frees it.
#[derive(Debug)]
pub struct RunKey {
    /// The in-memory file, kept open for as long as the key is held: the path names it.
    _open: File,
    path: PathBuf,
    /// The key itself, in this process's memory (it signs the lines of a partial file).
    secret: SigningKey,
    public: VerifyingKey,
    stable: bool,
}

impl RunKey {
    /// Generates a key from OS randomness and holds it in memory ([`RunKey::hold`]).
    pub fn generate() -> std::io::Result<RunKey> {
        RunKey::hold(fresh_key()?)
    }

    /// Holds `key` (a fresh or a stable one, [`stable_key`]) for the run's workers: hex in an
    /// anonymous in-memory file (close-on-exec, mode 0600, sealed against any further write or
    /// resize), readable by its path ([`RunKey::path`]) while this process lives.
    pub fn hold(key: SigningKey) -> std::io::Result<RunKey> {
        use rustix::fs::{fchmod, fcntl_add_seals, memfd_create, MemfdFlags, Mode, SealFlags};
        let fd = memfd_create(
            "interlock-run-key",
            MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
        )?;
        fchmod(&fd, Mode::from_raw_mode(0o600))?;
        let mut file = File::from(fd);
        file.write_all(hex::encode(key.to_bytes()).as_bytes())?;
        fcntl_add_seals(
            &file,
            SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL,
        )?;
        let path = PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            file.as_raw_fd()
        ));
        Ok(RunKey {
            _open: file,
            path,
            public: key.verifying_key(),
            secret: key,
            stable: false,
        })
    }

    /// Holds the stable key `key` ([`stable_key`]) as [`RunKey::hold`] does, remembering that
    /// it outlives the run ([`RunKey::is_stable`]).
    pub fn hold_stable(key: SigningKey) -> std::io::Result<RunKey> {
        Ok(RunKey {
            stable: true,
            ..RunKey::hold(key)?
        })
    }

    /// Whether the key outlives the run (`--signing-key` or [`SIGNING_KEY_ENV`]); a per-run
    /// key ends with the runner.
    pub fn is_stable(&self) -> bool {
        self.stable
    }

    /// Where a worker reads the private key (a path into this process's open files).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The private key, as this process holds it in memory.
    pub fn signing_key(&self) -> &SigningKey {
        &self.secret
    }

    /// The public key.
    pub fn public(&self) -> VerifyingKey {
        self.public
    }

    /// The public key as lowercase hex (`environment.signer`).
    pub fn public_hex(&self) -> String {
        hex::encode(self.public.to_bytes())
    }
}

/// A new key from the operating system's randomness (an error, not a panic, if it has none to give).
pub fn fresh_key() -> std::io::Result<SigningKey> {
    let mut secret = ed25519_dalek::SecretKey::default();
    SysRng.try_fill_bytes(&mut secret).map_err(|e| {
        std::io::Error::other(format!("the operating system gave no randomness: {e}"))
    })?;
    Ok(SigningKey::from_bytes(&secret))
}

/// Why a signing key could not be read or made: what failed, which file, how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// A key file could not be read.
    #[error("cannot read the signing key {path}: {source}")]
    Read {
        /// The key file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A key's text is not hex.
    #[error(
        "signing key {what} is not hex: {source}; it must hold the 64 hex characters `runner \
         keygen FILE` writes"
    )]
    NotHex {
        /// The file or environment variable the key came from.
        what: String,
        /// Why.
        source: hex::FromHexError,
    },
    /// A key's text is hex of the wrong length.
    #[error(
        "signing key {what} has {len} bytes, expected 32 (64 hex characters, as `runner keygen \
         FILE` writes)"
    )]
    Length {
        /// The file or environment variable the key came from.
        what: String,
        /// How many bytes it has.
        len: usize,
    },
    /// The operating system gave no randomness for a new key.
    #[error(transparent)]
    Random(std::io::Error),
    /// `runner keygen`'s file exists or its directory does not.
    #[error("cannot create {path} (it is never overwritten): {source}")]
    Create {
        /// The new key file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `runner keygen`'s file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The new key file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--signing-key`'s file cannot be looked at.
    #[error("--signing-key {path}: cannot read it: {source}")]
    Stat {
        /// The key file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--signing-key` names a directory or another thing that is not a file.
    #[error(
        "--signing-key {path}: not a key file (a directory, or not a regular file); pass the file \
         `runner keygen FILE` wrote"
    )]
    NotAFile {
        /// What it names.
        path: PathBuf,
    },
    /// `--signing-key`'s file is readable by others than its owner.
    #[error(
        "--signing-key {path}: the key file is readable by group or others (mode {mode:04o}); \
         anyone who can read it can sign as this key. Run `chmod 600 {path}` and try again"
    )]
    NotPrivate {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// Reads a signing key file: a stable key's, or the path a [`RunKey`] gives its workers.
pub fn read_signing_key(path: &Path) -> Result<SigningKey, KeyError> {
    let text = fs::read_to_string(path).map_err(|source| KeyError::Read {
        path: path.to_owned(),
        source,
    })?;
    key_from_hex(&text, &path.display().to_string())
}

/// Make a stable key: write the private key (hex) to `path` with mode 0600, refusing to overwrite
/// anything; returns the public key as hex (the allowed-signers line's first word).
pub fn keygen(path: &Path) -> Result<String, KeyError> {
    let key = fresh_key().map_err(KeyError::Random)?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|source| KeyError::Create {
            path: path.to_owned(),
            source,
        })?;
    file.write_all(hex::encode(key.to_bytes()).as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|source| KeyError::Write {
            path: path.to_owned(),
            source,
        })?;
    Ok(hex::encode(key.verifying_key().as_bytes()))
}

/// The environment variable that may hold a stable signing key itself (64 hex characters).
pub const SIGNING_KEY_ENV: &str = "INTERLOCK_SIGNING_KEY";

/// The stable key a run is signed with: `--signing-key FILE`, else [`SIGNING_KEY_ENV`], else
/// `None` (a per-run key). A key file readable by group or others is refused: anyone who can
/// read it can sign as the project.
pub fn stable_key(file: Option<&Path>) -> Result<Option<SigningKey>, KeyError> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(path) = file {
        let meta = fs::metadata(path).map_err(|source| KeyError::Stat {
            path: path.to_owned(),
            source,
        })?;
        if !meta.is_file() {
            return Err(KeyError::NotAFile {
                path: path.to_owned(),
            });
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::NotPrivate {
                path: path.to_owned(),
                mode,
            });
        }
        return read_signing_key(path).map(Some);
    }
    match std::env::var(SIGNING_KEY_ENV) {
        Ok(text) if !text.trim().is_empty() => key_from_hex(&text, SIGNING_KEY_ENV).map(Some),
        _ => Ok(None),
    }
}

fn key_from_hex(text: &str, what: &str) -> Result<SigningKey, KeyError> {
    let bytes = hex::decode(text.trim()).map_err(|source| KeyError::NotHex {
        what: what.to_owned(),
        source,
    })?;
    let bytes: [u8; 32] = bytes.try_into().map_err(|b: Vec<u8>| KeyError::Length {
        what: what.to_owned(),
        len: b.len(),
    })?;
    Ok(SigningKey::from_bytes(&bytes))
}

/// The emulator API key of one cell: `sk_test_` + run id + cell index, so every cell has its own
/// emulator state and cannot see any other cell's objects.
pub fn cell_api_key(run_id: &str, cell_index: usize) -> String {
    format!("sk_test_interlock_{run_id}_cell{cell_index:03}")
}

/// The read-only key of cell `cell_index`'s emulator account (`rk_test_` + the rest of
/// [`cell_api_key`]): what `runner reconcile` reads a cell's objects with.
pub fn cell_read_key(run_id: &str, cell_index: usize) -> String {
    cell_api_key(run_id, cell_index).replacen("sk_test_", "rk_test_", 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_run_key_is_held_in_memory_private_sealed_and_readable_by_its_path() {
        let key = RunKey::generate().unwrap();
        assert!(key.path().starts_with("/proc"), "{}", key.path().display());
        let mode = fs::metadata(key.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let signing = read_signing_key(key.path()).unwrap();
        assert_eq!(signing.verifying_key(), key.public());
        assert_eq!(key.public_hex().len(), 64);
        // Sealed: neither the runner nor a worker can change the key under the others.
        let mut again = OpenOptions::new().write(true).open(key.path()).unwrap();
        assert!(again.write_all(b"00").is_err());
        assert_eq!(
            read_signing_key(key.path()).unwrap().verifying_key(),
            key.public()
        );
    }

    #[test]
    fn a_stable_key_file_must_be_private() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("project.key");
        let key = SigningKey::from_bytes(&[5; 32]);
        fs::write(&p, hex::encode(key.to_bytes())).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        let e = stable_key(Some(&p)).unwrap_err().to_string();
        assert!(
            e.contains("readable by group or others") && e.contains("chmod 600"),
            "{e}"
        );
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        assert!(stable_key(Some(&p)).is_err());
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        let got = stable_key(Some(&p)).unwrap().unwrap();
        assert_eq!(got.verifying_key(), key.verifying_key());
        let saved = RunKey::hold(got).unwrap();
        assert_eq!(saved.public(), key.verifying_key());
        // A directory, whatever its mode, is not a key file (and never told to be chmodded).
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        let e = stable_key(Some(dir.path())).unwrap_err().to_string();
        assert!(e.contains("not a key file") && !e.contains("chmod"), "{e}");
    }

    #[test]
    fn keygen_writes_a_private_key_once_and_names_its_public_half() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        let public = keygen(&p).unwrap();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let key = stable_key(Some(&p)).unwrap().unwrap();
        assert_eq!(hex::encode(key.verifying_key().as_bytes()), public);
        assert!(keygen(&p)
            .unwrap_err()
            .to_string()
            .contains("never overwritten"));
    }

    #[test]
    fn cell_keys_are_distinct_test_keys() {
        let a = cell_api_key("ab12", 0);
        let b = cell_api_key("ab12", 1);
        assert!(a.starts_with("sk_test_"));
        assert_eq!(cell_read_key("ab12", 1), b.replacen("sk_", "rk_", 1));
        assert_ne!(a, b);
    }

    #[test]
    fn bad_key_files_are_explained() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        fs::write(&p, "zz").unwrap();
        assert!(read_signing_key(&p)
            .unwrap_err()
            .to_string()
            .contains("not hex"));
        fs::write(&p, "abcd").unwrap();
        assert!(read_signing_key(&p)
            .unwrap_err()
            .to_string()
            .contains("2 bytes"));
    }
}

//! The run's signing key and the per-cell Stripe API keys.
//!
//! One ed25519 key signs every journal entry of a run. It is always generated from the operating
//! system's randomness, never from `--seed`: the seed is published in the results file, and a key
//! derived from it would let anyone forge entries. The private key lives only in a file readable by
//! the owner (mode 0600) inside the run's temporary directory; workers get its path. The public key
//! is published as `environment.signer`, and the file is deleted when the run ends, on success, on
//! error and on Ctrl-C ([`RunKey`] deletes it on drop).

use ed25519_dalek::{SigningKey, VerifyingKey};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The run's signing key, saved to a private file that is removed on drop.
#[derive(Debug)]
pub struct RunKey {
    path: PathBuf,
    public: VerifyingKey,
}

impl RunKey {
    /// Generates a key from OS randomness and writes it (hex, 0600) to `dir/signing.key`.
    pub fn generate(dir: &Path) -> std::io::Result<RunKey> {
        let key = SigningKey::generate(&mut rand::rngs::OsRng);
        let path = dir.join("signing.key");
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(hex::encode(key.to_bytes()).as_bytes())?;
        file.sync_all()?;
        Ok(RunKey {
            path,
            public: key.verifying_key(),
        })
    }

    /// Where the private key is (handed to workers).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The public key.
    pub fn public(&self) -> VerifyingKey {
        self.public
    }

    /// The public key as lowercase hex (`environment.signer`).
    pub fn public_hex(&self) -> String {
        hex::encode(self.public.to_bytes())
    }

    /// Deletes the private key file now; reports whether it is gone.
    pub fn delete(&self) -> std::io::Result<()> {
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Drop for RunKey {
    fn drop(&mut self) {
        let _ = self.delete();
    }
}

/// Reads a signing key file written by [`RunKey::generate`] (used by workers).
pub fn read_signing_key(path: &Path) -> Result<SigningKey, String> {
    let text = fs::read_to_string(path)
        .map_err(|e| format!("cannot read the signing key {}: {e}", path.display()))?;
    let bytes = hex::decode(text.trim())
        .map_err(|e| format!("signing key {} is not hex: {e}", path.display()))?;
    let bytes: [u8; 32] = bytes.try_into().map_err(|b: Vec<u8>| {
        format!(
            "signing key {} has {} bytes, expected 32",
            path.display(),
            b.len()
        )
    })?;
    Ok(SigningKey::from_bytes(&bytes))
}

/// The emulator API key of one cell: `sk_test_` + run id + cell index, so every cell has its own
/// emulator state and cannot see any other cell's objects.
pub fn cell_api_key(run_id: &str, cell_index: usize) -> String {
    format!("sk_test_interlock_{run_id}_cell{cell_index:03}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn key_file_is_private_readable_and_deleted_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let key = RunKey::generate(dir.path()).unwrap();
        let mode = fs::metadata(key.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let signing = read_signing_key(key.path()).unwrap();
        assert_eq!(signing.verifying_key(), key.public());
        assert_eq!(key.public_hex().len(), 64);
        let path = key.path().to_path_buf();
        drop(key);
        assert!(!path.exists());
    }

    #[test]
    fn cell_keys_are_distinct_test_keys() {
        let a = cell_api_key("ab12", 0);
        let b = cell_api_key("ab12", 1);
        assert!(a.starts_with("sk_test_"));
        assert_ne!(a, b);
    }

    #[test]
    fn bad_key_files_are_explained() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        fs::write(&p, "zz").unwrap();
        assert!(read_signing_key(&p).unwrap_err().contains("not hex"));
        fs::write(&p, "abcd").unwrap();
        assert!(read_signing_key(&p).unwrap_err().contains("2 bytes"));
    }
}

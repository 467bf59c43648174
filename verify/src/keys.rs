//! The keys a person pins: `--key` (one key) and `--signers` (an allowed-signers file).
//!
//! An allowed-signers file holds one key per line: 64 lowercase or uppercase hex characters, then
//! optional whitespace and a comment (who holds the key, where it is used). Blank lines and lines
//! starting with `#` are ignored. Every key must be an ed25519 key of prime order.

use crate::signatures::key_is_acceptable;
use ed25519_dalek::VerifyingKey;

/// Why a pinned key could not be used (exit 2: could not check).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Neither 64 hex characters nor a readable file (the argument, and why reading it failed).
    #[error(
        "--key {0}: not 64 hex characters, and it cannot be read as a file: {1}; pass the \
         signer's public key (64 hex characters, a line of results/SIGNERS) or a file holding it"
    )]
    Unreadable(String, String),
    /// The file does not hold a key.
    #[error(
        "--key file {0} holds neither 64 hex characters nor 32 raw bytes; pass a file holding \
         the signer's public key (a line of results/SIGNERS) or the 64 hex characters themselves"
    )]
    NotAKey(String),
    /// The bytes are not a valid ed25519 point, or a weak one.
    #[error(
        "{0} is not an acceptable ed25519 public key (invalid, small order or torsion); pin the \
         signer's real public key (a line of results/SIGNERS)"
    )]
    Weak(String),
    /// A line of an allowed-signers file is not a key.
    #[error("line {line}: {message}")]
    SignersLine {
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// The allowed-signers file lists no key.
    #[error("the file lists no key (only comments or blank lines): add a line with the signer's 64-hex public key (see the file's comments), or pin one key with --key instead")]
    NoSigners,
}

fn from_hex(text: &str) -> Option<[u8; 32]> {
    let lower = text.to_ascii_lowercase();
    crate::entry::decode_lower_hex::<32>(&lower)
}

fn acceptable(bytes: &[u8; 32], what: &str) -> Result<VerifyingKey, KeyError> {
    VerifyingKey::from_bytes(bytes)
        .ok()
        .filter(key_is_acceptable)
        .ok_or_else(|| KeyError::Weak(what.to_owned()))
}

/// `--key`: 64 hex characters, or a file holding them (or the 32 raw bytes).
pub fn parse_key(arg: &str) -> Result<VerifyingKey, KeyError> {
    if let Some(bytes) = from_hex(arg) {
        return acceptable(&bytes, "--key");
    }
    let raw = std::fs::read(arg).map_err(|e| KeyError::Unreadable(shown(arg), e.to_string()))?;
    let bytes = match std::str::from_utf8(&raw)
        .ok()
        .and_then(|t| from_hex(t.trim()))
    {
        Some(b) => b,
        None => <[u8; 32]>::try_from(raw.as_slice()).map_err(|_| KeyError::NotAKey(shown(arg)))?,
    };
    acceptable(&bytes, "--key")
}

/// `--signers`: every key of an allowed-signers file's text, in file order.
pub fn parse_signers(text: &str) -> Result<Vec<VerifyingKey>, KeyError> {
    let mut keys = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let word = line.split_whitespace().next().unwrap_or_default();
        let bytes = from_hex(word).ok_or_else(|| KeyError::SignersLine {
            line: n + 1,
            message: "does not start with a key of 64 hex characters".into(),
        })?;
        keys.push(acceptable(&bytes, &format!("the key on line {}", n + 1))?);
    }
    if keys.is_empty() {
        return Err(KeyError::NoSigners);
    }
    Ok(keys)
}

/// An argument as an error names it: cut, not escaped (whoever prints the error escapes it, once).
fn shown(arg: &str) -> String {
    crate::display::shorten(arg, 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "bf9b3c4ecb59706061170d6020f30e3d13e927d15d1bf46b68c0268ec91504b3";

    #[test]
    fn signers_files_take_one_key_per_line_with_comments() {
        let text = format!(
            "# project keys\n\n{KEY} ci@interlock (2026)\n{}\tlaptop\n",
            KEY.to_uppercase()
        );
        let keys = parse_signers(&text).unwrap_or_default();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[0], keys[1]);
        assert!(matches!(
            parse_signers("zz comment\n"),
            Err(KeyError::SignersLine { line: 1, .. })
        ));
        assert_eq!(parse_signers("# nothing\n"), Err(KeyError::NoSigners));
    }

    #[test]
    fn weak_keys_are_refused() {
        // The identity point: a key every signature "verifies" under.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let hex = crate::entry::lower_hex(&identity);
        assert!(matches!(parse_key(&hex), Err(KeyError::Weak(_))));
        assert!(parse_key(KEY).is_ok());
    }

    #[test]
    fn a_key_refused_says_why_and_what_to_pass() {
        let missing = parse_key("/nonexistent/k.key").err().map(|e| e.to_string());
        let missing = missing.unwrap_or_default();
        assert!(missing.contains("No such file or directory"), "{missing}");
        assert!(
            missing.contains("; pass the signer's public key"),
            "{missing}"
        );
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let weak = parse_key(&crate::entry::lower_hex(&identity)).err();
        let weak = weak.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            weak.contains("; pin the signer's real public key"),
            "{weak}"
        );
    }
}

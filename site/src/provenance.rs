//! Who signed a run, in words a reader can act on, and how to check where its file came from.
//!
//! A run signed by a key listed in the results directory's allowed-signers file (`SIGNERS`: one
//! hex key and a comment per line) was signed by the project's stable key (a CI secret); any
//! other key is a per-run key, made for the run and deleted after it, which proves only that the
//! file was not changed since. Every page says which. The report page also shows the
//! `gh attestation verify` command that checks the results file against the CI attestation.
//!
//! Every page also says how the file was checked ([`KeyPolicy`]): against a key pinned when the
//! site was built (`site build --key`), or against the key the file names itself.

use std::path::Path;

/// How a build checked each file's signer key: the build's one key policy, as `verify` has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPolicy {
    /// Against the key given to the build (`--key`): what it signed, and nothing else, is shown.
    Pinned,
    /// Against the key each file names itself: it shows that nothing changed after signing,
    /// not who signed.
    SelfAttested,
}

impl KeyPolicy {
    /// The policy of a build that pins a key (`pinned`) or not.
    pub fn of(pinned: bool) -> KeyPolicy {
        if pinned {
            KeyPolicy::Pinned
        } else {
            KeyPolicy::SelfAttested
        }
    }

    /// Whether a key was pinned.
    pub fn pinned(self) -> bool {
        self == KeyPolicy::Pinned
    }

    /// What the signer key shown beside these words is, as checked.
    pub fn key_note(self) -> &'static str {
        match self {
            KeyPolicy::Pinned => {
                "pinned: the key this site was built with (--key); the file and every receipt \
                 were checked against it"
            }
            KeyPolicy::SelfAttested => "named by the file itself",
        }
    }

    /// What a reader should do to learn who signed; `None` when the build pinned a key.
    pub fn advice(self) -> Option<&'static str> {
        match self {
            KeyPolicy::Pinned => None,
            KeyPolicy::SelfAttested => {
                Some("pin a key you got from the publisher to check who signed")
            }
        }
    }

    /// The key receipts were checked against, in words (a constant without markup, shown as
    /// is: its apostrophe is not escaped).
    pub fn checked_against(self) -> &'static str {
        match self {
            KeyPolicy::Pinned => "the key this site was built with (--key)",
            KeyPolicy::SelfAttested => "the run's published key",
        }
    }
}

/// The allowed-signers file's name inside the results directory.
pub const SIGNERS_FILE: &str = "SIGNERS";

/// The repository named in the `gh attestation verify` command when the build was not told one.
pub const UNKNOWN_REPOSITORY: &str = "OWNER/REPO";

/// The label of `signer_hex` (a results or nemesis file's `environment.signer`), read against
/// `results_dir/SIGNERS` when the file exists and lists keys, and saying so when the build
/// pinned it.
pub fn signer_label(results_dir: &Path, signer_hex: &str, policy: KeyPolicy) -> String {
    let label = listed_label(results_dir, signer_hex);
    match policy {
        KeyPolicy::Pinned => format!("{label}; {}", KeyPolicy::Pinned.key_note()),
        KeyPolicy::SelfAttested => label,
    }
}

/// Per-run key or the project's stable key, in words.
fn listed_label(results_dir: &Path, signer_hex: &str) -> String {
    let fingerprint = verify::entry::decode_lower_hex::<32>(signer_hex)
        .and_then(|b| ed25519_dalek::VerifyingKey::from_bytes(&b).ok())
        .map_or_else(|| "no valid key".to_owned(), |k| verify::fingerprint(&k));
    if is_listed(results_dir, signer_hex) {
        format!(
            "signed by the project's stable key {fingerprint}, listed in the repository's \
             results/{SIGNERS_FILE}; check it with verify --signers results/{SIGNERS_FILE}"
        )
    } else {
        format!(
            "signed by a per-run key {fingerprint}, made for this run and deleted after it: it \
             shows the file was not changed since the run, not who ran it (it is not in \
             results/{SIGNERS_FILE})"
        )
    }
}

/// Whether `signer_hex` is a key listed in the results directory's allowed-signers file.
pub fn is_listed(results_dir: &Path, signer_hex: &str) -> bool {
    std::fs::read_to_string(results_dir.join(SIGNERS_FILE))
        .ok()
        .and_then(|text| verify::keys::parse_signers(&text).ok())
        .is_some_and(|keys| keys.iter().any(|k| hex::encode(k.as_bytes()) == signer_hex))
}

/// `gh attestation verify FILE -R REPO`: checks that the downloaded results file is, byte for
/// byte, one a workflow of the repository attested, and names that workflow run.
pub fn attest_command(json_name: &str, repository: Option<&str>) -> String {
    format!(
        "gh attestation verify {json_name} -R {}",
        repository.unwrap_or(UNKNOWN_REPOSITORY)
    )
}

//! Stage 1, the signer: which key the file is checked against, and how the report names it.
//! Its output ([`Signer`]) is what every later stage checks signatures by.

use crate::entry;
use crate::finding::{code as fcode, Finding};
use crate::manifest;
use crate::receipt::{KeyCheck, SignerRule};
use crate::results::{ResultsFile, RESULTS_FORMAT};
use ed25519_dalek::VerifyingKey;

/// The key the file is checked against, and how the report names it; a published key that is not
/// acceptable, or not the pinned one, is a finding.
fn signer_rule(
    file: &ResultsFile,
    key: &KeyCheck,
    findings: &mut Vec<Finding>,
) -> (SignerRule, &'static str) {
    // One spelling per key: the published key must be 64 lowercase hex characters.
    let published = entry::decode_lower_hex::<32>(&file.environment.signer)
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
        .filter(crate::signatures::key_is_acceptable);
    match (key, published) {
        (KeyCheck::Pinned(k), p) => {
            if p != Some(*k) {
                findings.push(Finding::mismatch(
                    "environment.signer",
                    fcode::FILE_INCONSISTENT,
                    "the key the file publishes is not the pinned key",
                    hex::encode(k.as_bytes()),
                    &file.environment.signer,
                ));
            }
            (SignerRule::Pinned(*k), "pinned")
        }
        (KeyCheck::SelfAttested, Some(p)) => (SignerRule::Published(p), "self-attested"),
        (KeyCheck::SelfAttested, None) => {
            findings.push(Finding::new(
                "environment.signer",
                fcode::FILE_INCONSISTENT,
                "the file publishes no acceptable ed25519 public key (64 lowercase hex characters of a key of prime order), so no signature can be bound to it",
            ));
            (SignerRule::FromRecord, "self-attested")
        }
    }
}

/// What the signer stage established: the rule every signature is checked by, and how the report
/// names the key.
pub(super) struct Signer {
    /// The key every signature must be by (or that none was found).
    pub(super) rule: SignerRule,
    /// `pinned` or `self-attested`.
    pub(super) key_label: &'static str,
    /// The key, hex (empty without one).
    pub(super) signer: String,
    /// Its fingerprint.
    pub(super) fingerprint: Option<String>,
}

/// The signer stage: the file's format, the key it is checked against, and the manifest's own
/// record signed by that key (each cell's hash is a later stage's).
pub(super) fn stage(
    head: &ResultsFile,
    count: usize,
    key: &KeyCheck,
    findings: &mut Vec<Finding>,
) -> Signer {
    if head.format != RESULTS_FORMAT {
        findings.push(Finding::mismatch(
            "format",
            fcode::FILE_INCONSISTENT,
            "the file is not an interlock-results file of this version",
            RESULTS_FORMAT,
            &head.format,
        ));
    }
    let (rule, key_label) = signer_rule(head, key, findings);
    let (signer, fingerprint) = match rule {
        SignerRule::Pinned(k) | SignerRule::Published(k) => {
            manifest::check(head, count, &k, findings);
            (hex::encode(k.as_bytes()), Some(crate::fingerprint(&k)))
        }
        SignerRule::FromRecord => (String::new(), None),
    };
    Signer {
        rule,
        key_label,
        signer,
        fingerprint,
    }
}

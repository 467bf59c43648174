//! Who signed a run, in words a reader can act on, and how to check where its file came from.
//!
//! A run signed by a key listed in the results directory's allowed-signers file (`SIGNERS`: one
//! hex key and a comment per line) was signed by the project's stable key (a CI secret); any
//! other key is a per-run key, made for the run and deleted after it, which proves only that the
//! file was not changed since. Every page says which. The report page also shows the
//! `gh attestation verify` command that checks the results file against the CI attestation.

use std::path::Path;

/// The allowed-signers file's name inside the results directory.
pub const SIGNERS_FILE: &str = "SIGNERS";

/// The repository named in the `gh attestation verify` command when the build was not told one.
pub const UNKNOWN_REPOSITORY: &str = "OWNER/REPO";

/// The label of `signer_hex` (a results or nemesis file's `environment.signer`), read against
/// `results_dir/SIGNERS` when the file exists and lists keys.
pub fn signer_label(results_dir: &Path, signer_hex: &str) -> String {
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

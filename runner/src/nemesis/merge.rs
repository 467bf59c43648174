//! `runner merge`: the shard files of one campaign into one nemesis file. Each shard must verify
//! on its own (self-attested: its signature, its slice of the plan, every trial and receipt); the
//! shards must be every slice of one campaign once ([`verify::nemesis::merge`]); the merged file
//! is signed by the merge key, verified, and written where a whole run's file would be.

use super::merge_error::MergeShardsError;
use crate::cli::MergeArgs;
use ed25519_dalek::VerifyingKey;
use std::time::Instant;
use verify::nemesis::check::{verify_nemesis, verify_nemesis_pinning};
use verify::nemesis::merge::{merge, shard_of_file, ShardInput};
use verify::receipt::KeyCheck;
use verify::scenarios::Scenario;

/// Reads and checks every shard, merges them, signs, verifies and writes the merged file;
/// returns whether it verified (every shard's signer and the merge key accepted).
pub fn merge_shards(args: &MergeArgs) -> Result<bool, MergeShardsError> {
    let wall = Instant::now();
    let out_dir = args.out.join("nemesis");
    crate::results::check_writable(&out_dir).map_err(|error| MergeShardsError::Out {
        dir: out_dir.clone(),
        error,
    })?;
    let signing = match crate::keys::stable_key(args.signing_key.as_deref())? {
        Some(k) => k,
        None => crate::keys::fresh_key().map_err(MergeShardsError::MergeKey)?,
    };
    let mut inputs = Vec::with_capacity(args.shards.len());
    let mut shard_keys: Vec<VerifyingKey> = Vec::new();
    for path in &args.shards {
        let (input, signer) = read_shard(path)?;
        shard_keys.push(signer);
        inputs.push(input);
    }
    let merged = merge(inputs, crate::results::now_rfc3339(), &signing)?;
    let mut bytes = serde_json::to_vec(&merged).map_err(MergeShardsError::Serialize)?;
    bytes.push(b'\n');
    readable_by_verify(&bytes, shard_keys.len())?;
    let path = crate::results::campaign_path(&out_dir, &merged.scenario);
    let replaced =
        crate::results::write_campaign(&path, &bytes).map_err(|error| MergeShardsError::Write {
            path: path.clone(),
            error,
        })?;
    drop(bytes);
    if let Some(plain) = replaced {
        say!("{}", crate::results::replaced_line(&plain, &path));
    }
    super::console::print_summary(&merged, wall.elapsed().as_secs_f64());
    let report = verify_nemesis_pinning(
        &merged,
        &KeyCheck::Pinned(signing.verifying_key()),
        &shard_keys,
    );
    super::console::print_verified(
        &report,
        &format!(
            "merged from {} shards, signed by the merge key {}",
            shard_keys.len(),
            verify::fingerprint(&signing.verifying_key())
        ),
    );
    say!("results: {}", path.display());
    Ok(report.ok)
}

/// The merged file's text read as `verify` reads a file (its limits: a head of at most
/// [`verify::load::HEAD_BYTES`], each shard's head in it some 27 KB), so that a merge never
/// writes, and reports as verified, a file the `verify` binary refuses.
fn readable_by_verify(bytes: &[u8], shards: usize) -> Result<(), MergeShardsError> {
    match verify::load::load_for_check(bytes) {
        Ok(_) => Ok(()),
        Err(error) => Err(MergeShardsError::Unreadable { shards, error }),
    }
}

/// Reads one shard and checks it can be merged: a billing_credit nemesis file whose plan names
/// only what this runner knows, that is a shard, verifies on its own and has a usable signer.
/// Returns it with its signer's key.
fn read_shard(path: &std::path::Path) -> Result<(ShardInput, VerifyingKey), MergeShardsError> {
    let name = path.display().to_string();
    // Either form: `.json.gz` as this runner writes shards, or plain JSON from earlier runs.
    let bytes = verify::input::read_file(path).map_err(|error| MergeShardsError::Read {
        name: name.clone(),
        error,
    })?;
    let file =
        verify::load::load_nemesis(&bytes).map_err(|error| MergeShardsError::NotNemesis {
            name: name.clone(),
            error,
        })?;
    drop(bytes);
    // Names this runner's own plans use, and no other: they are printed and name the file.
    if file.scenario != Scenario::BillingCredit.as_str() {
        return Err(MergeShardsError::Scenario {
            name,
            scenario: file.scenario.clone(),
        });
    }
    for n in &file.plan.nemeses {
        super::parse_nemesis(n).map_err(|_| MergeShardsError::UnknownNemesis {
            name: name.clone(),
            nemesis: n.clone(),
        })?;
    }
    for c in &file.plan.columns {
        if scenarios::billing_credit::Column::ALL
            .iter()
            .all(|k| k.as_str() != c)
        {
            return Err(MergeShardsError::UnknownColumn {
                name,
                column: c.clone(),
            });
        }
    }
    // A whole run or a merged file is refused before the (long) check of its trials.
    let shard = shard_of_file(&file).map_err(|reason| MergeShardsError::NotAShard {
        name: name.clone(),
        reason,
    })?;
    let report = verify_nemesis(&file, &KeyCheck::SelfAttested);
    if let Some(first) = report.findings.first() {
        return Err(MergeShardsError::DoesNotVerify {
            first: first.to_string(),
            count: report.findings.len(),
            name,
        });
    }
    let signer = verify::entry::decode_lower_hex::<32>(&file.signature.signer)
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
        .ok_or_else(|| MergeShardsError::Signer { name: name.clone() })?;
    eprintln!(
        "merge: {name}: shard {} of {}, {} trials, signed by {}",
        shard.index,
        shard.count,
        file.trials.len(),
        verify::fingerprint(&signer)
    );
    Ok((ShardInput { name, file }, signer))
}

#[cfg(test)]
mod tests {
    use super::readable_by_verify;

    #[test]
    fn a_merged_file_whose_head_verify_would_refuse_is_refused_before_it_is_written() {
        // A nemesis file's members besides its trials past the head's budget, as the heads of
        // a few hundred shards would be.
        let note = "x".repeat(60_000);
        let notes: Vec<String> = (0..80).map(|_| format!("\"{note}\"")).collect();
        let text = format!(
            "{{\"format\":\"interlock-nemesis/3\",\"plan\":{{\"merged\":[{}]}},\"trials\":[]}}",
            notes.join(",")
        );
        let e = readable_by_verify(text.as_bytes(), 180).unwrap_err();
        let shown = e.to_string();
        assert!(shown.contains("of 180 shards"), "{shown}");
        assert!(shown.contains("fewer shards"), "{shown}");
        assert!(
            shown.contains(&verify::load::HEAD_BYTES.to_string()),
            "{shown}"
        );
    }

    #[test]
    fn the_committed_campaign_is_read() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../results/nemesis/billing_credit.json.gz");
        let bytes = verify::input::read_file(&path).unwrap();
        let shards = match verify::load::load_nemesis(&bytes).unwrap().plan.merged {
            Some(m) => m.parts.len(),
            None => 1,
        };
        readable_by_verify(&bytes, shards).unwrap();
    }
}

//! `runner merge`: the shard files of one campaign into one nemesis file. Each shard must verify
//! on its own (self-attested: its signature, its slice of the plan, every trial and receipt); the
//! shards must be every slice of one campaign once ([`verify::nemesis::merge`]); the merged file
//! is signed by the merge key, verified, and written where a whole run's file would be.

use crate::cli::MergeArgs;
use anyhow::{anyhow, bail, Context, Result};
use ed25519_dalek::VerifyingKey;
use std::time::Instant;
use verify::nemesis::check::{verify_nemesis, verify_nemesis_pinning};
use verify::nemesis::merge::{merge, shard_of_file, ShardInput};
use verify::receipt::KeyCheck;
use verify::scenarios::Scenario;

/// Reads and checks every shard, merges them, signs, verifies and writes the merged file;
/// returns whether it verified (every shard's signer and the merge key accepted).
pub fn merge_shards(args: &MergeArgs) -> Result<bool> {
    let wall = Instant::now();
    let out_dir = args.out.join("nemesis");
    crate::results::check_writable(&out_dir).map_err(|e| {
        anyhow!(
            "--out {}: cannot write the merged file there: {e}; pass a directory you can write",
            out_dir.display()
        )
    })?;
    let signing = match crate::keys::stable_key(args.signing_key.as_deref())? {
        Some(k) => k,
        None => crate::keys::fresh_key().context("cannot create the merge's signing key")?,
    };
    let mut inputs = Vec::with_capacity(args.shards.len());
    let mut shard_keys: Vec<VerifyingKey> = Vec::new();
    for path in &args.shards {
        let (input, signer) = read_shard(path)?;
        shard_keys.push(signer);
        inputs.push(input);
    }
    let merged = merge(inputs, crate::results::now_rfc3339(), &signing).map_err(|e| anyhow!(e))?;
    let mut bytes = serde_json::to_vec(&merged).context("cannot serialize the merged file")?;
    bytes.push(b'\n');
    let path = out_dir.join(format!("{}.json", merged.scenario));
    crate::results::write_atomically(&path, &bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    drop(bytes);
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
    println!("results: {}", path.display());
    Ok(report.ok)
}

/// Reads one shard and checks it can be merged: a billing_credit nemesis file whose plan names
/// only what this runner knows, that is a shard, verifies on its own and has a usable signer.
/// Returns it with its signer's key.
fn read_shard(path: &std::path::Path) -> Result<(ShardInput, VerifyingKey)> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).with_context(|| {
        format!("{name}: cannot read it; pass the path of a shard file (DIR/nemesis/billing_credit.shard-K-of-N.json)")
    })?;
    let file = verify::load::load_nemesis(&bytes)
        .map_err(|e| anyhow!("{name}: not a nemesis file: {e}"))?;
    drop(bytes);
    // Names this runner's own plans use, and no other: they are printed and name the file.
    if file.scenario != Scenario::BillingCredit.as_str() {
        bail!(
            "{name}: a campaign of scenario {:?}; only billing_credit's are merged",
            file.scenario
        );
    }
    for n in &file.plan.nemeses {
        super::Nemesis::parse(n).map_err(|_| {
            anyhow!(
                "{name}: its plan names a nemesis this runner does not know ({:?})",
                n
            )
        })?;
    }
    for c in &file.plan.columns {
        if scenarios::billing_credit::Column::ALL
            .iter()
            .all(|k| k.as_str() != c)
        {
            bail!("{name}: its plan names a column this runner does not know ({c:?})");
        }
    }
    // A whole run or a merged file is refused before the (long) check of its trials.
    let shard = shard_of_file(&file).map_err(|reason| anyhow!("{name}: {reason}"))?;
    let report = verify_nemesis(&file, &KeyCheck::SelfAttested);
    if let Some(first) = report.findings.first() {
        bail!(
            "{name}: does not verify on its own, so it is not merged: {first} ({} finding(s); run `verify {name}` for all)",
            report.findings.len()
        );
    }
    let signer = verify::entry::decode_lower_hex::<32>(&file.signature.signer)
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
        .ok_or_else(|| anyhow!("{name}: its signer is not a usable key"))?;
    eprintln!(
        "merge: {name}: shard {} of {}, {} trials, signed by {}",
        shard.index,
        shard.count,
        file.trials.len(),
        verify::fingerprint(&signer)
    );
    Ok((ShardInput { name, file }, signer))
}

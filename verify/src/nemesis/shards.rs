//! Campaigns run in shards (DESIGN §5.1): the slicing rule, stated once, and the checks of a
//! merged file's shards.
//!
//! A campaign's plan (nemeses, columns, trials per nemesis and column, seed) is cut into `N`
//! disjoint slices: trial `i` of every nemesis and column belongs to shard `i mod N + 1`
//! ([`in_slice`]). A shard file holds the whole plan, its slice (`plan.shard`) and that slice's
//! trials, with the ids the whole run gives them. A merged file holds every trial of the plan, in
//! plan order, and each shard's signed head (`plan.merged`): each shard's signature is checked
//! here over the shard file it was, rebuilt from its head and its slice of the merged trials
//! ([`MergedCheck`]), so the merger cannot add, drop or change a trial a shard signed.

use super::check::code;
use super::sign::{self, FileHasher, SignError};
use super::{Merged, NemesisFile, NemesisPlan, Shard, ShardHead, Trial};
use crate::finding::Finding;
use crate::receipt::KeyCheck;
use crate::results::Environment;
use ed25519_dalek::VerifyingKey;

/// Whether trial `index` (of any nemesis and column) belongs to `shard`.
pub fn in_slice(index: u32, shard: Shard) -> bool {
    shard.count > 0 && index % shard.count + 1 == shard.index
}

/// The shard trial `index` belongs to, in a campaign cut into `count` shards (`count` ≥ 1).
pub fn shard_of(index: u32, count: u32) -> Shard {
    Shard {
        index: index % count.max(1) + 1,
        count: count.max(1),
    }
}

/// Trials of one nemesis and column in `shard`, for a plan of `trials` per nemesis and column.
pub fn slice_len(trials: u32, shard: Shard) -> u32 {
    let first = shard.index.saturating_sub(1);
    if shard.count == 0 || first >= trials {
        return 0;
    }
    (trials - first).div_ceil(shard.count)
}

/// A slice that can be run: `1 ≤ index ≤ count ≤ trials`, so that every slice of the campaign
/// holds at least one trial of each nemesis and column.
pub fn well_formed(shard: Shard, trials: u32) -> bool {
    shard.index >= 1 && shard.index <= shard.count && shard.count <= trials
}

/// The plan of shard `shard` of the campaign `plan` (a merged file's plan without `merged`).
pub fn shard_plan(plan: &NemesisPlan, shard: Shard) -> NemesisPlan {
    NemesisPlan {
        nemeses: plan.nemeses.clone(),
        columns: plan.columns.clone(),
        trials: plan.trials,
        seed: plan.seed,
        shard: Some(shard),
        merged: None,
        exposure: plan.exposure.clone(),
    }
}

/// The environment with what may differ between the shards of one campaign left out: who signed
/// it, the command line (which names the slice) and how many trials ran at once. Everything
/// else (backend, API version, decider, runner version, commit, seed, claim settings, journal,
/// clock start, outage length) must be the same in every shard and in the merged file.
pub fn campaign_environment(env: &Environment) -> Environment {
    Environment {
        signer: String::new(),
        command: String::new(),
        jobs: 0,
        ..env.clone()
    }
}

/// The shard file a head stands for, without its trials (they are in the merged file).
pub fn shard_file_head(merged: &NemesisFile, head: &ShardHead) -> NemesisFile {
    NemesisFile {
        format: merged.format.clone(),
        scenario: merged.scenario.clone(),
        generated: head.generated.clone(),
        environment: head.environment.clone(),
        plan: shard_plan(&merged.plan, head.shard),
        trials: Vec::new(),
        summary: head.summary.clone(),
        signature: head.signature.clone(),
    }
}

/// One shard of a merged file being checked: the key that signed it (when it names a usable
/// one) and the hash of its trials so far.
struct Part {
    key: Option<VerifyingKey>,
    hasher: Option<FileHasher>,
}

/// The checks of a merged file's shards, fed the merged trials in file order: the parts are
/// well formed (every slice once, in order, of this campaign), each shard's signature holds
/// over its head and its slice of the trials, each shard's signer is allowed under a pin, and
/// each trial's receipt is checked against the key of the shard that ran it ([`Self::key_for`]).
pub(super) struct MergedCheck {
    parts: Vec<Part>,
    count: u32,
}

impl MergedCheck {
    /// Starts the checks of `file`'s shards, if it is a merged file; structural findings go to
    /// `f`. Under `KeyCheck::Pinned(k)`, a shard must be signed by `k` or one of `allowed`.
    pub(super) fn new(
        file: &NemesisFile,
        key: &KeyCheck,
        allowed: &[VerifyingKey],
        f: &mut Vec<Finding>,
    ) -> Option<MergedCheck> {
        let merged = file.plan.merged.as_ref()?;
        if !check_structure(file, merged, f) {
            return None;
        }
        let campaign = campaign_environment(&file.environment);
        let mut parts = Vec::with_capacity(merged.parts.len());
        for (i, head) in merged.parts.iter().enumerate() {
            let at = format!("plan.merged.parts[{i}]");
            if campaign_environment(&head.environment) != campaign {
                f.push(Finding::new(
                    format!("{at}.environment"),
                    code::SHARDS,
                    format!(
                        "shard {} of {} ran in another environment than the merged file states (backend, versions, commit, seed, claim settings, clock start or outage length differ): it is not of this campaign",
                        head.shard.index, head.shard.count
                    ),
                ));
            }
            if head.environment.signer != head.signature.signer {
                f.push(Finding::new(
                    format!("{at}.signature.signer"),
                    code::SIGNATURE,
                    format!(
                        "shard {}: the signature is not by the signer its environment publishes",
                        head.shard.index
                    ),
                ));
            }
            let signer = crate::signatures::published_key(&head.signature.signer);
            if let (KeyCheck::Pinned(pinned), Some(k)) = (key, signer) {
                if k != *pinned && !allowed.contains(&k) {
                    f.push(Finding::new(
                        format!("{at}.signature.signer"),
                        code::SIGNATURE,
                        format!(
                            "shard {} is signed by {}, which is not a pinned or allowed key",
                            head.shard.index,
                            crate::fingerprint(&k)
                        ),
                    ));
                }
            }
            let hasher = match FileHasher::new(&shard_file_head(file, head)) {
                Ok(h) => Some(h),
                Err(e) => {
                    f.push(Finding::new(
                        format!("{at}.signature"),
                        code::SIGNATURE,
                        format!("shard {}: {e}", head.shard.index),
                    ));
                    None
                }
            };
            parts.push(Part {
                key: signer,
                hasher,
            });
        }
        Some(MergedCheck {
            parts,
            count: merged.shards,
        })
    }

    /// Adds the next merged trial to the hash of the shard its index puts it in.
    pub(super) fn trial(
        &mut self,
        t: &Trial,
        canonical: &Result<String, SignError>,
        f: &mut Vec<Finding>,
    ) {
        let i = (shard_of(t.index, self.count).index - 1) as usize;
        let Some(part) = self.parts.get_mut(i) else {
            return;
        };
        if let Some(h) = part.hasher.as_mut() {
            match canonical {
                Ok(text) => h.add(text),
                Err(e) => {
                    f.push(Finding::new(
                        format!("plan.merged.parts[{i}].signature"),
                        code::SIGNATURE,
                        format!("shard {}: {e}", i + 1),
                    ));
                    part.hasher = None;
                }
            }
        }
    }

    /// Checks every shard's signature over the trials fed to it.
    pub(super) fn finish(&mut self, file: &NemesisFile, f: &mut Vec<Finding>) {
        let Some(merged) = file.plan.merged.as_ref() else {
            return;
        };
        for (i, (part, head)) in self.parts.iter_mut().zip(&merged.parts).enumerate() {
            let Some(hasher) = part.hasher.take() else {
                continue;
            };
            if let Err(e) = sign::check_signature(&head.signature, &hasher.finish()) {
                f.push(Finding::new(
                    format!("plan.merged.parts[{i}].signature"),
                    code::SIGNATURE,
                    format!(
                        "shard {} of {}: {e} (over the shard's head and its slice of the trials)",
                        head.shard.index, head.shard.count
                    ),
                ));
            }
        }
    }

    /// The key trial `t`'s receipt must be signed by: its shard's signer (self-attested when the
    /// shard names no usable key: its signature finding is already made).
    pub(super) fn key_for(&self, t: &Trial) -> KeyCheck {
        let i = (shard_of(t.index, self.count).index - 1) as usize;
        match self.parts.get(i).and_then(|p| p.key) {
            Some(k) => KeyCheck::Pinned(k),
            None => KeyCheck::SelfAttested,
        }
    }

    /// The fingerprints of the shards' signers, in slice order (`?` for one that names none).
    pub(super) fn signers(&self) -> Vec<String> {
        self.parts
            .iter()
            .map(|p| {
                p.key
                    .map_or_else(|| "?".to_owned(), |k| crate::fingerprint(&k))
            })
            .collect()
    }
}

/// `plan.merged` names every slice `1..=shards` once, in order, of a campaign whose slices each
/// hold trials, and the merged file is not also a shard.
fn check_structure(file: &NemesisFile, merged: &Merged, f: &mut Vec<Finding>) -> bool {
    let plan = &file.plan;
    let mut ok = true;
    if plan.shard.is_some() {
        f.push(Finding::new(
            "plan.shard",
            code::SHARDS,
            "the plan says both that it is one shard and that it was merged from shards",
        ));
        ok = false;
    }
    if merged.shards == 0 || merged.shards > plan.trials {
        f.push(Finding::mismatch(
            "plan.merged.shards",
            code::SHARDS,
            "a campaign is cut into 1 to `trials` shards",
            format!("1..={}", plan.trials),
            merged.shards.to_string(),
        ));
        return false;
    }
    if merged.parts.len() != merged.shards as usize {
        f.push(Finding::mismatch(
            "plan.merged.parts",
            code::SHARDS,
            "the merged file does not carry one head per shard",
            merged.shards.to_string(),
            merged.parts.len().to_string(),
        ));
        return false;
    }
    for (i, head) in merged.parts.iter().enumerate() {
        let want = Shard {
            index: i as u32 + 1,
            count: merged.shards,
        };
        if head.shard != want {
            f.push(Finding::mismatch(
                format!("plan.merged.parts[{i}].shard"),
                code::SHARDS,
                "the shards are not every slice once, in order",
                format!("{}/{}", want.index, want.count),
                format!("{}/{}", head.shard.index, head.shard.count),
            ));
            ok = false;
        }
        if head.environment.seed != plan.seed {
            f.push(Finding::mismatch(
                format!("plan.merged.parts[{i}].environment.seed"),
                code::SHARDS,
                "the shard ran with another seed than the campaign's",
                plan.seed.to_string(),
                head.environment.seed.to_string(),
            ));
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_trial_index_is_in_exactly_one_slice_and_the_slices_count_them_all() {
        for count in 1..=7u32 {
            for trials in count..=20u32 {
                let mut total = 0;
                for index in 1..=count {
                    let shard = Shard { index, count };
                    assert!(well_formed(shard, trials));
                    let members = (0..trials).filter(|i| in_slice(*i, shard)).count() as u32;
                    assert_eq!(
                        members,
                        slice_len(trials, shard),
                        "{index}/{count} of {trials}"
                    );
                    assert!(members >= 1);
                    total += members;
                }
                assert_eq!(total, trials);
                for i in 0..trials {
                    assert!(in_slice(i, shard_of(i, count)));
                }
            }
        }
    }

    #[test]
    fn a_slice_outside_its_campaign_is_not_well_formed() {
        assert!(!well_formed(Shard { index: 0, count: 4 }, 8));
        assert!(!well_formed(Shard { index: 5, count: 4 }, 8));
        assert!(!well_formed(Shard { index: 1, count: 9 }, 8));
        assert!(!well_formed(Shard { index: 1, count: 0 }, 8));
        assert!(!in_slice(0, Shard { index: 1, count: 0 }));
        assert_eq!(slice_len(8, Shard { index: 1, count: 0 }), 0);
    }
}

//! Merging the shard files of one campaign into one nemesis file (`runner merge`): the shards
//! must be every slice of one campaign once (same plan, seed and environment where it matters),
//! each holding exactly its slice's trials; the merged file holds every trial in plan order, each
//! shard's signed head ([`super::ShardHead`]) and the merger's signature. Each shard is expected
//! to verify on its own first (the caller checks it); what is refused here is a set of shards
//! that do not make one campaign.

use super::rules::{summarize, trial_id, trial_seed};
use super::shards::{campaign_environment, shard_of, shard_plan, well_formed};
use super::sign::{self, SignError};
use super::{
    FileSignature, Merged, NemesisFile, NemesisPlan, Shard, ShardHead, Trial, NEMESIS_FORMAT,
};
use ed25519_dalek::SigningKey;
use std::collections::VecDeque;

/// Why a set of shard files cannot be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// No file was given.
    #[error("no shard file given: pass every shard file of the campaign")]
    NoShards,
    /// One file does not fit: which, and why.
    #[error("{file}: {reason}")]
    Shard {
        /// The file, as the caller named it.
        file: String,
        /// What is wrong with it, and what to do.
        reason: String,
    },
    /// A slice of the campaign is not among the files.
    #[error("shard {index} of {count} is missing: pass every shard file of the campaign (slices 1 to {count})")]
    Missing {
        /// The missing slice.
        index: u32,
        /// How many slices the campaign has.
        count: u32,
    },
    /// The merged file could not be signed.
    #[error("cannot sign the merged file: {0}")]
    Sign(#[from] SignError),
}

/// A shard file and the name it is reported by.
pub struct ShardInput {
    /// The name (its path) for messages.
    pub name: String,
    /// The file.
    pub file: NemesisFile,
}

/// Merges `shards` into one file signed by `key`, dated `generated` (RFC 3339 UTC).
pub fn merge(
    shards: Vec<ShardInput>,
    generated: String,
    key: &SigningKey,
) -> Result<NemesisFile, MergeError> {
    let shards = in_slice_order(shards)?;
    let first = &shards.first().ok_or(MergeError::NoShards)?.file;
    let count = shards.len() as u32;
    let plan = NemesisPlan {
        shard: None,
        merged: None,
        ..first.plan.clone()
    };
    let mut environment = first.environment.clone();
    environment.signer = crate::entry::lower_hex(key.verifying_key().as_bytes());
    environment.command = campaign_command(&first.environment.command, count);
    let format = first.format.clone();
    let scenario = first.scenario.clone();
    let mut parts = Vec::with_capacity(shards.len());
    let mut queues: Vec<(String, VecDeque<Trial>)> = Vec::with_capacity(shards.len());
    for s in shards {
        let f = s.file;
        let Some(shard) = f.plan.shard else {
            continue;
        };
        parts.push(ShardHead {
            shard,
            generated: f.generated,
            environment: f.environment,
            summary: f.summary,
            signature: f.signature,
        });
        queues.push((s.name, f.trials.into()));
    }
    let trials = interleave(&plan, queues)?;
    let summary = summarize(&plan, &trials);
    let mut file = NemesisFile {
        format,
        scenario,
        generated,
        environment,
        plan: NemesisPlan {
            merged: Some(Merged {
                shards: count,
                parts,
            }),
            ..plan
        },
        trials,
        summary,
        signature: FileSignature::default(),
    };
    sign::sign(&mut file, key)?;
    Ok(file)
}

/// The whole campaign's command: a shard's, without its `--shard K/N`.
fn campaign_command(shard_command: &str, count: u32) -> String {
    let suffix = format!(" --shard 1/{count}");
    shard_command
        .strip_suffix(&suffix)
        .unwrap_or(shard_command)
        .to_owned()
}

/// The shards, checked to be every slice of one campaign once, sorted by slice.
fn in_slice_order(shards: Vec<ShardInput>) -> Result<Vec<ShardInput>, MergeError> {
    let refuse = |file: &str, reason: String| MergeError::Shard {
        file: file.to_owned(),
        reason,
    };
    let Some(first) = shards.first() else {
        return Err(MergeError::NoShards);
    };
    for s in &shards {
        shard_of_file(&s.file).map_err(|reason| refuse(&s.name, reason.to_string()))?;
    }
    let campaign = |f: &NemesisFile| {
        (
            f.scenario.clone(),
            shard_plan(&f.plan, Shard { index: 1, count: 1 }),
            campaign_environment(&f.environment),
        )
    };
    let reference = campaign(&first.file);
    let count = first.file.plan.shard.map_or(0, |s| s.count);
    for s in &shards {
        let this = campaign(&s.file);
        let shard = s.file.plan.shard.map_or(0, |s| s.count);
        let differs = if this.0 != reference.0 {
            Some("another scenario")
        } else if this.1 != reference.1 {
            Some("another plan (nemeses, columns, trials per nemesis and column, or seed)")
        } else if shard != count {
            Some("another number of shards")
        } else if this.2 != reference.2 {
            Some("another environment (backend, versions, commit, seed, claim settings, journal, clock start or outage length)")
        } else {
            None
        };
        if let Some(what) = differs {
            return Err(refuse(
                &s.name,
                format!(
                    "is of another campaign than {}: {what}; merge only the shards of one run of `runner --nemesis ... --shard K/N`",
                    first.name
                ),
            ));
        }
    }
    // Every slice once: as many files as the campaign has shards, checked before anything is
    // sized by the count a file states.
    if count as usize != shards.len() {
        if (count as usize) > shards.len() {
            let mut given: Vec<u32> = shards
                .iter()
                .filter_map(|s| s.file.plan.shard.map(|x| x.index))
                .collect();
            given.sort_unstable();
            let index = (1..=count)
                .find(|i| given.binary_search(i).is_err())
                .unwrap_or(1);
            return Err(MergeError::Missing { index, count });
        }
        return Err(refuse(
            &first.name,
            format!(
                "{} files for a campaign of {count} shards: each slice once",
                shards.len()
            ),
        ));
    }
    let mut by_slice: Vec<Option<ShardInput>> = (0..count).map(|_| None).collect();
    for s in shards {
        let index = s.file.plan.shard.map_or(0, |s| s.index);
        let Some(slot) = by_slice.get_mut(index.saturating_sub(1) as usize) else {
            return Err(refuse(
                &s.name,
                format!("shard {index} is outside 1..={count}"),
            ));
        };
        if let Some(other) = slot {
            return Err(refuse(
                &s.name,
                format!(
                    "is shard {index} of {count}, as {} is: each slice once",
                    other.name
                ),
            ));
        }
        *slot = Some(s);
    }
    let mut out = Vec::with_capacity(by_slice.len());
    for (i, s) in by_slice.into_iter().enumerate() {
        out.push(s.ok_or(MergeError::Missing {
            index: i as u32 + 1,
            count,
        })?);
    }
    Ok(out)
}

/// Why a nemesis file cannot be one shard of a merge; its text follows the file's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAShard {
    /// The file is of another format.
    #[error("is not an {NEMESIS_FORMAT} file (its format is {0:?})")]
    Format(String),
    /// The file is a merge already.
    #[error("is already a merged file; merge the shard files themselves")]
    Merged,
    /// The file is a whole run.
    #[error("is a whole run, not a shard (its plan names no slice); only files written by `runner --nemesis ... --shard K/N` are merged")]
    WholeRun,
    /// The file names a slice its plan does not have.
    #[error("names shard {}/{}, which is not a slice of its plan of {trials} trials per nemesis and column", shard.index, shard.count)]
    NotASlice {
        /// The slice it names.
        shard: Shard,
        /// Its plan's trials per nemesis and column.
        trials: u32,
    },
}

/// The slice `f` holds, if it can be one shard of a merge: a nemesis file of a slice of its plan,
/// not a whole run and not already merged; else why not.
pub fn shard_of_file(f: &NemesisFile) -> Result<Shard, NotAShard> {
    if f.format != NEMESIS_FORMAT {
        return Err(NotAShard::Format(f.format.clone()));
    }
    if f.plan.merged.is_some() {
        return Err(NotAShard::Merged);
    }
    let Some(shard) = f.plan.shard else {
        return Err(NotAShard::WholeRun);
    };
    if !well_formed(shard, f.plan.trials) {
        return Err(NotAShard::NotASlice {
            shard,
            trials: f.plan.trials,
        });
    }
    Ok(shard)
}

/// Every trial of `plan` in plan order, each taken from the shard its index belongs to, which
/// must hold exactly its slice's trials in plan order.
fn interleave(
    plan: &NemesisPlan,
    mut queues: Vec<(String, VecDeque<Trial>)>,
) -> Result<Vec<Trial>, MergeError> {
    let count = queues.len() as u32;
    let mut trials = Vec::new();
    for nemesis in &plan.nemeses {
        for column in &plan.columns {
            for index in 0..plan.trials {
                let slice = shard_of(index, count).index;
                let Some((name, queue)) = queues.get_mut((slice - 1) as usize) else {
                    return Err(MergeError::Missing {
                        index: slice,
                        count,
                    });
                };
                let want = trial_id(
                    nemesis,
                    column,
                    trial_seed(plan.seed, nemesis, column, index),
                );
                let fits = |t: &Trial| {
                    t.id == want && &t.nemesis == nemesis && &t.column == column && t.index == index
                };
                match queue.pop_front() {
                    Some(t) if fits(&t) => trials.push(t),
                    Some(t) => {
                        return Err(MergeError::Shard {
                            file: name.clone(),
                            reason: format!(
                                "holds trial {} (index {}) where its slice of the plan has {want} (index {index}): not the trials of its slice, in plan order",
                                t.id, t.index
                            ),
                        })
                    }
                    None => {
                        return Err(MergeError::Shard {
                            file: name.clone(),
                            reason: format!("lacks trial {want} of its slice"),
                        })
                    }
                }
            }
        }
    }
    for (name, queue) in &queues {
        if let Some(t) = queue.front() {
            return Err(MergeError::Shard {
                file: name.clone(),
                reason: format!(
                    "holds trial {} beyond its slice of the plan ({} extra)",
                    t.id,
                    queue.len()
                ),
            });
        }
    }
    Ok(trials)
}

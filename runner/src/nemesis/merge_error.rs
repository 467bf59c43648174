//! Why `runner merge` could not merge its shard files: each message names the shard (its path)
//! it is about and, where it helps, what to pass instead.

use std::path::PathBuf;

/// Why the shards could not be read, merged or written.
#[derive(Debug, thiserror::Error)]
pub enum MergeShardsError {
    /// `--out DIR/nemesis` cannot be written.
    #[error(
        "--out {}: cannot write the merged file there: {error}; pass a directory you can write",
        .dir.display()
    )]
    Out {
        /// The directory.
        dir: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The stable signing key could not be read.
    #[error(transparent)]
    Key(#[from] crate::keys::KeyError),
    /// No stable key, and a fresh one could not be made.
    #[error("cannot create the merge's signing key")]
    MergeKey(#[source] std::io::Error),
    /// The shards are not every slice of one campaign once.
    #[error(transparent)]
    Merge(#[from] verify::nemesis::merge::MergeError),
    /// The merged file could not be serialized.
    #[error("cannot serialize the merged file")]
    Serialize(#[source] serde_json::Error),
    /// The merged file could not be written.
    #[error("cannot write {}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// A shard file could not be read.
    #[error(
        "{name}: cannot read it: {error}; pass the path of a shard file \
         (DIR/nemesis/billing_credit.shard-K-of-N.json.gz, or .json from earlier runs)"
    )]
    Read {
        /// The shard's path.
        name: String,
        /// Why (a file that does not decompress, or decompresses past its limit, included).
        #[source]
        error: verify::input::InputError,
    },
    /// A shard is not a nemesis file.
    #[error("{name}: not a nemesis file: {error}")]
    NotNemesis {
        /// The shard's path.
        name: String,
        /// Why.
        error: verify::load::LoadError,
    },
    /// A shard is another scenario's campaign.
    #[error("{name}: a campaign of scenario {scenario:?}; only billing_credit's are merged")]
    Scenario {
        /// The shard's path.
        name: String,
        /// The scenario it names.
        scenario: String,
    },
    /// A shard's plan names a nemesis this runner does not know.
    #[error("{name}: its plan names a nemesis this runner does not know ({nemesis:?})")]
    UnknownNemesis {
        /// The shard's path.
        name: String,
        /// The nemesis.
        nemesis: String,
    },
    /// A shard's plan names a column this runner does not know.
    #[error("{name}: its plan names a column this runner does not know ({column:?})")]
    UnknownColumn {
        /// The shard's path.
        name: String,
        /// The column.
        column: String,
    },
    /// A file is a whole run or a merged file, not a shard.
    #[error("{name}: {reason}")]
    NotAShard {
        /// The file's path.
        name: String,
        /// Why.
        reason: verify::nemesis::merge::NotAShard,
    },
    /// A shard does not verify on its own.
    #[error(
        "{name}: does not verify on its own, so it is not merged: {first} ({count} finding(s); \
         run `verify {name}` for all)"
    )]
    DoesNotVerify {
        /// The shard's path.
        name: String,
        /// Its first finding.
        first: String,
        /// How many findings.
        count: usize,
    },
    /// The merged file would be refused by `verify` (a campaign of more shards than a file's
    /// head may hold): nothing is written.
    #[error(
        "the merged file of {shards} shards would not be read by `verify`: {error}; nothing was \
         written: run the campaign in fewer shards"
    )]
    Unreadable {
        /// How many shards were merged.
        shards: usize,
        /// What `verify` refuses.
        error: verify::load::LoadError,
    },
    /// A shard's signer is not an ed25519 public key.
    #[error("{name}: its signer is not a usable key")]
    Signer {
        /// The shard's path.
        name: String,
    },
}

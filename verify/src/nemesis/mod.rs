//! Nemesis results (`format: "interlock-nemesis/3"`): randomized, replayable trials of the
//! billing_credit scenario under faults the named crash points never reach (DESIGN §5.1).
//!
//! A trial is one case run through one column under one nemesis with one seed. The file holds
//! every trial (its faults, kills, outcome, what Stripe holds, the judgement) and, per nemesis and
//! column, counts, the one-sided 95% Clopper–Pearson upper bound on the violation rate and
//! settle-time percentiles. Everything derived is re-derived here from the raw data: the trial
//! list's completeness from the plan ([`rules::trial_seed`]), each judgement by the same want rule
//! as a matrix cell ([`crate::scenarios::billing_credit`]), each summary, each receipt, and the file's
//! signature ([`sign`]).
//!
//! What a trial's judgement means: a **violation** is a breach of safety — the case's credits
//! (every credit billing did not make) exceed what the want rule allows, in count or cents. A
//! **wrong answer** is a final status that says "sent" when no case credit exists, or the
//! reverse; a restart that ended in an error (`RESTART_FAILED`) is **unresolved**, counted apart
//! from wrong answers. Crediting less than the want rule allows (the approved credit never
//! issued, or a smaller one) is an **under-credit** ([`rules::under_credit`]): `invariant_held:
//! false`, a failure counted beside violations in every summary and page, not in the violation
//! bounds (which bound safety); a trial killed before any decision existed
//! (`NOT_DECIDED`) had nothing to recover and is counted apart, never as a pass.
//!
//! Each trial's faults are drawn from its seed ([`draw`]); [`drawn`] draws them again and
//! compares them with what the trial records.
//!
//! Whether a trial stayed **within the column's assumptions** is re-derived from its timeline
//! by one rule for every column ([`rules::assumption_broken`]).
//!
//! A campaign may run in shards ([`shards`]): a shard file holds one slice of the plan, a merged
//! file ([`merge`]) every trial and each shard's signed head, each shard's signature re-checked
//! over its own trials.

mod bind;
pub mod check;
pub mod draw;
pub mod drawn;
pub mod exposure_span;
pub mod merge;
pub mod nemeses;
mod plan;
pub mod rules;
pub mod shards;
pub mod sign;
pub mod steps;

use crate::entry::ReceiptBundle;
use crate::results::{Case, Decision, Environment, GroundTruth, Want};
use serde::{Deserialize, Serialize};

/// The `format` value of a nemesis results file.
///
/// `/2`: steps are the workers' own announced steps (lowercase: `proposed`, `send_logged`, ...),
/// world faults mid-check, and `replay_at` on trials whose decide kill was timed. `/3`: every
/// trial records its timeline (reads of each fact, POSTs, world changes), from which the
/// within-assumptions label is re-derived; a held request's hold is recorded; `unresolved`
/// restarts and trials with nothing decided are counted apart.
pub const NEMESIS_FORMAT: &str = "interlock-nemesis/3";

/// A whole nemesis results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NemesisFile {
    /// Always [`NEMESIS_FORMAT`].
    pub format: String,
    /// Scenario name (`billing_credit`).
    pub scenario: String,
    /// When the run finished, RFC 3339 UTC.
    pub generated: String,
    /// What the run ran against (the signer, the seed, the claim settings).
    pub environment: Environment,
    /// What was planned: the trial list is exactly this plan.
    pub plan: NemesisPlan,
    /// Every trial, in plan order (nemesis, then column, then index).
    pub trials: Vec<Trial>,
    /// Per nemesis and column, in plan order.
    pub summary: Vec<NemesisSummary>,
    /// The run's signature over the whole file.
    pub signature: FileSignature,
}

/// The plan of a nemesis run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NemesisPlan {
    /// Nemesis names, in run order.
    pub nemeses: Vec<String>,
    /// Columns, in display order.
    pub columns: Vec<String>,
    /// Trials per nemesis and column.
    pub trials: u32,
    /// The run's seed; every trial's seed derives from it ([`rules::trial_seed`]).
    pub seed: u64,
    /// On a shard file (`runner --nemesis ... --shard K/N`): the slice of this plan it holds
    /// ([`shards::in_slice`]); everything else in the plan is the whole campaign's. Absent on a
    /// whole run and on a merged file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// On a merged file (`runner merge`): the shards it was merged from, each with its signed
    /// head. Absent on a whole run and on a shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<Merged>,
    /// With the exposure nemesis: the span its world changes are drawn over and how it was
    /// sized ([`exposure_span`]). Absent: [`draw::EXPOSURE_SPAN_MS`] (runs before spans were
    /// sized, and runs without exposure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposure: Option<exposure_span::ExposureSpan>,
}

impl NemesisPlan {
    /// The span, ms, the plan's exposure trials are drawn over.
    pub fn exposure_span_ms(&self) -> u64 {
        self.exposure
            .as_ref()
            .map_or(draw::EXPOSURE_SPAN_MS, |e| e.span_ms)
    }
}

/// One slice of a campaign: shard `index` (from 1) of `count`. Trial `i` of every nemesis and
/// column belongs to shard `i mod count + 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shard {
    /// Which slice, from 1.
    pub index: u32,
    /// How many slices the campaign was cut into.
    pub count: u32,
}

/// What a merged file keeps of its shards: enough to check each shard's signature over its own
/// trials (which are in the merged trial list) without the shard files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Merged {
    /// How many shards: every slice `1..=shards` is here once, in order.
    pub shards: u32,
    /// Each shard's head, in slice order.
    pub parts: Vec<ShardHead>,
}

/// A shard file without its trials: with the merged file's `format`, `scenario` and plan (its
/// `shard` set to [`ShardHead::shard`], no `merged`) and the shard's trials, it is the shard file
/// its signature covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardHead {
    /// Which slice the shard holds.
    pub shard: Shard,
    /// When the shard finished.
    pub generated: String,
    /// What the shard ran against; its `signer` signed the shard.
    pub environment: Environment,
    /// The shard's own summary (over its trials only).
    pub summary: Vec<NemesisSummary>,
    /// The shard's signature.
    pub signature: FileSignature,
}

/// One trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trial {
    /// `<nemesis>:<column>:<seed as 14 hex digits>`; `runner --replay ID` runs it again.
    pub id: String,
    /// Nemesis name.
    pub nemesis: String,
    /// Column.
    pub column: String,
    /// Index within (nemesis, column), from 0.
    pub index: u32,
    /// The trial's seed (all of its random choices derive from it).
    pub seed: u64,
    /// The outage run while the worker was dead (drawn from the seed).
    pub outage: String,
    /// Faults the runner set at the service or in the world, in the order it set them.
    pub faults: Vec<Fault>,
    /// SIGKILLs the runner planned and what they hit, in order.
    pub kills: Vec<Kill>,
    /// When the trial's faults go beyond what the column is built to assume, the assumption that
    /// failed (e.g. the target's declared in-flight bound); `None` when within assumptions.
    pub assumption: Option<String>,
    /// The case the trial opened.
    pub case: Case,
    /// The decision the worker saved, if it got that far.
    pub decision: Option<Decision>,
    /// The column's final status, `NOT_DECIDED` (killed before any decision existed),
    /// `RESTART_FAILED` (the final restart ended in an error), or `HARNESS_ERROR`.
    pub outcome: String,
    /// Why the trial is a HARNESS_ERROR.
    pub harness_error: Option<String>,
    /// What Stripe holds after the final restart.
    pub ground_truth: GroundTruth,
    /// What the want rule allows.
    pub want: Want,
    /// The case's credits equal `want`.
    pub invariant_held: bool,
    /// The case's credits exceed `want` in count or cents.
    pub violation: bool,
    /// The final status says "sent" exactly when a case credit exists.
    pub answer_matches: bool,
    /// The final status is `AMBIGUOUS`.
    pub ambiguous: bool,
    /// The final restart ended in an error: the column left the case unresolved (not a wrong
    /// answer: it gave none).
    pub unresolved: bool,
    /// What happened when, on the runner's monotonic clock: every read of a fact and every
    /// credit POST the column's workers announced, world changes, outages, kills and pauses.
    pub timeline: Vec<Event>,
    /// The timeline's interleaving fingerprint ([`rules::interleaving`]).
    pub interleaving: String,
    /// From the first kill (or the fault) to the final restart's exit, ms; `None` without one.
    pub settle_ms: Option<u64>,
    /// Interlock: the effect's receipt bundle after the final restart.
    pub receipt: Option<ReceiptBundle>,
    /// Interlock: the kinds of the effect's journal entries.
    pub journal_kinds: Vec<String>,
    /// For a trial whose decide kill was timed and delivered: the step it landed after, where
    /// `runner --replay ID --at STEP` kills a replay so that it reaches the same state (`None`:
    /// the id alone reproduces the trial).
    pub replay_at: Option<String>,
    /// For an unresolved trial ([`rules::RESTART_FAILED`]): the last line its final restart wrote
    /// on stderr, naming why it could not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_error: Option<String>,
}

impl Trial {
    /// The trial measured its column: something was decided and it is not a harness error. The
    /// one definition of "judged" for a billing_credit nemesis trial; only judged trials are in
    /// a rate.
    pub fn judged(&self) -> bool {
        self.outcome != rules::NOT_DECIDED && !self.is_harness_error()
    }

    /// The trial is judged and its credits fall short of its want ([`rules::under_credit`]):
    /// derived from its ground truth and its want (both checked against the data), so no field
    /// records it.
    pub fn under_credit(&self) -> bool {
        self.judged() && rules::under_credit(&self.ground_truth, self.want)
    }

    /// Every fault the trial recorded fired, and each kind of worker the trial drew kills for
    /// (the decide worker; its restarts) was killed at least once: a recorded fault that hit
    /// nothing (`fired: 0`, e.g. a tear of a record the column does not keep), or kills of one
    /// kind that all found the worker finished (a restart that finished before its drawn step,
    /// under kill_recovery), mean the trial ran without its fault. Such a trial is counted apart
    /// in the figures the pages show, never as judged and passed. What the record cannot tell
    /// stays unknown: a disk_full trial's tmpfs was filled, which says nothing of whether a
    /// write failed.
    pub fn fault_fired(&self) -> bool {
        let faults = self.faults.iter().all(|f| f.fired > 0);
        let landed = |decide: bool| {
            let of_kind = || {
                self.kills
                    .iter()
                    .filter(move |k| (k.worker == "decide") == decide)
            };
            of_kind().next().is_none() || of_kind().any(|k| k.delivered)
        };
        faults && landed(true) && landed(false)
    }

    /// The trial is judged and its fault fired ([`Trial::fault_fired`]): what the pages count.
    pub fn counted(&self) -> bool {
        self.judged() && self.fault_fired()
    }

    /// The trial is a harness error.
    pub fn is_harness_error(&self) -> bool {
        self.outcome == crate::scenarios::billing_credit::HARNESS_ERROR
    }
}

/// A fault set by the runner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// `delay`, `commit_then_error`, `commit_then_drop`, `rate_limit`, ...
    pub kind: String,
    /// Its parameters in words, e.g. `POST balance_transactions held 7000 ms, once`.
    pub detail: String,
    /// How many requests it hit.
    pub fired: u32,
    /// For a request held at the service before it is applied: how long, ms.
    pub held_ms: Option<u64>,
}

/// One event of a trial's timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// Microseconds since the trial began, on the machine's monotonic clock: reads, POSTs and
    /// answers at the instants the worker itself read, steps and pauses when the runner read
    /// their announcement, the runner's own acts when it made them.
    pub at_us: u64,
    /// Who: `decide`, `decide-2`, `restart-1`, `restart-2`, ..., `restart` (the final one), or
    /// `world` (the runner acting on the service or the case).
    pub actor: String,
    /// What: `read` (a read of `what` finished), `post` (a credit POST about to leave),
    /// `answered` (that POST's answer or error is back), `step`
    /// (a step the worker passed), `pause`, `resume`, `kill` (SIGKILL sent), `outage` (from
    /// `at_us` to `until_us`), `change` (the world changed `what`, from `at_us` to `until_us`).
    pub kind: String,
    /// The fact (`approval`, `subscription_status`, `incident_compensation`), step, outage or
    /// worker the event is about; empty when there is none.
    pub what: String,
    /// For `read`, `change` and `outage`: when it was complete (a read's `at_us` is when it
    /// began). For a `post` the service held: the latest instant it could have been applied
    /// (the hold's end).
    pub until_us: Option<u64>,
}

/// A SIGKILL planned by the runner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kill {
    /// Which worker: `decide`, `restart-1`, `restart-2`, ...
    pub worker: String,
    /// The planned instant, ms after the worker was started (or after the step named in `after`).
    pub at_ms: u64,
    /// The step the instant counts from (`start`, or a step the runner observed).
    pub after: String,
    /// The worker was still running and SIGKILL ended it (false: it had finished first).
    pub delivered: bool,
    /// The last step the worker announced having passed before it died, if any.
    pub last_step: Option<String>,
}

/// Per nemesis and column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NemesisSummary {
    /// Nemesis name.
    pub nemesis: String,
    /// Column.
    pub column: String,
    /// Trials run.
    pub trials: u32,
    /// Trials killed before any decision existed (`NOT_DECIDED`): nothing to recover, so not
    /// judged and in no rate.
    pub nothing_decided: u32,
    /// Trials judged: all but those with nothing decided and harness errors. Every count below
    /// but `ambiguous` and `harness_errors` is of judged trials.
    pub judged: u32,
    /// Judged trials whose faults stayed within the column's assumptions
    /// ([`rules::assumption_broken`]).
    pub within_assumptions: u32,
    /// Judged trials with a violation.
    pub violations: u32,
    /// One-sided 95% Clopper–Pearson upper bound on the violation rate over the judged trials,
    /// parts per million (rounded up).
    pub violation_upper95_ppm: u32,
    /// Trials within assumptions with a violation.
    pub violations_within: u32,
    /// The same bound over the trials within assumptions (`violations_within` of
    /// `within_assumptions`).
    pub within_upper95_ppm: u32,
    /// Distinct interleavings among the judged trials ([`rules::interleaving`]): repeats of one
    /// interleaving are not independent samples of it.
    pub distinct: u32,
    /// Distinct interleavings among the judged trials within assumptions.
    pub distinct_within: u32,
    /// Of those, the interleavings some violating trial ran.
    pub distinct_violating_within: u32,
    /// The 95% bound over distinct interleavings within assumptions
    /// (`distinct_violating_within` of `distinct_within`).
    pub within_distinct_upper95_ppm: u32,
    /// Judged trials whose answer does not match Stripe (unresolved ones excluded: they gave
    /// none).
    pub wrong_answers: u32,
    /// Judged trials whose final restart ended in an error (`RESTART_FAILED`).
    pub unresolved: u32,
    /// Trials ending `AMBIGUOUS`.
    pub ambiguous: u32,
    /// Trials that are `HARNESS_ERROR`.
    pub harness_errors: u32,
    /// Settle time percentiles (nearest rank) and maximum, ms, over trials with a settle time.
    pub settle_p50_ms: Option<u64>,
    /// 95th percentile.
    pub settle_p95_ms: Option<u64>,
    /// Maximum.
    pub settle_max_ms: Option<u64>,
}

/// The run's ed25519 signature over the file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSignature {
    /// Hex public key (the run's key, `environment.signer`).
    pub signer: String,
    /// Hex SHA-256 of the canonical JSON of the file without `signature`.
    pub hash: String,
    /// Hex signature over `"interlock-nemesis-v1:" + hash`.
    pub sig: String,
}

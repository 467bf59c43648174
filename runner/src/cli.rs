//! Command-line interface.

use crate::backend::BackendKind;
use crate::clock::ClockStart;
use crate::decider::{anthropic, DeciderKind};
use crate::worker::WorkerArgs;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Largest `--seed`: 2^53 - 1, so the published seed is an integer every JSON reader holds exactly.
pub const MAX_SEED: u64 = (1 << 53) - 1;

const ABOUT: &str =
    "Run the Interlock experiment matrix with real SIGKILLs and write the results file";

const LONG_ABOUT: &str = "\
Run the Interlock experiment matrix with real SIGKILLs and write the results file.

Each cell opens a support case (own test clock, customer, $30 subscription, one approved $10
credit), starts a worker process that decides the credit and sends it the column's way, and
SIGKILLs that worker right before (before_send) or right after (after_send) the credit POST.
While the worker is dead the runner runs an outage (renewal, billing's SLA credit note, a
proration, or a credit for another incident), then starts a restart worker, reads what Stripe
holds, and judges the cell: invariant held, answer matches Stripe, the column's record proves it.

With no options besides --scenario it runs the six rows of the reference page x the three
columns against the embedded Stripe emulator with the deterministic policy decider, writes
out/billing_credit.json (git-ignored: the published results in results/ are not touched),
verifies it, and renders the report into public/. To publish a run, pass --out results.

With --nemesis it runs randomized trials instead: one case, one column, one fault the worker
does not choose (an unannounced SIGKILL, a held or late-landing request, a commit answered 500
or dropped, killed restarts, two workers, a revoked approval, 429s, a SIGKILL at each step of
each column, a revocation or billing's credit note while the worker is mid-check), judged by the
same rule, each replayable from its id with --replay. Writes DIR/nemesis/billing_credit.json.gz.

Campaign files (nemesis runs, shards, merges) are stored gzip-compressed as <name>.json.gz (the
same JSON gives the same bytes); verify, the site and merge read them as they are, and read the
plain <name>.json of earlier runs too. A plain <name>.json left beside the one written is
removed: the new .json.gz replaces it (the runner says so). The matrix files stay plain JSON.";

const AFTER_HELP: &str = "\
Examples:
  runner --scenario billing_credit
  runner --scenario shared_cap
  runner --scenario all --out results
  runner --scenario billing_credit \\
    --cells 'before_send:billing_credit:*' after_send:renewal:interlock
  runner --scenario billing_credit --repeat 5 --jobs 4 --out /tmp/run --no-site
  cargo build --release -p write-fault   # first: two of the nemeses preload its library
  runner --scenario billing_credit --nemesis all --trials 20 --seed 20
  runner --scenario billing_credit --nemesis all --trials 20 --seed 20 --shard 2/4
  runner --scenario billing_credit --nemesis all --trials 300 --signing-key run.key --resume
  runner merge --out results shard1.json.gz shard2.json.gz shard3.json.gz shard4.json.gz
  runner --replay kill_in_flight:interlock:0b31576be2e5da
  runner --replay kill_random:hand_check:04befcf35ecc7d --at premises
  STRIPE_SECRET_KEY=sk_test_... ANTHROPIC_API_KEY=... \\
    runner --scenario billing_credit --backend stripe --decider anthropic

Exit status: 0 every cell ran and the file verifies; 1 results written but a cell is a
HARNESS_ERROR, the file does not verify, or the report site could not be rendered; 2 bad usage
or the run could not start (every option, --out and --site-out are checked before any cell
runs); 3 the disk filled: a billing_credit nemesis campaign's finished trials are kept in its
partial file (the message says where, and the command that resumes it); any other run, whose
cells are only in memory, says the disk is full and waits for space (10 minutes, or
INTERLOCK_DISK_FULL_WAIT_S seconds) and writes them once there is, else they are lost (the
message says so); 130 interrupted by Ctrl-C (SIGINT), 143 by SIGTERM: workers killed, nothing
more written (a report site being rendered is finished first; a nemesis campaign's finished
trials are kept in its partial file, and the message gives the command that resumes it). A
closed standard output (`runner ... | head`) silences the output, not the run: the exit status
is the same as if everything had been printed.";

/// `runner`: the experiment matrix.
#[derive(Debug, Parser)]
#[command(
    name = "runner",
    version,
    max_term_width = 100,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    subcommand_negates_reqs = true,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// Internal: worker processes.
    #[command(subcommand)]
    pub command: Option<Internal>,
    /// The run.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands: `reconcile`, `keygen`, `merge`, and the hidden workers.
#[derive(Debug, Subcommand)]
pub enum Internal {
    /// A worker process started by the runner (not for direct use).
    #[command(hide = true)]
    Worker(Box<WorkerArgs>),
    /// A shared_cap worker process started by the runner (not for direct use).
    #[command(hide = true)]
    CapWorker(Box<crate::scenario::shared_cap::worker::CapWorkerArgs>),
    /// A pr_merge worker process started by the runner (not for direct use).
    #[command(hide = true)]
    MergeWorker(Box<crate::scenario::pr_merge::worker::MergeWorkerArgs>),
    /// A notify worker process started by the runner (not for direct use).
    #[command(hide = true)]
    NotifyWorker(Box<crate::scenario::notify::worker::NotifyWorkerArgs>),
    /// Re-read every Stripe object a results file names and compare it with the file.
    #[command(long_about = RECONCILE_ABOUT, after_help = RECONCILE_AFTER_HELP)]
    Reconcile(ReconcileArgs),
    /// Make a stable signing key: write the private key to FILE (mode 0600, never overwritten)
    /// and print the line to add to results/SIGNERS (public key, then a comment).
    Keygen(KeygenArgs),
    /// Merge the shard files of one nemesis campaign (`--shard K/N`) into one signed nemesis file.
    #[command(long_about = MERGE_ABOUT, after_help = MERGE_AFTER_HELP)]
    Merge(MergeArgs),
}

const MERGE_ABOUT: &str = "\
Merge the shard files of one nemesis campaign into one signed nemesis file.

A campaign run as N shards (`runner --nemesis ... --seed S --shard K/N`, K = 1..N, on as many
machines) writes one file per slice; trial i of every nemesis and column belongs to shard
i mod N + 1, with the id the whole run gives it. Merge checks that each shard verifies on its own,
that the shards are every slice of one campaign once (same plan, seed and environment: backend,
versions, commit, claim settings, clock start, outage length), and that each holds exactly its
slice's trials; it writes every trial in plan order to DIR/nemesis/<scenario>.json.gz with each
shard's signed head (its signature, signer and summary, so verify checks every shard's signature
over its own trials), signs the file with the merge key, and verifies it. Nothing is written when
a shard does not fit: the error names the file and why. Shards are read compressed (.json.gz,
as the runner writes them) or plain; the merged file replaces a plain <scenario>.json left in
DIR/nemesis/.

The merge key: --signing-key FILE, else INTERLOCK_SIGNING_KEY, else a fresh key (self-attested).
To pin a merged file, pin the merge key and every shard's signer (`verify --signers FILE` with all
of them listed; `--key K` when one key signed everything).";

const MERGE_AFTER_HELP: &str = "\
Examples:
  for k in 1 2 3 4; do
    runner --scenario billing_credit --nemesis all --trials 40 --seed 7 --shard $k/4 --out shard$k
  done
  runner merge --out results shard*/nemesis/billing_credit.shard-*-of-4.json.gz
  verify results/nemesis/billing_credit.json.gz

Exit status: 0 merged and the merged file verifies; 1 written but it does not verify; 2 nothing
written: a shard could not be read, does not verify, or does not fit the others.";

/// Options of `runner merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The shard files, every slice of the campaign once, in any order.
    #[arg(value_name = "SHARD.json.gz", required = true, num_args = 1..)]
    pub shards: Vec<PathBuf>,

    /// Directory for the merged file: DIR/nemesis/billing_credit.json.gz, where a whole run's
    /// goes (a plain billing_credit.json there is removed: the merged file replaces it).
    #[arg(long, default_value = "out", value_name = "DIR")]
    pub out: PathBuf,

    /// Sign the merged file with the ed25519 key in FILE (as the run's --signing-key) instead of
    /// INTERLOCK_SIGNING_KEY or a fresh merge key.
    #[arg(long, value_name = "FILE")]
    pub signing_key: Option<PathBuf>,
}

/// A `--shard` value that is not K/N with 1 <= K <= N.
#[derive(Debug, thiserror::Error)]
#[error("{given:?} is not K/N: pass the slice and the number of slices, e.g. 2/4 (1 <= K <= N)")]
pub struct NotAShard {
    /// The value given.
    given: String,
}

/// Parses `--shard K/N`: slice K (from 1) of N.
fn parse_shard(s: &str) -> Result<verify::nemesis::Shard, NotAShard> {
    let bad = || NotAShard {
        given: s.to_owned(),
    };
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let index: u32 = k.trim().parse().map_err(|_| bad())?;
    let count: u32 = n.trim().parse().map_err(|_| bad())?;
    if index == 0 || index > count {
        return Err(bad());
    }
    Ok(verify::nemesis::Shard { index, count })
}

/// Options of `runner keygen`.
#[derive(Debug, Clone, Args)]
pub struct KeygenArgs {
    /// Where to write the private key (64 hex characters). Keep it out of the repository: store
    /// it as the CI secret INTERLOCK_SIGNING_KEY, or pass it with --signing-key.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The comment for the allowed-signers line: who holds the key and where it signs.
    #[arg(long, default_value = "project key, signs runs published from CI")]
    pub comment: String,
}

const RECONCILE_ABOUT: &str = "\
Re-read every Stripe object a results file names and compare it with the file.

For each cell: the customer's balance transactions (the case credits among them), credit notes,
invoices and balance, read the way the runner read them after the restart, compared object by
object with the recorded ground truth; and every credit the gate sent must still carry, in
metadata[interlock_dispatch], the hash of its receipt's DISPATCHED entry. The file must verify
first (self-attested). Only GET requests are made: a read-only restricted key is enough.";

const RECONCILE_AFTER_HELP: &str = "\
Examples:
  runner --scenario billing_credit --keep-emulator --no-site   # prints the two values below
  runner reconcile results/billing_credit.json --base-url http://127.0.0.1:PORT --emulator-run RUN
  STRIPE_SECRET_KEY=rk_test_... runner reconcile results/billing_credit.json --backend stripe

Exit status: 0 every object matches; 1 a difference (each printed with its cell and object) or
the file does not verify; 2 the file or Stripe could not be read, or bad arguments.";

/// Options of `runner reconcile`.
#[derive(Debug, Clone, Args)]
pub struct ReconcileArgs {
    /// The results file to check against Stripe.
    #[arg(value_name = "RESULTS.json")]
    pub results: PathBuf,

    /// Where the run's objects live [default: the file's own backend].
    #[arg(long, value_enum)]
    pub backend: Option<BackendKind>,

    /// API base URL: the emulator's URL printed by `runner --keep-emulator` (required for the
    /// emulator), or a Stripe API base [default: https://api.stripe.com].
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// The emulator run id printed by `runner --keep-emulator`: each cell's objects are read
    /// with the read-only key of that cell's emulator account.
    #[arg(long, value_name = "RUN")]
    pub emulator_run: Option<String>,
}

/// Options of a run.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Scenario to run: billing_credit (one credit racing a billing run; writes
    /// DIR/billing_credit.json), shared_cap (two bots refunding one order under one cap; writes
    /// DIR/shared_cap.json; its matrix is fixed, decided by the policy), pr_merge (an agent
    /// merging a reviewed pull request at a git forge on loopback; writes DIR/pr_merge.json),
    /// notify (an agent's email after a refund, sent through a private Postfix instance on
    /// loopback; needs Postfix and root; writes DIR/notify.json), or all (each that can run here
    /// in turn, then one site over them).
    #[arg(long, required_unless_present = "replay", value_parser = crate::scenario::choices())]
    pub scenario: Option<String>,

    /// Run randomized nemesis trials instead of the matrix: `all` or a comma-separated list of
    /// kill_random, kill_in_flight, late_after_timeout, late_beyond_bound, commit_then_500,
    /// commit_then_drop, kill_recovery, two_workers, revoke_in_outage, revoke_mid_check,
    /// note_mid_check, rate_limit_burst, kill_at_step, exposure, stop_holder, torn_tail,
    /// disk_full (needs root: it mounts a tmpfs), dedup_expired (needs libfaketime),
    /// decides_again, write_enospc, fsync_eio (both preload the write-fault library: build it
    /// beside the runner with `cargo build -p write-fault`). Writes
    /// DIR/nemesis/billing_credit.json.gz. With --scenario shared_cap:
    /// `all` or some of kill_at_step (worker a or b killed at a drawn step), kill_both, and
    /// kill_restart (a killed, then its restart killed); writes DIR/nemesis/shared_cap.json.gz
    /// (shared_cap_two_hosts.json.gz with --two-hosts). With --scenario pr_merge: `all` or some
    /// of kill_at_step, kill_restart, kill_while_held, drop_answer, fail_after_commit,
    /// push_mid_check, revoke_mid_check, held_beyond_bound, release_mid_restart; writes
    /// DIR/pr_merge_nemesis.json.
    /// With --scenario notify (Postfix, root): `all` or some of kill_at_step, kill_restart (both
    /// kill inside the SMTP DATA too) and change_mid_check; writes DIR/notify_nemesis.json.
    /// Campaign files are gzip-compressed; a
    /// plain .json of the same name left in DIR/nemesis/ is removed (the new file replaces it).
    #[arg(long, value_name = "LIST", conflicts_with_all = ["cells", "repeat"])]
    pub nemesis: Option<String>,

    /// Trials per nemesis and column (with --nemesis; at least 1).
    #[arg(long, default_value_t = 20, value_name = "N", requires = "nemesis",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub trials: u32,

    /// With --nemesis: run only slice K of N of the campaign (trial i of every nemesis and column
    /// is in slice i mod N + 1), with the same seed and trial ids as the whole run, and write
    /// DIR/nemesis/billing_credit.shard-K-of-N.json.gz; `runner merge` combines the N files. N may
    /// be at most --trials.
    #[arg(long, value_name = "K/N", requires = "nemesis", value_parser = parse_shard)]
    pub shard: Option<verify::nemesis::Shard>,

    /// With --nemesis (billing_credit): continue the campaign whose finished trials are in
    /// DIR/nemesis/billing_credit.partial.jsonl (kept as they finish; an interruption prints
    /// the exact command), with the same options and the run's --signing-key: only the trials
    /// not yet finished run, and the file written is the one the campaign would have written
    /// whole. Without --seed the campaign's own seed is used. A campaign signed by a per-run key
    /// cannot be resumed: its key ended with its runner.
    #[arg(long, requires = "nemesis")]
    pub resume: bool,

    /// Run one nemesis trial again from its id (as printed and in the results file).
    #[arg(long, value_name = "ID", conflicts_with_all = ["nemesis", "cells"])]
    pub replay: Option<String>,

    /// With --replay: kill the decide worker at this step instead of at the drawn instant. A
    /// trial whose kill was timed records the step it landed after (`replay_at`, shown with its
    /// replay command); killing there reaches the same state. Steps: started, decision_saved,
    /// lookup, approval, premises, send_logged, proposed, authorized, dispatched, before_send,
    /// request_held, after_send, sent_logged, committed, finished (no kill).
    #[arg(long, value_name = "STEP", requires = "replay")]
    pub at: Option<String>,

    /// Cells to run instead of the default matrix: crash:outage:column, one or more.
    /// crash: before_send | after_send; outage: renewal | billing_credit | proration |
    /// unrelated_credit; column: no_check | hand_check | interlock. `*` in any position means
    /// all of that position (quote it in a shell), e.g. 'after_send:proration:*'.
    #[arg(long, num_args = 1.., value_name = "CRASH:OUTAGE:COLUMN")]
    pub cells: Vec<String>,

    /// shared_cap only: kill worker a at every step its column passes (decision saved, each
    /// check, each gate step, before and after the POST), not only before_send and after_send.
    #[arg(long)]
    pub every_step: bool,

    /// shared_cap only: run worker a and worker b on two hosts, network namespaces this run
    /// makes (needs root and `ip`), each joined to this machine by its own link and with its
    /// own directory for its files (hand_lock's lock file among them). They share only what
    /// they reach over the network: the emulator and the --journal database (required).
    #[arg(long)]
    pub two_hosts: bool,

    /// Run every cell this many times (repeat index 0..N in the results).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub repeat: u32,

    /// Cells (or nemesis trials) run in parallel [default: the number of CPU cores for the
    /// matrix; 32 for --nemesis, whose trials mostly wait on held requests and bounds].
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,

    /// Where Stripe calls go: the embedded emulator (loopback, no key) or Stripe test mode
    /// (STRIPE_SECRET_KEY, sk_test_/rk_test_ only).
    #[arg(long, value_enum, default_value = "emulator")]
    pub backend: BackendKind,

    /// Who decides the credit: a deterministic policy, or a model through the Anthropic
    /// Messages API (ANTHROPIC_API_KEY).
    #[arg(long, value_enum, default_value = "policy")]
    pub decider: DeciderKind,

    /// How often the decider is asked: `per-row` (once per row, the decision replayed to every
    /// column of the row with that cell's ids, recorded as `replayed_from`: a difference between
    /// columns cannot come from the model) or `per-cell` (once per cell, as the reference did).
    /// Default: per-row for --decider anthropic, per-cell for the policy.
    #[arg(long, value_enum, value_name = "MODE", conflicts_with = "nemesis")]
    pub decide: Option<crate::decider::DecideMode>,

    /// Model for --decider anthropic.
    #[arg(long, default_value = anthropic::DEFAULT_MODEL, value_name = "MODEL")]
    pub model: String,

    /// Messages API base URL for --decider anthropic (override for a local mock).
    #[arg(long, default_value = anthropic::DEFAULT_BASE_URL, value_name = "URL")]
    pub anthropic_base_url: String,

    /// Directory for the results file (DIR/billing_credit.json; a nemesis run writes
    /// DIR/nemesis/billing_credit.json.gz). The default is git-ignored; `--out results` replaces the
    /// published results on purpose.
    #[arg(long, default_value = "out", value_name = "DIR")]
    pub out: PathBuf,

    /// Keep the interlock column's journal in PostgreSQL (`postgres://user@host:port/db`)
    /// instead of one JSONL file per cell: the run gets its own schema (`interlock_run_<id>`),
    /// shared by every cell's workers. The database needs PostgreSQL 15 or later. The re-run
    /// command in the results names it (without a password). With --nemesis, every trial's
    /// journal goes there too (a replay uses a JSONL file).
    #[arg(long, value_name = "URL")]
    pub journal: Option<String>,

    /// Seed for the run's random choices (case and incident ids, unrelated incidents); random
    /// if not given, and always recorded. The signing key never derives from it.
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u64).range(..=MAX_SEED))]
    pub seed: Option<u64>,

    /// Where every case's test clock starts (RFC 3339, whole seconds). A fixed instant, never
    /// today's date, so a run and every replay have the same billing periods, month lengths and
    /// proration amounts on any day; the default is the instant of the reference's published run
    /// on Stripe test mode. Recorded in the results file; replaying a trial of a run made with
    /// another start needs the same value.
    #[arg(long, value_name = "RFC3339", default_value_t = ClockStart::DEFAULT)]
    pub clock_start: ClockStart,

    /// How long each outage's test-clock advance takes on the emulator, ms (its own advances
    /// take no time; Stripe's take seconds). Recorded in the results. With --nemesis, a trial
    /// whose credit POST is held at the service gets an advance that outlasts the hold anyway
    /// (the hold + 500 ms), except late_beyond_bound, whose point is a request landing after
    /// recovery. Emulator backend only.
    #[arg(long, value_name = "MS")]
    pub outage_ms: Option<u64>,

    /// With --nemesis exposure: the span (ms after the decide worker's `decision_saved`) its
    /// revocations are drawn over, instead of sizing it from calibration trials first (every
    /// shard of a campaign needs the same span, so a sharded campaign gives it). Recorded in
    /// the results; replaying an exposure trial of a run needs the span the run recorded.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=verify::nemesis::exposure_span::MAX_SPAN_MS))]
    pub exposure_span_ms: Option<u64>,

    /// Do not render the report site after the run.
    #[arg(long)]
    pub no_site: bool,

    /// Directory the report site is rendered into.
    #[arg(long, default_value = "public", value_name = "DIR")]
    pub site_out: PathBuf,

    /// After the run, keep the embedded emulator serving and print its URL and run id (for
    /// `runner reconcile`), until Ctrl-C. Emulator backend only.
    #[arg(long)]
    pub keep_emulator: bool,

    /// Sign the run with the ed25519 key in FILE (64 hex characters of the private key; the file
    /// must not be readable by group or others) instead of a fresh per-run key. Without it, the
    /// environment variable INTERLOCK_SIGNING_KEY, if set, holds the key itself (as a CI secret
    /// does). A run with neither is signed by a per-run key, and every report page says so.
    #[arg(long, value_name = "FILE")]
    pub signing_key: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults_and_multiple_cells() {
        let cli = Cli::try_parse_from(["runner", "--scenario", "billing_credit"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.run.backend, BackendKind::Emulator);
        assert_eq!(cli.run.decider, DeciderKind::Policy);
        assert_eq!(cli.run.out, PathBuf::from("out"));
        assert!(cli.run.cells.is_empty());

        let cli = Cli::try_parse_from([
            "runner",
            "--scenario",
            "billing_credit",
            "--cells",
            "before_send:renewal:*",
            "after_send:proration:interlock",
            "--no-site",
        ])
        .unwrap();
        assert_eq!(cli.run.cells.len(), 2);
        assert!(cli.run.no_site);
    }

    #[test]
    fn nemesis_and_replay_options() {
        let cli = Cli::try_parse_from([
            "runner",
            "--scenario",
            "billing_credit",
            "--nemesis",
            "all",
            "--trials",
            "5",
        ])
        .unwrap();
        assert_eq!(cli.run.nemesis.as_deref(), Some("all"));
        assert_eq!(cli.run.trials, 5);
        let cli =
            Cli::try_parse_from(["runner", "--replay", "kill_random:interlock:00000000000001"])
                .unwrap();
        assert!(cli.run.replay.is_some());
        assert!(
            Cli::try_parse_from(["runner", "--scenario", "billing_credit", "--trials", "5"])
                .is_err()
        );
    }

    #[test]
    fn a_shard_is_k_of_n_with_k_from_1_to_n_and_needs_nemesis() {
        let parse = |shard: &str| {
            Cli::try_parse_from([
                "runner",
                "--scenario",
                "billing_credit",
                "--nemesis",
                "all",
                "--shard",
                shard,
            ])
        };
        let cli = parse("2/4").unwrap();
        assert_eq!(
            cli.run.shard,
            Some(verify::nemesis::Shard { index: 2, count: 4 })
        );
        for bad in ["0/4", "5/4", "4", "a/b", "1/0", "-1/4"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(
            Cli::try_parse_from(["runner", "--scenario", "billing_credit", "--shard", "1/2"])
                .is_err()
        );
        let cli =
            Cli::try_parse_from(["runner", "merge", "--out", "o", "a.json", "b.json"]).unwrap();
        let Some(Internal::Merge(m)) = cli.command else {
            panic!("not the merge subcommand");
        };
        assert_eq!(m.shards.len(), 2);
        assert!(Cli::try_parse_from(["runner", "merge"]).is_err());
    }

    #[test]
    fn a_bad_shard_says_what_k_n_means() {
        let e = parse_shard("5/4").unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"5/4\" is not K/N: pass the slice and the number of slices, e.g. 2/4 (1 <= K <= N)"
        );
    }

    #[test]
    fn scenario_is_required_and_checked() {
        assert!(Cli::try_parse_from(["runner"]).is_err());
        assert!(Cli::try_parse_from(["runner", "--scenario", "nope"]).is_err());
    }

    #[test]
    fn worker_subcommand_needs_no_scenario() {
        let cli = Cli::try_parse_from([
            "runner",
            "worker",
            "decide",
            "--column",
            "interlock",
            "--crash",
            "before_send",
            "--cell-dir",
            "/tmp/x",
            "--key-file",
            "/tmp/k",
            "--base-url",
            "http://127.0.0.1:1",
            "--request-timeout-ms",
            "5000",
            "--max-in-flight-ms",
            "5500",
            "--claim-ttl-ms",
            "11000",
        ])
        .unwrap();
        assert!(matches!(cli.command, Some(Internal::Worker(_))));
    }
}

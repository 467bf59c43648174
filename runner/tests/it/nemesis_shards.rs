//! A nemesis campaign run in shards through real processes: four `--shard K/N` runs merged by
//! `runner merge` hold exactly the plan and trial ids of the same campaign run whole, and
//! verify; merge refuses a missing, a repeated and a foreign shard, naming the file, and writes
//! nothing then.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use verify::nemesis::NemesisFile;

const NEMESES: &str = "kill_at_step,commit_then_500";
const TRIALS: &str = "4";

fn runner(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

fn ok(output: &Output) {
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs the campaign (`shard` `Some("K/N")` for one slice) with `seed` into `out`.
fn campaign(seed: &str, shard: Option<&str>, out: &Path) -> PathBuf {
    let mut args = vec!["--scenario", "billing_credit", "--nemesis", NEMESES];
    args.extend(["--trials", TRIALS, "--seed", seed, "--jobs", "6"]);
    if let Some(s) = shard {
        args.extend(["--shard", s]);
    }
    ok(&runner(&args, out));
    let name = match shard {
        Some(s) => format!("billing_credit.shard-{}.json.gz", s.replace('/', "-of-")),
        None => "billing_credit.json.gz".to_owned(),
    };
    out.join("nemesis").join(name)
}

fn load(path: &Path) -> NemesisFile {
    verify::load::load_nemesis(&verify::input::read_file(path).unwrap()).unwrap()
}

fn merge(files: &[&PathBuf], out: &Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runner"));
    cmd.arg("merge").arg("--out").arg(out).args(files);
    cmd.output().unwrap()
}

#[test]
fn four_shards_merged_hold_the_whole_runs_plan_and_trial_ids_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let whole = load(&campaign("31", None, &dir.path().join("whole")));
    let shards: Vec<PathBuf> = (1..=4)
        .map(|k| {
            campaign(
                "31",
                Some(&format!("{k}/4")),
                &dir.path().join(format!("s{k}")),
            )
        })
        .collect();
    for (k, path) in shards.iter().enumerate() {
        let s = load(path);
        assert_eq!(
            s.plan.shard.map(|s| (s.index, s.count)),
            Some((k as u32 + 1, 4))
        );
        assert_eq!(s.trials.len(), 6, "one trial of each nemesis and column");
    }
    let out = dir.path().join("merged");
    // In any order.
    let output = merge(&[&shards[2], &shards[0], &shards[3], &shards[1]], &out);
    ok(&output);
    let merged = load(&out.join("nemesis/billing_credit.json.gz"));
    let mut plan = merged.plan.clone();
    let parts = plan.merged.take().unwrap();
    assert_eq!(plan, whole.plan);
    assert_eq!(parts.shards, 4);
    let ids = |f: &NemesisFile| f.trials.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&merged), ids(&whole));
    assert_eq!(merged.trials.len(), 24);
    assert_eq!(merged.environment.command, whole.environment.command);
    // Every shard ran with its own per-run key, the merge with another.
    let mut signers: Vec<&str> = parts
        .parts
        .iter()
        .map(|p| p.signature.signer.as_str())
        .collect();
    signers.push(&merged.signature.signer);
    signers.sort_unstable();
    signers.dedup();
    assert_eq!(signers.len(), 5);
    // What `verify FILE` prints and decides.
    let (status, lines, _) = verify::cli::check_file(
        &out.join("nemesis/billing_credit.json.gz"),
        &verify::cli::Pinned::None,
    );
    assert_eq!(status, verify::cli::Status::Ok, "{lines:#?}");
    assert!(
        lines[0].contains("nemesis merged from 4 shards"),
        "{lines:#?}"
    );

    // The report renders the merged file and says it was merged; a lone shard is not rendered.
    let page = site_page(&out.join("nemesis/billing_credit.json.gz")).unwrap();
    assert!(page.contains("The campaign ran as 4 shards"), "{page}");
    // Per-run shard keys, none in an allowed-signers file: the page does not let the merge key
    // vouch for their trials.
    assert!(page.contains("does not vouch for their trials"), "{page}");
    let err = site_page(&shards[1]).unwrap_err();
    assert!(err.contains("shard 2 of 4 of a campaign"), "{err}");

    // Refused, naming the file, and nothing written: a slice missing, one twice, one of
    // another campaign (another seed).
    let refused = dir.path().join("refused");
    let output = merge(&[&shards[0], &shards[1], &shards[3]], &refused);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("shard 3 of 4 is missing"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let output = merge(&[&shards[0], &shards[1], &shards[1], &shards[3]], &refused);
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(err.contains("is shard 2 of 4, as"), "{err}");
    let foreign = campaign("32", Some("3/4"), &dir.path().join("foreign"));
    let output = merge(&[&shards[0], &shards[1], &foreign, &shards[3]], &refused);
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(
        err.contains(&foreign.display().to_string()) && err.contains("another plan"),
        "{err}"
    );
    // A shard naming a nemesis this runner does not know (a control sequence, here) is refused
    // before anything of it is printed or names a file.
    let mut odd: serde_json::Value =
        serde_json::from_slice(&verify::input::read_file(&shards[2]).unwrap()).unwrap();
    odd["plan"]["nemeses"][0] = serde_json::json!("kill_at_step\u{1b}]0;title\u{7}");
    let odd_path = dir.path().join("odd.json");
    std::fs::write(&odd_path, serde_json::to_vec(&odd).unwrap()).unwrap();
    let output = merge(&[&shards[0], &shards[1], &odd_path, &shards[3]], &refused);
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(
        err.contains("names a nemesis this runner does not know") && !err.contains('\u{1b}'),
        "{err}"
    );
    assert!(!refused.join("nemesis/billing_credit.json.gz").exists());
}

/// The Nemesis page the site builds with `nemesis` as the published nemesis file (beside the
/// committed matrix results), or the build's error.
fn site_page(nemesis: &Path) -> Result<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    std::fs::create_dir_all(results.join("nemesis")).unwrap();
    std::fs::create_dir_all(results.join("reference")).unwrap();
    let reference = "reference/billing_credit.original.json";
    std::fs::copy(committed.join(reference), results.join(reference)).unwrap();
    // The matrix the campaign's report joins, made by this code as the campaign was (the site
    // refuses a campaign of other code than its matrix).
    let args = ["--scenario", "billing_credit", "--no-site", "--jobs", "2"];
    ok(&runner(&args, &results));
    // Under the name the runner writes (the site reads gzip by its first bytes).
    std::fs::copy(nemesis, results.join("nemesis/billing_credit.json.gz")).unwrap();
    let out = dir.path().join("public");
    site::build(&results, &out).map_err(|e| e.to_string())?;
    Ok(std::fs::read_to_string(out.join("billing_credit/nemesis.html")).unwrap())
}

#[test]
fn a_shard_beyond_the_trials_is_refused_before_any_trial_runs() {
    let dir = tempfile::tempdir().unwrap();
    let output = runner(
        &[
            "--scenario",
            "billing_credit",
            "--nemesis",
            "commit_then_500",
            "--trials",
            "2",
            "--shard",
            "3/3",
        ],
        dir.path(),
    );
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("--shard 3/3") && err.contains("N <= --trials"),
        "{err}"
    );
}

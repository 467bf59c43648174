//! The GitHub workflows that build and publish the report parse as YAML, every action they use is
//! pinned to a full commit SHA (a tag can be moved to other code; a commit cannot), and the two
//! that publish results attest the results files and the built site archive.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use yaml_rust2::{Yaml, YamlLoader};

fn workflows_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.github/workflows")
}

/// Every workflow file: (name, parsed document).
fn workflows() -> Vec<(String, Yaml)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(workflows_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !(name.ends_with(".yml") || name.ends_with(".yaml")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        out.push((name.clone(), parse(&name, &text)));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn parse(name: &str, text: &str) -> Yaml {
    let mut docs =
        YamlLoader::load_from_str(text).unwrap_or_else(|e| panic!("{name} is not valid YAML: {e}"));
    assert_eq!(docs.len(), 1, "{name} holds one YAML document");
    docs.remove(0)
}

/// Every `uses:` value anywhere in the document (steps and reusable-workflow jobs), with the
/// path of keys that leads to it.
fn uses(doc: &Yaml, at: &str, out: &mut Vec<(String, String)>) {
    match doc {
        Yaml::Hash(h) => {
            for (k, v) in h {
                let key = k.as_str().unwrap_or("?");
                let here = format!("{at}.{key}");
                match (key, v) {
                    ("uses", Yaml::String(s)) => out.push((here, s.clone())),
                    _ => uses(v, &here, out),
                }
            }
        }
        Yaml::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                uses(v, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// `None` when `reference` is a repository action pinned to a 40-hex commit (or a local
/// action in this repository), else why not.
fn unpinned(reference: &str) -> Option<String> {
    if reference.starts_with("./") {
        return None;
    }
    let Some((action, rev)) = reference.rsplit_once('@') else {
        return Some("names no version at all".into());
    };
    if action.split('/').count() < 2 || reference.starts_with("docker://") {
        return Some("is not an owner/repo action".into());
    }
    let sha = rev.len() == 40
        && rev
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    (!sha).then(|| format!("is pinned to {rev:?}, not to a full 40-hex commit SHA"))
}

fn unpinned_uses(doc: &Yaml) -> Vec<String> {
    let mut found = Vec::new();
    uses(doc, "", &mut found);
    found
        .into_iter()
        .filter_map(|(at, r)| unpinned(&r).map(|why| format!("{at}: {r} {why}")))
        .collect()
}

#[test]
fn every_workflow_parses_and_every_action_is_pinned_to_a_commit() {
    let all = workflows();
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains(&"pages.yml") && names.contains(&"live-run.yml"),
        "{names:?}"
    );
    for (name, doc) in &all {
        let mut found = Vec::new();
        uses(doc, "", &mut found);
        assert!(
            !found.is_empty(),
            "{name} uses no action: did the walk miss them?"
        );
        let bad = unpinned_uses(doc);
        assert!(bad.is_empty(), "{name}: {bad:#?}");
    }
}

#[test]
fn the_checker_catches_a_tag_a_branch_and_a_short_sha() {
    for bad in [
        "actions/checkout@v4.2.2",
        "actions/checkout@main",
        "actions/checkout@11bd719",
        "actions/checkout",
    ] {
        let doc = parse(
            "test.yml",
            &format!("jobs:\n  a:\n    steps:\n      - uses: {bad}\n"),
        );
        let found = unpinned_uses(&doc);
        assert_eq!(found.len(), 1, "{bad}: {found:?}");
        assert!(found[0].starts_with(".jobs.a.steps[0].uses"), "{found:?}");
    }
    let reusable = parse(
        "test.yml",
        "jobs:\n  a:\n    uses: org/repo/.github/workflows/x.yml@v1\n",
    );
    assert_eq!(unpinned_uses(&reusable).len(), 1);
    assert!(YamlLoader::load_from_str("jobs: [unclosed").is_err());
}

/// The steps of every job that use `action` (`owner/repo`), as (job, step) documents.
fn steps_using<'a>(doc: &'a Yaml, action: &str) -> Vec<&'a Yaml> {
    let mut out = Vec::new();
    if let Some(jobs) = doc["jobs"].as_hash() {
        for job in jobs.values() {
            for step in job["steps"].as_vec().into_iter().flatten() {
                if step["uses"]
                    .as_str()
                    .is_some_and(|u| u.starts_with(&format!("{action}@")))
                {
                    out.push(step);
                }
            }
        }
    }
    out
}

#[test]
fn the_publishing_workflows_attest_the_results_and_the_site_archive() {
    for (name, results) in [
        ("pages.yml", "results/*.json"),
        ("live-run.yml", "live-results/*.json"),
    ] {
        let (_, doc) = workflows().into_iter().find(|(n, _)| n == name).unwrap();
        let attest = steps_using(&doc, "actions/attest-build-provenance");
        assert_eq!(attest.len(), 1, "{name} attests once");
        let subjects = attest[0]["with"]["subject-path"]
            .as_str()
            .unwrap_or_default();
        assert!(
            subjects.lines().any(|l| l.trim() == results),
            "{name}: {subjects}"
        );
        assert!(
            subjects.lines().any(|l| l.trim() == "site.tar.gz"),
            "{name}: {subjects}"
        );
        // Write permissions only on the job that attests, none for the whole workflow.
        assert!(
            doc["permissions"].as_hash().is_some_and(|h| h.is_empty()),
            "{name}: workflow-level permissions must be empty"
        );
        let attesting = doc["jobs"]
            .as_hash()
            .unwrap()
            .values()
            .find(|job| {
                job["steps"].as_vec().into_iter().flatten().any(|s| {
                    s["uses"]
                        .as_str()
                        .is_some_and(|u| u.starts_with("actions/attest-build-provenance@"))
                })
            })
            .unwrap();
        let perms = &attesting["permissions"];
        assert_eq!(perms["id-token"].as_str(), Some("write"), "{name}");
        assert_eq!(perms["attestations"].as_str(), Some("write"), "{name}");
    }
    let (_, live) = workflows()
        .into_iter()
        .find(|(n, _)| n == "live-run.yml")
        .unwrap();
    let text = format!("{live:?}");
    assert!(
        text.contains("secrets.INTERLOCK_SIGNING_KEY"),
        "live-run signs with the repository secret"
    );
    assert!(
        text.contains("--signers results/SIGNERS"),
        "live-run verifies against the allowed signers"
    );
}

/// Steps that compile (`cargo build`, `cargo run`, ...) and the secrets in their environment:
/// every build script could read those.
fn secrets_where_code_compiles(doc: &Yaml) -> Vec<String> {
    let mut found = Vec::new();
    let Some(jobs) = doc["jobs"].as_hash() else {
        return found;
    };
    for (job, body) in jobs {
        let job_env = format!("{:?}", body["env"]);
        for step in body["steps"].as_vec().into_iter().flatten() {
            let run = step["run"].as_str().unwrap_or_default();
            let env = format!("{:?}{job_env}", step["env"]);
            if run.contains("cargo ") && env.contains("secrets.") {
                found.push(format!(
                    "{}: {}",
                    job.as_str().unwrap_or_default(),
                    step["name"].as_str().unwrap_or(run)
                ));
            }
        }
    }
    found
}

#[test]
fn no_step_that_compiles_has_a_secret_in_its_environment() {
    for (name, doc) in workflows() {
        assert_eq!(
            secrets_where_code_compiles(&doc),
            Vec::<String>::new(),
            "{name}: a step compiles with secrets in its environment (build them in a step without)"
        );
    }
    let leaky = parse(
        "leaky",
        "jobs:\n  j:\n    steps:\n      - name: run\n        env:\n          K: ${{ secrets.K }}\n        run: cargo run -p runner\n",
    );
    assert_eq!(
        secrets_where_code_compiles(&leaky),
        vec!["j: run".to_owned()]
    );
}

#[test]
fn the_campaign_workflow_runs_shards_as_a_matrix_then_merges_verifies_and_attests_the_merged_file()
{
    let (_, doc) = workflows()
        .into_iter()
        .find(|(n, _)| n == "nemesis-campaign.yml")
        .unwrap();
    assert!(doc["permissions"].as_hash().is_some_and(|h| h.is_empty()));
    let shard = &doc["jobs"]["shard"];
    let slices: Vec<i64> = shard["strategy"]["matrix"]["shard"]
        .as_vec()
        .unwrap()
        .iter()
        .filter_map(Yaml::as_i64)
        .collect();
    assert_eq!(slices, vec![1, 2, 3, 4]);
    let shard_text = format!("{shard:?}");
    assert!(
        shard_text.contains("--shard \\\"$SHARD/4\\\""),
        "{shard_text}"
    );
    assert!(shard["permissions"]["id-token"].is_badvalue());
    let merge = &doc["jobs"]["merge"];
    assert_eq!(merge["needs"].as_str(), Some("shard"));
    let merge_text = format!("{merge:?}");
    assert!(
        merge_text.contains("runner merge --out campaign"),
        "{merge_text}"
    );
    assert!(
        merge_text.contains("--signers results/SIGNERS"),
        "{merge_text}"
    );
    assert_eq!(merge["permissions"]["id-token"].as_str(), Some("write"));
    assert_eq!(merge["permissions"]["attestations"].as_str(), Some("write"));
    // Each shard uploads its file; the merge job downloads them and attests what it merged.
    let uploads = steps_using(&doc, "actions/upload-artifact");
    assert!(uploads.iter().any(|s| s["with"]["name"]
        .as_str()
        .is_some_and(|n| n.contains("${{ matrix.shard }}"))));
    assert_eq!(steps_using(&doc, "actions/download-artifact").len(), 1);
    let attest = steps_using(&doc, "actions/attest-build-provenance");
    assert_eq!(attest.len(), 1);
    assert_eq!(
        attest[0]["with"]["subject-path"].as_str(),
        Some("campaign/nemesis/billing_credit.json.gz")
    );
}

/// Whether any string anywhere under `doc` names a secret (`secrets.`).
fn names_a_secret(doc: &Yaml) -> bool {
    match doc {
        Yaml::String(s) => s.contains("secrets."),
        Yaml::Hash(h) => h
            .iter()
            .any(|(k, v)| names_a_secret(k) || names_a_secret(v)),
        Yaml::Array(a) => a.iter().any(names_a_secret),
        _ => false,
    }
}

/// Every job that reads a secret, and why it is not guarded: it must run in the `signing`
/// environment (whose deployment rule admits only `main`) and only on `refs/heads/main` (an `if:`
/// that holds whatever the repository's settings).
fn unguarded_secret_jobs(name: &str, doc: &Yaml) -> Vec<String> {
    let mut out = Vec::new();
    let Some(jobs) = doc["jobs"].as_hash() else {
        return out;
    };
    for (id, job) in jobs {
        if !names_a_secret(job) {
            continue;
        }
        let id = id.as_str().unwrap_or("?");
        let env = job["environment"]
            .as_str()
            .or_else(|| job["environment"]["name"].as_str());
        if env != Some("signing") {
            out.push(format!(
                "{name}: job {id} reads a secret outside the signing environment"
            ));
        }
        let on_main = job["if"]
            .as_str()
            .is_some_and(|c| c.replace(' ', "").contains("github.ref=='refs/heads/main'"));
        if !on_main {
            out.push(format!(
                "{name}: job {id} reads a secret without `if: github.ref == 'refs/heads/main'`"
            ));
        }
    }
    out
}

#[test]
fn every_job_that_reads_a_secret_runs_only_on_main_in_the_signing_environment() {
    let mut problems = Vec::new();
    for (name, doc) in workflows() {
        problems.extend(unguarded_secret_jobs(&name, &doc));
    }
    assert!(problems.is_empty(), "{problems:#?}");
    // The checker catches a job that reads one without either guard.
    let bad = parse(
        "bad.yml",
        "jobs:\n  run:\n    runs-on: x\n    steps:\n      - run: echo\n        env:\n          K: ${{ secrets.K }}\n",
    );
    assert_eq!(unguarded_secret_jobs("bad.yml", &bad).len(), 2);
}

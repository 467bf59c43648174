//! The Nemesis page from the committed run: one row per nemesis × column, every trial that is not
//! a plain pass (violation, wrong answer, unresolved, AMBIGUOUS) linked to a trial page with its
//! timeline and replay command; a nemesis file that does not verify stops the build.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;

fn copy_results(to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    std::fs::create_dir_all(to.join("nemesis")).unwrap();
    std::fs::create_dir_all(to.join("reference")).unwrap();
    for name in [
        "billing_credit.json",
        "nemesis/billing_credit.json.gz",
        "reference/billing_credit.original.json",
    ] {
        std::fs::copy(from.join(name), to.join(name)).unwrap();
    }
}

#[test]
fn every_trial_that_is_not_a_plain_pass_links_to_a_page_with_its_timeline_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    copy_results(&results);
    let out = dir.path().join("public");
    site::build(&results, &out).unwrap();
    let page = std::fs::read_to_string(out.join("billing_credit/nemesis.html")).unwrap();
    let report = std::fs::read_to_string(out.join("billing_credit/index.html")).unwrap();
    assert!(report.contains("href=\"nemesis.html\""));
    // The prose's claims were checked against this file.
    assert!(page.contains("violations_within.interlock = 0"), "{page}");
    let file = verify::load::load_nemesis(
        &verify::input::read_file(&results.join("nemesis/billing_credit.json.gz")).unwrap(),
    )
    .unwrap();
    for s in &file.summary {
        assert!(page.contains(&format!("id=\"{}-{}\"", s.nemesis, s.column)));
    }
    assert!(page.contains("Where the kills landed"));
    assert!(page.contains(r#"<table class="heat""#));
    // The committed run's page, and its first listed trial's: a template change shows as a diff.
    support::snapshot("billing_credit_nemesis", &page);
    // One nemesis's own page (its template has a snapshot too).
    let one = std::fs::read_to_string(out.join("billing_credit/nemesis/kill_random.html")).unwrap();
    support::snapshot("billing_credit_nemesis_kill_random", &one);
    let mut listed = 0;
    let mut snapshotted = false;
    for t in &file.trials {
        let name = site::nemesis_page::trial_file(&t.id);
        let Some(kind) = site::nemesis_page::listed_kind(t) else {
            assert!(!t.violation || t.outcome == "NOT_DECIDED", "{}", t.id);
            assert!(!t.judged() || t.fault_fired(), "{}", t.id);
            continue;
        };
        listed += 1;
        // Listed on its nemesis's page, which the Nemesis page links.
        assert!(
            page.contains(&format!("nemesis/{}.html", t.nemesis)),
            "{}",
            t.id
        );
        let one = std::fs::read_to_string(
            out.join("billing_credit/nemesis")
                .join(format!("{}.html", t.nemesis)),
        )
        .unwrap();
        assert!(one.contains(&format!("../trials/{name}")), "{}", t.id);
        let trial = std::fs::read_to_string(out.join("billing_credit/trials").join(&name)).unwrap();
        assert!(trial.contains(&format!("--replay {}", t.id)));
        assert!(trial.contains(kind), "{}", t.id);
        assert!(trial.contains("<h2>Timeline</h2>"), "{}", t.id);
        assert!(trial.contains(r#"class="chart timeline""#), "{}", t.id);
        if !snapshotted {
            support::snapshot("billing_credit_trial_first_listed", &trial);
            snapshotted = true;
        }
        if let Some(at) = &t.replay_at {
            assert!(trial.contains(&format!("--at {at}")), "{}", t.id);
        }
    }
    assert!(listed > 0);
}

#[test]
fn a_nemesis_file_that_does_not_verify_is_not_rendered() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    copy_results(&results);
    let path = results.join("nemesis/billing_credit.json.gz");
    let mut value: serde_json::Value =
        serde_json::from_slice(&verify::input::read_file(&path).unwrap()).unwrap();
    let trial = value["trials"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["violation"] == serde_json::Value::Bool(true))
        .unwrap();
    trial["violation"] = serde_json::Value::Bool(false);
    let packed = verify::input::compress(&serde_json::to_vec(&value).unwrap()).unwrap();
    std::fs::write(&path, packed).unwrap();
    let err = site::build(&results, &dir.path().join("public")).unwrap_err();
    assert!(err.to_string().contains("failed verification"), "{err}");
}

#[test]
fn a_campaign_of_other_code_or_beside_a_stable_key_of_another_signer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    copy_results(&results);
    let campaign = verify::load::load_nemesis(
        &verify::input::read_file(&results.join("nemesis/billing_credit.json.gz")).unwrap(),
    )
    .unwrap();
    // The campaign's signer listed as the project's stable key; the matrix signed by another.
    let signers = results.join("SIGNERS");
    std::fs::write(
        &signers,
        format!("{} project\n", campaign.environment.signer),
    )
    .unwrap();
    let err = site::build(&results, &dir.path().join("public")).unwrap_err();
    assert!(
        err.to_string()
            .contains("one of them is the project's stable key listed in SIGNERS"),
        "{err}"
    );
    std::fs::remove_file(&signers).unwrap();
    // A matrix made (and signed) at another commit than the campaign.
    let spec = synthetic::Spec::default();
    let mut matrix = synthetic::generate(&spec);
    matrix.environment.git_commit = Some("0123456789abcdef0123456789abcdef01234567".into());
    verify::manifest::sign(&mut matrix, &synthetic::signing_key(&spec)).unwrap();
    std::fs::write(
        results.join("billing_credit.json"),
        serde_json::to_vec_pretty(&matrix).unwrap(),
    )
    .unwrap();
    let err = site::build(&results, &dir.path().join("public")).unwrap_err();
    let commit = campaign.environment.git_commit.unwrap();
    assert!(
        err.to_string().contains(&format!(
            "the campaign was made at commit {commit} and the matrix at commit 0123456789ab"
        )),
        "{err}"
    );
}

//! A scenario on the contract (pr_merge, `interlock-scenario/1`) in a site: rendered from the
//! value `verify` hands over after its pipeline passed, listed on the front page, and refused,
//! with `verify`'s finding named, when the pipeline does not pass under the build's key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::SigningKey;
use site::{build_with, BuildOptions, SiteError};
use std::path::Path;

fn key() -> SigningKey {
    SigningKey::from_bytes(&[31; 32])
}

/// A results directory holding one pr_merge file.
fn results(text: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pr_merge.json"), text).unwrap();
    dir
}

fn genuine() -> Vec<u8> {
    serde_json::to_vec(&synthetic::pr_merge::signed_file(&key())).unwrap()
}

fn build(dir: &Path, pinned: Option<[u8; 32]>) -> Result<tempfile::TempDir, SiteError> {
    let out = tempfile::tempdir().unwrap();
    let options = BuildOptions {
        pinned_key: pinned,
        ..BuildOptions::default()
    };
    build_with(dir, out.path(), &options).map(|_| out)
}

#[test]
fn a_verified_pr_merge_file_gets_its_report_data_and_front_page_entry() {
    let dir = results(&genuine());
    let out = build(dir.path(), Some(key().verifying_key().to_bytes())).unwrap();
    let page = std::fs::read_to_string(out.path().join("pr_merge/index.html")).unwrap();
    assert!(
        page.contains("32 cells, 32 judged, 8 receipts verified"),
        "{page}"
    );
    // Every column: 8 cells, all held, every answer right (verify's figures, not the site's).
    assert!(
        page.contains(
            "<th scope=\"row\">interlock</th><td>8/8</td><td>0</td><td>0</td><td>0</td><td>0</td>"
        ),
        "{page}"
    );
    assert!(
        page.contains("pinned: the key this site was built with"),
        "{page}"
    );
    assert!(out.path().join("data/pr_merge.json").is_file());
    // What the figures show, from verify's figures: every column held in every cell, so native
    // (the service's precondition alone) ties with the gate on the merges.
    assert!(page.contains("What the figures show"), "{page}");
    assert!(
        page.contains(
            "Columns that held it in every judged cell: hand_check, interlock, native, no_check."
        ),
        "{page}"
    );
    assert!(
        page.contains("native, which relies on the service&#39;s precondition alone, ties"),
        "{page}"
    );
    let index = std::fs::read_to_string(out.path().join("index.html")).unwrap();
    assert!(index.contains("href=\"pr_merge/index.html\""), "{index}");
    // The front page carries the verdict, the first of those notes.
    assert!(
        index.contains("<p class=\"verdict\">Invariant held (at most one merge"),
        "{index}"
    );
    // And what it ran against, and the data's commit, as every other block does (the
    // synthetic file states no service detail and no decider; its commit is not a full hash).
    assert!(
        index.contains("Service: not stated. Decider: not stated. "),
        "{index}"
    );
}

#[test]
fn a_pr_merge_file_signed_by_another_key_is_refused_under_the_pin_with_verifys_finding() {
    let dir = results(&genuine());
    let other = SigningKey::from_bytes(&[32; 32]).verifying_key().to_bytes();
    match build(dir.path(), Some(other)) {
        Err(SiteError::Unverified { problem, .. }) => {
            assert!(problem.contains("signature_not_pinned_key"), "{problem}")
        }
        other => panic!("not refused as unverified: {:?}", other.map(|_| ())),
    }
}

#[test]
fn a_pr_merge_file_changed_after_signing_is_refused_and_nothing_is_written() {
    let mut file = synthetic::pr_merge::signed_file(&key());
    file.cells[0].ticket.status = "REFUSED:lease".into();
    let dir = results(&serde_json::to_vec(&file).unwrap());
    let out = tempfile::tempdir().unwrap();
    let result = build_with(dir.path(), out.path(), &BuildOptions::default());
    assert!(matches!(result, Err(SiteError::Unverified { .. })));
    assert!(!out.path().join("pr_merge").exists());
}

#[test]
fn a_scenario_file_of_a_name_the_site_does_not_render_is_refused_as_unreadable() {
    let mut file = synthetic::pr_merge::signed_file(&key());
    file.scenario = "nope".into();
    let dir = results(&serde_json::to_vec(&file).unwrap());
    match build(dir.path(), None) {
        Err(SiteError::Unreadable { problem, .. }) => {
            assert!(problem.contains("not one this site renders"), "{problem}")
        }
        other => panic!("not refused as unreadable: {:?}", other.map(|_| ())),
    }
}

#[test]
fn the_front_page_entry_of_a_scenario_run_says_who_signed_it_and_how_that_was_checked() {
    let dir = results(&genuine());
    let out = build(dir.path(), None).unwrap();
    let index = std::fs::read_to_string(out.path().join("index.html")).unwrap();
    let fingerprint = verify::fingerprint(&key().verifying_key());
    assert!(
        index.contains(&format!("signer {fingerprint} (named by the file itself")),
        "{index}"
    );
}

#[test]
fn a_scenario_run_whose_folder_or_data_another_run_uses_is_refused() {
    // A pr_merge file named as the committed billing_credit run: its page would replace
    // billing_credit's report and its data billing_credit's.
    let dir = results(&genuine());
    std::fs::rename(
        dir.path().join("pr_merge.json"),
        dir.path().join("billing_credit.json"),
    )
    .unwrap();
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/billing_credit.json");
    std::fs::copy(committed, dir.path().join("run.json")).unwrap();
    match build(dir.path(), None) {
        Err(SiteError::Data { problem, .. }) => {
            assert!(problem.contains("another run's"), "{problem}")
        }
        other => panic!("not refused: {:?}", other.map(|_| ())),
    }
}

#[test]
fn a_scenario_run_whose_file_name_is_not_a_plain_name_is_refused() {
    for name in ["..json", "data.json", ".hidden.json"] {
        let dir = results(&genuine());
        std::fs::rename(dir.path().join("pr_merge.json"), dir.path().join(name)).unwrap();
        match build(dir.path(), None) {
            Err(SiteError::Data { problem, .. }) => {
                assert!(problem.contains("rename the file"), "{name}: {problem}")
            }
            other => panic!("{name} not refused: {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn the_published_pr_merge_campaign_page_gives_the_gates_time_from_its_receipts() {
    let dir = tempfile::tempdir().unwrap();
    let published = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/pr_merge_nemesis.json");
    std::fs::copy(&published, dir.path().join("pr_merge_nemesis.json")).unwrap();
    let out = build(dir.path(), None).unwrap();
    let page = std::fs::read_to_string(out.path().join("pr_merge_nemesis/index.html")).unwrap();
    let text = page.replace('\n', " ");
    let at = text
        .find("cost here is time.")
        .unwrap_or_else(|| panic!("no time note: {text}"));
    // A resend after the lookup waited out the 2000 ms bound, so its median is above it.
    let rest = &text[at..];
    let reapplied = rest
        .split("REAPPLIED_AFTER_QUERY ")
        .nth(1)
        .and_then(|r| r.split(" ms").next())
        .and_then(|ms| ms.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no REAPPLIED_AFTER_QUERY median: {rest}"));
    assert!(reapplied >= 2_000, "{reapplied}");
}

#[test]
fn the_committed_notify_run_gets_its_report_with_what_each_handoffs_mailbox_held() {
    let dir = tempfile::tempdir().unwrap();
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/notify.json");
    std::fs::copy(committed, dir.path().join("notify.json")).unwrap();
    let out = build(dir.path(), None).unwrap();
    let page = std::fs::read_to_string(out.path().join("notify/index.html")).unwrap();
    assert!(
        page.contains("24 cells, 24 judged, 6 receipts verified"),
        "{page}"
    );
    // verify's figures per column: emails sent / wanted, held, more, fewer, wrong, handoffs.
    assert!(
        page.contains(
            "<th scope=\"row\">interlock</th><td>3 / 4</td><td>5/6</td><td>0</td><td>1</td>\
             <td>0</td><td>6</td>"
        ),
        "{page}"
    );
    assert!(
        page.contains(
            "<th scope=\"row\">no_check</th><td>9 / 4</td><td>1/6</td><td>5</td><td>0</td>\
             <td>0</td><td>0</td>"
        ),
        "{page}"
    );
    // For every case handed to a person, what the mailbox held.
    assert!(
        page.contains("interlock handed 6 case(s) to a person. What the mailbox held for each:"),
        "{page}"
    );
    assert!(
        page.contains("after_send · none #0 (AMBIGUOUS): 1 email(s) in the mailbox, 1 wanted"),
        "{page}"
    );
    let index = std::fs::read_to_string(out.path().join("index.html")).unwrap();
    assert!(index.contains("href=\"notify/index.html\""), "{index}");
}

#[test]
fn the_committed_notify_campaign_page_says_what_a_guess_costs_and_what_the_gate_costs() {
    use verify::scenarios::notify_nemesis::NotifyNemesis;
    let dir = tempfile::tempdir().unwrap();
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/notify_nemesis.json");
    let bytes = std::fs::read(&committed).unwrap();
    std::fs::write(dir.path().join("notify_nemesis.json"), &bytes).unwrap();
    let v = verify::contract::read_and_check::<NotifyNemesis>(
        &bytes,
        &verify::receipt::KeyCheck::SelfAttested,
    )
    .unwrap_or_else(|_| panic!("the committed campaign verifies"));
    let out = build(dir.path(), None).unwrap();
    let page = std::fs::read_to_string(out.path().join("notify_nemesis/index.html")).unwrap();
    let text = page.split_whitespace().collect::<Vec<_>>().join(" ");
    // The figures on the page are verify's, summed per column.
    type Figure = dyn Fn(&verify::scenarios::notify_nemesis::NemesisColumn) -> u32;
    let sum_of = |kills_only: bool, column: &str, f: &Figure| {
        v.summary()
            .iter()
            .filter(|(k, _)| k.ends_with(&format!(":{column}")))
            .filter(|(k, _)| !kills_only || k.starts_with("kill_"))
            .map(|(_, s)| f(s))
            .sum::<u32>()
    };
    let sum = |column: &str, f: &Figure| sum_of(false, column, f);
    // The cost sentence is over the kill nemeses (a pause hands nothing off).
    let kills = |column: &str, f: &Figure| sum_of(true, column, f);
    let killed: u32 = ["no_check", "hand_check", "hand_resend", "interlock"]
        .iter()
        .map(|c| sum(c, &|s| s.killed_mid_data))
        .sum();
    assert!(killed > 0, "the committed campaign kills inside DATA");
    assert!(
        text.contains(&format!(
            "inside the SMTP DATA (half of the message at the server, its final dot never \
             sent), of first workers and of restarts: {killed}; of those, messages the server \
             kept: 0"
        )),
        "{text}"
    );
    let resend = format!(
        "hand_resend {} second or unwanted emails and {} answers the mailbox contradicts",
        kills("hand_resend", &|s| s.over_within),
        kills("hand_resend", &|s| s.wrong_within)
    );
    assert!(text.contains(&resend), "{resend}: {text}");
    let gate = format!(
        "interlock {} handoffs in {} trials, the mailbox holding the email in {} of them",
        kills("interlock", &|s| s.handoffs_within),
        kills("interlock", &|s| s.within),
        kills("interlock", &|s| s.handoffs_found_sent)
    );
    assert!(text.contains(&gate), "{gate}: {text}");
    // Neither the gate nor hand_check sent twice or answered wrong here: the page states the tie.
    assert_eq!(sum("interlock", &|s| s.over_within + s.wrong_within), 0);
    assert_eq!(sum("hand_check", &|s| s.over_within + s.wrong_within), 0);
    assert!(
        text.contains("the gate ties the careful hand-written check"),
        "{text}"
    );
}

#[test]
fn every_published_scenario_page_draws_its_outcomes_with_every_judged_cell_in_a_bar() {
    for (name, unit) in [
        ("pr_merge", "cells"),
        ("notify", "cells"),
        ("pr_merge_nemesis", "trials"),
        ("notify_nemesis", "trials"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let published =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../results/{name}.json"));
        std::fs::copy(&published, dir.path().join(format!("{name}.json"))).unwrap();
        let out = build(dir.path(), None).unwrap();
        let page = std::fs::read_to_string(out.path().join(format!("{name}/index.html"))).unwrap();
        assert!(page.contains("<svg"), "{name}: no figure");
        // The figure counts every judged cell once: its caption's count is the page's judged.
        let judged = page
            .split(" judged, ")
            .next()
            .and_then(|s| s.rsplit(", ").next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or_else(|| panic!("{name}: no judged count"));
        let caption = format!("Outcomes per fault and column, {judged} {unit}");
        assert!(page.contains(&caption), "{name}: no {caption:?}");
    }
}

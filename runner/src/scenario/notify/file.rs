//! A notify results file (the matrix's or the campaign's): the environment, the summary, the signature; written, then checked
//! with `verify` pinned to the run's key.

use super::error::NotifyRunError;
use crate::keys::RunKey;
use crate::run::{git_commit, RunOutcome, SetupError};
use std::collections::BTreeMap;
use std::time::Instant;
use verify::contract::{self, FileSignature, Scenario, ScenarioFile};
use verify::scenarios::notify::{Answer, Cell};

/// The environment the file records: what served the run and how it was asked for.
fn environment(key: &RunKey, command: &str) -> BTreeMap<String, String> {
    [
        ("backend", "postfix+emulator".to_owned()),
        (
            "backend_detail",
            "a private Postfix instance on 127.0.0.1 delivering into a Maildir (the ground \
             truth), and the embedded Stripe emulator for the refunds (no Stripe)"
                .to_owned(),
        ),
        ("decider", "policy".to_owned()),
        ("runner_version", env!("CARGO_PKG_VERSION").to_owned()),
        ("git_commit", git_commit().unwrap_or_default()),
        ("public_key", key.public_hex()),
        ("journal", "file".to_owned()),
        ("target_tier", "3".to_owned()),
        ("command", command.to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// Signs and writes `DIR/<S::NAME>.json`, then checks it pinned to the run's key (and renders
/// the site when it verifies, unless `--no-site`).
pub(super) fn finish<S: Scenario>(
    args: &crate::cli::RunArgs,
    key: &RunKey,
    params: S::Params,
    command: &str,
    cells: Vec<S::Cell>,
    started: Instant,
) -> Result<RunOutcome, NotifyRunError> {
    let signing_key = crate::keys::read_signing_key(key.path()).map_err(SetupError::from)?;
    let public = key.public();
    let environment = environment(key, command);
    let judged: Vec<_> = cells
        .iter()
        .filter_map(|c| S::stated(c).map(|j| (c, j)))
        .collect();
    let summary = S::summarize(&judged);
    let mut file = ScenarioFile::<S> {
        format: contract::FORMAT.to_owned(),
        scenario: S::NAME.to_owned(),
        generated_at: crate::results::now_rfc3339(),
        environment,
        params,
        summary,
        cells,
        signature: FileSignature {
            signer: String::new(),
            hash: String::new(),
            sig: String::new(),
        },
    };
    contract::sign(&mut file, &signing_key).map_err(NotifyRunError::Sign)?;
    drop(signing_key);
    let mut bytes = serde_json::to_vec_pretty(&file).map_err(NotifyRunError::Serialize)?;
    bytes.push(b'\n');
    let path = args.out.join(format!("{}.json", S::NAME));
    crate::results::write_keeping(&path, &bytes).map_err(|error| NotifyRunError::Write {
        path: path.clone(),
        error,
    })?;
    let harness_errors = file
        .cells
        .iter()
        .filter(|c| !contract::judged::<S>(c))
        .count();
    say!(
        "{} cells in {:.1} s (wall), mail server postfix, Stripe emulator, decider policy, \
         {harness_errors} harness error(s)",
        file.cells.len(),
        started.elapsed().as_secs_f64()
    );
    say!("results: {}", path.display());
    let verified = check(file, public);
    Ok(RunOutcome {
        harness_errors,
        results_path: path,
        site_failed: !crate::run::site_after(args, verified),
        verified,
    })
}

/// Checks the written file pinned to the run's key.
fn check<S: Scenario>(file: ScenarioFile<S>, public: ed25519_dalek::VerifyingKey) -> bool {
    match contract::check(file, &verify::receipt::KeyCheck::Pinned(public)) {
        Ok(v) => {
            say!(
                "verify: ok ({} cells, {} receipts, signed by the run's key)",
                v.report().cells,
                v.report().receipts
            );
            true
        }
        Err(report) => {
            eprintln!("verify: the results file does NOT verify:");
            for f in report.findings.iter().take(10) {
                eprintln!("  {f}");
            }
            false
        }
    }
}

/// One line per cell on the console.
pub(super) fn cell_line(c: &Cell) -> String {
    if let Some(e) = &c.harness_error {
        return format!("HARNESS_ERROR: {e}");
    }
    match &c.judgement {
        Some(j) => format!(
            "{} {} email(s), want {}; {}{}",
            if j.invariant_held { "held" } else { "VIOLATED" },
            j.delivered,
            j.want,
            c.ticket.status,
            match j.answer {
                Answer::Matches => "",
                Answer::Wrong => " (wrong answer)",
                Answer::HandedOff => " (handed to a person)",
                Answer::Unresolved => " (no final answer)",
            }
        ),
        None => "not judged".into(),
    }
}

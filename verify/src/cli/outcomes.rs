//! Each kind of file's verdict: what its line says, its findings, its report and who signed it.

use super::*;

pub(super) fn fingerprint_of_hex(hex: &str) -> Option<String> {
    crate::entry::decode_lower_hex::<32>(hex)
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
        .map(|k| crate::fingerprint(&k))
}

/// The signer a verdict names: the pinned key, or the key the file names itself.
pub(super) fn signer_of(key: &KeyCheck, named: Option<String>) -> Signer {
    match key {
        KeyCheck::Pinned(k) => Signer::Pinned(crate::fingerprint(k)),
        KeyCheck::SelfAttested => Signer::SelfAttested(named),
    }
}

/// A lone receipt without a signed head verifies as what it holds, but cannot prove it holds
/// everything: said on every such verdict.
pub const UNSEALED_NOTE: &str = "  unsealed: no signed head says how many entries the receipt has, so it cannot prove it is complete (a receipt cut short reads as its prefix; happened is at most unknown)";

pub(super) fn receipt_outcome(b: &ReceiptBundle, key: &KeyCheck, json: bool) -> Outcome {
    let r = verify_bundle(b, key);
    let is_pinned = matches!(key, KeyCheck::Pinned(_));
    let signer = match r.signed {
        None => Signer::Unsigned,
        Some(_) => signer_of(key, r.signer.as_deref().and_then(fingerprint_of_hex)),
    };
    let made = b
        .head
        .as_ref()
        .map_or(Made::Unsealed, |h| Made::Sealed(h.ts_ms));
    let signature = match r.signed {
        Some(true) => "signed",
        Some(false) => "signature check failed",
        None => "unsigned, SHA-256 chain only",
    };
    let summary = format!(
        "receipt {} ({}, {signature}), happened={}",
        r.effect_id, r.format, r.happened
    );
    let mut findings = Vec::new();
    if is_pinned && r.signed.is_none() {
        findings.push(unsigned_under_pin());
    }
    if is_pinned && r.signed.is_some() && b.head.is_none() {
        findings.push(Finding::new(
            "head",
            code::RECEIPT_UNSEALED,
            "the receipt carries no signed head, so it cannot prove it is complete (a receipt cut short reads as its prefix); under a pinned key every receipt must be sealed",
        ));
    }
    let mut details: Vec<String> = r.problems.iter().map(|p| format!("  {p}")).collect();
    if b.head.is_none() && r.signed.is_some() && !is_pinned {
        details.push(UNSEALED_NOTE.to_owned());
    }
    let mut outcome = Outcome::new(r.valid, summary, details, "receipt", &r, json);
    outcome.sealed = Some(b.head.is_some());
    outcome.findings = findings;
    outcome.provenance = Provenance {
        signer,
        made,
        commit: None,
    };
    outcome
}

pub(super) fn original_outcome(v: &Value, json: bool) -> Outcome {
    let r = verify_original_results(v);
    // Unsigned: what the file holds is all a reader can compare, so the line says how many
    // cells and who decided (a file with a column dropped, or another model named, printed the
    // genuine file's line).
    let model = v.get("model").and_then(Value::as_str).unwrap_or("?");
    let summary = format!(
        "python-original results, {} cells, {} receipts (per-effect SHA-256 chains; consistency \
         only), decided by {}",
        r.cells,
        r.receipts.len(),
        crate::display::shorten_shown(model, 80)
    );
    let details = r.findings.iter().map(|f| format!("  {f}")).collect();
    let mut outcome = Outcome::new(r.ok, summary, details, "python-original-results", &r, json);
    outcome.provenance = Provenance {
        signer: Signer::Unsigned,
        made: v
            .get("generated")
            .and_then(Value::as_str)
            .map_or(Made::Unstated, |t| Made::Generated(t.to_owned())),
        commit: None,
    };
    outcome
}

pub(super) fn nemesis_outcome(
    f: &NemesisFile,
    key: &KeyCheck,
    r: &NemesisReport,
    json: bool,
) -> Outcome {
    let signature = if r.findings.iter().any(|x| x.code == nemesis_code::SIGNATURE) {
        "signature check failed"
    } else {
        "signed"
    };
    // A shard is one slice of a campaign; a merged file names its shards' signers.
    let kind = match (&r.shard, &r.merged_from) {
        (Some(s), _) => format!(
            "nemesis shard {} of {} (one slice of a campaign, not complete: merge every shard with `runner merge`)",
            s.index, s.count
        ),
        (None, Some(signers)) => format!(
            "nemesis merged from {} shards ({} distinct shard signer(s), each shard's signature \
             checked; listed after the findings)",
            signers.len(),
            distinct_signers(signers).len()
        ),
        (None, None) => "nemesis".to_owned(),
    };
    let summary = match (r.trials, r.receipts, r.violations, r.under_credits) {
        (Some(trials), Some(receipts), Some(violations), Some(under)) => {
            // The trials' own judgements (a column breaking the invariant is what the campaign
            // measures), each checked against its data: findings of the run, not failed checks.
            format!("{kind}, {trials} trials ({violations} in which the column under test credited more than wanted and {under} in which it credited less: what the run found, re-derived from the data, not a failed check), {receipts} receipts, {signature}")
        }
        // Under a pin, nothing is derived from a file whose signature failed.
        _ => format!("{kind}, {signature}, not read further"),
    };
    // The shard signers on lines of their own, after the findings: a long list never pushes
    // the verdict, the file's signer or a finding off the summary line.
    let details = r
        .findings
        .iter()
        .map(|x| format!("  {x}"))
        .chain(
            distinct_signers(r.merged_from.as_deref().unwrap_or_default())
                .into_iter()
                .map(|(signer, shards)| format!("  shard signer {signer}: shard(s) {shards}")),
        )
        .collect();
    let mut outcome = Outcome::new(r.ok, summary, details, "nemesis", r, json);
    outcome.provenance = Provenance {
        signer: signer_of(key, r.fingerprint.clone()),
        made: Made::Generated(made_at(f)),
        commit: Some(f.environment.git_commit.clone()),
    };
    outcome
}

/// When a nemesis file's trials were made: its own `generated`, or for a merged file the
/// earliest of it and its shards' (a merge must not make old trials look new to
/// `--not-before`). A time that does not parse is taken as the earliest, so it is checked.
pub(super) fn made_at(f: &NemesisFile) -> String {
    let parts = f.plan.merged.iter().flat_map(|m| m.parts.iter());
    let mut earliest = f.generated.clone();
    for p in parts {
        let (a, b) = (
            crate::provenance::parse_rfc3339(&p.generated),
            crate::provenance::parse_rfc3339(&earliest),
        );
        if a.is_none() || matches!((a, b), (Some(a), Some(b)) if a < b) {
            earliest = p.generated.clone();
        }
    }
    earliest
}

/// Each distinct shard signer, in first-seen order, with the shards (1-based) it signed.
pub(super) fn distinct_signers(signers: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, s) in signers.iter().enumerate() {
        match out.iter_mut().find(|(k, _)| k == s) {
            Some((_, shards)) => shards.push(i + 1),
            None => out.push((s.clone(), vec![i + 1])),
        }
    }
    out.into_iter()
        .map(|(k, shards)| {
            let list: Vec<String> = shards.iter().map(usize::to_string).collect();
            (k, list.join(", "))
        })
        .collect()
}

pub(super) fn results_outcome(
    head: &ResultsFile,
    key: &KeyCheck,
    r: &ResultsReport,
    json: bool,
) -> Outcome {
    let signature = if r.signed {
        "manifest signed"
    } else {
        "manifest signature check failed"
    };
    let summary = if r.read {
        format!("{} cells, {} receipts, {signature}", r.cells, r.receipts)
    } else {
        // Under a pin, nothing is derived from a file whose manifest does not hold.
        "results, manifest check failed, cannot be read further".to_owned()
    };
    let details = r
        .first_findings()
        .into_iter()
        .map(|f| format!("  {f}"))
        .collect();
    let mut outcome = Outcome::new(r.ok, summary, details, "results", r, json);
    outcome.provenance = Provenance {
        signer: signer_of(key, r.fingerprint.clone()),
        made: Made::Generated(head.generated.clone()),
        commit: Some(head.environment.git_commit.clone()),
    };
    outcome
}

pub(super) fn shared_cap_outcome(
    f: &crate::shared_cap::record::CapResults,
    key: &KeyCheck,
    r: &crate::shared_cap::check::CapReport,
    json: bool,
) -> Outcome {
    let held: u32 = r.summary.iter().map(|s| s.held).sum();
    let counts = format!(
        "{} cells ({} judged; the invariant held in {held}",
        r.cells, r.judged
    );
    let run = CapRun {
        kind: crate::shared_cap::record::SCENARIO,
        words: crate::shared_cap::record::SCENARIO,
        environment: &f.environment,
        generated_at: &f.generated_at,
        signed: r.signed,
        findings: &r.findings,
        ok: r.ok,
    };
    run.outcome(key, &counts, r, json)
}

pub(super) fn shared_cap_nemesis_outcome(
    f: &crate::shared_cap::nemesis::record::CapNemesisFile,
    key: &KeyCheck,
    r: &crate::shared_cap::nemesis::check::CapNemesisReport,
    json: bool,
) -> Outcome {
    let held: u32 = r.summary.iter().map(|s| s.held).sum();
    let counts = format!(
        "{} trials ({} judged; the invariant held in {held}",
        r.trials, r.judged
    );
    let run = CapRun {
        kind: "shared_cap_nemesis",
        words: "shared_cap nemesis",
        environment: &f.environment,
        generated_at: &f.generated_at,
        signed: r.signed,
        findings: &r.findings,
        ok: r.ok,
    };
    run.outcome(key, &counts, r, json)
}

/// What the verdict of a shared_cap file (matrix or nemesis) is made of.
struct CapRun<'a> {
    /// `shared_cap` or `shared_cap_nemesis`.
    kind: &'static str,
    /// What the verdict line calls it.
    words: &'static str,
    environment: &'a crate::shared_cap::record::CapEnvironment,
    generated_at: &'a str,
    signed: bool,
    findings: &'a [String],
    ok: bool,
}

impl CapRun<'_> {
    /// The verdict line with `counts` (nothing counted under a pin when the signature fails),
    /// the findings, and who signed it when.
    fn outcome(
        &self,
        key: &KeyCheck,
        counts: &str,
        report: &impl serde::Serialize,
        json: bool,
    ) -> Outcome {
        let what = self.words;
        let hosts = match self.environment.hosts {
            Some(n) => format!(" on {n} hosts"),
            None => String::new(),
        };
        let summary = if matches!(key, KeyCheck::Pinned(_)) && !self.signed {
            // Under a pin, nothing is derived from a file whose signature failed.
            format!("{what}{hosts}, signature check failed, not read further")
        } else {
            format!(
                "{what}{hosts}, {counts}: what the run found, re-derived from the data), {}",
                if self.signed {
                    "signed"
                } else {
                    "signature check failed"
                }
            )
        };
        let details = self.findings.iter().map(|x| format!("  {x}")).collect();
        let mut outcome = Outcome::new(self.ok, summary, details, self.kind, report, json);
        let named = crate::signatures::published_key(&self.environment.public_key)
            .map(|k| crate::fingerprint(&k));
        outcome.provenance = Provenance {
            signer: signer_of(key, named),
            made: Made::Generated(self.generated_at.to_owned()),
            commit: Some(self.environment.git_commit.clone()),
        };
        outcome
    }
}

/// Unsigned content cannot pass under a pinned key: the original format has no signatures.
pub(super) fn unsigned_under_pin() -> Finding {
    Finding::new(
        "",
        code::UNSIGNED_UNDER_PINNED_KEY,
        "the original Python format carries no signatures, so nothing in this file is signed by the pinned key",
    )
}

/// A file of a scenario on the contract ([`crate::contract::FORMAT`]), checked by the pipeline
/// of the scenario its file names in the registry.
pub(super) fn registered_outcome(
    name: &str,
    head: &crate::contract::FileHead,
    bytes: &[u8],
    options: &Options<'_>,
) -> (Status, Vec<String>, FileJson) {
    let Some(scenario) = crate::scenarios::registered(&head.scenario) else {
        let known: Vec<&str> = crate::scenarios::REGISTRY
            .iter()
            .map(|s| s.name())
            .collect();
        let why = format!(
            "scenario {:?} is not one this verifier knows on {} (known: {}); a newer verify may know it",
            crate::display::shorten(&head.scenario, 80),
            crate::contract::FORMAT,
            if known.is_empty() { "none".to_owned() } else { known.join(", ") }
        );
        return could_not_check(name, &why);
    };
    let key = match key_for(
        head.signer.as_deref(),
        "signature.signer",
        false,
        options.pinned,
    ) {
        Ok(k) => k,
        Err(why) => return not_allowed(name, &why.to_string()),
    };
    let r = match scenario.check_text(bytes, &key) {
        Ok(r) => r,
        Err(why) => return could_not_check(name, &why.to_string()),
    };
    let summary = if r.read {
        format!(
            "{} run, {} cells ({} judged), {} receipts: what the run found, re-derived from the data, {}",
            r.scenario,
            r.cells,
            r.judged,
            r.receipts,
            if r.signed { "signed" } else { "signature check failed" }
        )
    } else {
        format!(
            "{} run, signature check failed, not read further",
            r.scenario
        )
    };
    let details = r.findings.iter().map(|f| format!("  {f}")).collect();
    let mut outcome = Outcome::new(r.ok, summary, details, r.scenario, &r, options.json);
    outcome.provenance = Provenance {
        signer: signer_of(&key, r.fingerprint.clone()),
        made: Made::Generated(head.generated_at.clone()),
        commit: Some(head.commit.clone()),
    };
    finish(name, outcome, options)
}

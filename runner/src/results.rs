//! Assembling the results file and writing it atomically.

use ed25519_dalek::SigningKey;
use std::io::Write;
use std::path::{Path, PathBuf};
use verify::manifest::ManifestError;
use verify::results::{Cell, CellLabel, Environment, ResultsFile, RowSpec, RESULTS_FORMAT};
use verify::scenarios::Scenario;

use crate::matrix::Plan;

/// The whole results file, its manifest signed with the run's key.
pub fn assemble(
    plan: &Plan,
    environment: Environment,
    cells: Vec<Cell>,
    key: &SigningKey,
) -> Result<ResultsFile, ManifestError> {
    let columns: Vec<String> = plan
        .columns
        .iter()
        .map(|c| c.as_str().to_string())
        .collect();
    let summary = verify::scenarios::billing_credit::summarize(&columns, &cells);
    let (repeats, selected) = plan_record(plan);
    let mut file = ResultsFile {
        format: RESULTS_FORMAT.into(),
        scenario: Scenario::BillingCredit.as_str().into(),
        generated: now_rfc3339(),
        environment,
        rows: plan
            .rows
            .iter()
            .map(|(c, o)| RowSpec {
                crash: c.as_str().into(),
                outage: o.as_str().into(),
            })
            .collect(),
        columns,
        repeats,
        selected,
        cells,
        summary,
        manifest: Default::default(),
    };
    verify::manifest::sign(&mut file, key)?;
    Ok(file)
}

/// The plan as the results file records it: the repeat count, and the (row, column) pairs that
/// ran when they are not every row in every column (empty otherwise).
fn plan_record(plan: &Plan) -> (u32, Vec<CellLabel>) {
    let repeats = plan
        .cells
        .iter()
        .map(|c| c.repeat.saturating_add(1))
        .max()
        .unwrap_or(0);
    let mut pairs: Vec<CellLabel> = Vec::new();
    for c in &plan.cells {
        let label = CellLabel {
            crash: c.crash.as_str().into(),
            outage: c.outage.as_str().into(),
            column: c.column.as_str().into(),
        };
        if !pairs.contains(&label) {
            pairs.push(label);
        }
    }
    if pairs.len() == plan.rows.len() * plan.columns.len() {
        pairs.clear();
    }
    (repeats, pairs)
}

/// Now, RFC 3339 UTC, whole seconds.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let now = now.replace_nanosecond(0).unwrap_or(now);
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| now.unix_timestamp().to_string())
}

/// Check, before any work, that the results can be written into `dir`: create it if missing and
/// write (then remove) a probe file there. The error names the directory and the cause.
pub fn check_writable(dir: &Path) -> std::io::Result<()> {
    if dir.exists() && !dir.is_dir() {
        // What `create_dir_all` would say ("File exists") reads as if the folder were in the way.
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "it is a file, not a directory",
        ));
    }
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".write-check-{}", std::process::id()));
    std::fs::File::create(&probe)?;
    std::fs::remove_file(&probe)
}

/// Where a campaign file `<stem>` goes in `dir`: `<stem>.json.gz`. Campaign files (nemesis
/// runs, their shards and merges) are stored compressed, as large campaigns are tens of
/// megabytes of JSON; the matrix results files stay plain.
pub fn campaign_path(dir: &Path, stem: &str) -> PathBuf {
    dir.join(format!("{stem}.json.gz"))
}

/// Writes `text` to `path` (a [`campaign_path`]) compressed ([`verify::input::compress`]: the
/// same text gives the same bytes), atomically; then removes the plain file of the same name
/// (`path` without `.gz`) that an earlier run left, which the new file replaces, and returns
/// it. A directory never holds both forms (the site refuses a campaign found twice).
pub fn write_campaign(path: &Path, text: &[u8]) -> std::io::Result<Option<PathBuf>> {
    let bytes = verify::input::compress(text)?;
    write_atomically(path, &bytes)?;
    let Some(plain) = path
        .to_str()
        .and_then(|p| p.strip_suffix(".gz"))
        .map(PathBuf::from)
    else {
        return Ok(None);
    };
    match std::fs::remove_file(&plain) {
        Ok(()) => Ok(Some(plain)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The line the runner prints when a campaign it wrote replaced a plain file of the same name.
pub fn replaced_line(plain: &Path, path: &Path) -> String {
    format!(
        "removed {}: replaced by {} (campaign files are stored compressed)",
        plain.display(),
        path.display()
    )
}

/// How long [`write_keeping`] waits for space by default, and the environment variable that
/// sets it in seconds (0: give up at once).
pub const DISK_FULL_WAIT: std::time::Duration = std::time::Duration::from_secs(600);
/// See [`DISK_FULL_WAIT`].
pub const DISK_FULL_WAIT_ENV: &str = "INTERLOCK_DISK_FULL_WAIT_S";

/// How often [`write_keeping`] tries again on a full disk.
const DISK_FULL_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// Writes the results file of a run that keeps no partial file ([`write_atomically`]): on a
/// full disk (or quota) the run's cells exist only in memory, so rather than lose them it says
/// so and tries again every two seconds until space is freed, for [`DISK_FULL_WAIT`] (or
/// [`DISK_FULL_WAIT_ENV`] seconds), unless Ctrl-C or SIGTERM ends the wait. The error it
/// returns then is the disk's.
pub fn write_keeping(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let wait = std::env::var(DISK_FULL_WAIT_ENV)
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map_or(DISK_FULL_WAIT, std::time::Duration::from_secs);
    let started = std::time::Instant::now();
    let mut said = false;
    loop {
        match write_atomically(path, bytes) {
            Err(e)
                if crate::partial::disk_full(&e)
                    && started.elapsed() < wait
                    && !crate::run::stopped_by_signal() =>
            {
                if !said {
                    eprintln!(
                        "runner: the disk is full: cannot write {} ({} bytes), and the run's \
                         cells are only in memory; free space there and the runner writes it \
                         (it tries again every {} s for {} s; Ctrl-C gives up and loses them)",
                        path.display(),
                        bytes.len(),
                        DISK_FULL_RETRY.as_secs(),
                        wait.as_secs()
                    );
                    said = true;
                }
                std::thread::sleep(DISK_FULL_RETRY);
            }
            Ok(()) if said => {
                eprintln!("runner: space was freed: {} is written", path.display());
                return Ok(());
            }
            other => return other,
        }
    }
}

/// Writes `bytes` to `path` atomically: a temp file in the same directory, fsync, rename over
/// the target, fsync of the directory. Readers see the old file or the new one, never a part.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "results.json".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(&dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    } else {
        crate::run::note_written(path);
    }
    written
}

/// Serializes the results (pretty, trailing newline).
pub fn to_bytes(results: &ResultsFile) -> Result<Vec<u8>, serde_json::Error> {
    let mut bytes = serde_json::to_vec_pretty(results)?;
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_matrix_run_is_of_this_codes_format_and_default_plan() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/billing_credit.json");
        let file = verify::load::load_results(&std::fs::read(&path).unwrap()).unwrap();
        let plan = crate::matrix::plan(None, 1).unwrap();
        let rows: Vec<(String, String)> = plan
            .rows
            .iter()
            .map(|(c, o)| (c.as_str().to_owned(), o.as_str().to_owned()))
            .collect();
        let committed: Vec<(String, String)> = file
            .rows
            .iter()
            .map(|r| (r.crash.clone(), r.outage.clone()))
            .collect();
        assert_eq!(
            committed, rows,
            "the committed run is not the default matrix"
        );
        let columns: Vec<String> = plan.columns.iter().map(|c| c.as_str().into()).collect();
        assert_eq!(file.columns, columns);
        assert_eq!(
            file.environment.clock_start,
            Some(verify::scenarios::billing_credit::DEFAULT_CLOCK_START),
            "the committed run predates fixed clock starts: run it again"
        );
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub").join("x.json");
        write_atomically(&p, b"one").unwrap();
        write_atomically(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn the_plan_record_lists_pairs_only_when_the_run_was_not_the_full_matrix() {
        use crate::matrix::{plan, Column, CrashPoint, Outage};
        let full = plan(None, 2).unwrap();
        assert_eq!(plan_record(&full), (2, Vec::new()));
        let one = plan(
            Some(vec![
                (CrashPoint::BeforeSend, Outage::Renewal, Column::Interlock),
                (CrashPoint::AfterSend, Outage::Proration, Column::NoCheck),
            ]),
            1,
        )
        .unwrap();
        let (repeats, pairs) = plan_record(&one);
        assert_eq!(repeats, 1);
        assert_eq!(pairs.len(), 2);
        assert_eq!(pairs[0].column, "interlock");
        assert_eq!(pairs[1].crash, "after_send");
    }

    #[test]
    fn generated_is_rfc3339() {
        let g = now_rfc3339();
        assert!(
            time::OffsetDateTime::parse(&g, &time::format_description::well_known::Rfc3339).is_ok(),
            "{g}"
        );
    }

    #[test]
    fn a_campaign_is_written_compressed_and_replaces_the_plain_file_of_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = campaign_path(dir.path(), "billing_credit");
        assert!(path.ends_with("billing_credit.json.gz"));
        let plain = dir.path().join("billing_credit.json");
        std::fs::write(&plain, b"{}").unwrap();
        let text = b"{\"format\":\"x\"}\n".repeat(1000);
        assert_eq!(write_campaign(&path, &text).unwrap(), Some(plain.clone()));
        assert!(!plain.exists(), "the plain file is replaced");
        let stored = std::fs::read(&path).unwrap();
        assert!(stored.len() < text.len() / 10, "{} bytes", stored.len());
        assert_eq!(verify::input::read_file(&path).unwrap(), text);
        // The same text, the same bytes; nothing else to remove.
        assert_eq!(write_campaign(&path, &text).unwrap(), None);
        assert_eq!(std::fs::read(&path).unwrap(), stored);
    }
}

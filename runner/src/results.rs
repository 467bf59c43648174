//! Assembling the results file and writing it atomically.

use std::io::Write;
use std::path::{Path, PathBuf};
use verify::results::{Cell, Environment, ResultsFile, RowSpec, RESULTS_FORMAT};

use crate::matrix::Plan;

/// The whole results file.
pub fn assemble(plan: &Plan, environment: Environment, cells: Vec<Cell>) -> ResultsFile {
    let columns: Vec<String> = plan
        .columns
        .iter()
        .map(|c| c.as_str().to_string())
        .collect();
    let summary = verify::results::summarize(&columns, &cells);
    ResultsFile {
        format: RESULTS_FORMAT.into(),
        scenario: "billing_credit".into(),
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
        cells,
        summary,
    }
}

/// Now, RFC 3339 UTC, whole seconds.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let now = now.replace_nanosecond(0).unwrap_or(now);
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| now.unix_timestamp().to_string())
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
    fn generated_is_rfc3339() {
        let g = now_rfc3339();
        assert!(
            time::OffsetDateTime::parse(&g, &time::format_description::well_known::Rfc3339).is_ok(),
            "{g}"
        );
    }
}

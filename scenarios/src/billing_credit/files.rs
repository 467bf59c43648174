//! The cell directory's files: `decision.json`, and the durable JSON writes, reads and log
//! appends every column's files go through.

use super::{ScenarioError, DECISION_FILE};
use serde::Serialize;
use std::path::Path;
use verify::results::Decision;

/// Writes `decision.json` into `cell_dir` durably (temp file, fsync, rename, directory fsync).
pub fn save_decision(cell_dir: &Path, decision: &Decision) -> Result<(), ScenarioError> {
    write_json_durably(&cell_dir.join(DECISION_FILE), decision)
}

/// Reads `decision.json` from `cell_dir`.
pub fn load_decision(cell_dir: &Path) -> Result<Decision, ScenarioError> {
    read_json(&cell_dir.join(DECISION_FILE))
}

pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ScenarioError> {
    let bytes = std::fs::read(path).map_err(ScenarioError::io("read", path))?;
    serde_json::from_slice(&bytes).map_err(|source| ScenarioError::Json {
        path: path.to_path_buf(),
        source,
    })
}

pub(crate) fn write_json_durably<T: Serialize>(
    path: &Path,
    value: &T,
) -> Result<(), ScenarioError> {
    write_json_durably_timed(path, value).map(|_| ())
}

/// [`write_json_durably`], returning when the new file became visible: just before and just
/// after the rename that puts it into place (a reader before sees the old file, after the new).
pub(crate) fn write_json_durably_timed<T: Serialize>(
    path: &Path,
    value: &T,
) -> Result<(std::time::Instant, std::time::Instant), ScenarioError> {
    use std::io::Write;
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|source| ScenarioError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp).map_err(ScenarioError::io("create", &tmp))?;
        f.write_all(&bytes)
            .map_err(ScenarioError::io("write", &tmp))?;
        f.sync_all().map_err(ScenarioError::io("fsync", &tmp))?;
    }
    let before = std::time::Instant::now();
    std::fs::rename(&tmp, path).map_err(ScenarioError::io("rename into place", path))?;
    let after = std::time::Instant::now();
    sync_dir(dir)?;
    Ok((before, after))
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), ScenarioError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(ScenarioError::io("fsync directory", dir))
}

/// Appends `value` as one JSON line to `path` (created if missing) and fsyncs it: the plain logs
/// the hand-written columns keep.
pub(crate) fn append_line_durably(
    path: &Path,
    value: &serde_json::Value,
) -> Result<(), ScenarioError> {
    use std::io::Write;
    let mut bytes = serde_json::to_vec(value).map_err(|source| ScenarioError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(ScenarioError::io("open for append", path))?;
    f.write_all(&bytes)
        .map_err(ScenarioError::io("append to", path))?;
    f.sync_data().map_err(ScenarioError::io("fsync", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_is_saved_durably_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let d = Decision {
            amount: 1000,
            description: "x".into(),
            decider: verify::results::DeciderInfo {
                kind: "policy".into(),
                model: None,
            },
            premises: verify::results::Premises {
                subscription_status: "active".into(),
                incident_compensation: 0,
            },
            replayed_from: None,
        };
        save_decision(dir.path(), &d).unwrap();
        assert_eq!(load_decision(dir.path()).unwrap(), d);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [DECISION_FILE]);
    }
}

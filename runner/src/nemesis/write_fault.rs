//! write_enospc and fsync_eio: the decide worker runs with the `write-fault` library preloaded,
//! which fails its drawn write (ENOSPC, and every later one) or sync (EIO) under the case's
//! directory at the C library, and logs every counted call; the log says afterwards whether and
//! where the fault fired, even after the worker died.

use super::faults::WriteFault;
use serde_json::Value;
use std::path::{Path, PathBuf};
use verify::nemesis::Fault;

/// The library's file name, built by `cargo build -p write-fault` next to the runner.
const LIBRARY: &str = "libwrite_fault.so";

/// The log's file name, in the trial's log folder (outside the directory whose calls count).
pub(super) const LOG: &str = "write-fault.jsonl";

/// Where the library is: `deps/` beside the runner's executable, where every build of it lands
/// (`cargo test --workspace` builds it only there, for its own tests), else beside the executable
/// (`cargo build` copies it to `target/<profile>/`; never newer than the one in `deps/`). When
/// neither exists, the path beside the executable, for the error that says how to build it.
pub(super) fn library(exe: &Path) -> PathBuf {
    let beside = exe.with_file_name(LIBRARY);
    let in_deps = exe.with_file_name("deps").join(LIBRARY);
    if in_deps.is_file() {
        in_deps
    } else {
        beside
    }
}

/// The environment of a decide worker whose drawn call under `dir` fails, logged to `log`.
pub(super) fn env(
    library: &Path,
    dir: &Path,
    fault: WriteFault,
    log: &Path,
) -> Vec<(&'static str, String)> {
    vec![
        ("LD_PRELOAD", library.display().to_string()),
        (
            "INTERLOCK_WRITE_FAULT",
            format!(
                "dir={};fail={};nth={};log={}",
                dir.display(),
                fault.fail(),
                fault.nth,
                log.display()
            ),
        ),
    ]
}

/// The fault's kind as a trial records it.
pub(super) fn kind(fault: WriteFault) -> &'static str {
    if fault.sync {
        "fsync_eio"
    } else {
        "write_enospc"
    }
}

/// Why the library's log tells nothing: the trial measured nothing (a harness error).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct LogError(String);

/// The trial's record of the fault, from the library's log: fired (at which call, on which
/// file) or not (how many calls of that kind the worker made). `Err` when the log shows the
/// library never ran in the worker, or cannot be read: the trial measured nothing.
pub(super) fn record(log: &Path, fault: WriteFault) -> Result<Fault, LogError> {
    let text = std::fs::read_to_string(log).map_err(|e| {
        LogError(format!(
            "the write-fault log {} cannot be read: {e}",
            log.display()
        ))
    })?;
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .map_err(|e| {
            LogError(format!(
                "the write-fault log {} is not JSON lines: {e}",
                log.display()
            ))
        })?;
    let event = |l: &Value, name: &str| l.get("event").and_then(Value::as_str) == Some(name);
    if let Some(bad) = lines.iter().find(|l| event(l, "malformed")) {
        return Err(LogError(format!(
            "the write-fault library refused its configuration: {bad}"
        )));
    }
    if !lines.iter().any(|l| event(l, "start")) {
        return Err(LogError(format!(
            "the write-fault library never started in the decide worker (no start line in {})",
            log.display()
        )));
    }
    let calls: Vec<&Value> = lines.iter().filter(|l| event(l, "call")).collect();
    let made = calls
        .iter()
        .filter_map(|l| l.get("n").and_then(Value::as_u64))
        .max()
        .unwrap_or(0);
    let what = if fault.sync { "sync" } else { "write" };
    let fired = calls
        .iter()
        .find(|l| l.get("fired").and_then(Value::as_bool) == Some(true));
    let (detail, fired) = match fired {
        Some(l) => {
            let path = l.get("path").and_then(Value::as_str).unwrap_or("?");
            let name = Path::new(path)
                .file_name()
                .map_or_else(|| path.to_owned(), |n| n.to_string_lossy().into_owned());
            let errno = if fault.sync { "EIO" } else { "ENOSPC" };
            (
                format!(
                    "drawn call {} : the decide worker's {what} {} under the case's directory (on {name}) failed with {errno}{}; the final restart ran without the fault",
                    fault.nth,
                    fault.nth,
                    if fault.sync { "" } else { ", and every later write with it" }
                ),
                1,
            )
        }
        None => (
            format!(
                "drawn call {} : never fired: the decide worker made {made} {what}(s) under the case's directory",
                fault.nth
            ),
            0,
        ),
    };
    Ok(Fault {
        kind: kind(fault).into(),
        detail,
        fired,
        held_ms: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG);
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn the_log_says_where_the_fault_fired_or_how_many_calls_there_were() {
        let fault = WriteFault {
            sync: false,
            nth: 3,
        };
        let (_d, log) = log_of(concat!(
            "{\"event\":\"start\",\"pid\":7,\"dir\":\"/d\",\"fail\":\"write\",\"nth\":3}\n",
            "{\"event\":\"call\",\"pid\":7,\"call\":\"write\",\"n\":1,\"path\":\"/d/a\",\"failed\":false,\"fired\":false}\n",
            "{\"event\":\"call\",\"pid\":7,\"call\":\"pwrite64\",\"n\":3,\"path\":\"/d/journal.jsonl\",\"failed\":true,\"errno\":28,\"injected\":true,\"fired\":true}\n",
        ));
        let f = record(&log, fault).unwrap();
        assert_eq!((f.kind.as_str(), f.fired), ("write_enospc", 1));
        assert!(f.detail.contains("drawn call 3 "), "{}", f.detail);
        assert!(f.detail.contains("journal.jsonl"), "{}", f.detail);
        let (_d, log) = log_of(concat!(
            "{\"event\":\"start\",\"pid\":7,\"dir\":\"/d\",\"fail\":\"write\",\"nth\":3}\n",
            "{\"event\":\"call\",\"pid\":7,\"call\":\"write\",\"n\":2,\"path\":\"/d/a\",\"failed\":false,\"fired\":false}\n",
        ));
        let f = record(&log, fault).unwrap();
        assert_eq!(f.fired, 0);
        assert!(f.detail.contains("made 2 write(s)"), "{}", f.detail);
        let (_d, log) = log_of("");
        assert!(record(&log, fault)
            .unwrap_err()
            .to_string()
            .contains("never started"));
        let (_d, log) =
            log_of("{\"event\":\"malformed\",\"pid\":7,\"why\":\"x\",\"value\":\"y\"}\n");
        assert!(record(&log, fault)
            .unwrap_err()
            .to_string()
            .contains("refused"));
    }
}

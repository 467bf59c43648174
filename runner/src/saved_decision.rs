//! The decision a decide worker saved in its cell (or trial) directory, read back by the runner
//! for the results: absent is "no decision", a file that is there but cannot be read is an error
//! the run reports.

use scenarios::billing_credit as bc;
use std::path::{Path, PathBuf};
use verify::results::Decision;

/// A `decision.json` that is there but cannot be read as a decision.
#[derive(Debug, thiserror::Error)]
#[error(
    "{} is not a readable decision ({source}); the worker writes it whole (temporary file, \
     fsync, rename), so something other than the worker changed it: check the disk (space, \
     errors) and that no other process writes the run's directory, then run again",
    path.display()
)]
pub struct DecisionUnreadable {
    /// The file.
    pub path: PathBuf,
    /// Why it could not be read or parsed.
    pub source: bc::ScenarioError,
}

/// The decision saved in `dir`: `None` when the worker saved none (no `decision.json`).
pub fn saved_decision(dir: &Path) -> Result<Option<Decision>, DecisionUnreadable> {
    let path = dir.join(bc::DECISION_FILE);
    if !path.exists() {
        return Ok(None);
    }
    bc::load_decision(dir)
        .map(Some)
        .map_err(|source| DecisionUnreadable { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision() -> Decision {
        Decision {
            amount: 1000,
            description: "SLA credit".into(),
            decider: verify::results::DeciderInfo {
                kind: "policy".into(),
                model: None,
            },
            premises: verify::results::Premises {
                subscription_status: "active".into(),
                incident_compensation: 0,
            },
            replayed_from: None,
        }
    }

    #[test]
    fn no_decision_file_is_no_decision() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(saved_decision(dir.path()).unwrap(), None);
    }

    #[test]
    fn a_saved_decision_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        bc::save_decision(dir.path(), &decision()).unwrap();
        assert_eq!(saved_decision(dir.path()).unwrap(), Some(decision()));
    }

    #[test]
    fn a_corrupt_decision_file_is_an_error_that_names_it_and_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(bc::DECISION_FILE);
        for corrupt in [&b"{\"amount\": 10"[..], b"", b"{\"amount\": \"ten\"}"] {
            std::fs::write(&path, corrupt).unwrap();
            let error = saved_decision(dir.path()).unwrap_err();
            let said = error.to_string();
            assert!(said.contains(&path.display().to_string()), "{said}");
            assert!(said.contains("run again"), "{said}");
        }
    }
}

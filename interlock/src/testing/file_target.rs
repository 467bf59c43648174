//! [`FileTarget`]: a target whose state lives in a JSON file, so it survives its caller's
//! SIGKILL.

use super::{caps, premise_violations, Fault};
use crate::target::{Capabilities, Target, TargetError, Tier};
use serde_json::{json, Map, Value};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A target whose state lives in a JSON file (`{"landed": [...], "facts": {...}, "faults":
/// [...], "apply_calls": n}`), read and written under an exclusive `flock` on `<file>.lock`, so it
/// outlives any process that calls it. Tier 1 dedupes on the effect id; tier 2 does not.
#[derive(Debug, Clone)]
pub struct FileTarget {
    path: PathBuf,
    tier: Tier,
    queryable: bool,
    max_in_flight: Duration,
    apply_delay: Duration,
}

/// Why a [`FileTarget`] state file could not be used.
fn file_err(path: &Path, what: &str, e: impl std::fmt::Display) -> TargetError {
    TargetError::Unknown {
        reason: format!("{}: could not {what}: {e}", path.display()),
    }
}

impl FileTarget {
    /// A target with its state in `path` (created empty on first use).
    pub fn new(path: &Path, tier: Tier, queryable: bool, max_in_flight: Duration) -> FileTarget {
        FileTarget {
            path: path.to_owned(),
            tier,
            queryable: match tier {
                Tier::One => queryable,
                Tier::Two => true,
                Tier::Three => false,
            },
            max_in_flight,
            apply_delay: Duration::ZERO,
        }
    }

    /// Sleep this long inside `apply` (while holding nothing but the caller's claim).
    pub fn with_apply_delay(mut self, d: Duration) -> FileTarget {
        self.apply_delay = d;
        self
    }

    /// Run `f` on the state under the state file's lock, then write it back (fsynced).
    pub fn with_state<R>(
        path: &Path,
        f: impl FnOnce(&mut Map<String, Value>) -> R,
    ) -> Result<R, TargetError> {
        let mut lock_name = path.as_os_str().to_owned();
        lock_name.push(".lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(PathBuf::from(lock_name))
            .map_err(|e| file_err(path, "open the lock file", e))?;
        lock.lock().map_err(|e| file_err(path, "lock", e))?;
        let mut state = match std::fs::read(path) {
            Ok(b) if !b.is_empty() => match serde_json::from_slice::<Value>(&b) {
                Ok(Value::Object(m)) => m,
                _ => return Err(file_err(path, "parse", "not a JSON object")),
            },
            Ok(_) => Map::new(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
            Err(e) => return Err(file_err(path, "read", e)),
        };
        land_due(&mut state);
        let out = f(&mut state);
        let mut tmp_name = path.as_os_str().to_owned();
        tmp_name.push(".tmp");
        let tmp = PathBuf::from(tmp_name);
        let bytes = serde_json::to_vec(&state).map_err(|e| file_err(path, "encode", e))?;
        let write = || -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            std::io::Write::write_all(&mut f, &bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(|e| file_err(path, "write", e))?;
        Ok(out)
    }

    /// The landed effects recorded in the state file at `path`.
    pub fn landed_in(path: &Path) -> Result<Vec<Value>, TargetError> {
        Self::with_state(path, |s| {
            s.get("landed")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
    }

    /// Set a fact in the state file at `path`.
    pub fn set_fact_in(path: &Path, key: &str, value: Value) -> Result<(), TargetError> {
        Self::with_state(path, |s| {
            let facts = s
                .entry("facts")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = facts {
                m.insert(key.to_owned(), value);
            }
        })
    }

    /// Queue faults (by [`Fault::parse`] name) in the state file at `path`.
    pub fn push_faults_in(path: &Path, faults: &[&str]) -> Result<(), TargetError> {
        Self::with_state(path, |s| {
            let q = s.entry("faults").or_insert_with(|| json!([]));
            if let Value::Array(a) = q {
                a.extend(faults.iter().map(|f| json!(f)));
            }
        })
    }
}

/// Wall-clock now in Unix ms (a [`FileTarget`] outlives processes, so it keeps wall time).
fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Move every pending request of a [`FileTarget`] state whose time has come to `landed`.
fn land_due(state: &mut Map<String, Value>) {
    let now = wall_ms();
    let Some(Value::Array(pending)) = state.remove("pending") else {
        return;
    };
    let (due, later): (Vec<Value>, Vec<Value>) = pending.into_iter().partition(|p| {
        p.get("at_ms")
            .and_then(Value::as_u64)
            .is_some_and(|t| t <= now)
    });
    state.insert("pending".into(), Value::Array(later));
    if let Value::Array(landed) = state.entry("landed").or_insert_with(|| json!([])) {
        for mut p in due {
            if let Some(m) = p.as_object_mut() {
                m.remove("at_ms");
            }
            landed.push(p);
        }
    }
}

impl Target for FileTarget {
    fn capabilities(&self) -> Capabilities {
        caps(self.tier, self.queryable, None, Some(self.max_in_flight))
    }
    fn check_premises(
        &self,
        _effect_id: &str,
        premises: &Value,
    ) -> Result<Vec<String>, TargetError> {
        Self::with_state(&self.path, |s| {
            let facts = s
                .get("facts")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            premise_violations(premises, &facts)
        })
    }
    fn apply(&self, effect_id: &str, effect: &Value) -> Result<Value, TargetError> {
        if !self.apply_delay.is_zero() {
            std::thread::sleep(self.apply_delay);
        }
        let tier = self.tier;
        let answer = Self::with_state(&self.path, |s| {
            let calls = s.get("apply_calls").and_then(Value::as_u64).unwrap_or(0);
            s.insert("apply_calls".into(), json!(calls + 1));
            let fault = match s.get_mut("faults").and_then(Value::as_array_mut) {
                Some(q) if !q.is_empty() => {
                    Fault::parse(q.remove(0).as_str().unwrap_or("")).unwrap_or(Fault::Ok)
                }
                _ => Fault::Ok,
            };
            if let Fault::LandsLate(ms) = fault {
                let late = json!({"effect_id": effect_id, "effect": effect, "pid": std::process::id(), "at_ms": wall_ms().saturating_add(ms)});
                if let Value::Array(p) = s.entry("pending").or_insert_with(|| json!([])) {
                    p.push(late);
                }
                return fault.answer(Value::Null);
            }
            let landed = s.entry("landed").or_insert_with(|| json!([]));
            let Value::Array(landed) = landed else {
                return Err(TargetError::Unknown {
                    reason: "state file: `landed` is not an array".into(),
                });
            };
            let existing = landed
                .iter()
                .position(|l| l.get("effect_id").and_then(Value::as_str) == Some(effect_id));
            let n = match existing {
                Some(i) if tier == Tier::One => i,
                _ => {
                    if !fault.lands() {
                        return fault.answer(Value::Null);
                    }
                    landed.push(json!({"effect_id": effect_id, "effect": effect, "pid": std::process::id()}));
                    landed.len() - 1
                }
            };
            fault.answer(json!({"id": format!("obj_{n}"), "effect_id": effect_id}))
        })?;
        answer
    }
    fn query(&self, effect_id: &str, _effect: &Value) -> Result<Option<Value>, TargetError> {
        Self::with_state(&self.path, |s| {
            s.get("landed").and_then(Value::as_array).and_then(|l| {
                l.iter()
                    .position(|x| x.get("effect_id").and_then(Value::as_str) == Some(effect_id))
                    .map(|n| json!({"id": format!("obj_{n}"), "effect_id": effect_id}))
            })
        })
    }
}

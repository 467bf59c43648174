//! The instance's queue, read from its directories: what is accepted (or being received) and
//! not yet delivered.
//!
//! Postfix keeps one file per message in `maildrop`, `incoming`, `active`, `deferred` and
//! `hold` (the latter two hashed into subdirectories), named by its queue id. A message being
//! received has its file in `incoming` from the first `RCPT` on; a session that ends before the
//! end of DATA has that file removed. `corrupt` holds files Postfix could not read and will
//! never deliver, so they count too: a wait for an empty queue fails rather than miss them.

use crate::error::MailError;
use crate::layout::io;
use std::path::Path;

/// The queues a message waits in before it is delivered (or never will be: `corrupt`).
pub(crate) const QUEUES: [&str; 6] = [
    "maildrop", "incoming", "active", "deferred", "hold", "corrupt",
];

/// One message file in the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    /// The queue it is in (`incoming`, `active`, `deferred`, ...).
    pub queue: String,
    /// Its queue id (the file's name), as the instance's log names it.
    pub id: String,
}

/// Every message file in the queue directory `queue_dir`.
pub(crate) fn list(queue_dir: &Path) -> Result<Vec<Queued>, MailError> {
    let mut found = Vec::new();
    for queue in QUEUES {
        let dir = queue_dir.join(queue);
        let mut files = Vec::new();
        walk(&dir, &mut files)?;
        for file in files {
            if let Some(queued) = queued(queue, &file) {
                found.push(queued);
            }
        }
    }
    Ok(found)
}

/// Whether the queue directory holds no message file.
pub(crate) fn is_empty(queue_dir: &Path) -> Result<bool, MailError> {
    list(queue_dir).map(|left| left.is_empty())
}

/// The names of the regular files under `dir`, recursively (a missing directory has none).
fn walk(dir: &Path, files: &mut Vec<String>) -> Result<(), MailError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(dir)(e)),
    };
    for entry in entries {
        let entry = entry.map_err(io(dir))?;
        let kind = match entry.file_type() {
            Ok(kind) => kind,
            // removed between the listing and the look: delivered meanwhile
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&entry.path())(e)),
        };
        if kind.is_dir() {
            walk(&entry.path(), files)?;
        } else if kind.is_file() {
            files.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    Ok(())
}

/// The message a file named `name` in `queue` stands for: queue ids are letters and digits
/// (short ids are upper-case hexadecimal, long ids mix cases); anything else is no message.
fn queued(queue: &str, name: &str) -> Option<Queued> {
    let is_id = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric());
    is_id.then(|| Queued {
        queue: queue.to_string(),
        id: name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_ids_short_and_long_are_messages_and_other_names_are_not() {
        assert_eq!(
            queued("incoming", "2B3DD98C6D9"),
            Some(Queued {
                queue: "incoming".into(),
                id: "2B3DD98C6D9".into()
            })
        );
        assert!(queued("deferred", "4RQ4Vd2Qm7z9sWL").is_some());
        for name in ["", ".nfs000123", "master.pid", "A-1"] {
            assert_eq!(queued("active", name), None, "{name:?}");
        }
    }

    #[test]
    fn files_in_hashed_subdirectories_are_found_and_other_directories_ignored() {
        let root = tempfile::tempdir().unwrap();
        let q = root.path();
        for dir in ["incoming", "active", "deferred/A", "pid", "private"] {
            std::fs::create_dir_all(q.join(dir)).unwrap();
        }
        std::fs::write(q.join("incoming/1F2E3D"), "").unwrap();
        std::fs::write(q.join("deferred/A/A1B2C3"), "").unwrap();
        std::fs::write(q.join("pid/master.pid"), "").unwrap();
        std::fs::write(q.join("private/X1"), "").unwrap();
        let mut ids: Vec<(String, String)> = list(q)
            .unwrap()
            .into_iter()
            .map(|m| (m.queue, m.id))
            .collect();
        ids.sort();
        assert_eq!(
            ids,
            [
                ("deferred".to_string(), "A1B2C3".to_string()),
                ("incoming".to_string(), "1F2E3D".to_string())
            ]
        );
        std::fs::remove_file(q.join("incoming/1F2E3D")).unwrap();
        std::fs::remove_file(q.join("deferred/A/A1B2C3")).unwrap();
        assert!(is_empty(q).unwrap());
        assert!(is_empty(&q.join("absent")).unwrap());
    }
}

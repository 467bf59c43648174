//! Where the repositories live (`root/<name>.git`, their pull requests in `root/<name>.pulls.json`)
//! and the per-repository lock that serializes everything done to one repository: requests of the
//! HTTP API and the harness's own actions alike.

use crate::git::Git;
use crate::ForgeError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The repositories under one root.
#[derive(Debug)]
pub(crate) struct Repos {
    root: PathBuf,
    locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

/// One repository, while its lock is held.
#[derive(Debug)]
pub(crate) struct Repo {
    /// Its name.
    pub name: String,
    /// The bare repository.
    pub git: Git,
    /// The file of its pull requests, beside it.
    pub pulls_file: PathBuf,
}

/// Whether `name` may name a repository: 1 to 100 of `A-Z a-z 0-9 . _ -`, not starting with a
/// dot (so never `..`, never a path).
pub(crate) fn valid_name(name: &str) -> bool {
    (1..=100).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

impl Repos {
    /// The repositories under `root`.
    pub(crate) fn new(root: &Path) -> Repos {
        Repos {
            root: root.to_path_buf(),
            locks: Mutex::new(HashMap::new()),
        }
    }

    fn lock_of(&self, name: &str) -> Arc<Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        locks.entry(name.to_string()).or_default().clone()
    }

    fn git_dir(&self, name: &str) -> PathBuf {
        self.root.join(format!("{name}.git"))
    }

    /// Runs `f` on repository `name` (a valid name) with its lock held.
    fn locked<R>(
        &self,
        name: &str,
        f: impl FnOnce(Repo) -> Result<R, ForgeError>,
    ) -> Result<R, ForgeError> {
        let lock = self.lock_of(name);
        let _held = lock.lock().unwrap_or_else(PoisonError::into_inner);
        f(Repo {
            name: name.to_string(),
            git: Git::at(&self.git_dir(name)),
            pulls_file: self.root.join(format!("{name}.pulls.json")),
        })
    }

    /// Runs `f` on repository `name` with its lock held; [`ForgeError::NoSuchRepo`] when there is
    /// no such repository.
    pub(crate) fn with<R>(
        &self,
        name: &str,
        f: impl FnOnce(&Repo) -> Result<R, ForgeError>,
    ) -> Result<R, ForgeError> {
        if !valid_name(name) {
            return Err(ForgeError::NoSuchRepo(name.to_string()));
        }
        self.locked(name, |repo| {
            if !repo.pulls_file.is_file() {
                return Err(ForgeError::NoSuchRepo(name.to_string()));
            }
            f(&repo)
        })
    }

    /// Creates repository `name` (a bare repository, then whatever `f` puts in it) with its lock
    /// held; an error when the name is invalid or taken.
    pub(crate) fn create<R>(
        &self,
        name: &str,
        f: impl FnOnce(&Repo) -> Result<R, ForgeError>,
    ) -> Result<R, ForgeError> {
        if !valid_name(name) {
            return Err(ForgeError::InvalidName(name.to_string()));
        }
        self.locked(name, |repo| {
            let dir = self.git_dir(name);
            if dir.exists() || repo.pulls_file.exists() {
                return Err(ForgeError::Exists(name.to_string()));
            }
            Git::init_bare(&dir)?;
            f(&repo)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::valid_name;

    #[test]
    fn a_repository_name_is_never_a_path() {
        for good in ["case-1", "a", "pr_merge.007"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            ".hidden",
            "a b",
            &"x".repeat(101),
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}

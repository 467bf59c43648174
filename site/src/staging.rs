//! A site is built whole: into a fresh hidden folder beside the output folder, then swapped into
//! its place, so an interrupted or failed build leaves the previous site as it was and a
//! finished one holds no page of an earlier build.

use crate::error::SiteError;
use std::path::{Path, PathBuf};

/// A build in progress: its pages go under [`Staging::root`]; [`Staging::commit`] puts them in
/// the output folder's place. Dropped uncommitted, the staging folder is removed.
#[derive(Debug)]
pub(crate) struct Staging {
    out_dir: PathBuf,
    root: PathBuf,
    committed: bool,
}

/// Whether `dir` holds a site this crate built (its index and stylesheet), so replacing it loses
/// nothing of anyone else's.
fn holds_a_site(dir: &Path) -> bool {
    dir.join("index.html").is_file() && dir.join("style.css").is_file()
}

/// Whether `dir` is an empty folder.
fn is_empty(dir: &Path) -> Result<bool, SiteError> {
    let mut entries =
        std::fs::read_dir(dir).map_err(|e| SiteError::io("reading directory", dir, e))?;
    Ok(entries.next().is_none())
}

/// The output folder a build may replace, as it will be named: refused when it exists and is
/// neither empty nor a site (the swap would delete its files), or is not a folder.
pub(crate) fn accepted(out_dir: &Path) -> Result<PathBuf, SiteError> {
    if !out_dir.exists() {
        return Ok(out_dir.to_path_buf());
    }
    let real = out_dir
        .canonicalize()
        .map_err(|e| SiteError::io("reading directory", out_dir, e))?;
    if !real.is_dir() {
        return Err(SiteError::NotASiteFolder {
            path: out_dir.to_path_buf(),
            why: "it is not a folder",
        });
    }
    if !is_empty(&real)? && !holds_a_site(&real) {
        return Err(SiteError::NotASiteFolder {
            path: out_dir.to_path_buf(),
            why: "it holds files and no site (no index.html and style.css), and a build \
                  replaces the whole folder",
        });
    }
    Ok(real)
}

impl Staging {
    /// Starts a build for `out_dir` once [`accepted`] takes it.
    pub(crate) fn begin(out_dir: &Path) -> Result<Staging, SiteError> {
        let out_dir = accepted(out_dir)?;
        let (Some(name), Some(parent)) = (out_dir.file_name(), out_dir.parent()) else {
            return Err(SiteError::NotASiteFolder {
                path: out_dir.clone(),
                why: "it names no folder of its own",
            });
        };
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        crate::output::mkdir(parent)?;
        let root = parent.join(format!(
            ".{}.building-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        if root.exists() {
            std::fs::remove_dir_all(&root)
                .map_err(|e| SiteError::io("removing an earlier build's folder", &root, e))?;
        }
        crate::output::mkdir(&root)?;
        Ok(Staging {
            out_dir,
            root,
            committed: false,
        })
    }

    /// Where the build writes its pages.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The output folder the build replaces.
    pub(crate) fn out_dir(&self) -> &Path {
        &self.out_dir
    }

    /// Puts the built folder in the output folder's place: the old site is moved aside, the new
    /// one renamed into place, the old one removed. On a failed rename the old site is put back.
    pub(crate) fn commit(mut self) -> Result<(), SiteError> {
        let old = self.root.with_file_name(
            self.root
                .file_name()
                .map(|n| n.to_string_lossy().replace(".building-", ".old-"))
                .unwrap_or_default(),
        );
        let had_old = self.out_dir.exists();
        if had_old {
            std::fs::rename(&self.out_dir, &old)
                .map_err(|e| SiteError::io("moving the previous site aside", &self.out_dir, e))?;
        }
        if let Err(e) = std::fs::rename(&self.root, &self.out_dir) {
            if had_old {
                let _ = std::fs::rename(&old, &self.out_dir);
            }
            return Err(SiteError::io(
                "moving the built site into",
                &self.out_dir,
                e,
            ));
        }
        self.committed = true;
        if had_old {
            std::fs::remove_dir_all(&old)
                .map_err(|e| SiteError::io("removing the previous site", &old, e))?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

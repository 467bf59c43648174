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

/// The file every build writes at the top of its folder, and the only sign that a folder is a
/// site a build may replace (an `index.html` and a `style.css` are in many folders that are not).
pub(crate) const MARKER: &str = ".interlock-site";

/// What the marker file says to whoever opens it.
const MARKER_TEXT: &str = "This folder was written by `site build` (Interlock's report). A \
    build replaces the whole folder: keep nothing else in it.\n";

/// Whether `dir` holds a site this crate built (its marker file), so replacing it loses
/// nothing of anyone else's.
fn holds_a_site(dir: &Path) -> bool {
    dir.join(MARKER).is_file()
}

/// Refuses a results folder inside the output folder (or the same folder): the build replaces
/// the whole output folder, and the results would go with it.
pub(crate) fn results_apart(out_dir: &Path, results_dir: &Path) -> Result<(), SiteError> {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (out, results) = (absolute(out_dir), absolute(results_dir));
    let lexical = |p: &Path| p.components().collect::<PathBuf>();
    if lexical(&results).starts_with(lexical(&out)) {
        return Err(SiteError::NotASiteFolder {
            path: out_dir.to_path_buf(),
            why: "the results folder is inside it (or is it), and a build replaces the whole \
                  folder: choose another output folder",
        });
    }
    Ok(())
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
            why: "it is not a folder: choose a new or empty folder, or one an earlier build wrote",
        });
    }
    if !is_empty(&real)? && !holds_a_site(&real) {
        return Err(SiteError::NotASiteFolder {
            path: out_dir.to_path_buf(),
            why: "it holds files and no site a build wrote (no .interlock-site file), and a \
                  build replaces the whole folder: empty it, remove it, or choose another",
        });
    }
    Ok(real)
}

/// Removes the staging and set-aside folders of earlier builds into `parent/name` whose process
/// is gone (a build killed before it could clean up): `.name.building-PID`, `.name.old-PID`.
fn remove_abandoned(parent: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let file = file.to_string_lossy();
        let pid = [".building-", ".old-"].iter().find_map(|kind| {
            file.strip_prefix(&format!(".{name}{kind}"))
                .and_then(|p| p.parse::<u32>().ok())
        });
        let gone = pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists());
        if gone {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Staging {
    /// Starts a build for `out_dir` once [`accepted`] takes it.
    pub(crate) fn begin(out_dir: &Path) -> Result<Staging, SiteError> {
        let out_dir = accepted(out_dir)?;
        let (Some(name), Some(parent)) = (out_dir.file_name(), out_dir.parent()) else {
            return Err(SiteError::NotASiteFolder {
                path: out_dir.clone(),
                why: "it names no folder of its own: name the folder the site goes into",
            });
        };
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        crate::output::mkdir(parent)?;
        remove_abandoned(parent, &name.to_string_lossy());
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
        let marker = root.join(MARKER);
        std::fs::write(&marker, MARKER_TEXT)
            .map_err(|e| SiteError::io("writing the site's marker", &marker, e))?;
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

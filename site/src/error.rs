//! Why a site build failed. Every variant names the file (and where useful the line) at fault.

use std::path::PathBuf;

/// Why a site build failed.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    /// A file or directory could not be read or written.
    #[error("{action} {path}: {source}")]
    Io {
        /// What the build was doing (`reading`, `writing`, `creating directory`, ...).
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The output folder cannot take a site: the build would replace files that are not one.
    #[error("cannot build the site into {path}: {why}")]
    NotASiteFolder {
        /// The output folder asked for.
        path: PathBuf,
        /// Why it cannot take the site, and what to do.
        why: &'static str,
    },
    /// The results directory holds no results file.
    #[error("no results file (*.json) in {0}")]
    NoResults(PathBuf),
    /// A results file failed verification; it is not rendered.
    #[error("refusing to render {path}: it failed verification: {problem}")]
    Unverified {
        /// The results file.
        path: PathBuf,
        /// The first problem verification reported.
        problem: String,
    },
    /// A results file could not be read as one (not JSON, not the format, cut short): it could
    /// not be checked at all.
    #[error("cannot check {path}: {problem}")]
    Unreadable {
        /// The results file.
        path: PathBuf,
        /// Why it could not be read.
        problem: String,
    },
    /// A results file verified, but holds something the site cannot present truthfully.
    #[error("cannot render {path}: {problem}")]
    Data {
        /// The results file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A prose file is malformed: unknown placeholder, unknown claim, a hand-written number, ...
    #[error("{file}:{line}: {problem}")]
    Prose {
        /// The Markdown file.
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        problem: String,
    },
    /// A claim in a prose file is contradicted by the data.
    #[error("{file}:{line}: false claim `{claim}`: {evidence}")]
    FalseClaim {
        /// The Markdown file.
        file: String,
        /// 1-based line number.
        line: usize,
        /// The claim as written.
        claim: String,
        /// The data that contradicts it.
        evidence: String,
    },
    /// A template failed to render.
    #[error("rendering {page}: {source}")]
    Template {
        /// The page being rendered.
        page: String,
        /// The template error.
        source: askama::Error,
    },
}

impl SiteError {
    /// An I/O error with the action and path it happened on.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        SiteError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

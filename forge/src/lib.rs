//! `forge`: the subset of GitHub's REST API that the `pr_merge` scenario uses (get a pull request,
//! merge it, list commits), served on loopback over real git repositories.
//!
//! Merge commits are real git objects made with the `git` command line, branches move by
//! compare-and-swap with every update in their reflogs, and the ground truth of a case
//! ([`Forge::truth`]) is read back from those reflogs, never from the server's memory.
//!
//! [`Forge::start`] serves from a thread of its own with its own runtime, so synchronous code and
//! `#[test]` functions can use it; the worker processes talk to it with [`client::Client`].
//! The facts of GitHub's behaviour this relies on are in `docs/github-merge.md`.
//!
//! Reading order: `repos.rs` (where repositories live, the per-repository lock), `git.rs` (every
//! git command), `pulls.rs` (a pull request's state and the merge), `case.rs` (the harness's own
//! changes), `truth.rs`, then `server/` and `client.rs`.

mod case;
pub mod client;
mod faults;
mod git;
mod pulls;
mod repos;
mod server;
mod truth;

pub use faults::{Fault, RELEASE_LIMIT};
pub use pulls::Pull;

use faults::Faults;
use git::Actor;
use pulls::{MergeAsk, Refusal};
use repos::Repos;
use server::{App, Running};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use verify::scenarios::pr_merge::RepoTruth;

/// The owner of every repository the forge serves (`/repos/interlock/{repo}/...`).
pub const OWNER: &str = "interlock";

/// What went wrong in the forge (the harness's side; HTTP answers are the server's business).
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    /// The listening socket could not be bound.
    #[error("cannot listen on 127.0.0.1: {0}")]
    Bind(std::io::Error),
    /// The server's runtime or thread could not be started.
    #[error("cannot start the server's runtime: {0}")]
    Runtime(std::io::Error),
    /// A task of the server ended abnormally.
    #[error("a task of the server failed: {0}")]
    Task(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The pull requests' record of a repository is not what the forge writes.
    #[error("{path}: not a pull request record: {source}")]
    Record {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        source: serde_json::Error,
    },
    /// `git` could not be run.
    #[error("cannot run git {args}: {source}")]
    GitSpawn {
        /// Its arguments.
        args: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// `git` failed.
    #[error("git {args} failed (exit {status:?}): {stderr}")]
    Git {
        /// Its arguments.
        args: String,
        /// Its exit status, if it exited.
        status: Option<i32>,
        /// What it wrote on its standard error.
        stderr: String,
    },
    /// `git` answered something the forge cannot read.
    #[error("git {args}: unexpected output: {reason}")]
    GitOutput {
        /// Its arguments.
        args: String,
        /// What was wrong.
        reason: String,
    },
    /// A repository name that is not `A-Z a-z 0-9 . _ -` (1 to 100, not starting with a dot).
    #[error("{0:?} is not a valid repository name")]
    InvalidName(String),
    /// A repository of that name exists already.
    #[error("repository {0} exists already")]
    Exists(String),
    /// No repository of that name.
    #[error("no repository {0}")]
    NoSuchRepo(String),
    /// No pull request of that number.
    #[error("repository {repo} has no pull request #{pull}")]
    NoSuchPull {
        /// The repository.
        repo: String,
        /// The number asked for.
        pull: u64,
    },
    /// A branch moved under a compare-and-swap (something outside the forge wrote to it).
    #[error("branch {branch} of {repo} moved while the forge was updating it")]
    Moved {
        /// The repository.
        repo: String,
        /// The branch.
        branch: String,
    },
    /// A merge the harness asked for ([`Forge::merge_as_other`]) was refused.
    #[error("repository {repo}: pull request #{pull} cannot be merged: {reason}")]
    NotMerged {
        /// The repository.
        repo: String,
        /// The pull request.
        pull: u64,
        /// Why (as the merge endpoint would refuse it).
        reason: &'static str,
    },
    /// Two reflog entries carry one timestamp, so their order is unknown.
    #[error("repository {repo}: two branch updates at {at}: their order is unknown")]
    Unordered {
        /// The repository.
        repo: String,
        /// The shared timestamp.
        at: u64,
    },
}

/// A running forge: the HTTP server and the repositories under its root. Stops when dropped.
#[derive(Debug)]
pub struct Forge {
    app: Arc<App>,
    running: Running,
}

/// [`ForgeError::NotMerged`]'s reason when the pull request was merged already.
const ALREADY_MERGED: &str = "it is merged already";

impl ForgeError {
    /// Whether a merge the harness asked for was refused because the pull request was merged
    /// already (someone cannot merge what is merged).
    pub fn already_merged(&self) -> bool {
        matches!(self, ForgeError::NotMerged { reason, .. } if *reason == ALREADY_MERGED)
    }
}

impl Forge {
    /// Starts on 127.0.0.1 port 0; repositories live under `root/<name>.git` (bare, reflogs on:
    /// `core.logAllRefUpdates=always`), one repository per case so cases never share a branch.
    pub fn start(root: &Path) -> Result<Forge, ForgeError> {
        std::fs::create_dir_all(root).map_err(|source| ForgeError::Io {
            path: root.to_path_buf(),
            source,
        })?;
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(ForgeError::Bind)?;
        let addr = listener.local_addr().map_err(ForgeError::Bind)?;
        listener.set_nonblocking(true).map_err(ForgeError::Bind)?;
        let app = Arc::new(App {
            repos: Repos::new(root),
            faults: Faults::default(),
            base_url: format!("http://{addr}"),
        });
        let running = server::start(app.clone(), listener)?;
        Ok(Forge { app, running })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.app.base_url.clone()
    }

    /// A new repository `name`: `main` with one initial commit, a branch `feature` with one commit
    /// on top (touching its own file), and pull request #1 open from `feature` into `main`.
    pub fn create_case(&self, name: &str) -> Result<Pull, ForgeError> {
        self.app.repos.create(name, case::set_up)
    }

    /// A person pushes an unreviewed commit onto the pull request's branch; returns the new head.
    pub fn push_unreviewed(&self, repo: &str, pull: u64) -> Result<String, ForgeError> {
        self.app
            .repos
            .with(repo, |r| case::push_unreviewed(r, pull))
    }

    /// Someone else merges the pull request at its current head (a message without any trailer),
    /// as the merge endpoint would; returns the merge commit.
    pub fn merge_as_other(&self, repo: &str, pull: u64) -> Result<String, ForgeError> {
        let ask = MergeAsk::default();
        let done = self
            .app
            .repos
            .with(repo, |r| pulls::merge(r, pull, &ask, Actor::Other))?;
        done.map_err(|refusal| {
            let reason = match refusal {
                Refusal::NoSuchPull => {
                    return ForgeError::NoSuchPull {
                        repo: repo.to_string(),
                        pull,
                    }
                }
                Refusal::AlreadyMerged => ALREADY_MERGED,
                Refusal::HeadModified => "its head moved",
                Refusal::Conflict => "its head does not merge cleanly",
            };
            ForgeError::NotMerged {
                repo: repo.to_string(),
                pull,
                reason,
            }
        })
    }

    /// An unrelated commit lands on `main` (another file: no conflict); returns it.
    pub fn commit_on_base(&self, repo: &str) -> Result<String, ForgeError> {
        self.app.repos.with(repo, case::commit_on_base)
    }

    /// Injects a fault into the next merge request (`PUT .../merge`) of `repo`'s pull `pull`
    /// (once). The next request naming that pull request takes it whatever its answer; the
    /// faults after the commit strike only when that request makes the merge (a refused request
    /// gets its refusal).
    pub fn set_fault(&self, repo: &str, pull: u64, fault: Fault) {
        self.app.faults.set(repo, pull, fault);
    }

    /// Whether the fault set for `repo`'s pull `pull` still waits: no merge request has taken
    /// it. Once a held request took it, the request is at the service, held.
    pub fn fault_waiting(&self, repo: &str, pull: u64) -> bool {
        self.app.faults.waiting(repo, pull)
    }

    /// Releases the merge request of `repo`'s pull `pull` held by [`Fault::HoldUntilReleased`]
    /// and returns once the service has applied or refused it, with how long it was held;
    /// `None` when no request is held there.
    pub fn release(&self, repo: &str, pull: u64) -> Option<std::time::Duration> {
        self.app.faults.release(repo, pull)
    }

    /// The ground truth of the case, read with git: every update of `main` and of the pull
    /// request's branch after [`Forge::create_case`] returned, in the order git wrote them (from
    /// the reflogs), each merge commit on `main` with the head it merged (its second parent).
    pub fn truth(
        &self,
        repo: &str,
        pull: u64,
        reviewed_head: &str,
        outage_merge: Option<String>,
    ) -> Result<RepoTruth, ForgeError> {
        self.app
            .repos
            .with(repo, |r| truth::read(r, pull, reviewed_head, outage_merge))
    }
}

impl Drop for Forge {
    fn drop(&mut self) {
        if let Some(stop) = self.running.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.running.thread.take() {
            let _ = thread.join();
        }
    }
}

//! What can go wrong on the harness's side: starting, stopping and reading an instance.

use crate::queue::Queued;
use std::path::PathBuf;
use std::time::Duration;

/// What went wrong with a mail host (the server's SMTP answers are the client's business:
/// [`crate::client::SendError`]).
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// Postfix's `postfix` and `master` commands run only as the superuser.
    #[error("Postfix must be started as root (this process runs as user id {0})")]
    NotRoot(u32),
    /// A Postfix command is not installed.
    #[error("the `{0}` command is not installed: install Postfix (apt-get install postfix)")]
    NotInstalled(&'static str),
    /// A system account Postfix needs does not exist.
    #[error("there is no user `{0}` (installing Postfix creates `postfix`; `nobody` is standard)")]
    NoAccount(&'static str),
    /// A directory above the instance's root does not let others search it, so Postfix's
    /// unprivileged processes cannot reach the queue.
    #[error("{}: others may not search it, so Postfix cannot reach the instance (chmod o+x)", .0.display())]
    Unreachable(PathBuf),
    /// An instance is running under the root already.
    #[error("{}: an instance is running there already", .0.display())]
    AlreadyRunning(PathBuf),
    /// A file or directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A command could not be run.
    #[error("cannot run {program}: {source}")]
    Spawn {
        /// The command.
        program: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A Postfix command failed.
    #[error("{command} failed (exit {status:?}): {output}; the instance's log ends: {log}")]
    Command {
        /// The command and its arguments.
        command: String,
        /// Its exit status, if it exited.
        status: Option<i32>,
        /// What it wrote.
        output: String,
        /// The last lines of the instance's log.
        log: String,
    },
    /// No free port could be found on 127.0.0.1.
    #[error("cannot find a free port on 127.0.0.1: {0}")]
    Port(std::io::Error),
    /// The instance did not greet with its own banner in time (another server may hold the
    /// port).
    #[error("the instance on 127.0.0.1:{port} did not greet as itself within {waited:?}: {last}")]
    NotReady {
        /// The port it should listen on.
        port: u16,
        /// How long was waited.
        waited: Duration,
        /// The last thing seen (an error, or another greeting).
        last: String,
    },
    /// The SMTP listener still accepted connections after it was removed.
    #[error(
        "127.0.0.1:{port} still accepts connections {waited:?} after its listener was removed"
    )]
    StillListening {
        /// The port.
        port: u16,
        /// How long was waited.
        waited: Duration,
    },
    /// Processes of the instance were still running after it was stopped and killed.
    #[error("processes {pids:?} of the instance (process group {group}) outlived its stop")]
    Lingering {
        /// The master's process group.
        group: i32,
        /// The processes still running.
        pids: Vec<i32>,
    },
    /// The queue still held messages when the wait ended.
    #[error("the queue still holds {} message(s) after {waited:?} ({}): {left:?}",
        left.len(), if *.running { "the instance is running; see its log" } else { "the instance is stopped" })]
    QueueNotEmpty {
        /// How long was waited.
        waited: Duration,
        /// The messages still queued.
        left: Vec<Queued>,
        /// Whether the instance was running.
        running: bool,
    },
    /// A case name that cannot be a header value here (`A-Z a-z 0-9 . _ -`, 1 to 100).
    #[error("{0:?} is not a valid case name")]
    InvalidCase(String),
}

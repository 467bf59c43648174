//! A run's folder in the system's temp dir outlives no runner, a SIGKILLed one included.
//!
//! The runner removes its run folder on every exit path it sees (the folder is a `TempDir`),
//! but a SIGKILL leaves no path to see. So for each such folder the runner starts a small
//! cleaner (`/bin/sh`, in a process group of its own) that blocks reading a pipe whose write end
//! only the runner holds, for as long as the runner lives. When the runner ends, however it
//! ends, the kernel closes the pipe; the cleaner waits a moment (the run's workers notice their
//! runner's end within a tenth of a second and stop; a mail server's watcher stops it within
//! ten seconds) and removes the folder, which after a normal end is already gone.

use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// The cleaner's script: `$1` the folder, `$2` the seconds to wait once the runner is gone.
const SCRIPT: &str = r#"
read -r _
sleep "$2"
rm -rf -- "$1"
"#;

/// The write ends of the cleaners' pipes, held until this process ends.
static HELD: Mutex<Vec<ChildStdin>> = Mutex::new(Vec::new());

/// Has `dir` removed `after` this process ends, however it ends. A cleaner that cannot be
/// started is said on stderr, and the run goes on (only a SIGKILL would then leave `dir`).
pub(crate) fn remove_when_gone(dir: &Path, after: Duration) {
    use std::os::unix::process::CommandExt;
    let spawned = Command::new("/bin/sh")
        .arg("-c")
        .arg(SCRIPT)
        .arg("interlock-cleaner")
        .arg(dir)
        .arg(after.as_secs().max(1).to_string())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    match spawned {
        // The child is not waited for: it outlives this process by design, and init reaps it.
        Ok(mut child) => {
            if let Some(stdin) = child.stdin.take() {
                HELD.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(stdin);
            }
        }
        Err(e) => eprintln!(
            "runner: cannot start the cleaner of {} ({e}); a SIGKILL of the runner would leave \
             it behind",
            dir.display()
        ),
    }
}

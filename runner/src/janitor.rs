//! A run's folder in the system's temp dir outlives no runner, a SIGKILLed one included.
//!
//! The runner removes its run folder on every exit path it sees (the folder is a `TempDir`),
//! but a SIGKILL leaves no path to see. So for each such folder the runner starts a small
//! cleaner (`/bin/sh`, in a process group of its own) that blocks reading a pipe whose write end
//! only the runner holds, for as long as the runner lives. When the runner ends, however it
//! ends, the kernel closes the pipe; the cleaner waits a moment (the run's workers notice their
//! runner's end within a tenth of a second and stop; a mail server's watcher stops it within
//! ten seconds) and removes the folder. A runner that ends normally tells its cleaners first
//! ([`disarm_cleaners`], from `main`) and waits for them: they end without acting, and none
//! outlives it.

use std::io::Write as _;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// The cleaner's script: `$1` the folder, `$2` the seconds to wait once the runner is gone.
const SCRIPT: &str = r#"
read -r word
[ "$word" = done ] && exit 0
sleep "$2"
rm -rf -- "$1"
"#;

/// The cleaners, with the write ends of their pipes, held until this process ends.
static HELD: Mutex<Vec<(Child, ChildStdin)>> = Mutex::new(Vec::new());

/// Tells every cleaner the runner is ending normally (its folders are removed by their own
/// owners) and waits for them to end. Called by `main` as it returns.
pub fn disarm_cleaners() {
    let held = std::mem::take(
        &mut *HELD
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    for (mut child, mut stdin) in held {
        // A cleaner already gone has nothing to do either way.
        let _ = writeln!(stdin, "done");
        drop(stdin);
        let _ = child.wait();
    }
}

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
        // Waited for only on a normal end ([`disarm_cleaners`]); after a SIGKILL it outlives
        // this process by design, and init reaps it.
        Ok(mut child) => {
            if let Some(stdin) = child.stdin.take() {
                HELD.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((child, stdin));
            }
        }
        Err(e) => eprintln!(
            "runner: cannot start the cleaner of {} ({e}); a SIGKILL of the runner would leave \
             it behind",
            dir.display()
        ),
    }
}

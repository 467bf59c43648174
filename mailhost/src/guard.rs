//! A running instance outlives no owner: a small watcher process stops it when the process that
//! started it is gone.
//!
//! Postfix's master daemon detaches from whoever started it, so a harness killed by SIGKILL (which
//! no cleanup can follow) would leave the instance running for good. After each start, the
//! instance's owner starts a watcher (`/bin/sh`) in a process group of its own (a Ctrl-C to the
//! terminal does not reach it) and holds the write end of its standard input. The watcher blocks
//! reading it. A normal stop first writes `disarm` and the watcher ends without acting; when the
//! owner dies, the kernel closes the pipe, the read ends with nothing, and the watcher sends
//! `SIGTERM` to the master's process group (as `postfix stop` does), then `SIGKILL` to what is
//! left after [`GIVE_UP`]. It signals the group only while its leader is still a process named
//! `master`, so that a process id used again is never signalled.

use crate::error::MailError;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

/// How long the watcher waits for the instance to end after `SIGTERM` before it kills what is
/// left (as [`crate::postfix`]'s stop does).
pub(crate) const GIVE_UP: Duration = Duration::from_secs(10);

/// The word that tells the watcher its owner stopped the instance itself.
const DISARM: &str = "disarm";

/// The watcher's script; `$1` is the master's process id (its process group's too).
const SCRIPT: &str = r#"
read -r word
[ "$word" = disarm ] && exit 0
leader() { [ "$(cat /proc/"$1"/comm 2>/dev/null)" = master ]; }
leader "$1" || exit 0
kill -TERM -"$1" 2>/dev/null
i=0
while [ "$i" -lt "$2" ] && kill -0 -"$1" 2>/dev/null; do
  sleep 0.1
  i=$((i + 1))
done
kill -0 -"$1" 2>/dev/null && kill -KILL -"$1" 2>/dev/null
exit 0
"#;

/// A watcher of one started instance; [`Guard::disarm`] before stopping it.
#[derive(Debug)]
pub(crate) struct Guard {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Guard {
    /// Starts a watcher of the instance whose master is `master`.
    pub(crate) fn watch(master: i32) -> Result<Guard, MailError> {
        let tenths = GIVE_UP.as_millis() / 100;
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(SCRIPT)
            .arg("mailhost-guard")
            .arg(master.to_string())
            .arg(tenths.to_string())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|source| MailError::Spawn {
                program: "/bin/sh (the instance's watcher)".to_owned(),
                source,
            })?;
        let stdin = child.stdin.take();
        Ok(Guard { child, stdin })
    }

    /// Tells the watcher that the owner stops the instance itself, and waits for it to end.
    pub(crate) fn disarm(mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            // a watcher already gone cannot act either way
            let _ = writeln!(stdin, "{DISARM}");
        }
        let _ = self.child.wait();
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Dropped without `disarm` (the owner is unwinding): the closed pipe makes the watcher stop
        // the instance, as it would on the owner's death. Reap it if it is done.
        self.stdin.take();
        let _ = self.child.try_wait();
    }
}

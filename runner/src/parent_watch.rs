//! A worker process stops when the runner that started it is gone.
//!
//! Workers are the runner's children. When the runner dies (a SIGKILL included, which no cleanup
//! can follow), the services its workers talk to die with it (the embedded emulator, the forge),
//! and a worker left running would retry against them for minutes. The kernel re-parents an
//! orphan (to init or the nearest subreaper), so a worker that sees its parent process id change
//! knows the runner is gone. A signal on the parent's death (`PR_SET_PDEATHSIG`) is not used: it
//! follows the thread that spawned the child, and the runner spawns workers from threads that
//! end before the run does.

use std::time::Duration;

/// How often a worker looks at its parent.
const POLL: Duration = Duration::from_millis(100);

/// The exit code of a worker whose runner is gone.
pub const PARENT_GONE_EXIT: i32 = 70;

/// Starts a thread that ends this process with [`PARENT_GONE_EXIT`] (and a line on stderr) once
/// its parent has changed from the one it has now. Call it first thing in a worker.
pub fn exit_when_parent_gone() {
    let parent = rustix::process::getppid();
    let watch = std::thread::Builder::new()
        .name("parent-watch".into())
        .spawn(move || loop {
            std::thread::sleep(POLL);
            if rustix::process::getppid() != parent {
                eprintln!("worker: the runner that started it is gone; stopping");
                std::process::exit(PARENT_GONE_EXIT);
            }
        });
    if let Err(e) = watch {
        eprintln!("worker: cannot watch for the runner's end ({e}); going on without");
    }
}

//! The Postfix commands an instance is run with, and the checks around them: that the instance
//! greets as itself once started, and that none of its processes outlive its stop.

use crate::error::MailError;
use crate::layout::Layout;
use crate::procs;
use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a start may take to answer with the instance's greeting.
pub(crate) const READY_LIMIT: Duration = Duration::from_secs(20);

/// How long the instance's processes may take to end after `postfix stop`, before they are
/// killed.
const STOP_LIMIT: Duration = Duration::from_secs(10);

/// How often the waits here look again.
const POLL: Duration = Duration::from_millis(20);

/// The search path Postfix's commands run with (their environment is otherwise empty).
const PATH: &str = "/usr/sbin:/usr/bin:/sbin:/bin";

/// The `postfix` command, found at start.
#[derive(Debug, Clone)]
pub(crate) struct Postfix {
    program: PathBuf,
}

impl Postfix {
    /// Finds `postfix` on this process's search path or in the system's `sbin` directories.
    pub(crate) fn find() -> Result<Postfix, MailError> {
        let from_env = std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
            .unwrap_or_default();
        let fallback = ["/usr/sbin", "/sbin"].map(PathBuf::from);
        from_env
            .into_iter()
            .chain(fallback)
            .map(|dir| dir.join("postfix"))
            .find(|candidate| candidate.is_file())
            .map(|program| Postfix { program })
            .ok_or(MailError::NotInstalled("postfix"))
    }

    /// `postfix -c <conf> start`: checks the instance, makes the queue's directories, and
    /// returns once the master daemon has bound its sockets.
    pub(crate) fn start(&self, layout: &Layout) -> Result<(), MailError> {
        self.run(layout, "start")
    }

    /// `postfix -c <conf> reload`: the master daemon reads its configuration again (a service
    /// removed from `master.cf` stops at once, one added starts listening). Returns before the
    /// master has acted on it.
    pub(crate) fn reload(&self, layout: &Layout) -> Result<(), MailError> {
        self.run(layout, "reload")
    }

    /// Stops the instance as `postfix stop` does, by sending the master daemon `SIGTERM` (it
    /// passes the signal on to its processes and ends), then waits until no process of the
    /// instance is left, killing them after [`STOP_LIMIT`]. (`postfix stop` itself checks for
    /// the master's end only once a second.)
    pub(crate) fn stop(&self, layout: &Layout) -> Result<(), MailError> {
        let Some(group) = master_pid(layout) else {
            return Ok(());
        };
        if procs::living_in_group(group).is_empty() {
            return Ok(());
        }
        // a pid file outlives its master: signal the group's leader only if it is the master
        if procs::command_name(group).as_deref() != Some("master") {
            return Ok(());
        }
        if let Some(pid) = rustix::process::Pid::from_raw(group) {
            // the master may have ended meanwhile: then the wait below finds nothing left
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        wait_group_gone(group)
    }

    fn run(&self, layout: &Layout, action: &str) -> Result<(), MailError> {
        let conf = layout.conf();
        let out = Command::new(&self.program)
            .arg("-c")
            .arg(&conf)
            .arg(action)
            .env_clear()
            .env("PATH", PATH)
            .env("LANG", "C")
            .stdin(Stdio::null())
            .output()
            .map_err(|source| MailError::Spawn {
                program: self.program.display().to_string(),
                source,
            })?;
        if out.status.success() {
            return Ok(());
        }
        let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
        output.push_str(&String::from_utf8_lossy(&out.stderr));
        Err(MailError::Command {
            command: format!("postfix -c {} {action}", conf.display()),
            status: out.status.code(),
            output: output.trim().to_string(),
            log: log_tail(&layout.log(), 8),
        })
    }
}

/// The master daemon's process id, from its pid file (none when it was never started).
pub(crate) fn master_pid(layout: &Layout) -> Option<i32> {
    let text = std::fs::read_to_string(layout.master_pid()).ok()?;
    procs::parse_pid_file(&text)
}

/// Waits until no living process is left in the master's process group `group`; kills what is
/// left after [`STOP_LIMIT`].
fn wait_group_gone(group: i32) -> Result<(), MailError> {
    if wait_until(STOP_LIMIT, || procs::living_in_group(group).is_empty()) {
        return Ok(());
    }
    if let Some(pid) = rustix::process::Pid::from_raw(group) {
        // the group may have ended meanwhile: then there is nothing to kill
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    if wait_until(Duration::from_secs(2), || {
        procs::living_in_group(group).is_empty()
    }) {
        return Ok(());
    }
    Err(MailError::Lingering {
        group,
        pids: procs::living_in_group(group),
    })
}

/// Polls `done` every [`POLL`] until it holds (true) or `limit` has passed (false).
pub(crate) fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// A port on 127.0.0.1 that was free a moment ago (the system's choice for port 0).
pub(crate) fn free_port() -> Result<u16, MailError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(MailError::Port)?;
    let port = listener.local_addr().map_err(MailError::Port)?.port();
    Ok(port)
}

/// Waits until the server on 127.0.0.1:`port` greets with a banner holding `token` (so it is
/// this instance, not another server that took the port).
pub(crate) fn wait_greeting(port: u16, token: &str) -> Result<(), MailError> {
    let mut last = String::from("no attempt");
    let start = Instant::now();
    let greeted = wait_until(READY_LIMIT, || match greeting(port) {
        Ok(line) if is_own_greeting(&line, token) => true,
        Ok(line) => {
            last = format!("greeted with {line:?}");
            false
        }
        Err(e) => {
            last = e.to_string();
            false
        }
    });
    if greeted {
        return Ok(());
    }
    Err(MailError::NotReady {
        port,
        waited: start.elapsed(),
        last,
    })
}

/// Whether a connection to 127.0.0.1:`port` is accepted now.
pub(crate) fn accepts(port: u16) -> bool {
    TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok()
}

/// The first line the server on `port` sends, after which the session is ended with `QUIT`.
fn greeting(port: u16) -> std::io::Result<String> {
    let stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    // a polite end; the greeting is what was wanted
    let _ = (&stream).write_all(b"QUIT\r\n");
    Ok(line.trim_end().to_string())
}

/// Whether `line` is a `220` greeting whose text holds `token` as a word.
fn is_own_greeting(line: &str, token: &str) -> bool {
    line.strip_prefix("220 ")
        .is_some_and(|text| text.split_whitespace().any(|word| word == token))
}

/// The last `lines` lines of the instance's log, joined with " | " (or why there are none).
pub(crate) fn log_tail(log: &Path, lines: usize) -> String {
    match std::fs::read_to_string(log) {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join(" | ")
        }
        Err(e) => format!("(no log: {e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_220_greeting_with_the_token_as_a_word_is_the_instance() {
        let token = "mh-12-3";
        assert!(is_own_greeting(
            "220 mailhost.interlock.test ESMTP mailhost mh-12-3",
            token
        ));
        assert!(!is_own_greeting(
            "220 mailhost.interlock.test ESMTP mailhost mh-12-34",
            token
        ));
        assert!(!is_own_greeting("554 mh-12-3 no service", token));
        assert!(!is_own_greeting("", token));
    }

    #[test]
    fn the_log_tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("maillog");
        std::fs::write(&log, "a\nb\nc\n").unwrap();
        assert_eq!(log_tail(&log, 2), "b | c");
        assert_eq!(log_tail(&log, 9), "a | b | c");
        assert!(log_tail(&dir.path().join("none"), 2).starts_with("(no log"));
    }

    #[test]
    fn a_wait_ends_when_its_condition_holds_or_at_its_limit() {
        let mut calls = 0;
        assert!(wait_until(Duration::from_secs(5), || {
            calls += 1;
            calls == 3
        }));
        assert_eq!(calls, 3);
        assert!(!wait_until(Duration::ZERO, || false));
    }
}

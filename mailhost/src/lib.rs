//! `mailhost`: the `notify` scenario's service. A private Postfix instance on loopback that
//! accepts mail for one domain and delivers it into one Maildir, and an SMTP client for the
//! worker processes ([`client::send`]).
//!
//! An email handed to a mail server cannot be taken back, a second send is a second email, and
//! the sender has nothing to look a sent one up by. The ground truth of a case
//! ([`MailHost::messages`]) is therefore read from the Maildir's files, after
//! [`MailHost::wait_queue_empty`] has seen every accepted message leave the queue; never from
//! the server's memory or its log.
//!
//! Postfix's `postfix` command runs only as root, so [`MailHost::start`] needs root (the
//! instance's own processes then run as the `postfix` account). The SMTP and Postfix facts this
//! relies on are in `docs/smtp.md`.
//!
//! Reading order: `layout.rs` (where an instance keeps its files), `config.rs` (its `main.cf`
//! and `master.cf`), `postfix.rs` (starting and stopping it), `queue.rs` and `maildir.rs`
//! (reading its state from files), `guard.rs` (the watcher that stops an instance whose owner
//! died), then `client.rs`.

mod accounts;
pub mod client;
mod config;
mod error;
mod guard;
mod layout;
mod maildir;
mod postfix;
mod procs;
mod queue;

pub use config::{DOMAIN, MESSAGE_SIZE_LIMIT};
pub use error::MailError;
pub use maildir::{Delivered, CASE_HEADER};
pub use queue::Queued;

use accounts::Accounts;
use layout::{io, Layout};
use postfix::Postfix;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// A private Postfix instance: its files under one root, its SMTP listener on 127.0.0.1.
/// Stopped when dropped, with none of its processes left.
#[derive(Debug)]
pub struct MailHost {
    layout: Layout,
    postfix: Postfix,
    port: u16,
    /// A word of the instance's greeting no other instance has, so that a start knows it
    /// reached this instance and not another server on the port.
    token: String,
    running: bool,
    /// The watcher that stops the running instance if this process dies first.
    guard: Option<guard::Guard>,
}

/// Instances started by this process so far (part of each instance's token).
static STARTED: AtomicU64 = AtomicU64::new(0);

impl MailHost {
    /// Starts an instance under `root` (made if missing) on a free port of 127.0.0.1, and
    /// returns once it greets as itself. Needs root and Postfix (`apt-get install postfix`).
    ///
    /// The root is made `0755` so the `postfix` account can reach the queue, and every directory
    /// above it must let others search it. Its `conf/` is rewritten; a queue and Maildir left
    /// there by an earlier instance are kept.
    pub fn start(root: &Path) -> Result<MailHost, MailError> {
        let euid = rustix::process::geteuid();
        if !euid.is_root() {
            return Err(MailError::NotRoot(euid.as_raw()));
        }
        let postfix = Postfix::find()?;
        let accounts = Accounts::look_up()?;
        std::fs::create_dir_all(root).map_err(io(root))?;
        let layout = Layout::new(root);
        // its configuration is about to be rewritten: never under a running instance
        if let Some(master) = postfix::master_pid(&layout) {
            if !procs::living_in_group(master).is_empty() {
                return Err(MailError::AlreadyRunning(root.to_path_buf()));
            }
        }
        layout.prepare(&accounts)?;
        let port = postfix::free_port()?;
        let token = format!(
            "mh-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        );
        write(
            &layout.conf().join("main.cf"),
            &config::main_cf(&layout, &accounts, &token),
        )?;
        let mut host = MailHost {
            layout,
            postfix,
            port,
            token,
            running: false,
            guard: None,
        };
        host.restart()?;
        Ok(host)
    }

    /// The port the instance listens on, on 127.0.0.1 (the same across [`MailHost::restart`]).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The instance's root.
    pub fn root(&self) -> &Path {
        self.layout.root()
    }

    /// The instance's log file (Postfix's own log lines; for diagnosis, never the truth).
    pub fn log_path(&self) -> PathBuf {
        self.layout.log()
    }

    /// Whether the instance is running (started and not stopped since).
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// The master daemon's process id, while it has a pid file (for diagnosis and tests: every
    /// process of the instance is in the process group it leads).
    pub fn master_pid(&self) -> Option<i32> {
        postfix::master_pid(&self.layout)
    }

    /// Stops the instance (an outage: connections to its port are refused) and waits until
    /// none of its processes is left. Its queue and Maildir stay; [`MailHost::restart`] brings
    /// it back. Stopping a stopped instance does nothing.
    ///
    /// A delivery in progress is cut too, and Postfix delivers at least once: a message whose
    /// Maildir file was written just before the stop, but not yet marked done in the queue, is
    /// delivered again after the restart. For an outage that leaves delivery alone, use
    /// [`MailHost::refuse_connections`].
    pub fn stop(&mut self) -> Result<(), MailError> {
        if !self.running {
            return Ok(());
        }
        self.running = false;
        if let Some(guard) = self.guard.take() {
            guard.disarm();
        }
        self.postfix.stop(&self.layout)
    }

    /// Starts the stopped instance again on the same port, listening, with the queue and
    /// Maildir it had (messages accepted before the stop are delivered after). Fails if another
    /// program took the port meanwhile.
    pub fn restart(&mut self) -> Result<(), MailError> {
        if self.running {
            return Ok(());
        }
        self.write_master_cf(true)?;
        self.postfix.start(&self.layout)?;
        self.running = true;
        let watched = postfix::master_pid(&self.layout)
            .map(guard::Guard::watch)
            .transpose();
        match watched {
            Ok(guard) => self.guard = guard,
            Err(e) => {
                let _ = self.stop();
                return Err(e);
            }
        }
        if let Err(e) = postfix::wait_greeting(self.port, &self.token) {
            // do not leave a half-started instance behind; the greeting's failure is the news
            let _ = self.stop();
            return Err(e);
        }
        Ok(())
    }

    /// Closes the SMTP listener of the running instance while the rest of it runs on (an outage of the
    /// front door only: messages already accepted are still delivered, and a session in
    /// progress is cut). Returns once connections to the port are refused;
    /// [`MailHost::accept_connections`] opens it again.
    pub fn refuse_connections(&mut self) -> Result<(), MailError> {
        self.write_master_cf(false)?;
        self.postfix.reload(&self.layout)?;
        let port = self.port;
        let start = Instant::now();
        if postfix::wait_until(postfix::READY_LIMIT, || !postfix::accepts(port)) {
            return Ok(());
        }
        Err(MailError::StillListening {
            port,
            waited: start.elapsed(),
        })
    }

    /// Opens the SMTP listener closed by [`MailHost::refuse_connections`] again; returns once
    /// the instance greets as itself on its port.
    pub fn accept_connections(&mut self) -> Result<(), MailError> {
        self.write_master_cf(true)?;
        self.postfix.reload(&self.layout)?;
        postfix::wait_greeting(self.port, &self.token)
    }

    /// Writes `master.cf`, with the SMTP listener or without it.
    fn write_master_cf(&self, listen: bool) -> Result<(), MailError> {
        let path = self.layout.conf().join("master.cf");
        write(&path, &config::master_cf(self.port, listen))
    }

    /// The messages delivered into the Maildir whose [`CASE_HEADER`] is `case`, read from the
    /// files, in delivery order. Read after [`MailHost::wait_queue_empty`]: a message accepted
    /// but still queued is not here yet.
    pub fn messages(&self, case: &str) -> Result<Vec<Delivered>, MailError> {
        if !maildir::is_case_name(case) {
            return Err(MailError::InvalidCase(case.to_string()));
        }
        maildir::read(&self.layout.inbox(), case)
    }

    /// The messages in the queue now, read from the queue's directories: accepted and not yet
    /// delivered, or still being received.
    pub fn queued(&self) -> Result<Vec<Queued>, MailError> {
        queue::list(&self.layout.queue())
    }

    /// Waits until the queue holds no message (every accepted message delivered, every
    /// unfinished one discarded), looking at the queue's directories; fails after `limit`
    /// naming what is left.
    pub fn wait_queue_empty(&self, limit: Duration) -> Result<(), MailError> {
        let start = Instant::now();
        let mut failure = None;
        let empty = postfix::wait_until(limit, || match queue::is_empty(&self.layout.queue()) {
            Ok(empty) => empty,
            Err(e) => {
                failure = Some(e);
                true
            }
        });
        if let Some(e) = failure {
            return Err(e);
        }
        if empty {
            return Ok(());
        }
        Err(MailError::QueueNotEmpty {
            waited: start.elapsed(),
            left: self.queued()?,
            running: self.running,
        })
    }
}

impl Drop for MailHost {
    fn drop(&mut self) {
        // nothing to report to: stop waits for the processes and kills what is left
        let _ = self.stop();
    }
}

/// Writes `text` to `path` (the instance's own configuration files, read by Postfix at start),
/// dated a minute back: Postfix waits until a configuration file is more than a second old
/// before it reads it (a file that new may still be being edited), which would add two seconds
/// to every first start.
fn write(path: &Path, text: &str) -> Result<(), MailError> {
    std::fs::write(path, text).map_err(io(path))?;
    let a_minute_ago = SystemTime::now() - Duration::from_secs(60);
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .map_err(io(path))?;
    file.set_modified(a_minute_ago).map_err(io(path))
}

//! A mail host in a temporary root, messages for it, and a raw SMTP session.

use mailhost::client::{self, Accepted, Email, SendError};
use mailhost::{Delivered, MailError, MailHost};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

/// How long a client waits for each answer.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a test waits for the queue to drain.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// A running mail host in a temporary root (dropped in field order: the host stops first).
pub struct Host {
    pub host: MailHost,
    pub _root: tempfile::TempDir,
}

impl Host {
    /// A mail host on a fresh root; `None` (the test says it was skipped, and passes) when
    /// Postfix is not installed or this is not root, outside CI. Under CI (`CI` set) a missing
    /// Postfix fails the test: `.ci/run` installs it.
    pub fn start() -> Option<Host> {
        let root = tempfile::tempdir().expect("a temporary directory");
        match MailHost::start(root.path()) {
            Ok(host) => Some(Host { host, _root: root }),
            Err(e @ (MailError::NotInstalled(_) | MailError::NotRoot(_)))
                if std::env::var_os("CI").is_none() =>
            {
                eprintln!("skipped: {e}");
                None
            }
            Err(e) => panic!("the mail host does not start: {e}"),
        }
    }

    /// Sends `email` with the worker's client.
    pub fn send(&self, email: &Email) -> Result<Accepted, SendError> {
        client::send("127.0.0.1", self.host.port(), email, CLIENT_TIMEOUT)
    }

    /// The case's messages once the queue has drained.
    pub fn delivered(&self, case: &str) -> Vec<Delivered> {
        self.host
            .wait_queue_empty(DRAIN_LIMIT)
            .expect("the queue drains");
        self.host.messages(case).expect("the Maildir reads")
    }

    /// A raw SMTP session with the host, greeted.
    pub fn session(&self) -> Session {
        Session::open(self.host.port())
    }
}

/// The refund notice of `case`, number `n`.
pub fn email(case: &str, n: u32) -> Email {
    Email {
        from: "agent@interlock.test".into(),
        to: "customer@interlock.test".into(),
        subject: "Your refund is on its way".into(),
        body: format!("Hello,\nthe refund of order {n} is on its way.\n"),
        case: case.into(),
        message_id: format!("refund-{case}-{n}@interlock.test"),
    }
}

/// An SMTP session written by hand, line by line.
pub struct Session {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Session {
    /// Connects to 127.0.0.1:`port` and reads the greeting.
    pub fn open(port: u16) -> Session {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connects");
        stream.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        let mut session = Session { stream, reader };
        assert_eq!(session.reply(), 220);
        session
    }

    /// Sends `line` and returns the reply's code.
    pub fn command(&mut self, line: &str) -> u16 {
        self.write(&format!("{line}\r\n"));
        self.reply()
    }

    /// EHLO, MAIL, RCPT and DATA for `case`'s message, each answered as it should be.
    pub fn begin(&mut self) {
        assert_eq!(self.command("EHLO worker.interlock.test"), 250);
        assert_eq!(self.command("MAIL FROM:<agent@interlock.test>"), 250);
        assert_eq!(self.command("RCPT TO:<customer@interlock.test>"), 250);
        assert_eq!(self.command("DATA"), 354);
    }

    /// Writes raw bytes.
    pub fn write(&mut self, text: &str) {
        self.stream.write_all(text.as_bytes()).expect("writes");
    }

    /// Reads one reply (all its lines) and returns its code.
    pub fn reply(&mut self) -> u16 {
        loop {
            let mut line = String::new();
            let n = self.reader.read_line(&mut line).expect("reads a reply");
            assert!(n > 0, "the server closed the connection");
            let code = line.get(..3).and_then(|c| c.parse().ok()).expect("a code");
            if line.as_bytes().get(3) != Some(&b'-') {
                return code;
            }
        }
    }
}

/// The header and first lines of a message of `case`, as a client writes them after DATA.
pub fn message_start(case: &str) -> String {
    format!(
        "From: agent@interlock.test\r\nTo: customer@interlock.test\r\n\
         X-Interlock-Case: {case}\r\nSubject: Your refund\r\n\r\nHello,\r\n"
    )
}

/// The processes of process group `group` that are alive, from `/proc`.
pub fn living_in_group(group: i32) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2) == Some(&group.to_string().as_str()) && fields[0] != "Z" {
            pids.push(pid);
        }
    }
    pids
}

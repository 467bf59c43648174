//! One case on a running forge, git read directly (not through the forge), and raw HTTP.

use forge::client::Client;
use forge::{Forge, Pull};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A forge with one case in a temporary root.
pub struct Case {
    pub forge: Forge,
    pub name: String,
    pub pull: Pull,
    root: tempfile::TempDir,
}

impl Case {
    /// A forge and the case `case-1`.
    pub fn new() -> Case {
        let root = tempfile::tempdir().expect("a temporary directory");
        let forge = Forge::start(root.path()).expect("the forge starts");
        let name = "case-1".to_string();
        let pull = forge.create_case(&name).expect("the case is created");
        Case {
            forge,
            name,
            pull,
            root,
        }
    }

    /// A client of the case's repository with `timeout`.
    pub fn client(&self, timeout: Duration) -> Client {
        Client::new(&self.forge.url(), &self.name, timeout).expect("a client")
    }

    /// The case's bare repository.
    pub fn git_dir(&self) -> PathBuf {
        self.root.path().join(format!("{}.git", self.name))
    }

    /// `git args` in the case's repository, with no user configuration; its trimmed output.
    pub fn git(&self, args: &[&str]) -> String {
        self.git_with_input(args, b"")
    }

    /// `git args` fed `input`, as [`Case::git`].
    pub fn git_with_input(&self, args: &[&str], input: &[u8]) -> String {
        let mut child = Command::new("git")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "test")
            .env("GIT_AUTHOR_EMAIL", "test@forge.invalid")
            .env("GIT_COMMITTER_NAME", "test")
            .env("GIT_COMMITTER_EMAIL", "test@forge.invalid")
            .arg(format!("--git-dir={}", self.git_dir().display()))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("git runs");
        child
            .stdin
            .take()
            .expect("a stdin")
            .write_all(input)
            .expect("input written");
        let out = child.wait_with_output().expect("git ends");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout)
            .expect("UTF-8")
            .trim()
            .to_string()
    }

    /// The commit `main` points at, read with git.
    pub fn main(&self) -> String {
        self.git(&["rev-parse", "refs/heads/main"])
    }

    /// The parents of `commit`, read with git.
    pub fn parents(&self, commit: &str) -> Vec<String> {
        self.git(&["show", "-s", "--format=%P", commit])
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }

    /// Waits until `main` is not `old` (at most `limit`); the new commit.
    pub fn wait_main_moves(&self, old: &str, limit: Duration) -> Option<String> {
        let start = Instant::now();
        while start.elapsed() < limit {
            let now = self.main();
            if now != old {
                return Some(now);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// A raw HTTP/1.1 request to the forge: status, headers (lowercase names) and body.
    pub fn http(&self, method: &str, path: &str, body: &str) -> Answer {
        let addr = self.forge.url().trim_start_matches("http://").to_string();
        let mut tcp = std::net::TcpStream::connect(&addr).expect("connects");
        tcp.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("a timeout");
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        tcp.write_all(request.as_bytes()).expect("sent");
        let mut raw = String::new();
        tcp.read_to_string(&mut raw).expect("an answer");
        let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .expect("a status line");
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        Answer {
            status,
            headers,
            body: serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
        }
    }
}

/// A raw answer.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

impl Answer {
    /// Header `name` (lowercase), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

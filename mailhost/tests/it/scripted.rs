//! A scripted SMTP server on loopback for the client's tests: it answers every command as a
//! server that accepts would, and ends the one session as its script says.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::JoinHandle;

/// How the session ends.
#[derive(Debug, Clone, Copy)]
pub enum Ending {
    /// Close the connection right after the greeting.
    CloseAfterGreeting,
    /// Answer `RCPT` with this reply.
    AnswerRcpt(&'static str),
    /// Close the connection after `354`, before reading the message.
    CloseAfterDataCommand,
    /// Read the message up to its final `.`, then answer this.
    AnswerMessage(&'static str),
    /// Read the message up to its final `.`, then close without an answer.
    CloseAfterMessage,
    /// Read the message up to its final `.`, then say nothing until the client leaves.
    SilentAfterMessage,
}

/// A server for one session; its thread returns the message text it read.
pub struct Scripted {
    pub port: u16,
    thread: JoinHandle<String>,
}

impl Scripted {
    /// Listens on 127.0.0.1 and serves one session ending as `ending`.
    pub fn start(ending: Ending) -> Scripted {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let thread = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            serve(stream, ending)
        });
        Scripted { port, thread }
    }

    /// The message text the server read (up to, not with, the final `.`).
    pub fn finish(self) -> String {
        self.thread.join().unwrap()
    }
}

fn serve(mut stream: TcpStream, ending: Ending) -> String {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let say = |stream: &mut TcpStream, line: &str| {
        // the client may be gone already; what it saw is the test's business
        let _ = stream.write_all(format!("{line}\r\n").as_bytes());
    };
    say(&mut stream, "220 scripted ESMTP");
    if let Ending::CloseAfterGreeting = ending {
        return String::new();
    }
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return String::new();
        }
        let verb = line.get(..4).unwrap_or("").to_ascii_uppercase();
        match verb.as_str() {
            "EHLO" => say(&mut stream, "250-scripted\r\n250 8BITMIME"),
            "MAIL" => say(&mut stream, "250 2.1.0 Ok"),
            "RCPT" => match ending {
                Ending::AnswerRcpt(reply) => say(&mut stream, reply),
                _ => say(&mut stream, "250 2.1.5 Ok"),
            },
            "DATA" => break,
            _ => say(&mut stream, "502 5.5.2 not in this script"),
        }
    }
    if let Ending::CloseAfterDataCommand = ending {
        say(&mut stream, "354 go ahead");
        return String::new();
    }
    say(&mut stream, "354 go ahead");
    let mut message = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return message;
        }
        if line == ".\r\n" {
            break;
        }
        message.push_str(&line);
    }
    match ending {
        Ending::AnswerMessage(reply) => say(&mut stream, reply),
        Ending::SilentAfterMessage => {
            // hold the connection until the client gives up and closes it
            line.clear();
            let _ = reader.read_line(&mut line);
        }
        _ => {}
    }
    message
}

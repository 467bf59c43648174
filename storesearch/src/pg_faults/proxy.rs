//! The fault-injecting proxy on loopback between one gate and the server: it accepts the gate's
//! connections, tells its main and claims sessions apart, counts their round trips, and faults
//! the ones its [`Schedule`] names. Plain threads, two per connection (one per direction).

use super::faults::{Fired, Schedule};
use super::link::{self, Link};
use super::statements::Session;
use anyhow::Context;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the proxy's threads share.
pub(super) struct Shared {
    /// The server.
    pub upstream: SocketAddr,
    /// The gate's faults and round-trip counts.
    pub schedule: Mutex<Schedule>,
    /// Set when the proxy stops: no new connection is served.
    pub stopping: AtomicBool,
    /// Every connection served, to close them when the proxy stops.
    pub links: Mutex<Vec<Weak<Link>>>,
    /// Every thread started, to join them.
    pub threads: Mutex<Vec<JoinHandle<()>>>,
    /// Streams the proxy could not read as PostgreSQL's protocol (a finding about the proxy,
    /// reported with the run).
    pub misread: Mutex<Vec<String>>,
}

impl Shared {
    /// The schedule (a thread that panicked while holding it left nothing half-done that matters).
    pub fn schedule(&self) -> MutexGuard<'_, Schedule> {
        self.schedule.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Note a stream that could not be read.
    pub fn misread(&self, what: String) {
        self.misread
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(what);
    }
}

/// A running proxy.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

/// What a stopped proxy saw.
#[derive(Debug)]
pub struct Seen {
    /// The faults that struck, in order.
    pub fired: Vec<Fired>,
    /// Streams it could not read as PostgreSQL's protocol.
    pub misread: Vec<String>,
    /// How many round trips the gate's sessions made through it.
    pub round_trips: u32,
}

impl Proxy {
    /// Listen on a free loopback port and forward each connection to `upstream`, faulting the
    /// round trips `schedule` names.
    pub fn start(upstream: SocketAddr, schedule: Schedule) -> anyhow::Result<Proxy> {
        let listener =
            TcpListener::bind(("127.0.0.1", 0)).context("could not listen on a loopback port")?;
        let addr = listener
            .local_addr()
            .context("could not read the proxy's address")?;
        let shared = Arc::new(Shared {
            upstream,
            schedule: Mutex::new(schedule),
            stopping: AtomicBool::new(false),
            links: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
            misread: Mutex::new(Vec::new()),
        });
        let accept = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("pg-faults-accept".into())
                .spawn(move || accept_loop(&listener, &shared))
                .context("could not start the proxy's thread")?
        };
        Ok(Proxy {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The loopback port the gate connects to.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Stop: accept nothing more, close every connection, join every thread, and tell what
    /// was seen.
    pub fn stop(mut self) -> Seen {
        self.shutdown();
        let schedule = self.shared.schedule();
        Seen {
            fired: schedule.fired().to_vec(),
            round_trips: schedule.round_trips(Session::Main)
                + schedule.round_trips(Session::Claims),
            misread: self
                .shared
                .misread
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }

    fn shutdown(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the accepting thread: it sees `stopping` on the next connection.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let links: Vec<Weak<Link>> = self
            .shared
            .links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        for l in links.iter().filter_map(Weak::upgrade) {
            l.close(link::Close::Fin);
        }
        let threads: Vec<JoinHandle<()>> = self
            .shared
            .threads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if self.accept.is_some() {
            self.shutdown();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = stream else {
            continue;
        };
        let for_thread = Arc::clone(shared);
        let spawned = std::thread::Builder::new()
            .name("pg-faults-link".into())
            .spawn(move || link::serve(client, &for_thread));
        if let Ok(handle) = spawned {
            shared
                .threads
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(handle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::faults::{Action, At, FaultSpec, Then};
    use super::super::wire::{self, Framer, Message};
    use super::*;
    use std::io::{ErrorKind, Read, Write};
    use std::sync::mpsc;
    use std::time::Instant;

    /// A server that speaks just enough of the protocol: it accepts one connection, answers
    /// the startup, and answers each Query; it reports every query it ran, then how the
    /// connection ended.
    fn fake_server() -> (SocketAddr, mpsc::Receiver<String>) {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut f = Framer::client();
            let mut buf = [0u8; 4096];
            loop {
                while let Some(m) = f.next_message().unwrap() {
                    let reply = match m.tag {
                        None => {
                            [wire::typed(b'R', &[0, 0, 0, 0]), wire::typed(b'Z', b"I")].concat()
                        }
                        Some(b'Q') => {
                            let _ = tx.send(format!("{:?}", wire::statement(&m)));
                            [wire::typed(b'C', b"SELECT 1\0"), wire::typed(b'Z', b"I")].concat()
                        }
                        _ => Vec::new(),
                    };
                    if s.write_all(&reply).is_err() {
                        let _ = tx.send("write failed".into());
                        return;
                    }
                }
                match s.read(&mut buf) {
                    Ok(0) => {
                        let _ = tx.send("end".into());
                        return;
                    }
                    Ok(n) => f.push(&buf[..n]),
                    Err(e) => {
                        let _ = tx.send(format!("error {:?}", e.kind()));
                        return;
                    }
                }
            }
        });
        (addr, rx)
    }

    /// Read server messages until a ReadyForQuery (`Ok(true)`), the end of the stream
    /// (`Ok(false)`) or an error.
    fn until_ready(c: &mut TcpStream, f: &mut Framer) -> std::io::Result<bool> {
        let mut buf = [0u8; 4096];
        loop {
            while let Some(Message { tag, .. }) = f.next_message().unwrap() {
                if tag == Some(b'Z') {
                    return Ok(true);
                }
            }
            match c.read(&mut buf)? {
                0 => return Ok(false),
                n => f.push(&buf[..n]),
            }
        }
    }

    fn startup() -> Vec<u8> {
        wire::untyped(
            196_608,
            b"user\0u\0application_name\0interlock-claims s\0\0",
        )
    }

    fn query(sql: &str) -> Vec<u8> {
        wire::typed(b'Q', format!("{sql}\0").as_bytes())
    }

    /// A proxy whose one fault strikes the claims session's `nth` round trip (the startup is
    /// the first), and a connected client past its startup.
    fn through(
        nth: u32,
        at: At,
        action: Action,
    ) -> (Proxy, TcpStream, Framer, mpsc::Receiver<String>) {
        let (server, seen) = fake_server();
        let spec = FaultSpec {
            session: Session::Claims,
            class: None,
            nth,
            at,
            action,
            then_other: None,
        };
        let proxy = Proxy::start(server, Schedule::new('A', vec![spec])).unwrap();
        let mut c = TcpStream::connect(("127.0.0.1", proxy.port())).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(&startup()).unwrap();
        let mut f = Framer::server();
        assert!(until_ready(&mut c, &mut f).unwrap());
        (proxy, c, f, seen)
    }

    #[test]
    fn unfaulted_round_trips_pass_and_are_counted() {
        let (proxy, mut c, mut f, seen) = through(99, At::Request, Action::Drop);
        for n in 0..3 {
            c.write_all(&query(&format!("SELECT {n}"))).unwrap();
            assert!(until_ready(&mut c, &mut f).unwrap());
        }
        drop(c);
        let got = proxy.stop();
        assert!(got.fired.is_empty());
        assert_eq!(got.round_trips, 4, "the startup and three queries");
        assert_eq!(seen.iter().take(3).count(), 3);
    }

    #[test]
    fn a_dropped_request_never_reaches_the_server() {
        let (proxy, mut c, mut f, seen) = through(3, At::Request, Action::Drop);
        c.write_all(&query("SELECT 1")).unwrap();
        assert!(until_ready(&mut c, &mut f).unwrap());
        c.write_all(&query("SELECT 2")).unwrap();
        assert!(
            !until_ready(&mut c, &mut f).unwrap(),
            "the client reads the end"
        );
        let got = proxy.stop();
        assert_eq!(got.fired.len(), 1);
        assert_eq!(got.fired[0].what, "A.claims round-trip#3 request: drop");
        let server_saw: Vec<String> = seen.iter().collect();
        assert_eq!(server_saw.len(), 2, "{server_saw:?}");
        assert!(server_saw[0].contains("SELECT 1"));
        assert_eq!(server_saw[1], "end");
    }

    #[test]
    fn a_reset_reaches_both_sides_as_a_reset() {
        let (proxy, mut c, mut f, seen) = through(2, At::Request, Action::Reset);
        c.write_all(&query("SELECT 1")).unwrap();
        let read = until_ready(&mut c, &mut f);
        assert_eq!(read.map_err(|e| e.kind()), Err(ErrorKind::ConnectionReset));
        assert_eq!(
            seen.recv().unwrap(),
            format!("error {:?}", ErrorKind::ConnectionReset)
        );
        proxy.stop();
    }

    #[test]
    fn a_session_lost_after_its_answer_gives_the_answer_and_ends_at_the_next_request() {
        let (proxy, mut c, mut f, seen) = through(2, At::After, Action::Drop);
        c.write_all(&query("SELECT 1")).unwrap();
        assert!(until_ready(&mut c, &mut f).unwrap(), "the answer arrives");
        assert!(seen.recv().unwrap().contains("SELECT 1"));
        assert_eq!(seen.recv().unwrap(), "end", "the server's session ended");
        c.write_all(&query("SELECT 2")).unwrap();
        assert!(
            !until_ready(&mut c, &mut f).unwrap(),
            "the client learns it next"
        );
        proxy.stop();
    }

    #[test]
    fn a_lost_answer_ran_at_the_server() {
        let (proxy, mut c, mut f, seen) = through(2, At::Answer, Action::Drop);
        c.write_all(&query("SELECT 1")).unwrap();
        assert!(!until_ready(&mut c, &mut f).unwrap());
        assert!(seen.recv().unwrap().contains("SELECT 1"));
        proxy.stop();
    }

    #[test]
    fn a_delay_and_a_resumed_partition_hold_a_round_trip_and_lose_nothing() {
        for action in [Action::Delay(150), Action::Partition(150, Then::Resume)] {
            for at in [At::Request, At::Answer] {
                let (proxy, mut c, mut f, _seen) = through(2, at, action);
                let started = Instant::now();
                c.write_all(&query("SELECT 1")).unwrap();
                assert!(until_ready(&mut c, &mut f).unwrap());
                assert!(
                    started.elapsed() >= Duration::from_millis(150),
                    "{action} at {at:?}"
                );
                c.write_all(&query("SELECT 2")).unwrap();
                assert!(until_ready(&mut c, &mut f).unwrap());
                assert_eq!(proxy.stop().fired.len(), 1);
            }
        }
    }
}

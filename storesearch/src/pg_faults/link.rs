//! One proxied connection: the gate's socket, the server's, and the two directions between
//! them. The client's messages are held until their round trip ends (a Sync or a Query), so
//! a fault decides the fate of a whole request; the server's answer to a faulted round trip is
//! held until its ReadyForQuery.

use super::faults::{Action, At, Planned, Then};
use super::proxy::Shared;
use super::statements::{round_trip_class, Class, Session, StepOf};
use super::wire::{self, Framer, Message};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a new connection may take to send its startup packet, and the server to accept.
const STARTUP_WAIT: Duration = Duration::from_secs(5);

/// How a connection is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Close {
    /// An orderly close: each side reads the end of the stream.
    Fin,
    /// A reset: each side gets an RST.
    Rst,
}

#[derive(Default)]
struct LinkState {
    closed: bool,
    /// While set and in the future, nothing is forwarded either way (a partition).
    held_until: Option<Instant>,
    /// Faults that strike the answer of a round trip, by its number on this connection.
    answer_faults: HashMap<u64, Planned>,
    /// The server's side was closed under a live client (how): the client learns it when it
    /// next sends.
    server_gone: Option<Close>,
}

/// A connection between the gate and the server, through the proxy.
pub struct Link {
    client: TcpStream,
    server: TcpStream,
    session: Session,
    state: Mutex<LinkState>,
    changed: Condvar,
}

/// Whether a direction goes on forwarding.
enum Go {
    On,
    Stop,
}

impl Link {
    fn state(&self) -> MutexGuard<'_, LinkState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Close both sides (once); wakes every wait of both directions.
    pub fn close(&self, how: Close) {
        {
            let mut st = self.state();
            if st.closed {
                return;
            }
            st.closed = true;
        }
        self.changed.notify_all();
        for s in [&self.server, &self.client] {
            close_socket(s, how);
        }
    }

    /// Wait `ms` (false if the connection was closed meanwhile).
    fn sleep(&self, ms: u64) -> bool {
        let until = Instant::now() + Duration::from_millis(ms);
        let mut st = self.state();
        while !st.closed {
            let now = Instant::now();
            if now >= until {
                return true;
            }
            st = self
                .changed
                .wait_timeout(st, until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        false
    }

    /// Forward nothing either way for `ms`, then return (false if closed meanwhile). The hold
    /// stays until [`Link::resume`].
    fn hold(&self, ms: u64) -> bool {
        self.state().held_until = Some(Instant::now() + Duration::from_millis(ms));
        self.sleep(ms)
    }

    /// End a hold.
    fn resume(&self) {
        self.state().held_until = None;
        self.changed.notify_all();
    }

    /// Wait while a hold lasts (false if the connection is closed).
    fn wait_open(&self) -> bool {
        let mut st = self.state();
        loop {
            if st.closed {
                return false;
            }
            let Some(until) = st.held_until else {
                return true;
            };
            let now = Instant::now();
            // A hold whose instant passed lasts until it is ended: the direction that began
            // it decides between closing and resuming.
            let wait = if until > now {
                until - now
            } else {
                Duration::from_millis(5)
            };
            st = self
                .changed
                .wait_timeout(st, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Write to one side, once no hold stops it.
    fn send(&self, to: &TcpStream, bytes: &[u8]) -> Go {
        if bytes.is_empty() {
            return Go::On;
        }
        if !self.wait_open() {
            return Go::Stop;
        }
        let mut w = to;
        if w.write_all(bytes).is_err() {
            self.close(Close::Fin);
            return Go::Stop;
        }
        Go::On
    }

    /// Carry out `action` on this connection; `deliver` is written to `to` if the connection
    /// goes on.
    fn strike(&self, action: Action, to: &TcpStream, deliver: &[u8]) -> Go {
        match action {
            Action::Drop => {
                self.close(Close::Fin);
                Go::Stop
            }
            Action::Reset => {
                self.close(Close::Rst);
                Go::Stop
            }
            Action::Delay(ms) => {
                if !self.sleep(ms) {
                    return Go::Stop;
                }
                self.send(to, deliver)
            }
            Action::Partition(ms, then) => {
                if !self.hold(ms) {
                    return Go::Stop;
                }
                match then {
                    Then::Close => {
                        self.close(Close::Fin);
                        Go::Stop
                    }
                    Then::Resume => {
                        self.resume();
                        self.send(to, deliver)
                    }
                }
            }
        }
    }
}

/// Close one socket: a FIN (shutdown), or an RST (a disconnect, which resets an established
/// connection) followed by a shutdown that wakes this side's reader.
fn close_socket(s: &TcpStream, how: Close) {
    if how == Close::Rst {
        let _ = rustix::net::connect_unspec(s);
    }
    let _ = s.shutdown(Shutdown::Both);
}

/// Serve one connection of the gate until either side closes it.
pub(super) fn serve(client: TcpStream, shared: &Arc<Shared>) {
    let _ = client.set_nodelay(true);
    let _ = client.set_read_timeout(Some(STARTUP_WAIT));
    let mut framer = Framer::client();
    let Some(startup) = read_startup(&client, &mut framer) else {
        return;
    };
    let app = wire::startup_params(&startup)
        .into_iter()
        .find(|(k, _)| k == "application_name")
        .map(|(_, v)| v);
    let session = Session::of_application(app.as_deref());
    let planned = shared
        .schedule()
        .round_trip(session, Class::Connect, StepOf::Run);
    if let Some(planned) = planned {
        shared.schedule().fire(planned);
        if !survives_connect_fault(&client, planned.action) {
            return;
        }
    }
    let Ok(server) = TcpStream::connect_timeout(&shared.upstream, STARTUP_WAIT) else {
        close_socket(&client, Close::Fin);
        return;
    };
    let _ = server.set_nodelay(true);
    let _ = client.set_read_timeout(None);
    let link = Arc::new(Link {
        client,
        server,
        session,
        state: Mutex::new(LinkState::default()),
        changed: Condvar::new(),
    });
    {
        let mut links = shared.links.lock().unwrap_or_else(|p| p.into_inner());
        if shared.stopping.load(Ordering::SeqCst) {
            link.close(Close::Fin);
            return;
        }
        links.push(Arc::downgrade(&link));
    }
    std::thread::scope(|s| {
        s.spawn(|| server_to_client(&link, shared));
        client_to_server(&link, shared, framer, &startup);
    });
}

/// Read the client's startup packet, refusing encryption requests (the proxy reads the
/// stream, so it must stay in clear; the client then goes on without).
fn read_startup(client: &TcpStream, framer: &mut Framer) -> Option<Message> {
    let mut buf = [0u8; 4096];
    let mut r = client;
    loop {
        match framer.next_message() {
            Ok(Some(m)) => match m.startup_code() {
                Some(wire::SSL_REQUEST | wire::GSSENC_REQUEST) => {
                    let mut w = client;
                    w.write_all(b"N").ok()?;
                }
                _ => return Some(m),
            },
            Ok(None) => {
                let n = r.read(&mut buf).ok()?;
                if n == 0 {
                    return None;
                }
                framer.push(&buf[..n]);
            }
            Err(_) => return None,
        }
    }
}

/// A fault at the connection's startup, before the server is reached: whether the connection
/// goes on.
fn survives_connect_fault(client: &TcpStream, action: Action) -> bool {
    let close = |how| {
        close_socket(client, how);
        false
    };
    match action {
        Action::Drop => close(Close::Fin),
        Action::Reset => close(Close::Rst),
        Action::Delay(ms) | Action::Partition(ms, Then::Resume) => {
            std::thread::sleep(Duration::from_millis(ms));
            true
        }
        Action::Partition(ms, Then::Close) => {
            std::thread::sleep(Duration::from_millis(ms));
            close(Close::Fin)
        }
    }
}

/// The client's side: forward its messages a round trip at a time, faulting the ones the
/// schedule names.
fn client_to_server(link: &Link, shared: &Shared, mut framer: Framer, startup: &Message) {
    if let Go::Stop = link.send(&link.server, &startup.raw) {
        return;
    }
    let mut pending: Vec<Message> = Vec::new();
    let mut prepared: HashMap<String, Class> = HashMap::new();
    // Round trips of this connection; 0 is the startup.
    let mut number: u64 = 0;
    let mut buf = vec![0u8; 16 * 1024];
    let mut r = &link.client;
    loop {
        loop {
            let m = match framer.next_message() {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => {
                    shared.misread(format!("from the gate: {e}"));
                    link.close(Close::Fin);
                    return;
                }
            };
            let Some(tag) = m.tag else {
                continue;
            };
            let ends = m.ends_round_trip() || tag == b'F';
            let now = matches!(tag, b'X' | b'H' | b'p' | b'd' | b'c' | b'f');
            pending.push(m);
            if !(ends || now) {
                continue;
            }
            let bytes: Vec<u8> = pending.iter().flat_map(|m| m.raw.iter().copied()).collect();
            let go = if ends {
                number += 1;
                let (class, step) = round_trip_class(&pending, &mut prepared);
                let planned = shared.schedule().round_trip(link.session, class, step);
                request_round_trip(link, shared, number, planned, &bytes)
            } else {
                link.send(&link.server, &bytes)
            };
            pending.clear();
            if let Go::Stop = go {
                return;
            }
        }
        match r.read(&mut buf) {
            Ok(n) if n > 0 => framer.push(&buf[..n]),
            _ => {
                link.close(Close::Fin);
                return;
            }
        }
        let gone = link.state().server_gone;
        if let Some(how) = gone {
            link.close(how);
            return;
        }
    }
}

/// Send a round trip's request, or strike it as `planned` says.
fn request_round_trip(
    link: &Link,
    shared: &Shared,
    number: u64,
    planned: Option<Planned>,
    bytes: &[u8],
) -> Go {
    match planned {
        None => link.send(&link.server, bytes),
        Some(p) if p.at == At::Request => {
            shared.schedule().fire(p);
            link.strike(p.action, &link.server, bytes)
        }
        Some(p) => {
            // Known before the server can answer.
            link.state().answer_faults.insert(number, p);
            link.send(&link.server, bytes)
        }
    }
}

/// The server's side: forward its messages, holding or faulting the answer of a round trip
/// whose fault strikes there.
fn server_to_client(link: &Link, shared: &Shared) {
    let mut framer = Framer::server();
    // The round trip the next message answers; 0 is the startup.
    let mut number: u64 = 0;
    let mut held: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut r = &link.server;
    loop {
        let n = match r.read(&mut buf) {
            Ok(n) if n > 0 => n,
            _ => {
                let _ = link.send(&link.client, &held);
                link.close(Close::Fin);
                return;
            }
        };
        framer.push(&buf[..n]);
        let mut out: Vec<u8> = Vec::new();
        loop {
            let m = match framer.next_message() {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => {
                    shared.misread(format!("from the server: {e}"));
                    link.close(Close::Fin);
                    return;
                }
            };
            let planned = link.state().answer_faults.get(&number).copied();
            let ready = m.tag == Some(b'Z');
            match planned {
                Some(p) if p.at == At::Answer => held.extend_from_slice(&m.raw),
                _ => out.extend_from_slice(&m.raw),
            }
            if !ready {
                continue;
            }
            link.state().answer_faults.remove(&number);
            number += 1;
            let Some(p) = planned else {
                continue;
            };
            shared.schedule().fire(p);
            let go = if p.at == At::Answer {
                if let Go::Stop = link.send(&link.client, &out) {
                    return;
                }
                out.clear();
                link.strike(p.action, &link.client, &std::mem::take(&mut held))
            } else {
                strike_after(link, p.action, &std::mem::take(&mut out))
            };
            if let Go::Stop = go {
                return;
            }
        }
        if let Go::Stop = link.send(&link.client, &out) {
            return;
        }
    }
}

/// A fault right after an answer. A drop or a reset ends the server's side (its session
/// ends), then the client gets the answer, and its side goes once it sends again (a client
/// that read an answer and the end of the stream at once would drop the answer); a delay or
/// a partition holds both ways.
fn strike_after(link: &Link, action: Action, answer: &[u8]) -> Go {
    match action {
        Action::Drop | Action::Reset => {
            let how = if action == Action::Reset {
                Close::Rst
            } else {
                Close::Fin
            };
            link.state().server_gone = Some(how);
            close_socket(&link.server, how);
            let _ = link.send(&link.client, answer);
            Go::Stop
        }
        Action::Delay(ms) | Action::Partition(ms, Then::Resume) => {
            if let Go::Stop = link.send(&link.client, answer) {
                return Go::Stop;
            }
            if !link.hold(ms) {
                return Go::Stop;
            }
            link.resume();
            Go::On
        }
        Action::Partition(ms, Then::Close) => {
            if let Go::Stop = link.send(&link.client, answer) {
                return Go::Stop;
            }
            if !link.hold(ms) {
                return Go::Stop;
            }
            link.close(Close::Fin);
            Go::Stop
        }
    }
}

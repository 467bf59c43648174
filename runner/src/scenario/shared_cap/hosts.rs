//! `--two-hosts`: worker `a` and worker `b` on two hosts. A host is a network namespace this
//! run makes, joined to this machine by its own veth pair; it reaches the emulator and the
//! journal database only over that link, through a relay this process runs on the link's own
//! address (the services themselves stay on loopback). Each host also gets its own directory for
//! its files, so what one host locks on its disk (hand_lock's `flock`) the other never sees.
//! Everything made is removed on drop; the namespaces' names carry a random tag.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Why the hosts could not be made.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    /// An `ip` command failed (not root, no iproute2, no namespaces).
    #[error(
        "--two-hosts: `{command}` failed: {why}; the hosts are network namespaces, which need \
         root and iproute2 (`ip`)"
    )]
    Ip {
        /// The command, as typed.
        command: String,
        /// What it printed or why it did not start.
        why: String,
    },
    /// A service URL this run cannot relay.
    #[error("--two-hosts: cannot relay {what} {url}: {why}")]
    Url {
        /// `the emulator` or `the journal`.
        what: &'static str,
        /// The URL, without a password.
        url: String,
        /// Why not.
        why: String,
    },
    /// A relay could not listen on a host's link.
    #[error("--two-hosts: cannot listen on {addr} for host {host}: {source}")]
    Listen {
        /// The host's name.
        host: &'static str,
        /// The address.
        addr: String,
        /// The error.
        source: std::io::Error,
    },
}

/// The two hosts: worker `a` runs on the first, worker `b` on the second.
pub const HOST_NAMES: [&str; 2] = ["a", "b"];

/// How one host reaches the shared services.
#[derive(Debug, Clone)]
pub struct HostView {
    /// The network namespace.
    pub namespace: String,
    /// The emulator's base URL, as this host reaches it.
    pub base_url: String,
    /// The journal's URL, as this host reaches it.
    pub journal: String,
}

/// The namespaces, their links and the relays. Removed on drop.
pub struct Hosts {
    /// The random tag in every name this run made.
    tag: String,
    views: [HostView; 2],
    stop: Arc<AtomicBool>,
    relays: Vec<JoinHandle<()>>,
}

fn ip(args: &[&str]) -> Result<(), HostsError> {
    let command = format!("ip {}", args.join(" "));
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| HostsError::Ip {
            command: command.clone(),
            why: e.to_string(),
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(HostsError::Ip {
            command,
            why: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

/// `host:port` of a URL's authority (after any `user@`), and the URL's parts around it.
fn authority(url: &str) -> Option<(&str, &str, &str)> {
    let scheme_end = url.find("://")? + 3;
    let rest = &url[scheme_end..];
    let auth_len = rest.find(['/', '?']).unwrap_or(rest.len());
    let auth = &rest[..auth_len];
    let host_start = auth.rfind('@').map_or(0, |at| at + 1);
    let start = scheme_end + host_start;
    let end = scheme_end + auth_len;
    Some((&url[..start], &url[start..end], &url[end..]))
}

/// The address a URL's authority names (`default_port` when it has none).
fn target_of(
    what: &'static str,
    url: &str,
    default_port: u16,
) -> Result<(SocketAddr, String, String), HostsError> {
    let shown = crate::run::without_password(url);
    let bad = |why: &str| HostsError::Url {
        what,
        url: shown.clone(),
        why: why.to_owned(),
    };
    let (before, hostport, after) = authority(url).ok_or_else(|| bad("it has no host"))?;
    if hostport.is_empty() || hostport.starts_with('[') {
        return Err(bad(
            "it names no IPv4 host (a socket directory cannot be relayed)",
        ));
    }
    let with_port = if hostport.contains(':') {
        hostport.to_owned()
    } else {
        format!("{hostport}:{default_port}")
    };
    let addr = with_port
        .to_socket_addrs()
        .map_err(|e| bad(&e.to_string()))?
        .find(SocketAddr::is_ipv4)
        .ok_or_else(|| bad("it resolves to no IPv4 address"))?;
    Ok((addr, before.to_owned(), after.to_owned()))
}

impl Hosts {
    /// Makes both hosts; `base_url` is the emulator's, `journal` the database's URL.
    pub fn make(base_url: &str, journal: &str) -> Result<Hosts, HostsError> {
        let (emulator, emu_before, emu_after) = target_of("the emulator", base_url, 80)?;
        let (database, db_before, db_after) = target_of("the journal", journal, 5432)?;
        let tag = format!("{:05x}", rand::random::<u32>() & 0xf_ffff);
        // Two /24s of 10.234.0.0/16 per run, drawn so two runs on one machine rarely meet.
        let pair = rand::random::<u8>() & 0x7f;
        let mut hosts = Hosts {
            tag: tag.clone(),
            views: HOST_NAMES.map(|n| HostView {
                namespace: format!("ilcap{tag}{n}"),
                base_url: String::new(),
                journal: String::new(),
            }),
            stop: Arc::new(AtomicBool::new(false)),
            relays: Vec::new(),
        };
        for (i, name) in HOST_NAMES.iter().enumerate() {
            let net = pair * 2 + i as u8;
            let outer_addr = Ipv4Addr::new(10, 234, net, 1);
            hosts.link(&tag, i, name, net)?;
            let emu_port = hosts.relay(name, outer_addr, emulator)?;
            let db_port = hosts.relay(name, outer_addr, database)?;
            let view = &mut hosts.views[i];
            view.base_url = format!("{emu_before}{outer_addr}:{emu_port}{emu_after}");
            view.journal = format!("{db_before}{outer_addr}:{db_port}{db_after}");
        }
        Ok(hosts)
    }

    /// The namespace of host `i` and its veth pair: `10.234.net.1` here, `.2` in the host.
    fn link(&self, tag: &str, i: usize, name: &str, net: u8) -> Result<(), HostsError> {
        let ns = &self.views[i].namespace;
        ip(&["netns", "add", ns])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
        let (outer, inner) = (format!("vc{tag}{name}"), format!("wc{tag}{name}"));
        ip(&[
            "link", "add", &outer, "type", "veth", "peer", "name", &inner,
        ])?;
        ip(&["link", "set", &inner, "netns", ns])?;
        ip(&["addr", "add", &format!("10.234.{net}.1/24"), "dev", &outer])?;
        ip(&[
            "-n",
            ns,
            "addr",
            "add",
            &format!("10.234.{net}.2/24"),
            "dev",
            &inner,
        ])?;
        ip(&["link", "set", &outer, "up"])?;
        ip(&["-n", ns, "link", "set", &inner, "up"])
    }

    /// A relay listening on `on` (a port the kernel picks) that joins every connection to
    /// `target`; returns the port.
    fn relay(
        &mut self,
        host: &'static str,
        on: Ipv4Addr,
        target: SocketAddr,
    ) -> Result<u16, HostsError> {
        let listener = TcpListener::bind((on, 0)).map_err(|source| HostsError::Listen {
            host,
            addr: on.to_string(),
            source,
        })?;
        let listen_err = |source| HostsError::Listen {
            host,
            addr: on.to_string(),
            source,
        };
        let port = listener.local_addr().map_err(listen_err)?.port();
        // Non-blocking accept, so the relay notices the stop flag.
        listener.set_nonblocking(true).map_err(listen_err)?;
        let stop = self.stop.clone();
        self.relays.push(std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((down, _)) => join(down, target),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        }));
        Ok(port)
    }

    /// How host `name` (`a` or `b`) reaches the services.
    pub fn view(&self, name: &str) -> Option<&HostView> {
        HOST_NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| &self.views[i])
    }

    /// A command that runs `exe` on host `view`.
    pub fn command(view: &HostView, exe: &Path) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &view.namespace]).arg(exe);
        cmd
    }
}

/// Joins one accepted connection to `target`, each direction on its own thread; when either
/// side ends, both are shut, so a killed worker's database session ends as its connection
/// would without the relay.
fn join(down: TcpStream, target: SocketAddr) {
    let _ = down.set_nonblocking(false);
    let Ok(up) = TcpStream::connect_timeout(&target, Duration::from_secs(5)) else {
        let _ = down.shutdown(Shutdown::Both);
        return;
    };
    let _ = up.set_nodelay(true);
    let _ = down.set_nodelay(true);
    let (Ok(down2), Ok(up2)) = (down.try_clone(), up.try_clone()) else {
        let _ = down.shutdown(Shutdown::Both);
        let _ = up.shutdown(Shutdown::Both);
        return;
    };
    std::thread::spawn(move || pump(down, up));
    std::thread::spawn(move || pump(up2, down2));
}

fn pump(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

impl Drop for Hosts {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for relay in self.relays.drain(..) {
            let _ = relay.join();
        }
        // Deleting a namespace deletes the veth end inside it, and with it the pair; a pair
        // made but not yet moved (a failed start) is deleted by its outer end.
        for (view, name) in self.views.iter().zip(HOST_NAMES) {
            let _ = ip(&["netns", "del", &view.namespace]);
            let _ = Command::new("ip")
                .args(["link", "del", &format!("vc{}{name}", self.tag)])
                .output();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urls_host_and_port_are_found_after_its_user_and_before_its_path() {
        assert_eq!(
            authority("postgres://interlock@127.0.0.1:5432/postgres?options=x"),
            Some((
                "postgres://interlock@",
                "127.0.0.1:5432",
                "/postgres?options=x"
            ))
        );
        assert_eq!(
            authority("http://127.0.0.1:8080"),
            Some(("http://", "127.0.0.1:8080", ""))
        );
        assert_eq!(
            authority("postgres://u:p@w@db:1/x"),
            Some(("postgres://u:p@w@", "db:1", "/x"))
        );
        assert_eq!(authority("no scheme"), None);
    }

    #[test]
    fn a_journal_on_a_socket_directory_is_refused_with_the_reason() {
        let e = target_of("the journal", "postgres:///postgres?host=/run/pg", 5432)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("names no IPv4 host"), "{e}");
        let (addr, before, after) =
            target_of("the journal", "postgres://u@127.0.0.1/db", 5432).unwrap();
        assert_eq!(addr.port(), 5432);
        assert_eq!((before.as_str(), after.as_str()), ("postgres://u@", "/db"));
    }
}

//! The server under test and each run's own database: the URL read once, rewritten to point at
//! a proxy or at a run's database, and the database created with the run's drawn defaults
//! (isolation, `synchronous_commit`) and dropped afterwards.

use anyhow::{bail, Context};
use postgres::{Client, NoTls};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// A session default of transaction isolation, set on the run's database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// `read committed` (PostgreSQL's own default).
    ReadCommitted,
    /// `repeatable read`.
    RepeatableRead,
    /// `serializable`.
    Serializable,
}

impl Isolation {
    /// Every default.
    pub const ALL: [Isolation; 3] = [
        Isolation::ReadCommitted,
        Isolation::RepeatableRead,
        Isolation::Serializable,
    ];

    /// As PostgreSQL spells it.
    pub fn sql(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Serializable => "serializable",
        }
    }
}

/// A session default of `synchronous_commit`, set on the run's database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncCommit {
    /// `on`.
    On,
    /// `off`.
    Off,
    /// `local`.
    Local,
    /// `remote_write`.
    RemoteWrite,
}

impl SyncCommit {
    /// Every setting.
    pub const ALL: [SyncCommit; 4] = [
        SyncCommit::On,
        SyncCommit::Off,
        SyncCommit::Local,
        SyncCommit::RemoteWrite,
    ];

    /// As PostgreSQL spells it.
    pub fn sql(self) -> &'static str {
        match self {
            SyncCommit::On => "on",
            SyncCommit::Off => "off",
            SyncCommit::Local => "local",
            SyncCommit::RemoteWrite => "remote_write",
        }
    }
}

/// The server the search runs against: its URL as given and its loopback address.
#[derive(Debug, Clone)]
pub struct Server {
    url: String,
    /// The server's TCP address (on loopback), for the proxies.
    pub addr: SocketAddr,
}

impl Server {
    /// Read the URL: one TCP host on this machine's loopback, named in the URL's authority.
    pub fn from_url(url: &str) -> anyhow::Result<Server> {
        let config: postgres::Config = url
            .parse()
            .with_context(|| format!("{} is not a PostgreSQL URL", shown(url)))?;
        let Some(rest) = url
            .strip_prefix("postgres://")
            .or_else(|| url.strip_prefix("postgresql://"))
        else {
            bail!("{}: give a postgres:// URL", shown(url));
        };
        if let Some((_, query)) = rest.split_once('?') {
            for pair in query.split('&') {
                let key = pair.split('=').next().unwrap_or_default();
                if matches!(key, "host" | "hostaddr" | "port" | "dbname") {
                    bail!(
                        "{}: name the server and database in the URL itself, not with `{key}=` \
                         (each run rewrites them to reach its proxy and its own database)",
                        shown(url)
                    );
                }
            }
        }
        let (hosts, ports) = (config.get_hosts(), config.get_ports());
        let host = match hosts {
            [postgres::config::Host::Tcp(h)] => h.clone(),
            [postgres::config::Host::Tcp(_), ..] => {
                bail!("{}: name one host, not several", shown(url))
            }
            _ => bail!(
                "{}: the server must be reached over TCP on this machine (127.0.0.1 or localhost); \
                 the proxy sits between the gate and that address",
                shown(url)
            ),
        };
        let port = ports.first().copied().unwrap_or(5432);
        let addr = (host.as_str(), port)
            .to_socket_addrs()
            .with_context(|| format!("{}: could not resolve {host}", shown(url)))?
            .find(|a| a.ip().is_loopback())
            .with_context(|| {
                format!(
                    "{}: {host} is not a loopback address; the search sends its traffic only on \
                     this machine's loopback",
                    shown(url)
                )
            })?;
        Ok(Server {
            url: url.to_owned(),
            addr,
        })
    }

    /// The URL without its password, for messages.
    pub fn shown(&self) -> String {
        shown(&self.url)
    }

    /// A connection straight to the server (no proxy), to the URL's own database.
    fn admin(&self) -> anyhow::Result<Client> {
        let mut config: postgres::Config = self.url.parse()?;
        config.connect_timeout(Duration::from_secs(10));
        config
            .connect(NoTls)
            .with_context(|| format!("could not connect to {}", self.shown()))
    }

    /// The URL of database `db`, straight to the server.
    pub fn direct_url(&self, db: &str) -> String {
        rewrite(&self.url, None, db)
    }

    /// The URL of database `db` through the proxy on loopback port `port`.
    pub fn proxied_url(&self, port: u16, db: &str) -> String {
        rewrite(&self.url, Some(&format!("127.0.0.1:{port}")), db)
    }

    /// Create database `name` afresh (an earlier one of that name is dropped) with the given
    /// session defaults.
    pub fn create_database(
        &self,
        name: &str,
        isolation: Isolation,
        sync: SyncCommit,
    ) -> anyhow::Result<()> {
        let mut admin = self.admin()?;
        let sql = format!(
            "DROP DATABASE IF EXISTS {name} WITH (FORCE); CREATE DATABASE {name}; \
             ALTER DATABASE {name} SET default_transaction_isolation = '{}'; \
             ALTER DATABASE {name} SET synchronous_commit = '{}'",
            isolation.sql(),
            sync.sql()
        );
        // One statement at a time: CREATE DATABASE cannot run in a multi-statement batch.
        for statement in sql.split("; ") {
            admin.batch_execute(statement).with_context(|| {
                format!(
                    "could not prepare the run's database on {} ({statement}); the role needs \
                     CREATEDB",
                    self.shown()
                )
            })?;
        }
        Ok(())
    }

    /// Drop database `name`, ending any session still in it.
    pub fn drop_database(&self, name: &str) -> anyhow::Result<()> {
        let mut admin = self.admin()?;
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .with_context(|| format!("could not drop database {name} on {}", self.shown()))
    }
}

/// `url` with its host and port replaced by `host_port` (if given) and its database by `db`;
/// user, password and query kept.
fn rewrite(url: &str, host_port: Option<&str>, db: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let authority = before_query.split('/').next().unwrap_or_default();
    let (userinfo, hostspec) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let mut out = format!("{scheme}://");
    if let Some(u) = userinfo {
        out.push_str(u);
        out.push('@');
    }
    out.push_str(host_port.unwrap_or(hostspec));
    out.push('/');
    out.push_str(db);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// `url` without its password.
pub fn shown(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            let user = creds.split(':').next().unwrap_or_default();
            format!("{}{user}@{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// Whether `url` carries a password.
pub fn has_password(url: &str) -> bool {
    shown(url) != url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_pointed_at_a_proxy_and_a_database_keeping_the_rest() {
        let url = "postgres://u:pw@127.0.0.1:5432/postgres?connect_timeout=3";
        assert_eq!(
            rewrite(url, Some("127.0.0.1:6000"), "run_1"),
            "postgres://u:pw@127.0.0.1:6000/run_1?connect_timeout=3"
        );
        assert_eq!(
            rewrite(url, None, "run_1"),
            "postgres://u:pw@127.0.0.1:5432/run_1?connect_timeout=3"
        );
        assert_eq!(
            rewrite("postgresql://localhost", Some("127.0.0.1:1"), "d"),
            "postgresql://127.0.0.1:1/d"
        );
    }

    #[test]
    fn passwords_are_left_out_of_what_is_shown() {
        assert_eq!(shown("postgres://u:pw@h:1/db"), "postgres://u@h:1/db");
        assert!(has_password("postgres://u:pw@h:1/db"));
        assert!(!has_password("postgres://u@h:1/db"));
    }

    #[test]
    fn a_server_off_loopback_or_named_in_the_query_is_refused() {
        assert!(Server::from_url("postgres://u@127.0.0.1:5432/db").is_ok());
        assert!(Server::from_url("postgres://u@192.0.2.1:5432/db").is_err());
        assert!(Server::from_url("postgres://u@127.0.0.1/db?host=/tmp").is_err());
        assert!(Server::from_url("postgres://u@127.0.0.1/db?port=1").is_err());
    }
}

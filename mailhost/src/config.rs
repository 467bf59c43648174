//! The private instance's `main.cf` and `master.cf`, written from the instance's layout.
//!
//! Every setting that keeps mail on this host is here: one listener on 127.0.0.1, one domain
//! delivered into one Maildir by `virtual(8)`, and every other destination answered by the
//! `error(8)` transport. `docs/smtp.md` says where each setting is documented.

use crate::accounts::Accounts;
use crate::layout::Layout;

/// The one domain the instance delivers; every recipient in it lands in the one Maildir.
pub const DOMAIN: &str = "interlock.test";

/// The Maildir under the mail directory, as `virtual_mailbox_maps` names it (the trailing slash
/// asks `virtual(8)` for Maildir delivery rather than an mbox file).
pub(crate) const INBOX: &str = "inbox";

/// Messages larger than this are refused at the end of DATA (`message_size_limit`).
pub const MESSAGE_SIZE_LIMIT: u64 = 1024 * 1024;

/// `main.cf` for an instance listening on `port`, greeting with `token` in its banner.
pub(crate) fn main_cf(layout: &Layout, accounts: &Accounts, token: &str) -> String {
    let settings: [(&str, String); 36] = [
        ("compatibility_level", "3.6".into()),
        ("queue_directory", layout.queue().display().to_string()),
        ("data_directory", layout.data().display().to_string()),
        ("mail_owner", "postfix".into()),
        ("setgid_group", "postdrop".into()),
        // listen on loopback only, IPv4 only
        ("inet_interfaces", "127.0.0.1".into()),
        ("inet_protocols", "ipv4".into()),
        ("mynetworks", "127.0.0.0/8".into()),
        // names that need no DNS
        ("myhostname", format!("mailhost.{DOMAIN}")),
        ("mydomain", DOMAIN.into()),
        ("myorigin", DOMAIN.into()),
        (
            "smtpd_banner",
            format!("$myhostname ESMTP mailhost {token}"),
        ),
        ("smtpd_peername_lookup", "no".into()),
        ("smtp_dns_support_level", "disabled".into()),
        // no local accounts, no relaying: only the one virtual domain is accepted
        ("mydestination", String::new()),
        ("relay_domains", String::new()),
        ("alias_maps", String::new()),
        ("alias_database", String::new()),
        (
            "smtpd_relay_restrictions",
            "reject_unauth_destination".into(),
        ),
        // nothing leaves: every transport but virtual(8) is error(8)
        (
            "local_transport",
            "error:5.7.1 local delivery is disabled".into(),
        ),
        ("relay_transport", "error:5.7.1 relaying is disabled".into()),
        (
            "default_transport",
            "error:5.7.1 mail leaves no further than this host".into(),
        ),
        // the one Maildir, the ground truth
        ("virtual_mailbox_domains", DOMAIN.into()),
        ("virtual_mailbox_base", layout.mail().display().to_string()),
        ("virtual_mailbox_maps", format!("static:{INBOX}/")),
        (
            "virtual_uid_maps",
            format!("static:{}", accounts.mailbox_uid),
        ),
        (
            "virtual_gid_maps",
            format!("static:{}", accounts.mailbox_gid),
        ),
        ("message_size_limit", MESSAGE_SIZE_LIMIT.to_string()),
        ("mailbox_size_limit", (64 * MESSAGE_SIZE_LIMIT).to_string()),
        (
            "virtual_mailbox_limit",
            (64 * MESSAGE_SIZE_LIMIT).to_string(),
        ),
        // no pauses meant for the open internet
        ("in_flow_delay", "0s".into()),
        ("smtpd_error_sleep_time", "0s".into()),
        // the log in a file of the instance's own (there is no syslog to rely on)
        ("maillog_file", layout.log().display().to_string()),
        ("maillog_file_prefixes", layout.root().display().to_string()),
        ("biff", "no".into()),
        ("smtputf8_enable", "no".into()),
    ];
    let mut text =
        String::from("# Written by mailhost for one private instance; rewritten at every start.\n");
    for (name, value) in settings {
        text.push_str(&format!("{name} = {value}\n"));
    }
    text
}

/// `master.cf`: the SMTP listener on `127.0.0.1:port` (none when `listen` is false: an outage
/// that leaves delivery running) and the internal services Postfix needs. No service runs
/// chrooted (the columns are: service, type, private, unprivileged, chroot, wakeup, process
/// limit, command).
pub(crate) fn master_cf(port: u16, listen: bool) -> String {
    let listener = format!("127.0.0.1:{port} inet n - n - - smtpd");
    let services = [
        "pickup unix n - n 60 1 pickup",
        "cleanup unix n - n - 0 cleanup",
        "qmgr unix n - n 300 1 qmgr",
        "rewrite unix - - n - - trivial-rewrite",
        "bounce unix - - n - 0 bounce",
        "defer unix - - n - 0 bounce",
        "trace unix - - n - 0 bounce",
        "verify unix - - n - 1 verify",
        "flush unix n - n 1000? 0 flush",
        "proxymap unix - - n - - proxymap",
        "showq unix n - n - - showq",
        "error unix - - n - - error",
        "retry unix - - n - - error",
        "discard unix - - n - - discard",
        // virtual(8) runs as root to deliver as the mailbox's owner
        "virtual unix - n n - - virtual",
        "anvil unix - - n - 1 anvil",
        "scache unix - - n - 1 scache",
        "postlog unix-dgram n - n - 1 postlogd",
    ];
    let mut text =
        String::from("# Written by mailhost for one private instance; rewritten at every start.\n");
    if listen {
        text.push_str(&listener);
        text.push('\n');
    }
    for service in services {
        text.push_str(service);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn accounts() -> Accounts {
        Accounts {
            owner_uid: 103,
            owner_gid: 111,
            mailbox_uid: 65534,
            mailbox_gid: 65534,
        }
    }

    fn setting<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        text.lines()
            .filter_map(|line| line.strip_prefix(name)?.strip_prefix(" = "))
            .collect()
    }

    #[test]
    fn main_cf_keeps_every_directory_under_the_root_and_mail_on_the_host() {
        let layout = Layout::new(Path::new("/r"));
        let text = main_cf(&layout, &accounts(), "t-1");
        assert_eq!(setting(&text, "queue_directory"), ["/r/queue"]);
        assert_eq!(setting(&text, "data_directory"), ["/r/data"]);
        assert_eq!(setting(&text, "virtual_mailbox_base"), ["/r/mail"]);
        assert_eq!(setting(&text, "maillog_file"), ["/r/maillog"]);
        assert_eq!(setting(&text, "inet_interfaces"), ["127.0.0.1"]);
        assert_eq!(setting(&text, "mydestination"), [""]);
        assert_eq!(setting(&text, "relay_domains"), [""]);
        assert_eq!(
            setting(&text, "smtpd_relay_restrictions"),
            ["reject_unauth_destination"]
        );
        for transport in ["local_transport", "relay_transport", "default_transport"] {
            let value = setting(&text, transport);
            assert!(
                value.len() == 1 && value[0].starts_with("error:"),
                "{transport}"
            );
        }
        assert_eq!(setting(&text, "virtual_uid_maps"), ["static:65534"]);
        assert_eq!(
            setting(&text, "smtpd_banner"),
            ["$myhostname ESMTP mailhost t-1"]
        );
    }

    #[test]
    fn main_cf_sets_each_parameter_once() {
        let text = main_cf(&Layout::new(Path::new("/r")), &accounts(), "t");
        let mut names: Vec<&str> = text
            .lines()
            .filter_map(|line| line.split_once(" = ").map(|(name, _)| name))
            .collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all);
    }

    #[test]
    fn master_cf_listens_on_loopback_only_and_chroots_nothing() {
        let text = master_cf(2525, true);
        let services: Vec<Vec<&str>> = text
            .lines()
            .filter(|line| !line.starts_with('#'))
            .map(|line| line.split_whitespace().collect())
            .collect();
        let inet: Vec<&Vec<&str>> = services.iter().filter(|s| s[1] == "inet").collect();
        assert_eq!(inet.len(), 1);
        assert_eq!(inet[0][0], "127.0.0.1:2525");
        assert!(services.iter().all(|s| s[4] == "n"), "no chroot");
        assert!(services.iter().any(|s| s[7] == "virtual"));
        assert!(!services.iter().any(|s| s[7] == "smtp" || s[7] == "local"));
    }

    #[test]
    fn master_cf_without_the_listener_differs_only_by_it() {
        let with: Vec<String> = master_cf(2525, true).lines().map(str::to_string).collect();
        let without: Vec<String> = master_cf(2525, false).lines().map(str::to_string).collect();
        let removed: Vec<&String> = with.iter().filter(|l| !without.contains(l)).collect();
        assert_eq!(removed, ["127.0.0.1:2525 inet n - n - - smtpd"]);
        assert_eq!(with.len(), without.len() + 1);
    }
}

//! The system accounts a Postfix instance needs: `postfix` (its `mail_owner`, created by the
//! Debian package) and `nobody` (the Maildir's owner, as whom `virtual(8)` delivers).

use crate::error::MailError;
use std::process::{Command, Stdio};

/// The account Postfix runs its unprivileged processes as (`mail_owner`).
pub(crate) const MAIL_OWNER: &str = "postfix";

/// The account mail is delivered as. Not the mail owner: Postfix refuses to deliver as it.
pub(crate) const MAILBOX_OWNER: &str = "nobody";

/// The accounts the instance runs as and delivers as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accounts {
    /// `mail_owner`'s user id: owner of the data directory.
    pub(crate) owner_uid: u32,
    /// `mail_owner`'s group id.
    pub(crate) owner_gid: u32,
    /// The user id the Maildir belongs to and `virtual(8)` delivers as.
    pub(crate) mailbox_uid: u32,
    /// The group id of the Maildir.
    pub(crate) mailbox_gid: u32,
}

impl Accounts {
    /// Looks both accounts up with `getent passwd` (so any name service the system uses).
    pub(crate) fn look_up() -> Result<Accounts, MailError> {
        let out = Command::new("getent")
            .args(["passwd", MAIL_OWNER, MAILBOX_OWNER])
            .stdin(Stdio::null())
            .output()
            .map_err(|source| MailError::Spawn {
                program: "getent".into(),
                source,
            })?;
        // getent exits 2 when a name is missing; the lines it did print tell which.
        let text = String::from_utf8_lossy(&out.stdout);
        let owner = find(&text, MAIL_OWNER).ok_or(MailError::NoAccount(MAIL_OWNER))?;
        let mailbox = find(&text, MAILBOX_OWNER).ok_or(MailError::NoAccount(MAILBOX_OWNER))?;
        Ok(Accounts {
            owner_uid: owner.0,
            owner_gid: owner.1,
            mailbox_uid: mailbox.0,
            mailbox_gid: mailbox.1,
        })
    }
}

/// The user and group id of `name` in `passwd(5)` lines (`name:password:uid:gid:...`).
fn find(passwd: &str, name: &str) -> Option<(u32, u32)> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        if fields.next()? != name {
            return None;
        }
        let _password = fields.next()?;
        let uid = fields.next()?.parse().ok()?;
        let gid = fields.next()?.parse().ok()?;
        Some((uid, gid))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = "\
postfix:x:103:111::/var/spool/postfix:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
";

    #[test]
    fn an_account_is_found_by_its_exact_name() {
        assert_eq!(find(PASSWD, "postfix"), Some((103, 111)));
        assert_eq!(find(PASSWD, "nobody"), Some((65534, 65534)));
        assert_eq!(find(PASSWD, "post"), None);
        assert_eq!(find(PASSWD, "root"), None);
    }

    #[test]
    fn a_line_without_numeric_ids_is_no_account() {
        assert_eq!(find("postfix:x:abc:111::/:/bin/false\n", "postfix"), None);
        assert_eq!(find("postfix:x\n", "postfix"), None);
    }
}

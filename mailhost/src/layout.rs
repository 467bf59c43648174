//! Where an instance keeps its files under its root, and making those directories with the
//! owners Postfix checks.
//!
//! ```text
//! <root>/conf/main.cf, master.cf   written by mailhost (root)
//! <root>/queue/                    Postfix's queue (Postfix makes its subdirectories)
//! <root>/data/                     Postfix's data directory (owned by the mail owner)
//! <root>/mail/inbox/{new,cur,tmp}  the Maildir, the ground truth (owned by the mailbox owner)
//! <root>/maillog                   the instance's log
//! ```

use crate::accounts::Accounts;
use crate::error::MailError;
use std::os::unix::fs::{chown, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The paths of one instance.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The layout under `root` (nothing is made).
    pub(crate) fn new(root: &Path) -> Layout {
        Layout {
            root: root.to_path_buf(),
        }
    }

    /// The instance's root.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// `config_directory`: `main.cf` and `master.cf`.
    pub(crate) fn conf(&self) -> PathBuf {
        self.root.join("conf")
    }

    /// `queue_directory`.
    pub(crate) fn queue(&self) -> PathBuf {
        self.root.join("queue")
    }

    /// `data_directory`.
    pub(crate) fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    /// `virtual_mailbox_base`.
    pub(crate) fn mail(&self) -> PathBuf {
        self.root.join("mail")
    }

    /// The Maildir every message is delivered into.
    pub(crate) fn inbox(&self) -> PathBuf {
        self.mail().join(crate::config::INBOX)
    }

    /// `maillog_file`.
    pub(crate) fn log(&self) -> PathBuf {
        self.root.join("maillog")
    }

    /// The file the master daemon writes its process id into.
    pub(crate) fn master_pid(&self) -> PathBuf {
        self.queue().join("pid").join("master.pid")
    }

    /// Makes the directories with the owners and modes Postfix checks. The root becomes
    /// `0755` so the mail owner can reach the queue; every directory above it must already let
    /// others search it.
    pub(crate) fn prepare(&self, accounts: &Accounts) -> Result<(), MailError> {
        for dir in [self.conf(), self.queue(), self.data(), self.mail()] {
            std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        }
        set_mode(&self.root, 0o755)?;
        for dir in [self.conf(), self.queue()] {
            set_mode(&dir, 0o755)?;
        }
        let data = self.data();
        chown(&data, Some(accounts.owner_uid), Some(accounts.owner_gid)).map_err(io(&data))?;
        set_mode(&data, 0o700)?;
        let mail = self.mail();
        chown(
            &mail,
            Some(accounts.mailbox_uid),
            Some(accounts.mailbox_gid),
        )
        .map_err(io(&mail))?;
        set_mode(&mail, 0o700)?;
        self.check_reachable()
    }

    /// Every directory above the root lets others search it (the mail owner walks this path).
    fn check_reachable(&self) -> Result<(), MailError> {
        let root = self.root.canonicalize().map_err(io(&self.root))?;
        for dir in root.ancestors().skip(1) {
            let meta = std::fs::metadata(dir).map_err(io(dir))?;
            if meta.mode() & 0o001 == 0 {
                return Err(MailError::Unreachable(dir.to_path_buf()));
            }
        }
        Ok(())
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<(), MailError> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io(path))
}

/// A mapper from an I/O error on `path` to [`MailError::Io`].
pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> MailError + '_ {
    move |source| MailError::Io {
        path: path.to_path_buf(),
        source,
    }
}

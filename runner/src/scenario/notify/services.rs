//! The services a notify run shares: one Postfix instance (the mail server whose Maildir is the
//! ground truth) and one Stripe emulator (each case in its own account).

use super::error::NotifyRunError;
use mailhost::MailHost;
use std::os::unix::fs::PermissionsExt;
use stripe::emulator::{Emulator, EmulatorConfig, RunningEmulator};

/// The run's mail server and emulator, stopped when dropped (the mail server's directory
/// removed after it).
pub(crate) struct Services {
    pub(crate) mail: MailHost,
    pub(crate) emulator: RunningEmulator,
    // Dropped after `mail` (fields drop in order): the instance stops before its files go.
    _mail_dir: tempfile::TempDir,
}

impl Services {
    /// Starts the mail server in a directory of its own and the emulator.
    ///
    /// The mail server's directory is not the run's: the run's holds the private key and stays
    /// closed to others, while Postfix's unprivileged processes must reach the queue, so the
    /// mail directory is opened to others' search (its files stay Postfix's own).
    pub(crate) fn start() -> Result<Services, NotifyRunError> {
        let mail_dir = tempfile::Builder::new()
            .prefix("interlock-notify-mail-")
            .tempdir()
            .map_err(NotifyRunError::MailDir)?;
        std::fs::set_permissions(mail_dir.path(), std::fs::Permissions::from_mode(0o755))
            .map_err(NotifyRunError::MailDir)?;
        // After the mail server's own watcher has stopped it (SIGKILL at the latest 10 s on).
        crate::janitor::remove_when_gone(mail_dir.path(), std::time::Duration::from_secs(12));
        let mail =
            MailHost::start(&mail_dir.path().join("postfix")).map_err(NotifyRunError::MailHost)?;
        let emulator =
            Emulator::start(EmulatorConfig::default()).map_err(NotifyRunError::Emulator)?;
        Ok(Services {
            mail,
            emulator,
            _mail_dir: mail_dir,
        })
    }
}

//! The processes of an instance after its stop, read from `/proc`: the master daemon leads a
//! process group of its own, and every Postfix process it starts stays in that group.

use std::path::Path;

/// The processes in process group `group` that are still alive (zombies, which only wait to be
/// reaped, are not).
pub(crate) fn living_in_group(group: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // a process may end between the listing and the read: then it is not alive
        let Ok(stat) =
            std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat"))
        else {
            continue;
        };
        if let Some((state, pgrp)) = state_and_group(&stat) {
            if pgrp == group && state != 'Z' && state != 'X' {
                pids.push(pid);
            }
        }
    }
    pids.sort_unstable();
    pids
}

/// The command name of process `pid` (`/proc/<pid>/comm`), if it is running.
pub(crate) fn command_name(pid: i32) -> Option<String> {
    let comm =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("comm")).ok()?;
    Some(comm.trim_end().to_string())
}

/// The state and process group of a `/proc/<pid>/stat` line (`pid (comm) state ppid pgrp ...`;
/// `comm` may hold spaces and parentheses, so the fields are counted from its last `)`).
fn state_and_group(stat: &str) -> Option<(char, i32)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// The process id in a Postfix `master.pid` file (the number, padded with spaces).
pub(crate) fn parse_pid_file(text: &str) -> Option<i32> {
    text.split_whitespace()
        .next()?
        .parse()
        .ok()
        .filter(|pid| *pid > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_and_group_are_read_after_the_command_name() {
        let stat = "10841 (pickup) S 1 10840 10840 0 -1 4194624 512 0 0 0";
        assert_eq!(state_and_group(stat), Some(('S', 10840)));
        let odd = "77 (a (b) c) Z 1 76 76 0";
        assert_eq!(state_and_group(odd), Some(('Z', 76)));
        assert_eq!(state_and_group("77 (x"), None);
        assert_eq!(state_and_group("77 (x) S 1"), None);
    }

    #[test]
    fn a_master_pid_file_holds_one_padded_number() {
        assert_eq!(parse_pid_file("     10840\n"), Some(10840));
        assert_eq!(parse_pid_file(""), None);
        assert_eq!(parse_pid_file("0\n"), None);
        assert_eq!(parse_pid_file("pid\n"), None);
    }

    #[test]
    fn this_process_is_alive_in_its_group() {
        let me = std::process::id() as i32;
        let group = rustix::process::getpgrp().as_raw_nonzero().get();
        assert!(living_in_group(group).contains(&me));
        assert!(command_name(me).is_some_and(|name| !name.is_empty()));
    }
}

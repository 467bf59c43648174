//! The tests' helper: `write-fault-probe [--hold] [--threads] K FILE...` appends K lines to each
//! FILE (line by line, file by file: `write_all` then `sync_data`; with `--threads`, each file
//! in a thread of its own, all at once) and prints one line per call:
//! `write <file> <line> ok` or `write <file> <line> err <errno>`, and likewise `sync ...`
//! (files and lines counted from 1). With `--hold` it stops at its first failed call, prints
//! `held`, and waits to be killed. Exits 0 when no call failed, 1 when one did, 2 when it could
//! not start (bad arguments, a file it cannot open).
//!
//! `write-fault-probe --each DIR` instead makes, in DIR, one of each standard-library call the
//! library's README lists, in this order, printing `<name> ok` or `<name> err <errno>` for each:
//! `fs_write` (`std::fs::write`), `write_all`, `write_vectored`, `write_at`, `sync_all`,
//! `sync_data`, `rename`, `copy` (`std::fs::copy`).

use std::fs::{File, OpenOptions};
use std::io::{IoSlice, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::ExitCode;

/// What one call did, as printed.
fn outcome(result: std::io::Result<()>) -> (String, bool) {
    match result {
        Ok(()) => ("ok".to_owned(), false),
        Err(e) => (format!("err {}", e.raw_os_error().unwrap_or(-1)), true),
    }
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, dir] = args.as_slice() {
        if flag == "--each" {
            each(Path::new(dir));
            return ExitCode::SUCCESS;
        }
    }
    let mut hold = false;
    let mut threads = false;
    while let Some(flag) = args.first() {
        match flag.as_str() {
            "--hold" => hold = true,
            "--threads" => threads = true,
            _ => break,
        }
        args.remove(0);
    }
    let Some((k, paths)) = args.split_first() else {
        eprintln!("usage: write-fault-probe [--hold] [--threads] K FILE...");
        return ExitCode::from(2);
    };
    let Ok(k) = k.parse::<u32>() else {
        eprintln!("K must be a number, not {k}");
        return ExitCode::from(2);
    };
    let mut files: Vec<File> = Vec::new();
    for path in paths {
        match OpenOptions::new().create(true).append(true).open(path) {
            Ok(f) => files.push(f),
            Err(e) => {
                eprintln!("cannot open {path}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let any_failed = if threads {
        std::thread::scope(|scope| {
            let running: Vec<_> = files
                .iter_mut()
                .enumerate()
                .map(|(index, file)| scope.spawn(move || append(index + 1, file, 1..=k, hold)))
                .collect();
            running
                .into_iter()
                .map(|t| t.join().unwrap_or(true))
                .fold(false, |a, b| a | b)
        })
    } else {
        let mut any = false;
        for line in 1..=k {
            for (index, file) in files.iter_mut().enumerate() {
                any |= append(index + 1, file, line..=line, hold);
            }
        }
        any
    };
    if any_failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Appends `lines` to file number `which`, each with `write_all` then `sync_data`, printing
/// what each call did. Returns whether one failed.
fn append(which: usize, file: &mut File, lines: impl IntoIterator<Item = u32>, hold: bool) -> bool {
    let mut any_failed = false;
    for line in lines {
        let (text, failed) = outcome(file.write_all(format!("line {line}\n").as_bytes()));
        println!("write {which} {line} {text}");
        any_failed |= failed;
        if failed && hold {
            hold_forever();
        }
        let (text, failed) = outcome(file.sync_data());
        println!("sync {which} {line} {text}");
        any_failed |= failed;
        if failed && hold {
            hold_forever();
        }
    }
    any_failed
}

/// One of each call the README lists, in `dir`.
fn each(dir: &Path) {
    let a = dir.join("a");
    let say = |name: &str, result: std::io::Result<()>| println!("{name} {}", outcome(result).0);
    say("fs_write", std::fs::write(&a, b"fs::write\n"));
    let mut file = match OpenOptions::new().append(true).open(&a) {
        Ok(f) => f,
        Err(e) => {
            println!("open err {}", e.raw_os_error().unwrap_or(-1));
            return;
        }
    };
    say("write_all", file.write_all(b"write_all\n"));
    let parts = [IoSlice::new(b"write_"), IoSlice::new(b"vectored\n")];
    say("write_vectored", file.write_vectored(&parts).map(drop));
    say("write_at", file.write_at(b"W", 0).map(drop));
    say("sync_all", file.sync_all());
    say("sync_data", file.sync_data());
    drop(file);
    say("rename", std::fs::rename(&a, dir.join("b")));
    say(
        "copy",
        std::fs::copy(dir.join("b"), dir.join("c")).map(drop),
    );
}

/// Says `held` and waits to be killed.
fn hold_forever() -> ! {
    println!("held");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

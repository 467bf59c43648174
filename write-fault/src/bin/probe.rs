//! The tests' helper: `write-fault-probe [--hold] K FILE...` appends K lines to each FILE (line
//! by line, file by file: `write_all` then `sync_data`) and prints one line per call:
//! `write <file> <line> ok` or `write <file> <line> err <errno>`, and likewise `sync ...`
//! (files and lines counted from 1). With `--hold` it stops at its first failed call, prints
//! `held`, and waits to be killed. Exits 0 when no call failed, 1 when one did, 2 when it could
//! not start (bad arguments, a file it cannot open).

use std::fs::{File, OpenOptions};
use std::io::Write;
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
    let hold = args.first().is_some_and(|a| a == "--hold");
    if hold {
        args.remove(0);
    }
    let Some((k, paths)) = args.split_first() else {
        eprintln!("usage: write-fault-probe [--hold] K FILE...");
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
    let mut any_failed = false;
    for line in 1..=k {
        for (index, file) in files.iter_mut().enumerate() {
            let which = index + 1;
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
    }
    if any_failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Says `held` and waits to be killed.
fn hold_forever() -> ! {
    println!("held");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

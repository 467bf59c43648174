//! `verify`: the older name of `interlock-verify`, the same program (`src/main.rs`), kept for
//! the scripts and documents that call `target/release/verify`.

#[path = "../main.rs"]
mod command;

fn main() -> std::process::ExitCode {
    command::main()
}

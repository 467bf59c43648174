//! `stripe-emulator [--port N] [--rate-limit N]`: serves the Stripe emulator on
//! 127.0.0.1 until killed. The first line on stdout is
//! `listening on http://127.0.0.1:PORT`.

use anyhow::Context;
use clap::Parser;
use std::io::Write;

/// A stateful Stripe emulator for Interlock's billing scenario (loopback only).
#[derive(Debug, Parser)]
#[command(name = "stripe-emulator", version)]
struct Args {
    /// TCP port on 127.0.0.1 (0 picks a free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Answer 429 `rate_limit` beyond this many requests per second, all API
    /// keys together (Stripe's sandbox allows about 25). Off when not given.
    #[arg(long, value_name = "PER_SECOND", value_parser = clap::value_parser!(u32).range(1..))]
    rate_limit: Option<u32>,
}

fn main() -> std::process::ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            return std::process::ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("stripe-emulator: {}", usage_line(&e.render().to_string()));
            return std::process::ExitCode::from(2);
        }
    };
    match serve(args) {
        Ok(never) => match never {},
        Err(e) => {
            // One line, like the other binaries: what failed and why, each cause once.
            eprintln!("stripe-emulator: error: {}", one_line(&e));
            std::process::ExitCode::from(2)
        }
    }
}

/// An error and its causes on one line, leaving out a cause its message already says.
fn one_line(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let said = cause.to_string();
        if text.contains(&said) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&said);
    }
    text
}

/// clap's usage error as one line in the other binaries' style.
fn usage_line(rendered: &str) -> String {
    let first = rendered
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("error: invalid arguments");
    let what = first.strip_prefix("error: ").unwrap_or(first);
    format!("error: {what}; see `stripe-emulator --help`")
}

fn serve(args: Args) -> anyhow::Result<std::convert::Infallible> {
    let emulator = stripe::emulator::Emulator::start(stripe::emulator::EmulatorConfig {
        port: args.port,
        rate_limit: args.rate_limit.map(stripe::emulator::RateLimit::per_second),
        ..Default::default()
    })
    .context("starting the Stripe emulator")?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {}", emulator.base_url()).context("writing to stdout")?;
    out.flush().context("flushing stdout")?;
    drop(out);
    loop {
        std::thread::park();
    }
}

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
    match serve(Args::parse()) {
        Ok(never) => match never {},
        Err(e) => {
            // One line, like the other binaries: what failed and why (no Debug chain).
            eprintln!("stripe-emulator: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
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

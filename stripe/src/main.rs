//! `stripe-emulator [--port N]`: serves the Stripe emulator on 127.0.0.1 until
//! killed. The first line on stdout is `listening on http://127.0.0.1:PORT`.

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
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let emulator = stripe::emulator::Emulator::start(stripe::emulator::EmulatorConfig {
        port: args.port,
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

//! Every PostgreSQL round trip faulted (filled in separately).

/// The command's options.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Run the search; `Ok(false)` when it found a failure (already printed).
pub fn main(_args: &Args) -> anyhow::Result<bool> {
    anyhow::bail!("not yet built")
}

//! `stripe-behaviours`: probes the Stripe behaviours Interlock's emulator models and its
//! experiments rest on, against Stripe test mode or the emulator, one JSON line per behaviour.
//! See `--help`, and `docs/stripe-behaviours.md` at the repository root.

mod probes;
mod wire;

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

/// The environment variable holding the test key.
const KEY_ENV: &str = "STRIPE_SECRET_KEY";

const AFTER_HELP: &str = "\
The key is read from STRIPE_SECRET_KEY and must be a test-mode key (sk_test_ or rk_test_; a
restricted key needs write access to test clocks, customers, customer balance transactions,
PaymentIntents and refunds). Anything else is refused before a request is sent.

The probe creates its own objects (a test clock with a customer on it, two $10.00 test-card
payments) and sends fewer than 40 requests, never more than two at once, then deletes the
test clock (and with it the customer). It prints one JSON line per behaviour on stdout:

  {\"behaviour\": NAME, \"doc\": URL, \"expected\": TEXT, \"observed\": TEXT, \"agrees\": BOOL}

with \"agrees\": null and a \"why\" for a behaviour that cannot be probed this way (a saved
500 cannot be induced at Stripe; key expiry takes 24 hours; a 429 would take hammering the
account). Behaviours: idempotency_key_in_use, idempotent_replay, idempotent_replayed_header,
idempotency_params_mismatch, idempotency_key_other_endpoint,
balance_transaction_no_precondition, list_newest_first, saved_error_replayed,
refund_over_remaining, concurrent_refunds, concurrent_refunds_over_remaining,
saved_5xx_replayed, idempotency_key_expiry, rate_limit_429.

Exit status: 0 when every probed behaviour agrees, 1 when one does not, 2 on a usage error,
a refused setup (bad key, wrong URL) or a request that got no answer (one line on stderr
saying what, where and how to fix it).

The 409 probe sends the second request 25 ms after the first. Against the emulator, which
answers in about a millisecond, the two overlap only if the emulator holds the request (its
Delay fault; it has no HTTP control for that): otherwise the line says no overlap was seen.";

/// Probes the Stripe behaviours Interlock's emulator models, against Stripe test mode or the
/// emulator, and says for each whether what came back agrees with Stripe's documentation.
#[derive(Debug, Parser)]
#[command(name = "stripe-behaviours", version, after_help = AFTER_HELP)]
struct Args {
    /// Where to send the requests: Stripe's API or the emulator (`http://127.0.0.1:PORT`).
    #[arg(long, value_name = "URL", default_value = stripe::client::STRIPE_API_BASE)]
    base_url: String,
    /// Seconds each request may take before the probe gives up on it.
    #[arg(long, value_name = "SECONDS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=300))]
    timeout: u64,
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("stripe-behaviours: {}", usage_line(&e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("stripe-behaviours: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// clap's usage error as one line.
fn usage_line(rendered: &str) -> String {
    let first = rendered
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("error: invalid arguments");
    let what = first.strip_prefix("error: ").unwrap_or(first);
    format!("error: {what}; see `stripe-behaviours --help`")
}

/// The test key from the environment, or why it cannot be used (the key itself is never
/// printed, at most its first characters).
fn test_key() -> anyhow::Result<String> {
    let key = std::env::var(KEY_ENV)
        .map_err(|_| {
            anyhow::anyhow!(
                "{KEY_ENV} is not set: export a Stripe test-mode secret key (sk_test_...) \
                 or, for the emulator, any sk_test_ key"
            )
        })?
        .trim()
        .to_owned();
    let test = ["sk_test_", "rk_test_"]
        .iter()
        .any(|p| key.starts_with(p) && key.len() > p.len());
    if !test {
        let shown: String = key.chars().take(8).collect();
        anyhow::bail!(
            "{KEY_ENV} ({shown:?}...) is not a test-mode key: the probe only runs with sk_test_ \
             or rk_test_ keys, never live ones; use the test key from Stripe's Dashboard"
        );
    }
    Ok(key)
}

/// Runs the probe; returns how many probed behaviours disagreed.
fn run(args: &Args) -> anyhow::Result<usize> {
    let key = test_key()?;
    // The client's own checks on the URL and key (http or https; a test key for stripe.com).
    stripe::Client::new(stripe::ClientConfig::new(&args.base_url, &key))
        .map_err(|e| anyhow::anyhow!("{e}; check --base-url and {KEY_ENV}"))?;
    let wire = wire::Wire::new(&args.base_url, &key, Duration::from_secs(args.timeout))?;
    let run_id = format!("{:016x}", rand::random::<u64>());
    let mut out = std::io::stdout().lock();
    let mut write_error: Option<std::io::Error> = None;
    let mut emit = |line: &probes::Line| {
        if write_error.is_none() {
            if let Err(e) = writeln!(out, "{}", line.to_json()).and_then(|()| out.flush()) {
                write_error = Some(e);
            }
        }
    };
    let mut probe = probes::Probe::new(&wire, run_id, &mut emit);
    let made = probe
        .setup()
        .map_err(|e| anyhow::anyhow!("{e:#} (setting up the probe's test clock and customer)"))?;
    let result = probe.run_all();
    let disagreements = probe.disagreements;
    match probe.cleanup(&made) {
        Ok(a) if a.ok() => {}
        Ok(a) => eprintln!(
            "stripe-behaviours: warning: deleting test clock {} was answered {}; delete it in \
             the Dashboard",
            made.clock,
            a.summary()
        ),
        Err(e) => eprintln!(
            "stripe-behaviours: warning: test clock {} was not deleted ({e:#}); delete it in \
             the Dashboard",
            made.clock
        ),
    }
    drop(probe);
    result.map_err(|e| {
        anyhow::anyhow!("{e:#}; check --base-url, that the service is up, and the network")
    })?;
    if let Some(e) = write_error {
        anyhow::bail!("cannot write the results to stdout: {e}");
    }
    Ok(disagreements)
}

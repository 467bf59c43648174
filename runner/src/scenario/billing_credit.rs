//! `--scenario billing_credit` (DESIGN §4.1): one approved credit racing a billing run. Its
//! matrix is `crate::run`, its nemesis campaign `crate::nemesis`.

use super::{RunKind, ScenarioError, ScenarioOption, ScenarioRun};
use crate::cli::RunArgs;
use crate::job::Outcome;
use crate::run::RunOutcome;

/// The billing_credit scenario.
pub struct BillingCredit;

impl ScenarioRun for BillingCredit {
    fn name(&self) -> &'static str {
        verify::scenarios::Scenario::BillingCredit.as_str()
    }

    fn takes(&self, option: ScenarioOption, kind: RunKind) -> bool {
        match option {
            ScenarioOption::TwoHosts | ScenarioOption::EveryStep => false,
            ScenarioOption::ExposureSpanMs => kind == RunKind::Nemesis,
            _ => true,
        }
    }

    fn matrix(&self, args: &RunArgs) -> Result<RunOutcome, ScenarioError> {
        Ok(crate::run::run(args)?)
    }

    fn nemesis(&self, args: &RunArgs, list: &str) -> Result<Outcome, ScenarioError> {
        let run = crate::nemesis::NemesisArgs {
            nemeses: crate::nemesis::parse_list(list)?,
            trials: args.trials,
            seed: args.seed,
            // Trials mostly wait (on the in-flight bound, on held requests), so more than the
            // cores.
            jobs: args.jobs.unwrap_or(32),
            out: &args.out,
            journal: args.journal.as_deref(),
            clock_start: args.clock_start,
            outage_ms: args.outage_ms,
            exposure_span_ms: args.exposure_span_ms,
            shard: args.shard,
            signing_key: args.signing_key.as_deref(),
        };
        Ok(crate::nemesis::run_nemesis(&run).map(Outcome::Trials)?)
    }
}

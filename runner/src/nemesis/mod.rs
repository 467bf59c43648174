//! Nemesis trials (DESIGN §5.1): randomized, replayable runs of one case through one column under
//! faults the named crash points never reach. Every fault is a real event: a SIGKILL the runner
//! delivers at an instant the worker does not choose, or a rule the runner sets in the emulator
//! for the case's own API key. A trial's every random choice derives from its seed, and its id
//! names the seed, so `runner --replay ID` runs it again.

mod calibration;
mod console;
mod decide;
mod faults;
mod kept;
mod merge;
mod merge_error;
mod opening;
mod process;
mod replay_step;
mod run;
mod run_error;
mod storage;
mod timeline;
mod trial;
mod trial_error;
mod trial_record;
mod workers;
mod world;
mod write_fault;

pub use merge::merge_shards;
pub use merge_error::MergeShardsError;
pub use run::{replay, resume_campaign, run_nemesis, NemesisArgs, NemesisOutcome};
pub use run_error::NemesisRunError;

pub use verify::nemesis::nemeses::Nemesis;
use verify::nemesis::steps;

/// Parses a nemesis name.
pub fn parse_nemesis(s: &str) -> Result<Nemesis, NemesisListError> {
    Nemesis::from_name(s).ok_or_else(|| NemesisListError::Unknown {
        name: s.to_owned(),
        known: Nemesis::ALL.map(Nemesis::as_str).join(", "),
    })
}

/// Nemeses a new campaign no longer runs, with why; files that have their trials still verify,
/// and a trial of one still replays from its id.
pub const RETIRED: [(Nemesis, &str); 1] = [(
    Nemesis::DiskFull,
    "its record cannot say whether any write failed (a tmpfs with a drawn number of free pages \
     bites at one or two fixed points, and every trial was recorded as fired); write_enospc fails \
     the N-th write drawn over the column's own writes instead",
)];

/// `all` (every nemesis but the [`RETIRED`]) or a comma-separated list, in the order given,
/// each at most once.
pub fn parse_list(list: &str) -> Result<Vec<Nemesis>, NemesisListError> {
    if list.trim() == "all" {
        return Ok(Nemesis::ALL
            .into_iter()
            .filter(|n| RETIRED.iter().all(|(r, _)| r != n))
            .collect());
    }
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let n = parse_nemesis(name)?;
        if let Some((_, why)) = RETIRED.iter().find(|(r, _)| *r == n) {
            return Err(NemesisListError::Retired {
                name: n.as_str(),
                why,
            });
        }
        if !out.contains(&n) {
            out.push(n);
        }
    }
    if out.is_empty() {
        return Err(NemesisListError::Empty);
    }
    Ok(out)
}

/// A `--nemesis` list (or a trial id's nemesis) that names no nemesis.
#[derive(Debug, thiserror::Error)]
pub enum NemesisListError {
    /// A name that is not a nemesis.
    #[error("unknown nemesis {name:?}; expected `all` or some of: {known}")]
    Unknown {
        /// The name given.
        name: String,
        /// Every nemesis's name, comma-separated.
        known: String,
    },
    /// The list names nothing.
    #[error("--nemesis needs `all` or at least one name")]
    Empty,
    /// A nemesis new campaigns no longer run.
    #[error("{name} is retired: {why}; leave it out (its old trials still verify and replay with --replay)")]
    Retired {
        /// Its name.
        name: &'static str,
        /// Why.
        why: &'static str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_nemesis_run_is_of_this_codes_format_nemeses_and_plan() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../results/nemesis/billing_credit.json.gz");
        let bytes = verify::input::read_file(&path).unwrap();
        // Loading checks the format string and every field against today's types.
        let file = verify::load::load_nemesis(&bytes).unwrap();
        // Every nemesis a campaign runs today (`all`: the retired ones left out).
        assert_eq!(
            file.plan.nemeses,
            parse_list("all")
                .unwrap()
                .into_iter()
                .map(|n| n.as_str().to_owned())
                .collect::<Vec<_>>(),
            "the committed run does not have every nemesis: run it again"
        );
        // Its exposure span was sized from its own paths, not given or fixed.
        let exposure = file.plan.exposure.as_ref().expect("an exposure span");
        assert!(exposure.calibration.is_some(), "{exposure:?}");
        assert_eq!(
            file.plan.columns,
            scenarios::billing_credit::Column::ALL
                .map(|c| c.as_str().to_owned())
                .to_vec()
        );
        assert!(file.plan.trials >= 300, "{} trials", file.plan.trials);
        assert_eq!(
            file.environment.clock_start,
            Some(verify::scenarios::billing_credit::DEFAULT_CLOCK_START)
        );
        let report =
            verify::nemesis::check::verify_nemesis(&file, &verify::receipt::KeyCheck::SelfAttested);
        assert!(report.ok, "{:?}", report.findings.first());
    }

    #[test]
    fn lists_parse_in_order_without_repeats() {
        let all = parse_list("all").unwrap();
        assert_eq!(all.len(), Nemesis::ALL.len() - RETIRED.len());
        assert!(!all.contains(&Nemesis::DiskFull));
        let retired = parse_list("kill_random,disk_full").unwrap_err().to_string();
        assert!(retired.starts_with("disk_full is retired: "), "{retired}");
        assert_eq!(
            parse_list("kill_recovery, kill_random,kill_recovery").unwrap(),
            vec![Nemesis::KillRecovery, Nemesis::KillRandom]
        );
        assert!(parse_list("kill_everything").is_err());
        assert!(parse_list(" , ").is_err());
        // A retired nemesis's trial id still parses, for --replay.
        for n in Nemesis::ALL {
            assert_eq!(parse_nemesis(n.as_str()).unwrap(), n);
        }
    }
}

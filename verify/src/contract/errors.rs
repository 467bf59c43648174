//! Why a plan cannot be made, or a text is not a file of a scenario.

/// Why a scenario's parameters give no plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A list of names is empty.
    #[error("params.{field}: empty; name at least one")]
    Empty {
        /// The parameter.
        field: &'static str,
    },
    /// A name the scenario does not know.
    #[error("params.{field}[{index}]: {value:?} is not one of {allowed}")]
    Unknown {
        /// The parameter.
        field: &'static str,
        /// Its place in the list.
        index: usize,
        /// The name, cut to 80 characters.
        value: String,
        /// The names the scenario knows, comma-separated.
        allowed: String,
    },
    /// A name listed twice.
    #[error("params.{field}[{index}]: {value:?} is listed twice")]
    Twice {
        /// The parameter.
        field: &'static str,
        /// Its second place in the list.
        index: usize,
        /// The name, cut to 80 characters.
        value: String,
    },
    /// No repeat.
    #[error("params.repeats: a run has at least one repeat")]
    NoRepeats,
    /// The plan has more cells than the file holds (or than a run can hold).
    #[error("the parameters plan more than {at_most} cells")]
    TooLarge {
        /// The most cells the plan may have.
        at_most: usize,
    },
}

impl PlanError {
    /// The number of cells of a plan that multiplies `factors` (each list's length, the
    /// repeats), refused when it is over `at_most`, before anything is built.
    pub fn count_within(factors: &[usize], at_most: usize) -> Result<usize, PlanError> {
        factors
            .iter()
            .try_fold(1usize, |n, f| n.checked_mul(*f))
            .filter(|n| *n <= at_most)
            .ok_or(PlanError::TooLarge { at_most })
    }

    /// Checks that `given` names only `allowed` names, each once, and at least one.
    pub fn check_names(
        field: &'static str,
        given: &[String],
        allowed: &[&str],
    ) -> Result<(), PlanError> {
        if given.is_empty() {
            return Err(PlanError::Empty { field });
        }
        for (index, g) in given.iter().enumerate() {
            let value = crate::display::shorten(g, 80);
            if !allowed.contains(&g.as_str()) {
                return Err(PlanError::Unknown {
                    field,
                    index,
                    value,
                    allowed: allowed.join(", "),
                });
            }
            if given.get(..index).is_some_and(|before| before.contains(g)) {
                return Err(PlanError::Twice {
                    field,
                    index,
                    value,
                });
            }
        }
        Ok(())
    }
}

/// Why a text is not a file of a registered scenario.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// A member is missing, of the wrong type, or unknown.
    #[error("{path}: {why}")]
    Shape {
        /// The JSON path where reading stopped.
        path: String,
        /// What was wrong there, cut to a few hundred characters.
        why: String,
    },
    /// The text is past a limit every document is read under (or is not JSON).
    #[error("{0}")]
    Limits(String),
    /// Something follows the file's JSON value.
    #[error("the text goes on after the file's JSON value: {0}")]
    Trailing(String),
}

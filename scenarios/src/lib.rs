//! Scenario definitions for the Interlock experiment runner.
//!
//! One scenario so far: [`billing_credit`], a support agent's one-off goodwill credit racing a
//! billing run (DESIGN §4). The crate defines the case, the reads, the three columns
//! (`no_check`, `hand_check`, `interlock`), the outages and the ground truth; the `runner`
//! drives them in real worker processes and SIGKILLs them, and `verify` owns the judgement.

pub mod billing_credit;
pub mod notify;
pub mod pr_merge;
pub mod shared_cap;

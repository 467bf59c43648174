//! Every figure the published report prints, derived by `verify` from a file it checked.
//!
//! Each family of whole files has a `check` function that runs `verify`'s own checker of the
//! file and hands back, beside that checker's report, the figures of the file: counts, ratios
//! (`(numerator, denominator)`), row lists, sets and millisecond durations, typed and not
//! formatted. The figure types have private fields and no public constructor, so a value of one
//! is always `verify`'s derivation from a file `verify` checked; a renderer shows them when the
//! report beside them is clean, and formats them (dollars, seconds, labels) itself.

pub mod billing_credit;
pub mod cap_nemesis;
pub mod nemesis;
pub mod shared_cap;

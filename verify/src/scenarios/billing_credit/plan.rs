//! The billing_credit matrix (DESIGN §4.5): the reference page's six rows (crash point, outage)
//! and its three columns, in its order. The runner's default plan and the synthetic files are
//! built from these; the scenario crate parses them into its typed names.

/// The reference page's six rows, `(crash point, outage)`, in its order.
pub const REFERENCE_ROWS: [(&str, &str); 6] = [
    ("before_send", "renewal"),
    ("before_send", "billing_credit"),
    ("before_send", "proration"),
    ("after_send", "renewal"),
    ("after_send", "proration"),
    ("before_send", "unrelated_credit"),
];

/// The three columns, in display order.
pub const REFERENCE_COLUMNS: [&str; 3] = ["no_check", "hand_check", "interlock"];

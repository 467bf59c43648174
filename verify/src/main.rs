//! `verify`: checks receipts and results files offline (work in progress).
fn main() {}

//! Throughput benchmark (filled in below).
fn main() {}

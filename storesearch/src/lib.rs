//! The journal stores searched for safety breaks by method rather than by review: every crash
//! state of the file store ([`crash`]); the thread-schedule search runs the same workloads under
//! a controlled scheduler (`tests/schedules.rs`, feature `shuttle`: see [`crash::threads`]). The PostgreSQL fault search
//! is in the `storesearch` command.

pub mod crash;

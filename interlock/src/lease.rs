//! The lease store: is the authority behind an effect still live and covering it?

use serde_json::Value;

/// The answer of a [`LeaseStore`].
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseCheck {
    /// The lease is live (not revoked, not expired) and covers this effect (e.g. the amount is
    /// within the approval's cap).
    pub live: bool,
    /// A description of the grant, recorded on the entry (e.g. the approval record).
    pub grant: Option<Value>,
}

/// The lease store could not answer (as opposed to answering "not live").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("lease store error: {reason}")]
pub struct LeaseError {
    /// What went wrong, in words.
    pub reason: String,
}

impl LeaseError {
    /// An error with this reason.
    pub fn new(reason: impl Into<String>) -> LeaseError {
        LeaseError {
            reason: reason.into(),
        }
    }
}

/// Where leases (authorities, approvals) live.
pub trait LeaseStore {
    /// Whether `lease` is live and covers `effect`.
    fn check(&self, lease: &Value, effect: &Value) -> Result<LeaseCheck, LeaseError>;
}

impl<L: LeaseStore + ?Sized> LeaseStore for &L {
    fn check(&self, lease: &Value, effect: &Value) -> Result<LeaseCheck, LeaseError> {
        (**self).check(lease, effect)
    }
}

impl<L: LeaseStore + ?Sized> LeaseStore for std::sync::Arc<L> {
    fn check(&self, lease: &Value, effect: &Value) -> Result<LeaseCheck, LeaseError> {
        (**self).check(lease, effect)
    }
}

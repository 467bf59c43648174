//! Lease and budget stores for tests: leases granted and revoked by hand, every lease live, and
//! budgets with fixed caps.

use crate::budget::{BudgetError, BudgetStore};
use crate::lease::{LeaseCheck, LeaseError, LeaseStore};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;

/// Leases that are live once granted and until revoked. The grant record is
/// `{"lease": <lease>, "revoked": null}` while live, `"revoked": true` once revoked.
#[derive(Debug, Default)]
pub struct MemLeases {
    leases: Mutex<HashMap<String, bool>>,
}

impl MemLeases {
    /// No leases.
    pub fn new() -> MemLeases {
        MemLeases::default()
    }

    fn key(lease: &Value) -> String {
        verify::canonical::to_string(lease).unwrap_or_else(|_| lease.to_string())
    }

    /// Grant (or un-revoke) a lease.
    pub fn grant(&self, lease: &Value) {
        self.leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(Self::key(lease), true);
    }

    /// Revoke a lease.
    pub fn revoke(&self, lease: &Value) {
        self.leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(Self::key(lease), false);
    }
}

impl LeaseStore for MemLeases {
    fn check(&self, lease: &Value, _effect: &Value) -> Result<LeaseCheck, LeaseError> {
        let state = self
            .leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&Self::key(lease))
            .copied();
        Ok(LeaseCheck {
            live: state == Some(true),
            grant: state.map(|live| {
                json!({"lease": lease, "revoked": if live { Value::Null } else { Value::Bool(true) }})
            }),
        })
    }
}

/// Budgets' caps in memory: set, lowered, forgotten, or made to fail, at any time.
#[derive(Debug, Default)]
pub struct MemBudgets {
    caps: Mutex<HashMap<String, i64>>,
    failing: Mutex<Option<String>>,
}

impl MemBudgets {
    /// No budgets.
    pub fn new() -> MemBudgets {
        MemBudgets::default()
    }

    /// Budgets with these caps.
    pub fn with_caps<'a>(caps: impl IntoIterator<Item = (&'a str, i64)>) -> MemBudgets {
        let b = MemBudgets::new();
        for (id, cap) in caps {
            b.set_cap(id, cap);
        }
        b
    }

    /// Set (or change) a budget's cap.
    pub fn set_cap(&self, id: &str, cap: i64) {
        self.caps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_owned(), cap);
    }

    /// Forget a budget: it is unknown from now on.
    pub fn forget(&self, id: &str) {
        self.caps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    /// Make every read fail with `reason` (`None`: answer again).
    pub fn fail(&self, reason: Option<&str>) {
        *self.failing.lock().unwrap_or_else(|p| p.into_inner()) = reason.map(str::to_owned);
    }
}

impl BudgetStore for MemBudgets {
    fn cap(&self, id: &str) -> Result<Option<i64>, BudgetError> {
        if let Some(why) = &*self.failing.lock().unwrap_or_else(|p| p.into_inner()) {
            return Err(BudgetError::new(why.clone()));
        }
        Ok(self
            .caps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .copied())
    }
}

/// Leases that are always live (for tests and probes that do not exercise leases).
#[derive(Debug, Default, Clone, Copy)]
pub struct AllLive;

impl LeaseStore for AllLive {
    fn check(&self, lease: &Value, _effect: &Value) -> Result<LeaseCheck, LeaseError> {
        Ok(LeaseCheck {
            live: true,
            grant: Some(json!({"lease": lease})),
        })
    }
}

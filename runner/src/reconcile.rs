//! `runner reconcile`: re-read, after the run, every Stripe object a results file names, and
//! compare it with the ground truth the file recorded and with its receipts' anchors.
//!
//! verify checks a file offline and cannot tell whether Stripe ever held its ground truth; this
//! command asks Stripe. It only reads (GET), so a read-only restricted key (`rk_test_`) is
//! enough. Per cell it reads the customer's balance transactions, credit notes, invoices and
//! balance with the same reads the runner used ([`bc::ground_truth`]), compares each object by
//! id, and checks every credit the gate sent still carries its DISPATCHED entry's hash
//! ([`verify::binding::check_cell`] over what Stripe holds now).

use crate::backend::{check_stripe_key, BackendKind, STRIPE_KEY_ENV, STRIPE_REQUEST_TIMEOUT};
use scenarios::billing_credit::{self as bc, CaseFile, Prices};
use std::collections::BTreeMap;
use std::fmt::Debug;
use verify::results::{Cell, GroundTruth, ResultsFile};

/// One disagreement between the file and Stripe, naming the cell and the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// `cells[i] (crash:outage:column #repeat)`.
    pub cell: String,
    /// The Stripe object (`cbtxn_…`, `cn_…`, `in_…`, `cus_…`).
    pub object: String,
    /// What differs, recorded value first.
    pub what: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.cell, self.object, self.what)
    }
}

/// Why reconcile could not compare (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// Stripe (or the emulator) could not be read for a cell.
    #[error("{cell}: cannot read Stripe: {source}")]
    Read {
        /// The cell.
        cell: String,
        /// The read that failed.
        source: scenarios::billing_credit::ScenarioError,
    },
    /// No client could be made for a cell.
    #[error("{cell}: {source}")]
    Client {
        /// The cell.
        cell: String,
        /// Why.
        source: stripe::StripeError,
    },
}

/// Why the account a file's cells live in cannot be reached (exit 2), and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// The emulator's address or run id is missing.
    #[error(
        "reconcile against the emulator needs --base-url and --emulator-run, \
         both printed by `runner --keep-emulator` when the run ends"
    )]
    EmulatorArgs,
    /// Stripe's key is missing.
    #[error("reconcile against Stripe needs {STRIPE_KEY_ENV}: a test-mode key of the run's account; a read-only restricted key (rk_test_...) is enough")]
    NoStripeKey,
    /// Stripe's key is not a test-mode key.
    #[error(transparent)]
    NotATestKey(#[from] crate::backend::BackendError),
}

/// How to reach the account a file's cells live in.
pub enum Account {
    /// Stripe test mode (or any base URL) with one key for every cell.
    Shared {
        /// API base URL.
        base_url: String,
        /// `sk_test_…` or `rk_test_…`.
        key: String,
    },
    /// The emulator that served run `run_id`: each cell's objects are read with the read-only
    /// key of that cell's own account.
    Emulator {
        /// The emulator's base URL.
        base_url: String,
        /// The run id the runner printed.
        run_id: String,
    },
}

impl Account {
    /// The account for `--backend` (default: the file's own backend), `--base-url` and, on the
    /// emulator, `--emulator-run`; on Stripe the key comes from `STRIPE_SECRET_KEY`.
    pub fn from_args(
        backend: Option<BackendKind>,
        file: &ResultsFile,
        base_url: Option<&str>,
        run_id: Option<&str>,
    ) -> Result<Account, AccountError> {
        let backend = backend.unwrap_or(if file.environment.backend == "emulator" {
            BackendKind::Emulator
        } else {
            BackendKind::Stripe
        });
        match backend {
            BackendKind::Emulator => {
                let (Some(base_url), Some(run_id)) = (base_url, run_id) else {
                    return Err(AccountError::EmulatorArgs);
                };
                Ok(Account::Emulator {
                    base_url: base_url.to_owned(),
                    run_id: run_id.to_owned(),
                })
            }
            BackendKind::Stripe => {
                let key = std::env::var(STRIPE_KEY_ENV).map_err(|_| AccountError::NoStripeKey)?;
                check_stripe_key(&key)?;
                Ok(Account::Shared {
                    base_url: base_url
                        .unwrap_or(stripe::client::STRIPE_API_BASE)
                        .to_owned(),
                    key: key.trim().to_owned(),
                })
            }
        }
    }

    fn client(&self, index: usize) -> Result<stripe::Client, stripe::StripeError> {
        let (base_url, key) = match self {
            Account::Shared { base_url, key } => (base_url, key.clone()),
            Account::Emulator { base_url, run_id } => {
                (base_url, crate::keys::cell_read_key(run_id, index))
            }
        };
        let config = stripe::ClientConfig::new(base_url, key).with_timeout(STRIPE_REQUEST_TIMEOUT);
        stripe::Client::new(config)
    }
}

fn label(i: usize, c: &Cell) -> String {
    format!(
        "cells[{i}] ({}:{}:{} #{})",
        c.crash, c.outage, c.column, c.repeat
    )
}

/// Every difference between the file's cells and what the account holds now, in cell order.
pub fn reconcile(file: &ResultsFile, account: &Account) -> Result<Vec<Difference>, ReconcileError> {
    let mut out = Vec::new();
    for (i, cell) in file.cells.iter().enumerate() {
        let name = label(i, cell);
        if cell.stripe_ids.customer.is_empty() {
            continue; // the case was never opened (a harness error before it): nothing to read
        }
        let client = account.client(i).map_err(|source| ReconcileError::Client {
            cell: name.clone(),
            source,
        })?;
        let case = CaseFile {
            case_id: cell.case.case_id.clone(),
            incident: cell.case.incident.clone(),
            clock: cell.stripe_ids.clock.clone(),
            customer: cell.stripe_ids.customer.clone(),
            subscription: cell.stripe_ids.subscription.clone(),
            approval: cell.case.approval.clone(),
            text: cell.case.text.clone(),
            prices: Prices {
                plan: String::new(),
                small: String::new(),
            },
        };
        let live = bc::ground_truth(&client, &case).map_err(|source| ReconcileError::Read {
            cell: name.clone(),
            source,
        })?;
        compare(&name, cell, &live, &mut out);
    }
    Ok(out)
}

/// The differences of one cell: each object by id, the balance, and the anchors.
fn compare(name: &str, cell: &Cell, live: &GroundTruth, out: &mut Vec<Difference>) {
    let was = &cell.ground_truth;
    let mut diff = |object: &str, what: String| {
        out.push(Difference {
            cell: name.to_owned(),
            object: object.to_owned(),
            what,
        })
    };
    by_id(
        &was.case_credits,
        &live.case_credits,
        |c| &c.id,
        "case credit",
        &mut diff,
    );
    by_id(
        &was.balance_transactions,
        &live.balance_transactions,
        |t| &t.id,
        "balance transaction",
        &mut diff,
    );
    by_id(
        &was.credit_notes,
        &live.credit_notes,
        |n| &n.id,
        "credit note",
        &mut diff,
    );
    by_id(
        &was.invoices,
        &live.invoices,
        |v| &v.id,
        "invoice",
        &mut diff,
    );
    if was.customer_balance != live.customer_balance {
        diff(
            &cell.stripe_ids.customer,
            format!(
                "customer balance: recorded {}, Stripe holds {}",
                was.customer_balance, live.customer_balance
            ),
        );
    }
    if let Some(receipt) = &cell.receipt {
        let mut now = cell.clone();
        now.ground_truth = live.clone();
        let mut findings = Vec::new();
        verify::binding::check_cell(0, "cell", &now, receipt, &mut findings);
        for f in findings
            .iter()
            .filter(|f| f.code == verify::finding::code::ANCHOR_MISMATCH)
        {
            let k = f
                .path
                .split(['[', ']'])
                .nth(1)
                .and_then(|k| k.parse::<usize>().ok());
            let id = k
                .and_then(|k| live.case_credits.get(k))
                .map_or("a case credit", |c| c.id.as_str());
            let found = f.found.as_deref().unwrap_or("none");
            diff(id, format!("metadata[interlock_dispatch] at Stripe is {found}, not the receipt's DISPATCHED hash"));
        }
    }
}

/// Objects recorded but gone, objects added, and objects whose recorded fields differ.
fn by_id<T: PartialEq + Debug>(
    was: &[T],
    now: &[T],
    id: impl Fn(&T) -> &String,
    kind: &str,
    diff: &mut impl FnMut(&str, String),
) {
    let now_by: BTreeMap<&String, &T> = now.iter().map(|t| (id(t), t)).collect();
    let was_by: BTreeMap<&String, &T> = was.iter().map(|t| (id(t), t)).collect();
    for (k, w) in &was_by {
        match now_by.get(k) {
            None => diff(
                k,
                format!("{kind} recorded in the ground truth, not at Stripe"),
            ),
            Some(n) if n != w => diff(
                k,
                format!("{kind} differs: recorded {w:?}, Stripe holds {n:?}"),
            ),
            Some(_) => {}
        }
    }
    for k in now_by.keys().filter(|k| !was_by.contains_key(*k)) {
        diff(k, format!("{kind} at Stripe, not in the ground truth"));
    }
}

/// Why `runner reconcile`'s results file could not be read.
#[derive(Debug, thiserror::Error)]
enum UnreadableResults {
    /// The file could not be read.
    #[error(transparent)]
    Read(#[from] std::io::Error),
    /// The file is not a results file.
    #[error(transparent)]
    Load(#[from] verify::load::LoadError),
}

/// Reads and parses a results file.
fn read_results(path: &std::path::Path) -> Result<ResultsFile, UnreadableResults> {
    Ok(verify::load::load_results(&std::fs::read(path)?)?)
}

/// `runner reconcile`: 0 every object matches, 1 a difference (each printed) or the file does
/// not verify, 2 the file or Stripe could not be read, or bad arguments.
pub fn command(args: &crate::cli::ReconcileArgs) -> u8 {
    let shown = args.results.display().to_string();
    let file = match read_results(&args.results) {
        Ok(f) => f,
        Err(e) => {
            eprintln!(
                "runner: error: {}",
                verify::display::escape(&format!(
                    "{shown}: cannot read it as a results file: {e}; pass a results file (e.g. results/billing_credit.json)"
                ))
            );
            return 2;
        }
    };
    let checked = verify::check::verify_results(&file, &verify::receipt::KeyCheck::SelfAttested);
    if !checked.ok {
        say!("{shown}: does not verify (run `verify {shown}` for the findings); reconcile compares only a file that verifies: FAILED");
        return 1;
    }
    let account = match Account::from_args(
        args.backend,
        &file,
        args.base_url.as_deref(),
        args.emulator_run.as_deref(),
    ) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("runner: error: {}", verify::display::escape(&e.to_string()));
            return 2;
        }
    };
    match reconcile(&file, &account) {
        Err(e) => {
            eprintln!("runner: error: {}", verify::display::escape(&e.to_string()));
            2
        }
        Ok(diffs) if diffs.is_empty() => {
            say!(
                "{shown}: {} cells re-read; every object matches the ground truth and every credit the gate sent carries its receipt's DISPATCHED hash: OK",
                file.cells.len()
            );
            0
        }
        Ok(diffs) => {
            say!(
                "{shown}: {} difference(s) between the file and what Stripe holds now: FAILED",
                diffs.len()
            );
            for d in &diffs {
                say!("  {}", verify::display::escape(&d.to_string()));
            }
            1
        }
    }
}

//! Shared fixtures: an in-process Stripe emulator, a fresh test key per test, opened cases,
//! decisions, and crashes simulated by a panicking hook (unwinding drops every file handle and
//! flock, as the kernel does for a SIGKILLed process).
#![allow(dead_code, missing_docs)]

use ed25519_dalek::SigningKey;
use rand::SeedableRng;
use scenarios::billing_credit::{
    decide_and_send, open_case, read_account, restart, Account, CaseFile, Column, CrashHook,
    CrashPoint, Prices, RestartReport, ScenarioError, ScenarioSettings,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use stripe::emulator::{Emulator, EmulatorConfig, RunningEmulator};
use stripe::{Client, ClientConfig};
use verify::results::{DeciderInfo, Decision};

/// The client's request timeout in tests; `max_in_flight` covers it.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

pub struct Env {
    pub emulator: RunningEmulator,
    pub client: Client,
    pub prices: Prices,
    pub dir: tempfile::TempDir,
    pub key: SigningKey,
    pub settings: ScenarioSettings,
    pub rng: rand::rngs::StdRng,
}

static NEXT: AtomicU64 = AtomicU64::new(1);

impl Env {
    /// A fresh emulator and account (API key), prices ensured.
    pub fn new() -> Env {
        let emulator = Emulator::start(EmulatorConfig::default()).expect("start the emulator");
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let api_key = format!("sk_test_scenarios_{}_{n}", std::process::id());
        let client = Client::new(
            ClientConfig::new(emulator.base_url(), api_key).with_timeout(CLIENT_TIMEOUT),
        )
        .expect("client");
        let prices = scenarios::billing_credit::ensure_prices(&client).expect("prices");
        Env {
            emulator,
            client,
            prices,
            dir: tempfile::tempdir().expect("tempdir"),
            key: SigningKey::from_bytes(&[n as u8; 32]),
            settings: ScenarioSettings::new(
                CLIENT_TIMEOUT + Duration::from_millis(500),
                CLIENT_TIMEOUT,
            ),
            rng: rand::rngs::StdRng::seed_from_u64(n),
        }
    }

    /// Opens a case in its own cell directory and saves `case.json` there.
    pub fn open(&mut self, label: &str) -> (CaseFile, PathBuf) {
        let case = open_case(
            &self.client,
            &self.prices,
            label,
            verify::scenarios::billing_credit::DEFAULT_CLOCK_START,
            &mut self.rng,
        )
        .expect("open case");
        let cell = self.dir.path().join(label.replace(['/', ' '], "_"));
        std::fs::create_dir_all(&cell).unwrap();
        case.save(&cell).unwrap();
        (case, cell)
    }

    /// The policy decision for the case: the full approved amount on the account's premises.
    pub fn decide(&self, case: &CaseFile) -> (Account, Decision) {
        let account = read_account(&self.client, case).expect("read account");
        let decision = Decision {
            amount: case.approval.max_cents,
            description: format!(
                "Goodwill credit for incident {} ({})",
                case.incident, case.case_id
            ),
            decider: DeciderInfo {
                kind: "policy".into(),
                model: None,
            },
            premises: account.premises.clone(),
            replayed_from: None,
        };
        (account, decision)
    }

    /// Runs the decide phase of `column` without a crash hook.
    pub fn send(
        &self,
        column: Column,
        cell: &Path,
        case: &CaseFile,
        decision: &Decision,
    ) -> Result<String, ScenarioError> {
        decide_and_send(
            column,
            &self.client,
            cell,
            case,
            decision,
            None,
            &self.key,
            &self.settings,
        )
    }

    /// Runs the restart phase of `column`.
    pub fn restart(&self, column: Column, cell: &Path) -> Result<RestartReport, ScenarioError> {
        restart(column, &self.client, cell, &self.key, &self.settings)
    }

    /// Runs the decide phase in a thread whose crash hook panics at `point`; asserts it crashed.
    pub fn decide_and_crash(
        &self,
        column: Column,
        cell: &Path,
        case: &CaseFile,
        decision: &Decision,
        point: CrashPoint,
    ) {
        let hook: CrashHook = Arc::new(|at| panic!("simulated SIGKILL at {at}"));
        let (client, cell, case, decision, key, settings) = (
            self.client.clone(),
            cell.to_path_buf(),
            case.clone(),
            decision.clone(),
            self.key.clone(),
            self.settings,
        );
        let joined = std::thread::spawn(move || {
            decide_and_send(
                column,
                &client,
                &cell,
                &case,
                &decision,
                Some((point, hook)),
                &key,
                &settings,
            )
        })
        .join();
        match joined {
            Err(_) => {}
            Ok(result) => panic!("{column} decide did not reach {point}: returned {result:?}"),
        }
    }
}

//! The HTTP layer: a loopback listener whose connections can be cut on purpose
//! (`listener.rs`), the checks in front of the API (`admission.rs`), fault
//! rules, idempotency, and Stripe's response headers (`answer.rs`). Here: the
//! shared state and one request's way through these layers.

mod admission;
mod answer;
mod listener;

use super::errors::ApiError;
use super::faults::{FaultAction, FaultHandle};
use super::form::{canonical, Form};
use super::idempotency::{Begin, Saved};
use super::ratelimit::Limiter;
use super::routes::dispatch;
use super::state::{fnv, request_id, Account};
use super::versions::{self, AcceptedVersion};
use admission::{admit, check_version};
use answer::{respond, Answer};
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

pub(crate) use listener::{Conn, KillableListener};

/// Shared server state.
pub(crate) struct App {
    accounts: Mutex<HashMap<String, Arc<Mutex<Account>>>>,
    pub faults: FaultHandle,
    limiter: Limiter,
    ttl: Duration,
    requests: AtomicU64,
    seed: u64,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").finish_non_exhaustive()
    }
}

impl App {
    pub fn new(faults: FaultHandle, limiter: Limiter, ttl: Duration, seed: u64) -> App {
        App {
            accounts: Mutex::new(HashMap::new()),
            faults,
            limiter,
            ttl,
            requests: AtomicU64::new(0),
            seed,
        }
    }

    fn account(&self, key: &str) -> Arc<Mutex<Account>> {
        let mut accounts = self.accounts.lock().unwrap_or_else(PoisonError::into_inner);
        accounts
            .entry(key.to_string())
            .or_insert_with(|| Arc::new(Mutex::new(Account::new(key))))
            .clone()
    }

    /// Runs `change` (given the clock's time), then moves the account's test clock `clock_id` one second forward, with
    /// the account locked throughout: each of the account's requests is served wholly before
    /// `change` (seeing the old time) or wholly after the clock moved (seeing the new one).
    /// Returns what `change` returned and the clock's time before the step.
    pub fn step_clock_around<R>(
        &self,
        api_key: &str,
        clock_id: &str,
        change: impl FnOnce(i64) -> R,
    ) -> Result<(R, i64), super::NoSuchClock> {
        let account = self.account(api_key);
        let mut a = lock(&account);
        let before = super::clock::settle_and_read(&mut a, clock_id)?;
        let changed = change(before);
        super::clock::run_until(&mut a, clock_id, before + 1);
        Ok((changed, before))
    }

    /// Makes refund `id` of the account of `api_key` fail (see
    /// [`super::payments::fail_refund`]), with that account locked.
    pub fn fail_refund(
        &self,
        api_key: &str,
        id: &str,
    ) -> Result<(), super::payments::RefundCannotFail> {
        let account = self.account(api_key);
        let mut a = lock(&account);
        let Account {
            refunds, charges, ..
        } = &mut *a;
        super::payments::fail_refund(refunds, charges, id)
    }

    fn request_id(&self) -> String {
        let n = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        request_id(self.seed, n)
    }
}

fn lock(account: &Mutex<Account>) -> std::sync::MutexGuard<'_, Account> {
    account.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The axum handler for every request. The work runs in its own task so that a
/// client that gives up (timeout) cannot cancel a change halfway: like at
/// Stripe, a request that arrived runs to completion.
pub(crate) async fn handle(
    State(app): State<Arc<App>>,
    ConnectInfo(conn): ConnectInfo<Conn>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let task = tokio::spawn(process(app, conn, method, uri, headers, body));
    match task.await {
        Ok(response) => response,
        Err(_) => plain_error(&ApiError::server_error(500), "req_internal"),
    }
}

fn plain_error(e: &ApiError, request_id: &str) -> Response {
    respond(
        &Answer::new(e.status, e.body(request_id)),
        request_id,
        versions::default_version(),
    )
}

/// Answers a fault that strikes before the endpoint runs, if this is one.
fn fault_in_front(
    fault: Option<&FaultAction>,
    key: Option<&str>,
    request_id: &str,
) -> Option<Answer> {
    let error = |e: ApiError| Answer::error(&e, key, request_id);
    match fault? {
        FaultAction::Error { status } => Some(error(ApiError::server_error(*status))),
        FaultAction::Retryable { status } => Some(Answer {
            should_retry: Some(true),
            ..error(ApiError::server_error(*status))
        }),
        FaultAction::RateLimit { retry_after_s } => Some(Answer {
            retry_after_s: *retry_after_s,
            ..error(ApiError::rate_limited())
        }),
        FaultAction::Delay { .. }
        | FaultAction::CommitThenDrop
        | FaultAction::CommitThenError { .. }
        | FaultAction::SlowAdvance { .. } => None,
    }
}

/// Runs the endpoint and turns its result into an answer, applying a fault
/// that strikes after the change (`CommitThenError`). Also says whether the
/// endpoint began executing, so the answer is saved under the idempotency key.
fn execute(account: &mut Account, call: &Call<'_>, fault: Option<&FaultAction>) -> (Answer, bool) {
    let form = Form::new(call.params);
    let key = call.key;
    match (
        dispatch(account, call.method, call.path, &form, call.version),
        fault,
    ) {
        (Ok(_), Some(FaultAction::CommitThenError { status })) => {
            let e = ApiError::server_error_after_commit(*status);
            let answer = Answer {
                should_retry: Some(false),
                ..Answer::error(&e, key, call.request_id)
            };
            (answer, true)
        }
        (Ok(body), _) => (
            Answer {
                idempotency_key: key.map(str::to_string),
                ..Answer::new(200, body)
            },
            true,
        ),
        (Err(e), _) => (Answer::error(&e, key, call.request_id), e.executed),
    }
}

/// One request as the endpoint sees it.
struct Call<'a> {
    method: &'a str,
    path: &'a str,
    params: &'a Map<String, Value>,
    /// The API version it is answered in.
    version: AcceptedVersion,
    /// Its `Idempotency-Key`, if any.
    key: Option<&'a str>,
    request_id: &'a str,
}

/// The idempotency layer for a keyed request: `None` when it should run (the
/// key is now reserved), else the answer to send at once (a replay or an
/// idempotency error).
fn reserve_key(
    app: &App,
    account: &Mutex<Account>,
    key: &str,
    endpoint: &str,
    params: &Map<String, Value>,
    request_id: &str,
) -> Option<Answer> {
    let fail = |e: ApiError| Some(Answer::error(&e, Some(key), request_id));
    if key.is_empty() || key.len() > 255 {
        return fail(ApiError::bad_request(
            "Idempotency-Key must be between 1 and 255 characters long.",
        ));
    }
    let canonical_params = canonical(&Value::Object(params.clone()));
    let begin =
        lock(account)
            .idempotency
            .begin(key, endpoint, &canonical_params, Instant::now(), app.ttl);
    match begin {
        Begin::Run => None,
        Begin::Replay(saved) => Some(Answer::replay(saved, key)),
        Begin::ParamsMismatch => fail(ApiError::idempotency_mismatch(key)),
        Begin::EndpointMismatch { first } => {
            fail(ApiError::idempotency_other_endpoint(key, &first, endpoint))
        }
        Begin::InUse => fail(ApiError::idempotency_in_use(key)),
    }
}

/// Saves the answer under the key when the endpoint began executing; frees the
/// key when the request was rejected while validating (nothing saved).
fn settle_key(account: &mut Account, key: &str, answer: &Answer, executed: bool, request_id: &str) {
    if executed {
        let saved = Saved {
            status: answer.status,
            body: answer.body.clone(),
            request_id: request_id.to_string(),
            should_retry: answer.should_retry,
        };
        account.idempotency.finish(key, saved, Instant::now());
    } else {
        account.idempotency.abandon(key);
    }
}

/// One request, in Stripe's order: authentication, version, parameters, rate
/// limit and faults in front of the API (nothing saved), the idempotency layer,
/// the endpoint, and saving its answer under the key.
async fn process(
    app: Arc<App>,
    conn: Conn,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request_id = app.request_id();
    let method = method.as_str().to_string();
    let path = uri.path().to_string();
    let idem_key = idempotency_key(&method, &headers);
    let key_ref = idem_key.as_deref();
    // Checked after authentication, as at Stripe; until then (and when it is
    // refused) answers say the account default.
    let asked_version = check_version(&headers);
    let version = asked_version
        .as_ref()
        .map_or(versions::default_version(), |v| *v);
    let answer = |a: &Answer| respond(a, &request_id, version);

    // Turned away before the idempotency layer: nothing is saved.
    let admitted = admit(&app, &headers, asked_version.err(), &method, &uri, &body);
    let (api_key, params) = match admitted {
        Ok(admitted) => admitted,
        Err(e) => return answer(&Answer::error(&e, key_ref, &request_id)),
    };
    let (rule, fault) = match app.faults.take(&method, &path, Some(&api_key)) {
        Some((id, action)) => (Some(id), Some(action)),
        None => (None, None),
    };
    // Counted as ended when this request's handling is over, by whichever return.
    let _ended = RuleEnded {
        faults: &app.faults,
        rule,
    };
    if let Some(a) = fault_in_front(fault.as_ref(), key_ref, &request_id) {
        return answer(&a);
    }
    let account = app.account(&api_key);
    if let Some(before) = app.faults.keys_forgotten_before(&api_key) {
        lock(&account).idempotency.forget_finished_before(before);
    }
    if let Some(k) = key_ref {
        let endpoint = format!("{method} {path}");
        if let Some(a) = reserve_key(&app, &account, k, &endpoint, &params, &request_id) {
            return answer(&a);
        }
    }
    if let Some(FaultAction::Delay { ms }) = fault {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let call = Call {
        method: &method,
        path: &path,
        params: &params,
        version,
        key: key_ref,
        request_id: &request_id,
    };
    let settled = run_and_settle(&account, &call, fault.as_ref());
    if fault == Some(FaultAction::CommitThenDrop) {
        conn.kill.store(true, Ordering::SeqCst);
    }
    answer(&settled)
}

/// Marks the request a fault rule affected as handled to its end when dropped.
struct RuleEnded<'a> {
    faults: &'a FaultHandle,
    rule: Option<super::faults::FaultId>,
}

impl Drop for RuleEnded<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.rule {
            self.faults.end(id);
        }
    }
}

/// A POST's `Idempotency-Key` (other methods' keys are ignored).
fn idempotency_key(method: &str, headers: &HeaderMap) -> Option<String> {
    if method != "POST" {
        return None;
    }
    headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Runs the endpoint with the account locked (a `SlowAdvance` fault slows
/// the clock advance it may start) and settles the idempotency key.
fn run_and_settle(
    account: &Mutex<Account>,
    call: &Call<'_>,
    fault: Option<&FaultAction>,
) -> Answer {
    let mut guard = lock(account);
    if let Some(FaultAction::SlowAdvance { ms }) = fault {
        guard.next_advance_takes = Some(Duration::from_millis(*ms));
    }
    let (answer, executed) = execute(&mut guard, call, fault);
    if let Some(k) = call.key {
        settle_key(&mut guard, k, &answer, executed, call.request_id);
    }
    answer
}

/// Seed for request ids of one emulator instance.
pub(crate) fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    fnv(&format!("{nanos}:{}", std::process::id()))
}

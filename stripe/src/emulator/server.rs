//! The HTTP layer: a loopback listener whose connections can be cut on purpose,
//! authentication, fault rules, idempotency, and Stripe's response headers.

use super::errors::ApiError;
use super::faults::{FaultAction, FaultHandle};
use super::form::{canonical, parse_into, Form};
use super::idempotency::{Begin, Saved};
use super::ratelimit::Limiter;
use super::routes::dispatch;
use super::state::{fnv, request_id, Account};
use super::versions::{self, AcceptedVersion};
use axum::body::Bytes;
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::serve::{IncomingStream, Listener};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

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
    ) -> Result<(R, i64), String> {
        let account = self.account(api_key);
        let mut a = lock(&account);
        let before = super::clock::settle_and_read(&mut a, clock_id)?;
        let changed = change(before);
        super::clock::run_until(&mut a, clock_id, before + 1);
        Ok((changed, before))
    }

    fn request_id(&self) -> String {
        let n = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        request_id(self.seed, n)
    }
}

fn lock(account: &Mutex<Account>) -> std::sync::MutexGuard<'_, Account> {
    account.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A TCP listener whose connections carry a kill switch, so that a handler can
/// make its own connection close without an answer (the "commit, then drop"
/// fault).
pub(crate) struct KillableListener(pub TcpListener);

/// Per-connection information handed to handlers.
#[derive(Debug, Clone)]
pub(crate) struct Conn {
    #[allow(dead_code)]
    pub peer: SocketAddr,
    pub kill: Arc<AtomicBool>,
}

/// A TCP stream that fails every write once its kill switch is set.
pub(crate) struct KillableStream {
    inner: TcpStream,
    kill: Arc<AtomicBool>,
}

fn killed() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "connection dropped by fault rule",
    )
}

impl AsyncRead for KillableStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.kill.load(Ordering::SeqCst) {
            return Poll::Ready(Err(killed()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.kill.load(Ordering::SeqCst) {
            return Poll::Ready(Err(killed()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.kill.load(Ordering::SeqCst) {
            return Poll::Ready(Err(killed()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl Listener for KillableListener {
    type Io = KillableStream;
    type Addr = Conn;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let kill = Arc::new(AtomicBool::new(false));
                    let conn = Conn {
                        peer,
                        kill: kill.clone(),
                    };
                    return (
                        KillableStream {
                            inner: stream,
                            kill,
                        },
                        conn,
                    );
                }
                // Out of file descriptors and the like: wait and retry.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(Conn {
            peer: self.0.local_addr()?,
            kill: Arc::new(AtomicBool::new(false)),
        })
    }
}

impl Connected<IncomingStream<'_, KillableListener>> for Conn {
    fn connect_info(stream: IncomingStream<'_, KillableListener>) -> Self {
        stream.remote_addr().clone()
    }
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

/// Everything an answer carries besides `Request-Id`.
#[derive(Debug, Clone)]
struct Answer {
    status: u16,
    body: Value,
    /// Echoed `Idempotency-Key`.
    idempotency_key: Option<String>,
    /// For a replay: the `Request-Id` of the request whose answer this is.
    original_request: Option<String>,
    /// `Stripe-Should-Retry`, when the emulator knows whether a retry can help.
    should_retry: Option<bool>,
    /// `Retry-After` in seconds.
    retry_after_s: Option<u64>,
}

impl Answer {
    fn new(status: u16, body: Value) -> Answer {
        Answer {
            status,
            body,
            idempotency_key: None,
            original_request: None,
            should_retry: None,
            retry_after_s: None,
        }
    }

    /// The answer to request `request_id` that failed with `e`.
    fn error(e: &ApiError, idempotency_key: Option<&str>, request_id: &str) -> Answer {
        Answer {
            idempotency_key: idempotency_key.map(str::to_string),
            ..Answer::new(e.status, e.body(request_id))
        }
    }

    fn replay(saved: Saved, key: &str) -> Answer {
        Answer {
            status: saved.status,
            body: saved.body,
            idempotency_key: Some(key.to_string()),
            original_request: Some(saved.request_id),
            should_retry: saved.should_retry,
            retry_after_s: None,
        }
    }
}

/// The HTTP response for an answer in API version `version`.
fn respond(a: &Answer, request_id: &str, version: AcceptedVersion) -> Response {
    let status = StatusCode::from_u16(a.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, a.body.to_string()).into_response();
    let h = response.headers_mut();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    h.insert("stripe-version", HeaderValue::from_static(version.name));
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert("request-id", v);
    }
    if let Some(v) = a
        .idempotency_key
        .as_deref()
        .and_then(|k| HeaderValue::from_str(k).ok())
    {
        h.insert("idempotency-key", v);
    }
    if let Some(original) = &a.original_request {
        h.insert("idempotent-replayed", HeaderValue::from_static("true"));
        if let Ok(v) = HeaderValue::from_str(original) {
            h.insert("original-request", v);
        }
    }
    if let Some(retry) = a.should_retry {
        h.insert(
            "stripe-should-retry",
            HeaderValue::from_static(if retry { "true" } else { "false" }),
        );
    }
    if let Some(v) = a
        .retry_after_s
        .and_then(|s| HeaderValue::from_str(&s.to_string()).ok())
    {
        h.insert("retry-after", v);
    }
    response
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in text.trim().bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

/// A restricted key (`rk_test_<rest>`) is the read-only key of the account of `sk_test_<rest>`:
/// it reads that account's objects and may not write (403 `permission_error`, as Stripe answers
/// a restricted key without the write permission). Returns the account's key.
fn read_only_account(key: &str, method: &str) -> Result<String, ApiError> {
    let Some(rest) = key.strip_prefix("rk_test_") else {
        return Ok(key.to_owned());
    };
    if method != "GET" {
        let shown: String = key.chars().take(12).collect();
        return Err(ApiError::permission(format!(
            "The provided key '{shown}****' is a restricted key with read permissions only; \
                 use the account's secret key (sk_test_...) to {method} here."
        )));
    }
    Ok(format!("sk_test_{rest}"))
}

/// The API key from `Authorization: Basic` (key as user name) or `Bearer`.
fn api_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let Some(value) = headers.get("authorization").and_then(|v| v.to_str().ok()) else {
        return Err(ApiError::unauthorized(
            "You did not provide an API key. You need to provide your API key in the \
             Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
        ));
    };
    let key = if let Some(token) = value.strip_prefix("Bearer ") {
        token.trim().to_string()
    } else if let Some(encoded) = value.strip_prefix("Basic ") {
        let decoded = base64_decode(encoded)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| ApiError::unauthorized("Invalid Basic authorization header."))?;
        decoded.split(':').next().unwrap_or_default().to_string()
    } else {
        return Err(ApiError::unauthorized(
            "Invalid Authorization header: use Bearer or Basic authentication.",
        ));
    };
    let test_key = ["sk_test_", "rk_test_"]
        .iter()
        .any(|p| key.starts_with(p) && key.len() > p.len());
    if test_key {
        Ok(key)
    } else {
        let hint: String = key.chars().take(8).collect();
        Err(ApiError::unauthorized(format!(
            "Invalid API Key provided: {hint}****. This emulator accepts any sk_test_ or rk_test_ key."
        )))
    }
}

/// The `Stripe-Version` a request asks for: absent means the account default;
/// a version the emulator does not answer (see [`versions::ACCEPTED_VERSIONS`])
/// is refused rather than answered in a shape the caller did not ask for.
fn check_version(headers: &HeaderMap) -> Result<AcceptedVersion, ApiError> {
    let Some(asked) = headers.get("stripe-version") else {
        return Ok(versions::default_version());
    };
    let asked = asked.to_str().unwrap_or_default().trim();
    if let Some(version) = versions::accepted(asked) {
        return Ok(version);
    }
    let (date, name) = asked.split_once('.').unwrap_or((asked, ""));
    let date_ok = date.len() == 10
        && date.char_indices().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        });
    if date_ok && name.chars().all(|c| c.is_ascii_lowercase()) {
        Err(ApiError::unsupported_version(asked))
    } else {
        Err(ApiError::unknown_version(asked))
    }
}

/// A request's parameters: query string, and for other methods than GET the
/// form body.
fn params(uri: &Uri, method: &str, body: &Bytes) -> Result<Map<String, Value>, ApiError> {
    let mut params = Map::new();
    parse_into(&mut params, uri.query().unwrap_or_default())?;
    if method != "GET" {
        let text = std::str::from_utf8(body)
            .map_err(|_| ApiError::bad_request("The request body is not valid UTF-8."))?;
        parse_into(&mut params, text)?;
    }
    Ok(params)
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
    let fault = app.faults.take(&method, &path, Some(&api_key));
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

/// The checks in front of the API, in Stripe's order: the API key (a
/// restricted key reads its account), the asked version (its refusal, if
/// any), the parameters, the rate limit. Returns the account's key and the
/// parameters.
fn admit(
    app: &App,
    headers: &HeaderMap,
    version_refused: Option<ApiError>,
    method: &str,
    uri: &Uri,
    body: &Bytes,
) -> Result<(String, Map<String, Value>), ApiError> {
    let api_key = read_only_account(&api_key(headers)?, method)?;
    if let Some(e) = version_refused {
        return Err(e);
    }
    let params = params(uri, method, body)?;
    if !app.limiter.admit(method, uri.path()) {
        return Err(ApiError::rate_limited());
    }
    Ok((api_key, params))
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

//! A model decider over the Anthropic Messages API with tool use (blocking reqwest).
//!
//! Every turn forces a tool call (`tool_choice: {"type": "any"}`). `get_account` calls are answered
//! from the [`ToolBox`]; the first valid `issue_credit` call is the decision. An invalid one is sent
//! back as an error tool result so the model can correct itself. At most [`MAX_TURNS`] model calls.
//! Each call is retried on HTTP 429, 5xx (including 529 overloaded) and transport errors, with
//! exponential backoff, up to [`MAX_ATTEMPTS`] attempts.

use super::{tool_definitions, CaseBrief, DecideError, Decider, Proposed, ToolBox, ToolOutcome};
use serde_json::{json, Value};
use std::time::Duration;
use verify::results::DeciderInfo;

/// Default model.
pub const DEFAULT_MODEL: &str = "claude-haiku-4-5-20251001";
/// Default API base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent (no sampling parameters are sent, as this version requires).
pub const API_VERSION: &str = "2026-10-21";
/// Most model calls per decision.
pub const MAX_TURNS: u32 = 4;
/// Most HTTP attempts per model call.
pub const MAX_ATTEMPTS: u32 = 5;
/// Environment variable holding the API key.
pub const API_KEY_ENV: &str = "ANTHROPIC_API_KEY";

const SYSTEM_PROMPT: &str = "You are a billing support agent. Read the support case, look the \
account up with get_account, then call issue_credit exactly once for the credit support approved, \
as an integer number of US cents within the approval. Name the incident and the case in the \
description.";

/// Reads the API key from [`API_KEY_ENV`], with a clear error when it is missing.
pub fn api_key_from_env() -> Result<String, DecideError> {
    match std::env::var(API_KEY_ENV) {
        Ok(k) if !k.trim().is_empty() => Ok(k.trim().to_string()),
        _ => Err(DecideError::Config(format!(
            "--decider anthropic needs an API key: set {API_KEY_ENV} (or use the default \
             --decider policy, which needs no key)"
        ))),
    }
}

/// The Messages API decider.
#[derive(Debug)]
pub struct AnthropicDecider {
    http: reqwest::blocking::Client,
    url: String,
    api_key: String,
    model: String,
    backoff: Duration,
}

impl AnthropicDecider {
    /// A decider posting to `<base_url>/v1/messages` with `model`.
    pub fn new(
        base_url: &str,
        api_key: &str,
        model: &str,
    ) -> Result<AnthropicDecider, DecideError> {
        let http = stripe::http::client_builder()
            .map_err(|e| DecideError::Config(format!("cannot set up TLS: {e}")))?
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| DecideError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(AnthropicDecider {
            http,
            url: format!("{}/v1/messages", base_url.trim_end_matches('/')),
            api_key: api_key.to_string(),
            model: model.to_string(),
            backoff: Duration::from_secs(1),
        })
    }

    /// The same decider with another first backoff (it doubles per retry); for tests.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn with_backoff(mut self, first: Duration) -> AnthropicDecider {
        self.backoff = first;
        self
    }

    /// One model call with retries; returns the response body.
    fn call(&self, body: &Value) -> Result<Value, DecideError> {
        let mut wait = self.backoff;
        let mut last = String::new();
        for attempt in 1..=MAX_ATTEMPTS {
            let sent = self
                .http
                .post(&self.url)
                .header("x-api-key", &self.api_key)
                .header("anthropic-version", API_VERSION)
                .header("content-type", "application/json")
                .json(body)
                .send();
            match sent {
                Err(e) => last = format!("attempt {attempt}: transport error: {e}"),
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let retry_after = resp
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok());
                    let text = resp.text().unwrap_or_default();
                    let parsed: Option<Value> = serde_json::from_str(&text).ok();
                    if (200..300).contains(&status) {
                        let value = parsed.ok_or_else(|| {
                            DecideError::Api(format!("HTTP {status} with a body that is not JSON"))
                        })?;
                        if value.get("type").and_then(Value::as_str) == Some("error") {
                            return Err(DecideError::Api(describe_error(status, &value)));
                        }
                        return Ok(value);
                    }
                    let described = match &parsed {
                        Some(v) => describe_error(status, v),
                        None => format!(
                            "HTTP {status}: {}",
                            text.chars().take(200).collect::<String>()
                        ),
                    };
                    if !(status == 429 || status >= 500) {
                        return Err(DecideError::Api(described));
                    }
                    last = format!("attempt {attempt}: {described}");
                    if let Some(secs) = retry_after {
                        wait = wait.max(Duration::from_secs(secs.min(60)));
                    }
                }
            }
            if attempt < MAX_ATTEMPTS {
                std::thread::sleep(wait);
                wait = wait.saturating_mul(2);
            }
        }
        Err(DecideError::Api(format!(
            "gave up after {MAX_ATTEMPTS} attempts; last: {last}"
        )))
    }
}

fn describe_error(status: u16, body: &Value) -> String {
    let err = body.get("error");
    let kind = err
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("unknown_error");
    let message = err
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("");
    format!("HTTP {status} {kind}: {message}")
}

impl Decider for AnthropicDecider {
    fn info(&self) -> DeciderInfo {
        DeciderInfo {
            kind: "anthropic".into(),
            model: Some(self.model.clone()),
        }
    }

    fn decide(&self, case: &CaseBrief, tools: &mut ToolBox) -> Result<Proposed, DecideError> {
        let mut messages = vec![json!({
            "role": "user",
            "content": format!(
                "Support case {} (incident {}), approved credit cap {} cents:\n{}",
                case.case_id, case.incident, case.max_cents, case.text
            ),
        })];
        let mut last_problem = None;
        for _turn in 0..MAX_TURNS {
            let body = json!({
                "model": self.model,
                "max_tokens": 1024,
                "system": SYSTEM_PROMPT,
                "tools": tool_definitions(case.max_cents),
                "tool_choice": {"type": "any"},
                "messages": messages,
            });
            let response = self.call(&body)?;
            let content = response
                .get("content")
                .and_then(Value::as_array)
                .cloned()
                .ok_or_else(|| DecideError::Api("response has no `content` array".into()))?;
            let model = response
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or(&self.model)
                .to_string();
            let mut results = Vec::new();
            for block in &content {
                if block.get("type").and_then(Value::as_str) != Some("tool_use") {
                    continue;
                }
                let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                match tools.call(name, &input) {
                    ToolOutcome::Credit {
                        amount,
                        description,
                    } => {
                        return Ok(Proposed {
                            amount,
                            description,
                            decider: DeciderInfo {
                                kind: "anthropic".into(),
                                model: Some(model),
                            },
                        })
                    }
                    ToolOutcome::Answer(v) => results.push(json!({
                        "type": "tool_result", "tool_use_id": id, "content": v.to_string()
                    })),
                    ToolOutcome::Error(e) => {
                        last_problem = Some(e.clone());
                        results.push(json!({
                            "type": "tool_result", "tool_use_id": id, "content": e, "is_error": true
                        }))
                    }
                }
            }
            messages.push(json!({"role": "assistant", "content": content}));
            if results.is_empty() {
                messages.push(json!({"role": "user", "content":
                    "Please call get_account or issue_credit."}));
            } else {
                messages.push(json!({"role": "user", "content": results}));
            }
        }
        Err(DecideError::NoDecision {
            turns: MAX_TURNS,
            last: last_problem,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::{extract::State, http::StatusCode, routing::post, Json, Router};
    use std::sync::{Arc, Mutex};

    /// A request the mock saw: body, `x-api-key`, `anthropic-version`.
    type Seen = (Value, Option<String>, Option<String>);

    /// A scripted Messages API: answers each POST with the next (status, body) and records requests.
    #[derive(Clone, Default)]
    struct Script {
        replies: Arc<Mutex<Vec<(u16, Value)>>>,
        seen: Arc<Mutex<Vec<Seen>>>,
    }

    async fn messages(
        State(s): State<Script>,
        headers: axum::http::HeaderMap,
        Json(body): Json<Value>,
    ) -> (StatusCode, Json<Value>) {
        let h = |n: &str| {
            headers
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(String::from)
        };
        s.seen
            .lock()
            .unwrap()
            .push((body, h("x-api-key"), h("anthropic-version")));
        let mut replies = s.replies.lock().unwrap();
        let (status, reply) = if replies.is_empty() {
            (
                500,
                json!({"type": "error", "error": {"type": "api_error", "message": "script exhausted"}}),
            )
        } else {
            replies.remove(0)
        };
        (StatusCode::from_u16(status).unwrap(), Json(reply))
    }

    /// Starts the mock on loopback in its own thread and runtime; returns its base URL.
    fn serve(replies: Vec<(u16, Value)>) -> (String, Script) {
        let script = Script::default();
        *script.replies.lock().unwrap() = replies;
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .with_state(script.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        let addr = rx.recv().unwrap();
        (format!("http://{addr}"), script)
    }

    fn tool_use(id: &str, name: &str, input: Value) -> Value {
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": DEFAULT_MODEL,
            "content": [
                {"type": "text", "text": "Let me do that."},
                {"type": "tool_use", "id": id, "name": name, "input": input}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}
        })
    }

    fn error(kind: &str, message: &str) -> Value {
        json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_1"})
    }

    fn case() -> CaseBrief {
        CaseBrief {
            case_id: "case-0123456789".into(),
            incident: "INC-abcdef".into(),
            text: "Customer lost access for three days; one $10 credit approved.".into(),
            max_cents: 1000,
        }
    }

    fn decider(url: &str) -> AnthropicDecider {
        AnthropicDecider::new(url, "sk-ant-test", DEFAULT_MODEL)
            .unwrap()
            .with_backoff(Duration::from_millis(5))
    }

    fn credit(amount: Value) -> Value {
        json!({"amount_cents": amount, "description": "Goodwill credit for INC-abcdef (case-0123456789)"})
    }

    #[test]
    fn tool_use_round_trip_after_a_429() {
        let (url, script) = serve(vec![
            (429, error("rate_limit_error", "slow down")),
            (200, tool_use("toolu_1", "get_account", json!({}))),
            (
                200,
                tool_use("toolu_2", "issue_credit", credit(json!(1000))),
            ),
        ]);
        let mut tools = ToolBox::new(
            json!({"customer": "cus_1", "incident_compensation": 0}),
            1000,
        );
        let p = decider(&url).decide(&case(), &mut tools).unwrap();
        assert_eq!(p.amount, 1000);
        assert!(p.description.contains("INC-abcdef"));
        assert_eq!(p.decider.kind, "anthropic");
        assert_eq!(p.decider.model.as_deref(), Some(DEFAULT_MODEL));
        assert_eq!(tools.calls(), ["get_account", "issue_credit"]);

        let seen = script.seen.lock().unwrap();
        assert_eq!(seen.len(), 3, "the 429 was retried");
        let (first, key, version) = &seen[0];
        assert_eq!(key.as_deref(), Some("sk-ant-test"));
        assert_eq!(version.as_deref(), Some(API_VERSION));
        assert_eq!(first["tool_choice"], json!({"type": "any"}));
        assert_eq!(first["model"], json!(DEFAULT_MODEL));
        assert!(first.get("temperature").is_none());
        // The third request carries the assistant turn and the tool result for get_account.
        let msgs = seen[2].0["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1]["role"], "assistant");
        let result = &msgs[2]["content"][0];
        assert_eq!(result["type"], "tool_result");
        assert_eq!(result["tool_use_id"], "toolu_1");
        assert!(result["content"].as_str().unwrap().contains("cus_1"));
    }

    #[test]
    fn a_500_and_a_529_are_retried() {
        let (url, script) = serve(vec![
            (500, error("api_error", "boom")),
            (529, error("overloaded_error", "busy")),
            (200, tool_use("toolu_1", "issue_credit", credit(json!(700)))),
        ]);
        let mut tools = ToolBox::new(json!({}), 1000);
        let p = decider(&url).decide(&case(), &mut tools).unwrap();
        assert_eq!(p.amount, 700);
        assert_eq!(script.seen.lock().unwrap().len(), 3);
    }

    #[test]
    fn persistent_5xx_gives_up_after_max_attempts() {
        let replies = (0..MAX_ATTEMPTS)
            .map(|_| (503, error("api_error", "down")))
            .collect();
        let (url, script) = serve(replies);
        let err = decider(&url)
            .decide(&case(), &mut ToolBox::new(json!({}), 1000))
            .unwrap_err();
        assert!(err.to_string().contains("gave up"), "{err}");
        assert!(err.to_string().contains("down"), "{err}");
        assert_eq!(script.seen.lock().unwrap().len(), MAX_ATTEMPTS as usize);
    }

    #[test]
    fn a_bad_amount_is_sent_back_and_then_corrected() {
        let (url, script) = serve(vec![
            (200, tool_use("toolu_1", "issue_credit", credit(json!(-5)))),
            (
                200,
                tool_use("toolu_2", "issue_credit", credit(json!(1000))),
            ),
        ]);
        let p = decider(&url)
            .decide(&case(), &mut ToolBox::new(json!({}), 1000))
            .unwrap();
        assert_eq!(p.amount, 1000);
        let seen = script.seen.lock().unwrap();
        let back = &seen[1].0["messages"][2]["content"][0];
        assert_eq!(back["is_error"], json!(true));
        assert!(back["content"]
            .as_str()
            .unwrap()
            .contains("positive number of cents"));
    }

    #[test]
    fn bad_amounts_every_turn_end_without_a_decision() {
        let replies = (0..MAX_TURNS)
            .map(|i| {
                (
                    200,
                    tool_use(&format!("t{i}"), "issue_credit", credit(json!(10.5))),
                )
            })
            .collect();
        let (url, script) = serve(replies);
        let err = decider(&url)
            .decide(&case(), &mut ToolBox::new(json!({}), 1000))
            .unwrap_err();
        assert!(
            matches!(err, DecideError::NoDecision { turns: 4, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("integer"), "{err}");
        assert_eq!(script.seen.lock().unwrap().len(), MAX_TURNS as usize);
    }

    #[test]
    fn an_error_envelope_is_not_retried_and_is_named() {
        let (url, script) = serve(vec![(
            400,
            error("invalid_request_error", "temperature is not supported"),
        )]);
        let err = decider(&url)
            .decide(&case(), &mut ToolBox::new(json!({}), 1000))
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("invalid_request_error"), "{text}");
        assert!(text.contains("temperature is not supported"), "{text}");
        assert_eq!(script.seen.lock().unwrap().len(), 1);
    }

    #[test]
    fn missing_key_is_a_clear_config_error() {
        // Only checks the message shape; does not touch the process environment.
        let e = DecideError::Config(format!("set {API_KEY_ENV}"));
        assert!(e.to_string().contains("ANTHROPIC_API_KEY"));
    }
}

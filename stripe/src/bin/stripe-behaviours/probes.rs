//! The behaviours, each probed with a few requests on objects the probe made for itself, and
//! the ones that cannot be probed, each with its reason. `docs/stripe-behaviours.md` at the
//! repository root says, for each, what Stripe documents, what the emulator does and which
//! experiments rest on it.

use crate::wire::{Answer, Request, Wire};
use anyhow::bail;
use serde_json::{json, Value};
use std::time::Duration;
use stripe::Params;

/// Stripe's reference page on idempotent requests.
const IDEMPOTENCY_DOC: &str = "https://docs.stripe.com/api/idempotent_requests";
/// Stripe's reference page on errors: status codes and error types.
const ERRORS_DOC: &str = "https://docs.stripe.com/api/errors";
/// Where the `Idempotent-Replayed` header is confirmed by Stripe's SDK maintainers (no Stripe
/// documentation page names it).
const REPLAYED_DOC: &str = "https://github.com/stripe/stripe-ruby/issues/905";
/// Stripe's page on rate limits (and object lock timeouts).
const RATE_DOC: &str = "https://docs.stripe.com/rate-limits";
/// Creating a refund.
const REFUND_DOC: &str = "https://docs.stripe.com/api/refunds/create";
/// Creating a customer balance transaction.
const CBT_DOC: &str = "https://docs.stripe.com/api/customer_balance_transactions/create";
/// Listing a customer's balance transactions.
const CBT_LIST_DOC: &str = "https://docs.stripe.com/api/customer_balance_transactions/list";

/// How long after the first of two concurrent requests the second is sent: well inside the
/// time a Stripe write takes, so the first is still executing when the second arrives.
const STAGGER: Duration = Duration::from_millis(25);

/// One behaviour's result: one JSON line.
#[derive(Debug, Clone)]
pub struct Line {
    /// Its name.
    pub behaviour: &'static str,
    /// The page it follows.
    pub doc: &'static str,
    /// What Stripe documents (and the emulator models).
    pub expected: String,
    /// What came back.
    pub observed: String,
    /// Whether they agree; `None` when it could not be probed.
    pub agrees: Option<bool>,
    /// Why it could not be probed (only when `agrees` is `None`).
    pub why: Option<String>,
}

impl Line {
    fn probed(
        behaviour: &'static str,
        doc: &'static str,
        expected: &str,
        observed: String,
        agrees: bool,
    ) -> Line {
        Line {
            behaviour,
            doc,
            expected: expected.to_owned(),
            observed,
            agrees: Some(agrees),
            why: None,
        }
    }

    fn unprobed(
        behaviour: &'static str,
        doc: &'static str,
        expected: &str,
        observed: String,
        why: String,
    ) -> Line {
        Line {
            behaviour,
            doc,
            expected: expected.to_owned(),
            observed,
            agrees: None,
            why: Some(why),
        }
    }

    /// The line as printed.
    pub fn to_json(&self) -> Value {
        let mut line = json!({
            "behaviour": self.behaviour,
            "doc": self.doc,
            "expected": self.expected,
            "observed": self.observed,
            "agrees": self.agrees,
        });
        if let (Some(why), Some(map)) = (&self.why, line.as_object_mut()) {
            map.insert("why".into(), Value::String(why.clone()));
        }
        line
    }
}

/// The probe's run: where it sends, the objects it made, and the lines so far.
pub struct Probe<'a> {
    wire: &'a Wire,
    run: String,
    customer: String,
    /// The customer's balance transactions the probe saw created, oldest first.
    created: Vec<String>,
    /// A normal answer's headers, for the rate-limit line.
    normal: Option<Answer>,
    emit: &'a mut dyn FnMut(&Line),
    /// How many lines disagreed.
    pub disagreements: usize,
}

/// What the probe created for itself, to delete at the end.
pub struct Made {
    /// The test clock (deleting it deletes the customer).
    pub clock: String,
}

impl<'a> Probe<'a> {
    /// A probe sending through `wire`, naming its keys after `run`, handing each line to `emit`.
    pub fn new(wire: &'a Wire, run: String, emit: &'a mut dyn FnMut(&Line)) -> Probe<'a> {
        Probe {
            wire,
            run,
            customer: String::new(),
            created: Vec::new(),
            normal: None,
            emit,
            disagreements: 0,
        }
    }

    fn key(&self, name: &str) -> String {
        format!("stripe-behaviours-{}-{name}", self.run)
    }

    fn report(&mut self, line: Line) {
        if line.agrees == Some(false) {
            self.disagreements += 1;
        }
        (self.emit)(&line);
    }

    fn txns_path(&self) -> String {
        format!("/v1/customers/{}/balance_transactions", self.customer)
    }

    fn credit(&self, cents: i64) -> Request {
        Request::post(
            self.txns_path(),
            Params::new()
                .set("amount", -cents)
                .set("currency", "usd")
                .set("description", "stripe-behaviours probe"),
        )
    }

    /// Creates the test clock and the customer on it, as the scenarios do. A refusal here is a
    /// setup error (the key, the URL), not a finding.
    pub fn setup(&mut self) -> anyhow::Result<Made> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let clock = self.wire.send(&Request::post(
            "/v1/test_helpers/test_clocks",
            Params::new()
                .set("frozen_time", now)
                .set("name", format!("stripe-behaviours {}", self.run)),
        ))?;
        let Some(clock_id) = clock.id().filter(|_| clock.ok()).map(str::to_owned) else {
            bail!(
                "creating a test clock at {}/v1/test_helpers/test_clocks was answered {}{}",
                self.wire.base(),
                clock.summary(),
                setup_hint(&clock)
            );
        };
        let customer = self.wire.send(&Request::post(
            "/v1/customers",
            Params::new()
                .set("test_clock", &clock_id)
                .set("name", format!("stripe-behaviours {}", self.run))
                .set("metadata[sandbox]", "interlock-sandbox"),
        ))?;
        let Some(customer_id) = customer.id().filter(|_| customer.ok()).map(str::to_owned) else {
            bail!(
                "creating a customer at {}/v1/customers was answered {}{}",
                self.wire.base(),
                customer.summary(),
                setup_hint(&customer)
            );
        };
        self.customer = customer_id;
        self.normal = Some(customer);
        Ok(Made { clock: clock_id })
    }

    /// Runs every behaviour in order; an error means an answer never came.
    pub fn run_all(&mut self) -> anyhow::Result<()> {
        self.key_in_use()?;
        self.replay()?;
        self.params_mismatch()?;
        self.other_endpoint()?;
        self.no_precondition()?;
        self.list_order()?;
        self.saved_error()?;
        self.refunds()?;
        self.unprobeable();
        Ok(())
    }

    /// Deletes the test clock (and with it the customer).
    pub fn cleanup(&self, made: &Made) -> anyhow::Result<Answer> {
        self.wire.send(&Request::delete(format!(
            "/v1/test_helpers/test_clocks/{}",
            made.clock
        )))
    }

    /// 409 `idempotency_key_in_use` while the first request under the key still executes;
    /// nothing saved for it: a later retry gets the first request's answer.
    fn key_in_use(&mut self) -> anyhow::Result<()> {
        const EXPECTED: &str = "two identical POSTs under one key, the second sent while the \
            first still executes: one is applied (200), the other is answered 409 \
            idempotency_key_in_use and saves nothing, so a retry after both gets the applied \
            one's answer replayed; never two transactions";
        let key = self.key("in-use");
        let request = self.credit(101).keyed(&key);
        let (a, b) = self.wire.at_once(&request, &request, STAGGER)?;
        let retry = self.wire.send(&request)?;
        let observed = format!(
            "first {}; second {}; retry after both {}",
            a.summary(),
            b.summary(),
            retry.summary()
        );
        let in_use =
            |x: &Answer| x.status == 409 && x.error("code") == Some("idempotency_key_in_use");
        let fresh = |x: &Answer| x.ok() && !x.replayed();
        let (applied, conflict) = if fresh(&a) && in_use(&b) {
            (Some(&a), true)
        } else if fresh(&b) && in_use(&a) {
            (Some(&b), true)
        } else {
            (None, false)
        };
        if let Some(applied) = applied {
            if let Some(id) = applied.id() {
                self.created.push(id.to_owned());
            }
            let replays_it = retry.ok() && retry.replayed() && retry.id() == applied.id();
            self.report(Line::probed(
                "idempotency_key_in_use",
                ERRORS_DOC,
                EXPECTED,
                observed,
                conflict && replays_it,
            ));
            return Ok(());
        }
        // No conflict seen: either the first had finished (a replay, no overlap) or the
        // service did something else.
        if fresh(&a) && b.ok() && b.replayed() && b.id() == a.id() {
            if let Some(id) = a.id() {
                self.created.push(id.to_owned());
            }
            self.report(Line::unprobed(
                "idempotency_key_in_use",
                ERRORS_DOC,
                EXPECTED,
                observed,
                format!(
                    "no overlap: the first request had finished before the second arrived \
                     ({} ms later), so the second was a replay; nothing wrong, but the 409 was \
                     not exercised",
                    STAGGER.as_millis()
                ),
            ));
            return Ok(());
        }
        for x in [&a, &b] {
            if fresh(x) {
                if let Some(id) = x.id() {
                    self.created.push(id.to_owned());
                }
            }
        }
        self.report(Line::probed(
            "idempotency_key_in_use",
            ERRORS_DOC,
            EXPECTED,
            observed,
            false,
        ));
        Ok(())
    }

    /// The same key and parameters: the saved answer again, with `Idempotent-Replayed: true`
    /// and `Original-Request`.
    fn replay(&mut self) -> anyhow::Result<()> {
        let key = self.key("replay");
        let request = self.credit(102).keyed(&key);
        let first = self.wire.send(&request)?;
        let again = self.wire.send(&request)?;
        if first.ok() && !first.replayed() {
            if let Some(id) = first.id() {
                self.created.push(id.to_owned());
            }
        }
        let same = first.ok() && again.status == first.status && again.id() == first.id();
        self.report(Line::probed(
            "idempotent_replay",
            IDEMPOTENCY_DOC,
            "a retry with the same key and parameters gets the first answer again (same status, \
             same object) and applies nothing new",
            format!("first {}; retry {}", first.summary(), again.summary()),
            same && again.body.get("ending_balance") == first.body.get("ending_balance"),
        ));
        let original = again.header("original-request").map(str::to_owned);
        let first_id = first.header("request-id").map(str::to_owned);
        self.report(Line::probed(
            "idempotent_replayed_header",
            REPLAYED_DOC,
            "the replayed answer carries Idempotent-Replayed: true and Original-Request naming \
             the first request's Request-Id; the first answer does not say replayed",
            format!(
                "first: Idempotent-Replayed {}, Request-Id {}; retry: Idempotent-Replayed {}, \
                 Original-Request {}",
                shown(first.header("idempotent-replayed")),
                shown(first_id.as_deref()),
                shown(again.header("idempotent-replayed")),
                shown(original.as_deref())
            ),
            !first.replayed() && again.replayed() && first_id.is_some() && original == first_id,
        ));
        Ok(())
    }

    /// The same key with other parameters: 400 `idempotency_error`, nothing applied.
    fn params_mismatch(&mut self) -> anyhow::Result<()> {
        let key = self.key("replay");
        let other = self.wire.send(&self.credit(103).keyed(&key))?;
        self.report(Line::probed(
            "idempotency_params_mismatch",
            IDEMPOTENCY_DOC,
            "the key of an earlier request reused with other parameters (another amount) is \
             refused: 400 idempotency_error, nothing applied",
            other.summary(),
            other.status == 400 && other.error("type") == Some("idempotency_error"),
        ));
        if other.ok() && !other.replayed() {
            if let Some(id) = other.id() {
                self.created.push(id.to_owned());
            }
        }
        Ok(())
    }

    /// The key reused on another endpoint: 400 `idempotency_error`.
    fn other_endpoint(&mut self) -> anyhow::Result<()> {
        let key = self.key("replay");
        let other = self.wire.send(
            &Request::post(
                format!("/v1/customers/{}", self.customer),
                Params::new().set("metadata[stripe_behaviours]", "other-endpoint"),
            )
            .keyed(&key),
        )?;
        self.report(Line::probed(
            "idempotency_key_other_endpoint",
            ERRORS_DOC,
            "the key of a balance-transaction POST reused on another endpoint (a customer \
             update) is refused: 400 idempotency_error, nothing applied",
            other.summary(),
            other.status == 400 && other.error("type") == Some("idempotency_error"),
        ));
        Ok(())
    }

    /// Two identical credits without a key: two transactions, the balance moved twice.
    fn no_precondition(&mut self) -> anyhow::Result<()> {
        let first = self.wire.send(&self.credit(104))?;
        let second = self.wire.send(&self.credit(104))?;
        for x in [&first, &second] {
            if x.ok() {
                if let Some(id) = x.id() {
                    self.created.push(id.to_owned());
                }
            }
        }
        let (e1, e2) = (first.int("ending_balance"), second.int("ending_balance"));
        let agrees = first.ok()
            && second.ok()
            && first.id() != second.id()
            && matches!((e1, e2), (Some(a), Some(b)) if b == a - 104);
        self.report(Line::probed(
            "balance_transaction_no_precondition",
            CBT_DOC,
            "a balance transaction is applied whatever came before: two identical credits sent \
             without an idempotency key are two transactions, and the balance moves by both",
            format!(
                "first {} ending_balance {}; second {} ending_balance {}",
                first.summary(),
                shown(e1),
                second.summary(),
                shown(e2)
            ),
            agrees,
        ));
        Ok(())
    }

    /// The customer's balance transactions: exactly those created, newest first.
    fn list_order(&mut self) -> anyhow::Result<()> {
        let list = self.wire.send(&Request::get(
            self.txns_path(),
            Params::new().set("limit", 100),
        ))?;
        let data: Vec<&Value> = list
            .body
            .get("data")
            .and_then(Value::as_array)
            .map(|d| d.iter().collect())
            .unwrap_or_default();
        let ids: Vec<&str> = data
            .iter()
            .filter_map(|o| o.get("id").and_then(Value::as_str))
            .collect();
        let created: Vec<i64> = data
            .iter()
            .filter_map(|o| o.get("created").and_then(Value::as_i64))
            .collect();
        let newest_first = created.windows(2).all(|w| w[0] >= w[1]);
        let want: Vec<&str> = self.created.iter().rev().map(String::as_str).collect();
        let same_second = created.windows(2).all(|w| w[0] == w[1]);
        self.report(Line::probed(
            "list_newest_first",
            CBT_LIST_DOC,
            "the list holds exactly the transactions created (none from the refused requests), \
             newest first by `created`; within one second (the test clock is frozen, so all of \
             them share one) the last created comes first, as the emulator orders them",
            format!(
                "{} with {} transactions, ids {ids:?}, created {}; expected ids {want:?}",
                list.status,
                ids.len(),
                if same_second {
                    "all in one second".to_owned()
                } else {
                    format!("{created:?}")
                }
            ),
            list.ok() && newest_first && ids == want,
        ));
        Ok(())
    }

    /// An error that happened while the endpoint executed (a declined card, 402) is saved
    /// under its key and replayed: the rule that also saves a 500.
    fn saved_error(&mut self) -> anyhow::Result<()> {
        let key = self.key("declined");
        let request = Request::post(
            "/v1/payment_intents",
            payment(1000, "pm_card_chargeDeclined", &self.run),
        )
        .keyed(&key);
        let first = self.wire.send(&request)?;
        let again = self.wire.send(&request)?;
        let declined = first.status == 402 && first.error("code") == Some("card_declined");
        let replayed = again.status == first.status
            && again.replayed()
            && again.body.get("error").map(|e| e.get("charge"))
                == first.body.get("error").map(|e| e.get("charge"));
        self.report(Line::probed(
            "saved_error_replayed",
            IDEMPOTENCY_DOC,
            "an error that arises while the endpoint executes (a card declined: 402 \
             card_error/card_declined) is the key's saved result: a retry gets the same error \
             (same failed charge) with Idempotent-Replayed: true, and no second attempt",
            format!("first {}; retry {}", first.summary(), again.summary()),
            declined && replayed,
        ));
        Ok(())
    }

    /// A $10 charge: $6 refunded, $6 more refused; then two $1 refunds at once (both fit);
    /// then two $1.50 refunds at once on the $2 left (one fits).
    fn refunds(&mut self) -> anyhow::Result<()> {
        let pi = self.wire.send(&Request::post(
            "/v1/payment_intents",
            payment(1000, "pm_card_visa", &self.run),
        ))?;
        let (Some(pi_id), Some(charge)) = (
            pi.id().filter(|_| pi.ok()).map(str::to_owned),
            pi.body
                .get("latest_charge")
                .and_then(Value::as_str)
                .map(str::to_owned),
        ) else {
            for name in [
                "refund_over_remaining",
                "concurrent_refunds",
                "concurrent_refunds_over_remaining",
            ] {
                self.report(Line::probed(
                    name,
                    REFUND_DOC,
                    "a $10.00 card payment (pm_card_visa, confirm=true) succeeds at once",
                    format!("the payment was answered {}", pi.summary()),
                    false,
                ));
            }
            return Ok(());
        };
        let refund = |cents: i64| {
            Request::post(
                "/v1/refunds",
                Params::new()
                    .set("payment_intent", &pi_id)
                    .set("amount", cents),
            )
        };
        let charge_path = format!("/v1/charges/{charge}");
        let refunded = |a: &Answer| a.int("amount_refunded");

        let first = self.wire.send(&refund(600))?;
        let over = self.wire.send(&refund(600))?;
        let after = self.wire.send(&Request::get(&charge_path, Params::new()))?;
        self.report(Line::probed(
            "refund_over_remaining",
            REFUND_DOC,
            "on a $10.00 charge, a $6.00 refund succeeds and a second $6.00 (more than the $4.00 \
             left) is refused: 400 invalid_request_error on param amount, and the charge's \
             amount_refunded stays 600",
            format!(
                "first {}; second {}; charge amount_refunded {}",
                first.summary(),
                over.summary(),
                shown(refunded(&after))
            ),
            first.ok()
                && over.status == 400
                && over.error("type") == Some("invalid_request_error")
                && over.error("param") == Some("amount")
                && refunded(&after) == Some(600),
        ));

        let (a, b) = self.wire.at_once(&refund(100), &refund(100), STAGGER)?;
        let after = self.wire.send(&Request::get(&charge_path, Params::new()))?;
        let lock_timeout = |x: &Answer| x.status == 429 && x.error("code") == Some("lock_timeout");
        let both = a.ok() && b.ok() && a.id() != b.id() && refunded(&after) == Some(800);
        let one_locked = ((a.ok() && lock_timeout(&b)) || (b.ok() && lock_timeout(&a)))
            && refunded(&after) == Some(700);
        let both_line = Line::probed(
            "concurrent_refunds",
            REFUND_DOC,
            "two $1.00 refunds sent at once on the same charge ($4.00 left) both succeed: \
             amount_refunded 800 (Stripe may instead turn one away with 429 lock_timeout, \
             reported here as agreeing, since nothing wrong was applied)",
            format!(
                "first {}; second {}; charge amount_refunded {}",
                a.summary(),
                b.summary(),
                shown(refunded(&after))
            ),
            both || one_locked,
        );
        let left = refunded(&after).map(|r| 1000 - r);
        self.report(both_line);

        let (a, b) = self.wire.at_once(&refund(150), &refund(150), STAGGER)?;
        let end = self.wire.send(&Request::get(&charge_path, Params::new()))?;
        let over_remaining = |x: &Answer| x.status == 400 && x.error("param") == Some("amount");
        let refused = |x: &Answer| over_remaining(x) || lock_timeout(x);
        let exactly_one = (a.ok() && refused(&b)) || (b.ok() && refused(&a));
        let stays = left
            .zip(refunded(&end))
            .is_some_and(|(l, r)| l >= 150 && r == 1000 - l + 150);
        self.report(Line::probed(
            "concurrent_refunds_over_remaining",
            REFUND_DOC,
            "two $1.50 refunds sent at once on a charge with $2.00 left: one succeeds, the other \
             is refused (400 on amount, or 429 lock_timeout), and amount_refunded never exceeds \
             the charge",
            format!(
                "left before {}; first {}; second {}; charge amount_refunded {}",
                shown(left),
                a.summary(),
                b.summary(),
                shown(refunded(&end))
            ),
            exactly_one && stays,
        ));
        Ok(())
    }

    /// The behaviours no bounded probe can show at Stripe, each with its reason.
    fn unprobeable(&mut self) {
        self.report(Line::unprobed(
            "saved_5xx_replayed",
            IDEMPOTENCY_DOC,
            "a 500 that arises after the endpoint began executing is the key's saved result: a \
             retry under the key gets the same 500 again (Idempotent-Replayed: true), never a \
             second execution",
            "not probed".into(),
            "a server error cannot be induced at Stripe: test mode has no card, header or \
             parameter that makes an endpoint fail with a 5xx after it began executing; \
             saved_error_replayed checks the same documented rule (results saved whatever \
             they are) with a 402"
                .into(),
        ));
        self.report(Line::unprobed(
            "idempotency_key_expiry",
            IDEMPOTENCY_DOC,
            "a key is pruned once it is at least 24 hours old; reused after that, the request \
             runs again as a new one",
            "not probed".into(),
            "seeing it takes a key used at least 24 hours earlier (and Stripe only says keys \
             may be pruned from then on, not when); a probe of a few minutes cannot age a key, \
             and Stripe has no control that does"
                .into(),
        ));
        let headers = self.normal.as_ref().map_or_else(
            || "no normal answer was kept".to_owned(),
            |a| {
                let names: Vec<String> = a
                    .headers
                    .iter()
                    .filter(|(n, _)| {
                        let n = n.as_str();
                        n.contains("retry") || n.contains("ratelimit") || n.contains("rate-limit")
                    })
                    .map(|(n, v)| format!("{n}: {}", v.to_str().unwrap_or("(not text)")))
                    .collect();
                if names.is_empty() {
                    "a normal 200 answer carries no Retry-After, Stripe-Should-Retry or \
                     rate-limit header"
                        .to_owned()
                } else {
                    format!("a normal 200 answer carries {}", names.join(", "))
                }
            },
        );
        self.report(Line::unprobed(
            "rate_limit_429",
            RATE_DOC,
            "beyond about 25 requests per second in a sandbox (and tighter limits on some \
             endpoints) Stripe answers 429 with code rate_limit before anything runs, so \
             nothing is saved under the key; SDKs retry it with backoff, honouring \
             Stripe-Should-Retry",
            headers,
            "inducing a 429 means sending more than the sandbox allows, which this probe will \
             not do to the account it runs on (it sends fewer than 40 requests, mostly one at \
             a time); it reads only the headers of a normal answer"
                .into(),
        ));
    }
}

/// A value as printed in `observed`, or `absent`.
fn shown<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "absent".to_owned(), |v| v.to_string())
}

/// A confirmed card payment of `cents` with test card `card`, no redirects.
fn payment(cents: i64, card: &str, run: &str) -> Params {
    Params::new()
        .set("amount", cents)
        .set("currency", "usd")
        .set("payment_method", card)
        .set("automatic_payment_methods[enabled]", "true")
        .set("automatic_payment_methods[allow_redirects]", "never")
        .set("confirm", "true")
        .set("description", format!("stripe-behaviours {run}"))
        .set("metadata[sandbox]", "interlock-sandbox")
}

/// How to fix a refused setup request.
fn setup_hint(answer: &Answer) -> &'static str {
    match answer.status {
        401 => "; check STRIPE_SECRET_KEY (a test-mode secret key of the account)",
        403 => {
            "; the key may not write here: use a secret key (sk_test_) or a restricted key \
                with write access to test clocks, customers, balance transactions, \
                PaymentIntents and refunds"
        }
        404 => "; check --base-url (it must be Stripe's API or the emulator, without a path)",
        _ => "",
    }
}

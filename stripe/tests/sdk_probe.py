#!/usr/bin/env python3
"""Conformance probe: drive the billing scenario's Stripe calls through the
official stripe-python SDK against a running stripe-emulator.

Usage: python3 sdk_probe.py http://127.0.0.1:PORT API_VERSION|default [FAULT_KEY]

With API_VERSION every client pins that version (`stripe_version`); with
`default` none does, so the SDK sends the version it is built for.

Every call of original-behaviour.md §4.12 is made the way a user of the SDK
would make it; the script checks that the SDK accepts every answer and that the
numbers are Stripe's. With FAULT_KEY (an API key the harness set fault rules
for: POST /v1/customers commits then answers 500, POST /v1/products is rate
limited once, GET /v1/prices answers a retryable 503 once) it also checks how
the SDK meets a saved error, a 429 and a retry hint. Exit status 0 means every
check passed.
"""
import sys
import time

import stripe

BASE, ASKED = sys.argv[1], sys.argv[2]
FAULT_KEY = sys.argv[3] if len(sys.argv) > 3 else None
KEY = "sk_test_sdk_probe_%d" % int(time.time() * 1000)
# The version every request sends: the pinned one, or the SDK's own default.
VERSION = stripe.api_version if ASKED == "default" else ASKED
# Client options that pin it, or none.
PIN = {} if ASKED == "default" else {"stripe_version": ASKED}
print("stripe-python %s sending Stripe-Version %s (%s)" % (
    stripe.VERSION, VERSION, "SDK default" if not PIN else "pinned"))


def check(cond, what):
    if not cond:
        raise SystemExit("sdk probe: FAILED: " + what)
    print("ok  " + what)


client = stripe.StripeClient(
    KEY,
    base_addresses={"api": BASE},
    max_network_retries=0,
    **PIN,
)
v1 = client.v1


def ensure_price(cents):
    key = "interlock-sandbox-billing-credit-%d" % cents
    found = v1.prices.list(params={"lookup_keys": [key], "limit": 1})
    if found.data:
        return found.data[0].id
    return v1.prices.create(
        params={
            "unit_amount": cents,
            "currency": "usd",
            "recurring": {"interval": "month"},
            "lookup_key": key,
            "product_data": {"name": "interlock-sandbox plan $%d/mo" % (cents // 100)},
        }
    ).id


price30, price20 = ensure_price(3000), ensure_price(2000)
check(ensure_price(3000) == price30, "prices found again by lookup key")

frozen = 1_790_000_000
clock = v1.test_helpers.test_clocks.create(
    params={"frozen_time": frozen, "name": "interlock-sandbox sdk probe"}
)
check(clock.status == "ready" and clock.frozen_time == frozen, "test clock created")
check(
    clock.last_response.headers.get("Stripe-Version") == VERSION,
    "answered in the version asked for (%s)" % VERSION,
)

customer = v1.customers.create(
    params={
        "test_clock": clock.id,
        "name": "SDK probe",
        "payment_method": "pm_card_visa",
        "invoice_settings": {"default_payment_method": "pm_card_visa"},
        "metadata": {"sandbox": "interlock-sandbox"},
    }
)
check(customer.balance == 0 and customer.test_clock == clock.id, "customer on the clock")

sub = v1.subscriptions.create(params={"customer": customer.id, "items": [{"price": price30}]})
check(sub.status == "active", "subscription active")
sub = v1.subscriptions.retrieve(sub.id)
item = sub["items"].data[0]
check(item.current_period_start == frozen, "period fields on the subscription item")
period_end = item.current_period_end

# The credit, with an idempotency key, sent twice.
params = {
    "amount": -1000,
    "currency": "usd",
    "description": "Goodwill credit",
    "metadata": {"case_id": "case-0123456789", "interlock_effect_id": "e" * 64},
}
opts = {"idempotency_key": "goodwill-credit-case-0123456789"}
first = v1.customers.balance_transactions.create(customer.id, params=params, options=opts)
again = v1.customers.balance_transactions.create(customer.id, params=params, options=opts)
check(first.id == again.id, "idempotent replay returns the same transaction")
check(
    again.last_response.headers.get("Idempotent-Replayed") == "true",
    "Idempotent-Replayed header visible to the SDK",
)
try:
    v1.customers.balance_transactions.create(
        customer.id, params=dict(params, amount=-999), options=opts
    )
    check(False, "parameter mismatch must fail")
except stripe.IdempotencyError as e:
    check(e.http_status == 400, "parameter mismatch raises IdempotencyError (400)")

check(v1.customers.retrieve(customer.id).balance == -1000, "customer balance -1000")

# Downgrade with create_prorations, then the renewal.
v1.subscriptions.update(
    sub.id,
    params={
        "items": [{"id": item.id, "price": price20}],
        "proration_behavior": "create_prorations",
    },
)
advancing = v1.test_helpers.test_clocks.advance(
    clock.id, params={"frozen_time": period_end + 3 * 3600}
)
check(advancing.status == "advancing", "advance answers 'advancing'")
for _ in range(50):
    if v1.test_helpers.test_clocks.retrieve(clock.id).status == "ready":
        break
check(v1.test_helpers.test_clocks.retrieve(clock.id).status == "ready", "clock ready")

invoices = v1.invoices.list(params={"customer": customer.id, "limit": 10})
renewal = next(i for i in invoices.data if i.billing_reason == "subscription_cycle")
check(renewal.total == 1000, "prorated renewal total 1000")
check(renewal.starting_balance == -1000 and renewal.amount_due == 0, "credit applied")
check(renewal.parent.subscription_details.subscription == sub.id, "invoice parent")
check(
    all(l.subscription == sub.id for l in renewal.lines.data),
    "line subscription at the top level too",
)
check(renewal.customer_account is None and sub.customer_account is None, "customer_account")
check(item.plan.id == item.price.id and item.plan.amount == 3000, "subscription item plan")
check(v1.products.retrieve(item.price.product).type == "service", "product type")
check(
    any(l.parent.subscription_item_details.proration for l in renewal.lines.data),
    "proration lines",
)

txns = v1.customers.balance_transactions.list(customer.id, params={"limit": 100})
check(
    [(t.type, t.amount) for t in txns.data] == [("applied_to_invoice", 1000), ("adjustment", -1000)],
    "balance transactions newest first",
)

note = v1.credit_notes.create(
    params={
        "invoice": renewal.id,
        "amount": 1000,
        "credit_amount": 1000,
        "memo": "SLA credit for INC-abcdef",
        "metadata": {"incident": "INC-abcdef", "source": "billing-sla-automation"},
    }
)
check(note.status == "issued" and note.type == "post_payment", "credit note issued")
notes = v1.credit_notes.list(params={"customer": customer.id, "limit": 100})
check([n.id for n in notes.data] == [note.id], "credit notes listed")
check(v1.customers.retrieve(customer.id).balance == -1000, "credit note credited the balance")

# Pagination through the SDK's auto-paging iterator.
for i in range(12):
    v1.customers.balance_transactions.create(
        customer.id, params={"amount": -1, "currency": "usd"}
    )
pages = v1.customers.balance_transactions.list(customer.id, params={"limit": 5})
check(len(list(pages.auto_paging_iter())) == 15, "auto-paging over all pages")

# Errors arrive as the SDK's typed exceptions.
try:
    v1.customers.retrieve("cus_missing")
    check(False, "missing customer must fail")
except stripe.InvalidRequestError as e:
    check(e.http_status == 404 and e.code == "resource_missing", "404 resource_missing")


# Lists leave test-clock objects out unless the clock (or customer) is named.
plain = v1.customers.create(params={"name": "no clock"})
listed = [c.id for c in v1.customers.list(params={"limit": 100}).data]
check(listed == [plain.id], "customer list leaves test-clock customers out")
on_clock = v1.customers.list(params={"test_clock": clock.id, "limit": 100}).data
check([c.id for c in on_clock] == [customer.id], "customer list filtered by test_clock")
check(v1.subscriptions.list(params={"limit": 100}).data == [], "subscription list leaves them out")
by_customer = v1.subscriptions.list(params={"customer": customer.id}).data
check([s.id for s in by_customer] == [sub.id], "subscription list filtered by customer")

# The version header: the pinned one is served, another is refused, not reshaped.
other = stripe.StripeClient(
    KEY, base_addresses={"api": BASE}, stripe_version="2020-08-27", max_network_retries=0
)
try:
    other.v1.customers.list()
    check(False, "another API version must be refused")
except stripe.InvalidRequestError as e:
    check(e.http_status == 400 and VERSION in str(e.user_message), "other Stripe-Version refused")
    check(
        (e.json_body or {}).get("error", {}).get("request_log_url", "").endswith(e.request_id),
        "the error's request_log_url names the request",
    )


def header(err, name):
    found = [v for k, v in (err.headers or {}).items() if k.lower() == name.lower()]
    return found[0] if found else None


if FAULT_KEY:
    faulty = stripe.StripeClient(
        FAULT_KEY, base_addresses={"api": BASE}, max_network_retries=2, **PIN
    ).v1
    # Commit, then 500: the SDK is told not to retry, and the key replays the 500.
    opts = {"idempotency_key": "probe-commit-then-500"}
    first_request = None
    try:
        faulty.customers.create(params={"name": "lands"}, options=opts)
        check(False, "commit-then-500 must raise")
    except stripe.APIError as first:
        check(first.http_status == 500, "commit-then-500 raises APIError 500")
        check(header(first, "Stripe-Should-Retry") == "false", "500 says Stripe-Should-Retry: false")
        check(header(first, "Idempotent-Replayed") is None, "the SDK did not retry it")
        first_request = first.request_id
    try:
        faulty.customers.create(params={"name": "lands"}, options=opts)
        check(False, "the replay must raise too")
    except stripe.APIError as again:
        check(again.http_status == 500, "same key replays the 500")
        check(header(again, "Idempotent-Replayed") == "true", "replay marked Idempotent-Replayed")
        check(
            header(again, "Original-Request") == first_request,
            "Original-Request names the first request",
        )
    names = [c.name for c in faulty.customers.list().data]
    check(names == ["lands"], "the customer was created exactly once")

    # A 429 is not retried by stripe-python without a hint and saves nothing.
    opts = {"idempotency_key": "probe-429"}
    try:
        faulty.products.create(params={"name": "after 429"}, options=opts)
        check(False, "the 429 must raise")
    except stripe.RateLimitError as e:
        code = (e.json_body or {}).get("error", {}).get("code")
        check(e.http_status == 429 and code == "rate_limit", "429 raises RateLimitError")
    product = faulty.products.create(params={"name": "after 429"}, options=opts)
    check(
        product.last_response.headers.get("Idempotent-Replayed") is None,
        "retry after the 429 runs anew under the same key",
    )

    # A retryable 503 (Stripe-Should-Retry: true) is retried by the SDK.
    check(faulty.prices.list().data == [], "Stripe-Should-Retry: true is retried by the SDK")

# The global-configuration style of older integrations.
stripe.api_key = KEY
stripe.api_base = BASE
if PIN:
    stripe.api_version = ASKED
stripe.max_network_retries = 0
check(stripe.Customer.retrieve(customer.id).id == customer.id, "global api_base works")
try:
    stripe.api_key = "sk_live_nope"
    stripe.Customer.retrieve(customer.id)
    check(False, "a live key must be refused")
except stripe.AuthenticationError as e:
    check(e.http_status == 401, "non-test key gets 401")

print("sdk probe: all checks passed")

#!/usr/bin/env python3
"""Prune Stripe's OpenAPI spec3.json down to the object schemas the emulator emits.

Usage: python3 prune_spec.py PATH/TO/spec3.json > stripe-openapi-pruned.json

What it keeps: the component schemas named in ROOTS and everything they reference
through `$ref`, except references to *other* top-level API resources (schemas that
carry `x-resourceId` and are not roots). Those are only ever emitted by the
emulator as an id string or null (they are expandable fields it never expands), so
each such `$ref` is replaced by `{"x-pruned": "<schema name>"}`, which the test
validator accepts as "any value". `description`, `title` and all other `x-*` keys
except `x-pruned` are dropped to keep the file small; nothing that constrains a
value (type, properties, required, nullable, anyOf, enum, items, maxLength, $ref)
is changed.
"""
import json
import sys

ROOTS = [
    "test_helpers.test_clock",
    "customer",
    "product",
    "price",
    "subscription",
    "subscription_item",
    "invoice",
    "line_item",
    "customer_balance_transaction",
    "credit_note",
    "credit_note_line_item",
    "error",
    "payment_intent",
    "charge",
    "refund",
]


def main() -> None:
    spec = json.load(open(sys.argv[1]))
    schemas = spec["components"]["schemas"]
    resources = {k for k, v in schemas.items() if "x-resourceId" in v}

    def clean(node, found, is_properties=False):
        if isinstance(node, list):
            return [clean(v, found) for v in node]
        if not isinstance(node, dict):
            return node
        if is_properties:
            # Keys of a `properties` map are field names (a field may be called
            # "description"), so keep every key and clean each field's schema.
            return {key: clean(value, found) for key, value in node.items()}
        if "$ref" in node:
            name = node["$ref"].split("/")[-1]
            if name in resources and name not in ROOTS:
                return {"x-pruned": name}
            found.add(name)
            return {"$ref": node["$ref"]}
        out = {}
        for key, value in node.items():
            if key in ("description", "title") or key.startswith("x-"):
                continue
            out[key] = clean(value, found, is_properties=(key == "properties"))
        return out

    kept = {}
    todo = list(ROOTS)
    while todo:
        name = todo.pop()
        if name in kept:
            continue
        found = set()
        kept[name] = clean(schemas[name], found)
        todo.extend(sorted(found - kept.keys()))

    out = {
        "info": {
            "source": "Stripe OpenAPI spec3.json, info.version " + spec["info"]["version"],
            "obtained_from": "PyPI wheel seahaven-stripe-world==0.3.0, file seahaven_stripe_world/spec/spec3.json",
            "pruned_by": "stripe/tests/data/prune_spec.py",
            "roots": ROOTS,
        },
        "components": {"schemas": {k: kept[k] for k in sorted(kept)}},
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

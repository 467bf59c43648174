//! A receipt page marks an entry's signature valid only when `verify`'s own strict check found
//! nothing wrong with it: a signer of small order, whose signature holds for any message under
//! the non-strict equation, is never marked valid.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};
use verify::entry::ReceiptBundle;
use verify::receipt::KeyCheck;

/// One PROPOSED entry signed by the identity point (a key of order 1) with the signature
/// (R = identity, s = 0), which `[s]B = R + [k]A` accepts for every message.
fn weak_bundle() -> (ReceiptBundle, String) {
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let signer = hex::encode(identity);
    let mut sig = [0u8; 64];
    sig[0] = 1;
    let eid = "ab".repeat(32);
    let mut entry = json!({
        "v": 1,
        "ts_ms": 1,
        "kind": "PROPOSED",
        "effect_id": eid,
        "prev": Value::Null,
        "signer": signer,
    });
    let hash = verify::entry::compute_hash(entry.as_object().unwrap()).unwrap();
    entry["hash"] = Value::from(hash);
    entry["sig"] = Value::from(hex::encode(sig));
    (ReceiptBundle::new(eid, vec![entry]), signer)
}

#[test]
fn an_entry_signed_by_a_key_of_small_order_is_not_marked_valid() {
    let (bundle, signer) = weak_bundle();
    let checked = site::verification::receipt_check(&bundle, &KeyCheck::SelfAttested, &signer);
    let marks = &checked.entries;
    assert!(!checked.ok(), "{checked:?}");
    assert!(!marks[0].signature_ok, "{:?}", marks[0]);
    assert_eq!(marks[0].signature, "INVALID");
}

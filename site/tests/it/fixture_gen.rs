//! Writes a synthetic fixture when asked: `SITE_WRITE_SYNTHETIC_FIXTURE=1 cargo test -p site --test fixture_gen`.
//! The checked-in fixture is a real run's output when one exists (see fixtures/README.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

#[test]
fn write_synthetic_fixture_when_asked() {
    if std::env::var_os("SITE_WRITE_SYNTHETIC_FIXTURE").is_none() {
        return;
    }
    let file = support::synthetic();
    let path = support::fixture_dir().join("billing_credit.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    eprintln!("wrote {}", path.display());
}

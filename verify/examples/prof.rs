//! Profiling helper: verify the same receipts repeatedly, and time the parts.
fn main() {
    let spec = verify::synthetic::Spec {
        seed: 3,
        repeats: 2000,
        columns: vec!["interlock".into()],
    };
    let file = verify::synthetic::generate(&spec);
    let bundles: Vec<_> = file.cells.into_iter().filter_map(|c| c.receipt).collect();
    let entries: Vec<_> = bundles
        .iter()
        .flat_map(|b| b.entries.iter())
        .filter_map(|e| e.as_object())
        .collect();
    let t = std::time::Instant::now();
    let mut n = 0;
    for e in &entries {
        n += verify::entry::compute_hash(e).map(|h| h.len()).unwrap_or(0);
    }
    eprintln!("hash {} entries {:?} ({n})", entries.len(), t.elapsed());
    if std::env::var("CANON_ONLY").is_ok() {
        for _ in 0..20 {
            for e in &entries {
                n += verify::canonical::object_to_string_without(e, &["hash", "sig"])
                    .map(|h| h.len())
                    .unwrap_or(0);
            }
        }
        eprintln!("{n}");
        return;
    }
    let t = std::time::Instant::now();
    for e in &entries {
        n += verify::canonical::object_to_string_without(e, &["hash", "sig"])
            .map(|h| h.len())
            .unwrap_or(0);
    }
    eprintln!("canonical only {:?} ({n})", t.elapsed());
    let key = verify::receipt::KeyCheck::SelfAttested;
    for _ in 0..4 {
        let r = verify::receipt::verify_bundles(&bundles, &key);
        assert!(r.iter().all(|r| r.valid));
    }
}

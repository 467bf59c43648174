//! Write a synthetic results file to stdout: `cargo run -p verify --example synth [REPEATS]`.
fn main() {
    let repeats = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let spec = synthetic::Spec {
        repeats,
        ..Default::default()
    };
    let file = synthetic::generate(&spec);
    println!(
        "{}",
        serde_json::to_string_pretty(&file).unwrap_or_default()
    );
}

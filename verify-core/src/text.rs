//! Cutting long values from a file to a stated length, for the core's messages.

/// `s` cut to at most `max` characters, saying how long it was when cut.
pub fn shorten(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((at, _)) => format!(
            "{}… ({} bytes in all)",
            s.get(..at).unwrap_or_default(),
            s.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_and_measured() {
        let long = "a".repeat(1000);
        let s = shorten(&long, 10);
        assert!(s.starts_with("aaaaaaaaaa…"));
        assert!(s.contains("1000 bytes"));
        assert_eq!(shorten("short", 10), "short");
    }
}

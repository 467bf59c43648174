//! Placeholders: `{{ name }}` in prose is replaced by the fact `name` (see [`crate::facts`]).
//!
//! Syntax: `{{`, optional spaces, a fact name made of `a-z`, `0-9`, `_` and `.`, optional spaces,
//! `}}`. `{{` always opens a placeholder; an unknown name or an unclosed `{{` is an error. The
//! value is inserted as literal text (Markdown punctuation escaped), so data cannot inject markup.

use crate::facts::Facts;

/// A placeholder that cannot be filled; the message names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaceholderError {
    /// `{{` with no `}}` after it (the rest of the line from the `{{`).
    #[error("unclosed placeholder `{0}`")]
    Unclosed(String),
    /// A name with characters a fact name cannot have (what stood between the braces).
    #[error("malformed placeholder `{{{{{0}}}}}`")]
    Malformed(String),
    /// A name no fact has, with a hint naming known facts that share its first part.
    #[error("unknown placeholder `{{{{{name}}}}}`{hint}")]
    Unknown {
        /// The name.
        name: String,
        /// [`suggest`]'s hint (empty when nothing is close).
        hint: String,
    },
}

/// Replace every placeholder in `line`. Errors name the offending placeholder.
pub fn fill(line: &str, facts: &Facts) -> Result<String, PlaceholderError> {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| PlaceholderError::Unclosed(rest[start..].to_owned()))?;
        let name = after[..end].trim();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
        {
            return Err(PlaceholderError::Malformed(after[..end].to_owned()));
        }
        let value = facts.get(name).ok_or_else(|| PlaceholderError::Unknown {
            name: name.to_owned(),
            hint: suggest(name, facts),
        })?;
        out.push_str(&escape_markdown(&value.to_string()));
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A hint naming known facts that share the unknown name's first part.
pub fn suggest(name: &str, facts: &Facts) -> String {
    let head = name.split('.').next().unwrap_or(name);
    let close: Vec<&str> = facts
        .keys()
        .filter(|k| k.split('.').next() == Some(head))
        .map(String::as_str)
        .take(8)
        .collect();
    if close.is_empty() {
        String::new()
    } else {
        format!(" (known: {})", close.join(", "))
    }
}

/// Backslash-escape the ASCII punctuation that Markdown or HTML could interpret.
pub fn escape_markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '~' | '!' | '&'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The text of `line` that a person wrote by hand: placeholders and inline code spans removed.
/// Used to refuse numbers typed into prose.
pub fn handwritten(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    loop {
        let ph = rest.find("{{");
        let code = rest.find('`');
        match (ph, code) {
            (Some(p), c) if c.is_none_or(|c| p < c) => {
                out.push_str(&rest[..p]);
                match rest[p..].find("}}") {
                    Some(e) => rest = &rest[p + e + 2..],
                    None => return out,
                }
            }
            (_, Some(c)) => {
                out.push_str(&rest[..c]);
                let ticks = rest[c..].chars().take_while(|&ch| ch == '`').count();
                let fence = "`".repeat(ticks);
                let body = &rest[c + ticks..];
                match body.find(&fence) {
                    Some(e) => rest = &body[e + ticks..],
                    None => {
                        out.push_str(body);
                        return out;
                    }
                }
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::Fact;

    fn facts() -> Facts {
        let mut f = Facts::new();
        f.insert("held.interlock".into(), Fact::Ratio(6, 6));
        f.insert(
            "differ_rows.a.b".into(),
            Fact::Text("before_send / <b>".into()),
        );
        f
    }

    #[test]
    fn fills_and_escapes() {
        assert_eq!(
            fill("held {{held.interlock}} and {{ held.interlock }}", &facts()).unwrap(),
            "held 6/6 and 6/6"
        );
        assert_eq!(
            fill("{{differ_rows.a.b}}", &facts()).unwrap(),
            "before\\_send / \\<b\\>"
        );
    }

    #[test]
    fn refuses_unknown_and_unclosed() {
        let e = fill("{{held.nobody}}", &facts()).unwrap_err().to_string();
        assert!(e.contains("unknown placeholder `{{held.nobody}}`"), "{e}");
        assert!(e.contains("held.interlock"), "{e}");
        assert!(fill("x {{held.interlock", &facts())
            .unwrap_err()
            .to_string()
            .contains("unclosed"));
        assert!(fill("{{Held}}", &facts())
            .unwrap_err()
            .to_string()
            .contains("malformed"));
    }

    #[test]
    fn each_refusal_quotes_the_placeholder_as_written() {
        assert_eq!(
            fill("{{Held}}", &facts()).unwrap_err().to_string(),
            "malformed placeholder `{{Held}}`"
        );
        assert_eq!(
            fill("x {{held.interlock", &facts())
                .unwrap_err()
                .to_string(),
            "unclosed placeholder `{{held.interlock`"
        );
        assert_eq!(
            fill("{{nobody}}", &facts()).unwrap_err().to_string(),
            "unknown placeholder `{{nobody}}`"
        );
    }

    #[test]
    fn handwritten_text_drops_placeholders_and_code() {
        assert_eq!(handwritten("a {{x.y}} b `v1` c ``x`y`` d"), "a  b  c  d");
        assert_eq!(handwritten("costs 10"), "costs 10");
    }
}

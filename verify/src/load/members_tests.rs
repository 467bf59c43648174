//! The members and elements found in parts are those serde_json finds reading the whole text as
//! an object of raw values (the reader this one replaced, kept here as the reference), on the
//! committed files and on edited texts, in any number of parts; and the values are counted as
//! the density check counts them.

use super::*;
use serde::de::{self, MapAccess, Visitor};
use std::path::Path;

/// What a reading found: each member but `array` as (key, value text), and `array`'s elements.
type Found = (Vec<(String, String)>, Option<Vec<String>>);

/// The reference: serde_json reads the text as an object whose member `array` is a list of raw
/// values and every other member a raw value; a key twice is refused.
fn reference(text: &str, array: &'static str) -> Option<Found> {
    struct Top(&'static str);
    impl<'de> Visitor<'de> for Top {
        type Value = (Vec<(String, &'de RawValue)>, Option<Vec<&'de RawValue>>);
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let (mut members, mut elements) = (Vec::<(String, &'de RawValue)>::new(), None);
            while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                let seen = members.iter().any(|(k, _)| *k == key);
                if seen || (key == self.0 && elements.is_some()) {
                    return Err(de::Error::custom("duplicate key"));
                }
                if key == self.0 {
                    elements = Some(map.next_value()?);
                } else {
                    members.push((key.into_owned(), map.next_value()?));
                }
            }
            Ok((members, elements))
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let (members, elements) = serde::Deserializer::deserialize_map(&mut de, Top(array)).ok()?;
    de.end().ok()?;
    let members = members
        .into_iter()
        .map(|(k, v)| (k, v.get().to_owned()))
        .collect();
    let elements = elements.map(|e| e.iter().map(|r| r.get().to_owned()).collect());
    Some((members, elements))
}

/// What [`members_in`] found, seen as [`reference`] sees it for `array`; `None` where the
/// reference must fail too (`array` there but not an array).
fn found(split: &Members<'_>, array: &str) -> Option<Found> {
    let mut members = Vec::new();
    let mut elements = None;
    for m in &split.members {
        if m.key == array {
            let items = m.elements.as_ref()?;
            elements = Some(items.texts.iter().map(|r| r.get().to_owned()).collect());
        } else {
            members.push((m.key.clone().into_owned(), m.value.to_owned()));
        }
    }
    Some((members, elements))
}

/// Every reading of `text` in 1 to 5 parts agrees with the reference for both arrays, and
/// counts the values as the density check does.
fn agrees(text: &str, what: &str) {
    for parts in [None, Some(1), Some(2), Some(3), Some(5)] {
        let split = members_in(text, usize::MAX, parts).and_then(Result::ok);
        for array in ARRAYS {
            let ours = split.as_ref().and_then(|s| found(s, array));
            assert_eq!(
                ours,
                reference(text, array),
                "{what}: {array}, parts {parts:?}"
            );
        }
        if let Some(split) = &split {
            let count = super::super::limits::count_values(text);
            assert_eq!(split.values, count, "{what}: parts {parts:?}");
        }
    }
    limits_agree(text, what);
}

/// The limits of a whole reading ([`within_member_limits`]) give the split's verdict on `text`
/// wherever it splits: the same refusal, at the same path, or none.
fn limits_agree(text: &str, what: &str) {
    let Some(split) = members_in(text, usize::MAX, None) else {
        return;
    };
    let path = |r: Result<(), LoadError>| match r {
        Ok(()) => None,
        Err(LoadError::Limit { path, .. }) => Some(path),
        Err(other) => Some(format!("not a limit: {other:?}")),
    };
    assert_eq!(
        path(within_member_limits(text)),
        path(split.map(|_| ())),
        "{what}"
    );
}

fn committed(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let bytes = crate::input::read_file(&dir.join(name)).unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

const COMMITTED: [&str; 7] = [
    "billing_credit.json",
    "notify.json",
    "pr_merge.json",
    "shared_cap.json",
    "notify_nemesis.json",
    "nemesis/billing_credit.json.gz",
    "nemesis/shared_cap.json.gz",
];

#[test]
fn committed_files_split_as_the_reference_splits_them() {
    for name in COMMITTED {
        let text = committed(name);
        assert!(!text.is_empty(), "{name}");
        let split = members_in(&text, usize::MAX, Some(3));
        assert!(
            matches!(split, Some(Ok(_))),
            "{name} must read as an object"
        );
        agrees(&text, name);
    }
}

#[test]
fn hand_written_texts_split_as_the_reference_splits_them() {
    let texts = [
        r#"{}"#,
        r#" { } "#,
        r#"{"cells":[]}"#,
        r#"{"cells":[ ] , "a" : 1 }"#,
        r#"{"cells":[{}],"trials":[{},{}]}"#,
        r#"{"cells":[{},]}"#,
        r#"{"cells":[,{}]}"#,
        r#"{"cells":[{} {}]}"#,
        r#"{"cells":[{}],}"#,
        r#"{"cells":[{}]} x"#,
        r#"{"cells":[{}],"cells":[]}"#,
        r#"{"a":1,"a":2}"#,
        r#"{"cells":5,"trials":"x"}"#,
        r#"{"cells":[1,"},{",{"a":"},{"},2]}"#,
        r#"{"c\u0065lls":[{},{}]}"#,
        r#"{"\ud800":1}"#,
        r#"{"cells":[{"a":[1,2,{"b":"],"}]},{}]}"#,
        r#"[{"cells":[]}]"#,
        r#"{"cells":[{}],"x":[1,2],"#,
        r#"{"cells":[{}}"#,
        "{\"cells\":[{}\n,\t{}\r\n]\n}\n",
        r#"{1:2}"#,
        r#"{"a" 1}"#,
        r#"{"cells":[01]}"#,
        r#"{"cells":[-]}"#,
        r#"{"cells":[1e5,-0,1.5]}"#,
        r#"{"cells":[{"k":[{"k":1},{"k":2},{"k":3}]},{"k":[{"k":4}]},{"k":5}],"z":[{"k":6}]}"#,
        r#"{"cells":[{"k":"},{"k":"},{"k":"],{"},{"k":[]}]}"#,
    ];
    for text in texts {
        agrees(text, text);
    }
}

/// Every edit of a byte near where parts may start (a `}`, `,`, `{`, `"` or `]`) of a committed
/// file cut short, in any number of parts.
#[test]
fn edited_texts_split_as_the_reference_splits_them() {
    let text = committed("billing_credit.json");
    // The head, the first cells and the tail, to keep the test short.
    let Some(Ok(split)) = members_in(&text, usize::MAX, Some(1)) else {
        panic!("the committed file must read");
    };
    let cells = split
        .members
        .iter()
        .find(|m| m.key == "cells")
        .and_then(|m| m.elements.clone())
        .unwrap_or_default()
        .texts;
    let kept: Vec<&str> = cells.iter().take(4).map(|r| r.get()).collect();
    let short = format!(
        "{{\"format\":\"x\",\"cells\":[{}],\"trials\":[{}],\"summary\":{{\"a\":[1,2]}}}}",
        kept.join(","),
        kept.iter().take(2).copied().collect::<Vec<_>>().join(" , ")
    );
    agrees(&short, "the short file");
    let bytes = short.as_bytes();
    let edits: [&[u8]; 6] = [b"", b",", b"}", b"{", b"\"", b" ]"];
    let mut tried = 0;
    for (at, b) in bytes.iter().enumerate() {
        if !matches!(b, b'}' | b',' | b'{' | b'"' | b']' | b'[') || at % 3 != 0 {
            continue;
        }
        for edit in edits {
            let mut edited = bytes[..at].to_vec();
            edited.extend_from_slice(edit);
            edited.extend_from_slice(&bytes[at + 1..]);
            if let Ok(edited) = String::from_utf8(edited) {
                agrees(&edited, &format!("edit {edit:?} at {at}"));
                tried += 1;
            }
        }
    }
    assert!(tried > 500, "{tried}");
}

/// More elements than allowed: no split (the density check then refuses the text).
#[test]
fn too_many_elements_do_not_split() {
    let text = format!("{{\"cells\":[{}0]}}", "0,".repeat(100));
    assert!(members_in(&text, 101, Some(2)).is_some());
    for parts in [Some(1), Some(2), Some(4)] {
        assert!(members_in(&text, 100, parts).is_none(), "{parts:?}");
    }
}

/// An element of `{"a":[0,…]}` that the density check counts as `values` values.
fn element_of(values: usize) -> String {
    let element = format!("{{\"a\":[{}0]}}", "0,".repeat(values - 3));
    assert_eq!(count_values(&element), values);
    element
}

/// An element holding more values than [`MAX_ELEMENT_VALUES`] is refused, naming it, however
/// the array is read in parts; one at the limit is not. Another member past it is refused too.
#[test]
fn an_element_past_the_limit_of_values_is_refused_naming_it() {
    let (at_limit, over) = (
        element_of(MAX_ELEMENT_VALUES),
        element_of(MAX_ELEMENT_VALUES + 1),
    );
    let small = r#"{"a":1}"#;
    let read = format!("{{\"cells\":[{small},{at_limit},{small}],\"x\":{at_limit}}}");
    let refused = format!("{{\"cells\":[{small},{at_limit},{over},{small}],\"x\":1}}");
    // Past the limit and the two values one cell allows besides.
    let member = format!(
        "{{\"cells\":[{small}],\"x\":{}}}",
        element_of(MAX_ELEMENT_VALUES + 3)
    );
    for parts in [None, Some(1), Some(2), Some(3), Some(5)] {
        assert!(
            matches!(members_in(&read, usize::MAX, parts), Some(Ok(_))),
            "{parts:?}"
        );
        let err = members_in(&refused, usize::MAX, parts).and_then(Result::err);
        assert!(
            matches!(&err, Some(LoadError::Limit { path, message }) if path == "cells[2]" && message.contains("65536")),
            "{parts:?}: {err:?}"
        );
        let err = members_in(&member, usize::MAX, parts).and_then(Result::err);
        assert!(
            matches!(&err, Some(LoadError::Limit { path, .. }) if path == "x"),
            "{parts:?}: {err:?}"
        );
    }
    for text in [&read, &refused, &member] {
        limits_agree(text, "past the limit");
    }
}

/// The manifest may hold [`MAX_ELEMENT_VALUES`] values and two more for each cell or trial (it
/// names a hash per cell, so a run of more cells than the limit is read), and no more; it may come
/// before the cells or after them. Any other member may hold the limit alone, however many cells
/// there are (a receipt's entries are not paid for by an array of cells beside them).
#[test]
fn a_member_beside_the_arrays_may_grow_with_their_elements() {
    let small = r#"{"a":1}"#;
    for cells in [1usize, 3, 40_000] {
        let list = vec![small; cells].join(",");
        let allowed = MAX_ELEMENT_VALUES + 2 * cells;
        for (held, read) in [(allowed, true), (allowed + 1, false)] {
            let member = element_of(held);
            for text in [
                format!("{{\"manifest\":{member},\"cells\":[{list}]}}"),
                format!("{{\"cells\":[{list}],\"manifest\":{member}}}"),
            ] {
                limits_agree(&text, &format!("{cells} cells, {held} held"));
                for parts in [None, Some(1), Some(3)] {
                    let got = members_in(&text, usize::MAX, parts);
                    if read {
                        assert!(matches!(got, Some(Ok(_))), "{cells} cells, {parts:?}");
                    } else {
                        let err = got.and_then(Result::err);
                        assert!(
                            matches!(&err, Some(LoadError::Limit { path, .. }) if path == "manifest"),
                            "{cells} cells, {parts:?}: {err:?}"
                        );
                    }
                }
            }
        }
        let entries = element_of(MAX_ELEMENT_VALUES + 1);
        let text = format!("{{\"entries\":{entries},\"cells\":[{list}]}}");
        let err = members_in(&text, usize::MAX, None).and_then(Result::err);
        assert!(
            matches!(&err, Some(LoadError::Limit { path, .. }) if path == "entries"),
            "{cells} cells: {err:?}"
        );
        limits_agree(&text, &format!("{cells} cells, entries"));
    }
}

/// The groups cover the elements once, in order, each holding at most a group's elements and
/// [`VALUES_PER_GROUP`] values (or one element), and say how many values they hold, however the
/// array is read in parts.
#[test]
fn groups_cover_the_elements_in_order_within_a_groups_values() {
    let (third, whole) = (
        element_of(VALUES_PER_GROUP / 3),
        element_of(MAX_ELEMENT_VALUES),
    );
    let small = r#"{"a":1}"#;
    let elements: Vec<&str> = (0..300)
        .map(|i| match i % 97 {
            0 | 3 => third.as_str(),
            5 => whole.as_str(),
            _ => small,
        })
        .collect();
    for array in ARRAYS {
        let text = format!("{{\"{array}\":[{}]}}", elements.join(","));
        let per_group = elements_per_group(array);
        for parts in [Some(1), Some(2), Some(3), Some(5)] {
            let Some(Ok(split)) = members_in(&text, usize::MAX, parts) else {
                panic!("{parts:?}: the text must read");
            };
            let found = split.members.first().and_then(|m| m.elements.clone());
            let found = found.unwrap_or_default();
            assert_eq!(found.texts.len(), elements.len(), "{parts:?}");
            let mut next = 0;
            for group in &found.groups {
                let range = group.elements.clone();
                assert_eq!(range.start, next, "{parts:?}");
                assert!(
                    range.end > range.start && range.len() <= per_group,
                    "{parts:?}"
                );
                let texts = found.texts.get(range.clone()).unwrap_or_default();
                let values: usize = texts.iter().map(|t| count_values(t.get())).sum();
                assert_eq!(values, group.values, "{parts:?}");
                assert!(values <= VALUES_PER_GROUP || range.len() == 1, "{parts:?}");
                next = range.end;
            }
            assert_eq!(next, elements.len(), "{parts:?}");
            // Cut by their values too, not only by their counts.
            let by_count = elements.len().div_ceil(per_group);
            assert!(
                found.groups.len() > by_count,
                "{parts:?}: {}",
                found.groups.len()
            );
        }
    }
}

/// An array of elements smaller than any cell or trial is not split (the whole file's reading
/// then refuses it); the committed files' are.
#[test]
fn an_array_of_elements_smaller_than_any_cell_is_not_split() {
    for name in COMMITTED {
        let text = committed(name);
        assert!(matches!(members(&text, usize::MAX), Some(Ok(_))), "{name}");
    }
    let small = format!("{{\"cells\":[{}{{}}],\"x\":1}}", "{},".repeat(10_000));
    let bare = format!("{{\"trials\":[{}0]}}", "1000000,".repeat(10_000));
    for text in [small, bare] {
        assert!(members(&text, usize::MAX).is_none());
        assert!(matches!(members_in(&text, usize::MAX, None), Some(Ok(_))));
    }
}

/// A text of more members than any format has is not split (the whole file's reading then reads
/// it, density first); one of [`MOST_MEMBERS`] is.
#[test]
fn more_members_than_any_format_has_do_not_split() {
    let text = |n: usize| {
        let members: Vec<String> = (0..n).map(|i| format!("\"k{i}\":0")).collect();
        format!("{{{}}}", members.join(","))
    };
    assert!(matches!(
        members(&text(MOST_MEMBERS), usize::MAX),
        Some(Ok(_))
    ));
    assert!(members(&text(MOST_MEMBERS + 1), usize::MAX).is_none());
}

/// Read in parts, each part lists no more than one element per [`MIN_ELEMENT_BYTES`] of its own
/// span: a run of small elements after large ones, within the array's bound as a whole, is not
/// split on 4 or 32 parts (what the parts list stays within the text on any number of threads);
/// on one part, and for the committed files on 32, the split is the same as ever.
#[test]
fn a_part_lists_no_more_small_elements_than_its_own_span_allows() {
    let large = format!("{{\"crash\":\"{}\"}},", "x".repeat(2000));
    let text = format!(
        "{{\"cells\":[{}{}{{\"crash\":0}}]}}",
        large.repeat(500),
        "{\"crash\":0},".repeat(15_000)
    );
    assert!(matches!(members_parts(&text, Some(1)), Some(Ok(_))));
    for parts in [4, 32] {
        assert!(members_parts(&text, Some(parts)).is_none(), "{parts}");
    }
    for name in COMMITTED {
        let text = committed(name);
        let Some(Ok(split)) = members_parts(&text, Some(32)) else {
            panic!("{name} does not split on 32 parts");
        };
        for array in ARRAYS {
            assert_eq!(found(&split, array), reference(&text, array), "{name}");
        }
    }
}

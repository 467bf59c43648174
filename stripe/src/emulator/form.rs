//! Parsing Stripe's bracket-form parameters (`a[b][0][c]=v`, `expand[]=x`) into a
//! tree, and typed reading of that tree with Stripe-shaped errors.

use super::errors::ApiError;
use percent_encoding::percent_decode_str;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One node while building the tree. Lists keep their indexes so that `[0]`,
/// `[1]` and `[]` forms all end up as ordered arrays.
enum Node {
    Leaf(String),
    Map(Vec<(String, Node)>),
    List(BTreeMap<usize, Node>),
}

fn decode(text: &str) -> Result<String, ApiError> {
    let spaced = text.replace('+', " ");
    percent_decode_str(&spaced)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| ApiError::bad_request(format!("Invalid UTF-8 in parameter: {text}")))
}

/// `items[0][price]` → `["items", "0", "price"]`.
fn segments(key: &str) -> Result<Vec<String>, ApiError> {
    let bad = || ApiError::bad_request(format!("Invalid parameter name: {key}"));
    let (base, mut rest) = match key.find('[') {
        Some(i) => (&key[..i], &key[i..]),
        None => (key, ""),
    };
    if base.is_empty() {
        return Err(bad());
    }
    let mut out = vec![base.to_string()];
    while !rest.is_empty() {
        if !rest.starts_with('[') {
            return Err(bad());
        }
        let close = rest.find(']').ok_or_else(bad)?;
        out.push(rest[1..close].to_string());
        rest = &rest[close + 1..];
    }
    Ok(out)
}

fn insert(node: &mut Node, segs: &[String], value: String, key: &str) -> Result<(), ApiError> {
    let conflict = || ApiError::bad_request(format!("Conflicting values for parameter {key}"));
    let Some((first, rest)) = segs.split_first() else {
        return Err(conflict());
    };
    // Turn an empty map into a list when the first child is an index.
    if let Node::Map(entries) = node {
        if entries.is_empty() && (first.is_empty() || first.parse::<usize>().is_ok()) {
            *node = Node::List(BTreeMap::new());
        }
    }
    let child: &mut Node = match node {
        Node::Leaf(_) => return Err(conflict()),
        Node::List(items) => {
            let index = if first.is_empty() {
                items.keys().next_back().map_or(0, |k| k + 1)
            } else {
                first.parse::<usize>().map_err(|_| conflict())?
            };
            items.entry(index).or_insert_with(|| Node::Map(Vec::new()))
        }
        Node::Map(entries) => {
            let pos = match entries.iter().position(|(k, _)| k == first) {
                Some(p) => p,
                None => {
                    entries.push((first.clone(), Node::Map(Vec::new())));
                    entries.len() - 1
                }
            };
            &mut entries[pos].1
        }
    };
    if rest.is_empty() {
        match child {
            Node::Map(e) if e.is_empty() => {
                *child = Node::Leaf(value);
                Ok(())
            }
            // A repeated scalar key: the last value wins.
            Node::Leaf(old) => {
                *old = value;
                Ok(())
            }
            _ => Err(conflict()),
        }
    } else {
        insert(child, rest, value, key)
    }
}

fn to_value(node: Node) -> Value {
    match node {
        Node::Leaf(s) => Value::String(s),
        Node::Map(entries) => {
            let mut map = Map::new();
            for (k, v) in entries {
                map.insert(k, to_value(v));
            }
            Value::Object(map)
        }
        Node::List(items) => Value::Array(items.into_values().map(to_value).collect()),
    }
}

/// Parses `application/x-www-form-urlencoded` text (query string or body) into
/// `root`, adding to what is already there.
pub(crate) fn parse_into(root: &mut Map<String, Value>, raw: &str) -> Result<(), ApiError> {
    let mut tree = Node::Map(
        std::mem::take(root)
            .into_iter()
            .map(|(k, v)| (k, from_value(v)))
            .collect(),
    );
    for pair in raw.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(k)?;
        let value = decode(v)?;
        let segs = segments(&key)?;
        insert(&mut tree, &segs, value, &key)?;
    }
    if let Value::Object(map) = to_value(tree) {
        *root = map;
    }
    Ok(())
}

fn from_value(v: Value) -> Node {
    match v {
        Value::Object(m) => Node::Map(m.into_iter().map(|(k, v)| (k, from_value(v))).collect()),
        Value::Array(a) => Node::List(a.into_iter().map(from_value).enumerate().collect()),
        Value::String(s) => Node::Leaf(s),
        other => Node::Leaf(other.to_string()),
    }
}

/// A canonical text of a parameter tree (object keys sorted), used to compare
/// the parameters of two requests that share an idempotency key.
pub(crate) fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&m[k]));
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

/// Typed, checked access to a parameter tree (the whole request, or a nested
/// part such as `items[0]`), with error messages naming the full parameter.
#[derive(Debug, Clone)]
pub(crate) struct Form<'a> {
    map: &'a Map<String, Value>,
    prefix: String,
}

static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

impl<'a> Form<'a> {
    pub fn new(map: &'a Map<String, Value>) -> Form<'a> {
        Form {
            map,
            prefix: String::new(),
        }
    }

    /// The full name of a parameter of this form: `items[0][price]`.
    pub fn name(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}[{key}]", self.prefix)
        }
    }

    /// Rejects any parameter not in `allowed` with `parameter_unknown`.
    pub fn allow(&self, allowed: &[&str]) -> Result<(), ApiError> {
        for key in self.map.keys() {
            if !allowed.contains(&key.as_str()) {
                return Err(ApiError::unknown_param(&self.name(key)));
            }
        }
        Ok(())
    }

    pub fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    pub fn str(&self, key: &str) -> Result<Option<&'a str>, ApiError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(ApiError::invalid(
                self.name(key),
                format!("Invalid {}: must be a string", self.name(key)),
            )),
        }
    }

    pub fn req_str(&self, key: &str) -> Result<&'a str, ApiError> {
        match self.str(key)? {
            Some(s) if !s.is_empty() => Ok(s),
            _ => Err(ApiError::missing(&self.name(key))),
        }
    }

    /// A string of at most `max` characters.
    pub fn text(&self, key: &str, max: usize) -> Result<Option<String>, ApiError> {
        match self.str(key)? {
            Some(s) if s.chars().count() > max => Err(ApiError::invalid(
                self.name(key),
                format!(
                    "Invalid {}: must be at most {max} characters",
                    self.name(key)
                ),
            )),
            Some(s) => Ok(Some(s.to_string())),
            None => Ok(None),
        }
    }

    pub fn int(&self, key: &str) -> Result<Option<i64>, ApiError> {
        match self.str(key)? {
            None => Ok(None),
            Some(s) => s
                .trim()
                .parse::<i64>()
                .map(Some)
                .map_err(|_| ApiError::invalid_integer(&self.name(key), s)),
        }
    }

    pub fn req_int(&self, key: &str) -> Result<i64, ApiError> {
        self.int(key)?
            .ok_or_else(|| ApiError::missing(&self.name(key)))
    }

    pub fn bool(&self, key: &str) -> Result<Option<bool>, ApiError> {
        match self.str(key)? {
            None => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(other) => Err(ApiError::invalid(
                self.name(key),
                format!("Invalid boolean: {other}"),
            )),
        }
    }

    /// One of a fixed set of strings.
    pub fn choice(&self, key: &str, allowed: &[&str]) -> Result<Option<&'a str>, ApiError> {
        match self.str(key)? {
            None => Ok(None),
            Some(s) if allowed.contains(&s) => Ok(Some(s)),
            Some(s) => Err(ApiError::invalid_enum(&self.name(key), s, allowed)),
        }
    }

    /// A nested object such as `recurring[...]`, or an empty form when absent.
    pub fn sub(&self, key: &str) -> Result<Form<'a>, ApiError> {
        match self.map.get(key) {
            None => Ok(Form {
                map: &EMPTY,
                prefix: self.name(key),
            }),
            Some(Value::Object(m)) => Ok(Form {
                map: m,
                prefix: self.name(key),
            }),
            Some(_) => Err(ApiError::invalid(
                self.name(key),
                format!(
                    "Invalid {}: must be an object (use {}[...])",
                    self.name(key),
                    self.name(key)
                ),
            )),
        }
    }

    /// A list of nested objects such as `items[0][...]`.
    pub fn list(&self, key: &str) -> Result<Vec<Form<'a>>, ApiError> {
        match self.map.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::Object(m) => Ok(Form {
                        map: m,
                        prefix: format!("{}[{i}]", self.name(key)),
                    }),
                    _ => Err(ApiError::invalid(
                        format!("{}[{i}]", self.name(key)),
                        format!("Invalid {}[{i}]: must be an object", self.name(key)),
                    )),
                })
                .collect(),
            Some(_) => Err(ApiError::invalid(
                self.name(key),
                format!("Invalid array: {}", self.name(key)),
            )),
        }
    }

    /// A list of strings: `expand[]=a&expand[]=b` or `expand[0]=a`.
    pub fn strings(&self, key: &str) -> Result<Vec<String>, ApiError> {
        match self.map.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(ApiError::invalid(
                        self.name(key),
                        format!("Invalid array: {}", self.name(key)),
                    )),
                })
                .collect(),
            Some(Value::String(s)) if s.is_empty() => Ok(Vec::new()),
            Some(_) => Err(ApiError::invalid(
                self.name(key),
                format!(
                    "Invalid array: {} (use {}[]=...)",
                    self.name(key),
                    self.name(key)
                ),
            )),
        }
    }

    /// `metadata[...]` updates: `Some(map)` where an empty value means "unset this
    /// key"; `metadata=` (empty) clears everything and is returned as `Some(None)`.
    #[allow(clippy::type_complexity)]
    pub fn metadata(&self) -> Result<Option<Option<Vec<(String, String)>>>, ApiError> {
        match self.map.get("metadata") {
            None => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(Some(None)),
            Some(Value::Object(m)) => {
                let mut out = Vec::new();
                for (k, v) in m {
                    let Value::String(s) = v else {
                        return Err(ApiError::invalid(
                            format!("{}[{k}]", self.name("metadata")),
                            "Metadata values must be strings",
                        ));
                    };
                    if k.chars().count() > 40 {
                        return Err(ApiError::invalid(
                            format!("{}[{k}]", self.name("metadata")),
                            "Metadata keys can be at most 40 characters",
                        ));
                    }
                    if s.chars().count() > 500 {
                        return Err(ApiError::invalid(
                            format!("{}[{k}]", self.name("metadata")),
                            "Metadata values can be at most 500 characters",
                        ));
                    }
                    out.push((k.clone(), s.clone()));
                }
                if out.len() > 50 {
                    return Err(ApiError::invalid(
                        self.name("metadata"),
                        "Metadata can have at most 50 keys",
                    ));
                }
                Ok(Some(Some(out)))
            }
            Some(_) => Err(ApiError::invalid(
                self.name("metadata"),
                "Invalid metadata: use metadata[key]=value",
            )),
        }
    }
}

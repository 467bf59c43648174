//! Free-form JSON values of a results file (a worker's output line, a log line), kept as text.

use super::*;

/// A free-form JSON value (a worker's output line, a log line), kept as its text: it costs its
/// size in memory, where a tree of JSON values can cost twenty times that. At most
/// [`FREE_FORM_MAX_BYTES`] of text; read a part of it with [`FreeForm::read`].
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct FreeForm(Box<serde_json::value::RawValue>);

/// The longest free-form value a results file may hold, in bytes of text (a longer one is refused,
/// exit 2). The runner's restart lines and log lines are a few kilobytes.
pub const FREE_FORM_MAX_BYTES: usize = 256 * 1024;

impl FreeForm {
    /// The value's JSON text, exactly as stored.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// The value, or the part of it a type describes (unknown members are skipped, not built);
    /// `None` when it does not have that shape.
    pub fn read<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_str(self.0.get()).ok()
    }

    /// The whole value as a JSON tree.
    pub fn to_value(&self) -> serde_json::Value {
        self.read().unwrap_or(serde_json::Value::Null)
    }

    /// A free-form value holding `value`.
    pub fn from_value(value: &serde_json::Value) -> FreeForm {
        match serde_json::value::to_raw_value(value) {
            Ok(raw) => FreeForm(raw),
            // Only maps with non-string keys fail, and a JSON value has none.
            Err(_) => FreeForm(serde_json::value::RawValue::NULL.to_owned()),
        }
    }
}

impl PartialEq for FreeForm {
    fn eq(&self, other: &FreeForm) -> bool {
        self.0.get() == other.0.get()
    }
}

impl<'de> Deserialize<'de> for FreeForm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<FreeForm, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        if raw.get().len() > FREE_FORM_MAX_BYTES {
            return Err(serde::de::Error::custom(format!(
                "a free-form value of {} bytes is longer than the limit of {FREE_FORM_MAX_BYTES}",
                raw.get().len()
            )));
        }
        Ok(FreeForm(raw))
    }
}

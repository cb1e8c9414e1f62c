//! Strict JSON reading shared by every parser of outside input.
//!
//! `serde_json::Value` silently keeps the last of two duplicate keys, which is
//! a classic parser-differential hole (two readers see different documents).
//! Everything that reads untrusted JSON goes through [`parse_strict`], which
//! rejects duplicate keys at any depth and reports line and column.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Why a document is not acceptable JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonError {
    /// Human-readable description (never contains document content).
    pub message: String,
    /// 1-based line of the problem, when known.
    pub line: usize,
    /// 1-based column of the problem, when known.
    pub column: usize,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(
                f,
                "{} at line {} column {}",
                self.message, self.line, self.column
            )
        } else {
            f.write_str(&self.message)
        }
    }
}

impl std::error::Error for JsonError {}

/// Parses exactly one JSON value from UTF-8 bytes, rejecting duplicate keys at
/// any depth, invalid UTF-8 and trailing bytes.
pub(crate) fn parse_strict(bytes: &[u8]) -> Result<Value, JsonError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let (line, column) = position_of(bytes, e.valid_up_to());
        JsonError {
            message: "input is not valid UTF-8".into(),
            line,
            column,
        }
    })?;
    parse_strict_str(text)
}

/// [`parse_strict`] for text that is already known to be UTF-8.
pub(crate) fn parse_strict_str(text: &str) -> Result<Value, JsonError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = StrictSeed.deserialize(&mut de).map_err(from_serde)?;
    de.end().map_err(from_serde)?;
    Ok(value)
}

fn from_serde(e: serde_json::Error) -> JsonError {
    let mut message = e.to_string();
    // serde_json appends " at line L column C"; keep the bare message.
    if let Some(idx) = message.find(" at line ") {
        message.truncate(idx);
    }
    JsonError {
        message,
        line: e.line(),
        column: e.column(),
    }
}

fn position_of(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, column)
}

struct StrictSeed;

impl<'de> DeserializeSeed<'de> for StrictSeed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(StrictSeed)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let v = map.next_value_seed(StrictSeed)?;
            // One hash lookup per key: the entry tells whether it was seen.
            match out.entry(key) {
                serde_json::map::Entry::Occupied(e) => {
                    return Err(de::Error::custom(format!(
                        "duplicate key `{}`",
                        clip(e.key(), 64)
                    )));
                }
                serde_json::map::Entry::Vacant(e) => {
                    e.insert(v);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// `s` cut to `max` characters, with `…` appended when cut.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

/// Compact JSON with object keys sorted (bytewise) at every depth: the
/// canonical form hashed for digests and prompt signatures.
pub(crate) fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                write_canonical(&map[k.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Deep merge used by the rules loader: objects merge key by key; arrays and
/// scalars in `overlay` replace those in `base`.
pub(crate) fn deep_merge(base: &mut Value, overlay: &Value) {
    match (base, overlay) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(existing) => deep_merge(existing, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// Escapes one JSON Pointer reference token (RFC 6901).
pub(crate) fn pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_rejected_at_any_depth() {
        let err = parse_strict(br#"{"a":{"b":1,"b":2}}"#).unwrap_err();
        assert!(err.message.contains("duplicate key `b`"), "{err}");
        assert_eq!(err.line, 1);
    }

    #[test]
    fn trailing_bytes_and_bad_utf8_are_rejected() {
        assert!(parse_strict(b"{} {}").is_err());
        let err = parse_strict(b"{\"a\":\"\xff\"}").unwrap_err();
        assert!(err.message.contains("UTF-8"));
    }

    #[test]
    fn canonical_sorts_keys() {
        let v = parse_strict(br#"{"b":[{"z":1,"a":2}],"a":null}"#).unwrap();
        assert_eq!(canonical(&v), r#"{"a":null,"b":[{"a":2,"z":1}]}"#);
    }

    #[test]
    fn merge_objects_replace_arrays() {
        let mut base = serde_json::json!({"a":{"x":1,"y":[1,2]},"b":true});
        deep_merge(&mut base, &serde_json::json!({"a":{"y":[3]},"c":1}));
        assert_eq!(
            base,
            serde_json::json!({"a":{"x":1,"y":[3]},"b":true,"c":1})
        );
    }
}

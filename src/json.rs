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

mod members;
mod select;
pub(crate) use members::{Members, object_members};
pub(crate) use select::{Selection, parse_selected};

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

/// Documents from this size up are split by [`parse_strict_wide`].
pub(crate) const WIDE_MIN_BYTES: usize = 256 * 1024;

/// [`parse_strict_wide_spans`] without the ranges.
#[cfg(test)]
pub(crate) fn parse_strict_wide(bytes: &[u8], key: &str) -> Result<Value, JsonError> {
    parse_strict_wide_spans(bytes, key).map(|(v, _)| v)
}

/// Byte ranges, one per element of an array.
pub(crate) type Spans = Vec<std::ops::Range<usize>>;

/// [`parse_strict`] of a document that is an object whose member `key` may
/// hold a long array (a plan's `goals`) and, when the split reading read
/// it, the byte range in `bytes` of each element of that array. From
/// [`WIDE_MIN_BYTES`] up the array's elements are found in one pass and
/// parsed on two threads. The value, and any error, is exactly
/// [`parse_strict`]'s: a document the split reading does not accept in full
/// is read again by [`parse_strict`], which reports the error where it is.
pub(crate) fn parse_strict_wide_spans(
    bytes: &[u8],
    key: &str,
) -> Result<(Value, Option<Spans>), JsonError> {
    if bytes.len() >= WIDE_MIN_BYTES
        && let Ok(text) = std::str::from_utf8(bytes)
        && let Some((value, spans)) = wide::parse(text, key)
    {
        return Ok((value, spans));
    }
    parse_strict(bytes).map(|v| (v, None))
}

mod wide {
    use std::fmt;

    use serde::de::{self, Deserializer, MapAccess, Visitor};
    use serde_json::value::RawValue;
    use serde_json::{Map, Value};

    use super::{StrictSeed, parse_strict_str};

    /// At most this many top-level members are read this way (they are
    /// checked for duplicates by comparison).
    const MAX_MEMBERS: usize = 64;
    /// Arrays shorter than this are not worth a thread.
    const MIN_ELEMENTS: usize = 16;

    enum Member<'de> {
        Parsed(Value),
        Raw(Vec<&'de RawValue>),
    }

    struct Top<'k> {
        key: &'k str,
    }

    impl<'de> Visitor<'de> for Top<'_> {
        type Value = Vec<(String, Member<'de>)>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out: Vec<(String, Member<'de>)> = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                let member = if k == self.key {
                    Member::Raw(map.next_value::<Vec<&'de RawValue>>()?)
                } else {
                    Member::Parsed(map.next_value_seed(StrictSeed)?)
                };
                if out.len() == MAX_MEMBERS || out.iter().any(|(seen, _)| *seen == k) {
                    return Err(de::Error::custom("read whole"));
                }
                out.push((k, member));
            }
            Ok(out)
        }
    }

    /// The document, or `None` when it is not read this way (not an object,
    /// not valid, too many members, or a thread could not be started), with
    /// the byte range of each element of `key`'s array in `text`.
    pub(super) fn parse(text: &str, key: &str) -> Option<(Value, Option<super::Spans>)> {
        parse_with(text, key, &|t| parse_strict_str(t).ok())
    }

    /// [`parse`] with each element of `key`'s array read by `each`.
    pub(super) fn parse_with(
        text: &str,
        key: &str,
        each: &(dyn Fn(&str) -> Option<Value> + Sync),
    ) -> Option<(Value, Option<super::Spans>)> {
        let mut de = serde_json::Deserializer::from_str(text);
        let members = de.deserialize_map(Top { key }).ok()?;
        de.end().ok()?;
        let mut doc = Map::with_capacity(members.len());
        let mut spans = None;
        for (k, member) in members {
            let v = match member {
                Member::Parsed(v) => v,
                Member::Raw(items) => {
                    let base = text.as_ptr() as usize;
                    spans = Some(
                        items
                            .iter()
                            .map(|r| {
                                let at = r.get().as_ptr() as usize - base;
                                at..at + r.get().len()
                            })
                            .collect(),
                    );
                    Value::Array(elements(&items, each)?)
                }
            };
            doc.insert(k, v);
        }
        Some((Value::Object(doc), spans))
    }

    /// Each element read by `each`, the second half (by bytes) on a helper
    /// thread.
    fn elements(
        items: &[&RawValue],
        each: &(dyn Fn(&str) -> Option<Value> + Sync),
    ) -> Option<Vec<Value>> {
        let one = |part: &[&RawValue]| -> Option<Vec<Value>> {
            part.iter().map(|r| each(r.get())).collect()
        };
        if items.len() < MIN_ELEMENTS {
            return one(items);
        }
        let total: usize = items.iter().map(|r| r.get().len()).sum();
        let mut acc = 0;
        let mid = items
            .iter()
            .position(|r| {
                acc += r.get().len();
                acc * 2 >= total
            })
            .map_or(items.len() / 2, |i| i + 1);
        let (first, second) = items.split_at(mid);
        std::thread::scope(|s| {
            let helper = std::thread::Builder::new()
                .name("parse".into())
                .spawn_scoped(s, || one(second));
            let mut out = one(first)?;
            let rest = match helper {
                Ok(h) => h.join().ok()??,
                Err(_) => one(second)?,
            };
            out.extend(rest);
            Some(out)
        })
    }
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
        // Objects of up to SMALL members (nearly all of them in plans and
        // ledgers) are gathered in a vector, duplicates found by comparison,
        // and the map built once at its final size: no hashing per key
        // against a growing table. A larger object goes on in the map, one
        // hash lookup per key. Either way a duplicate is reported where its
        // value ends, as before.
        const SMALL: usize = 16;
        let mut small: Vec<(String, Value)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let v = map.next_value_seed(StrictSeed)?;
            if small.iter().any(|(k, _)| *k == key) {
                return Err(duplicate(&key));
            }
            small.push((key, v));
            if small.len() > SMALL {
                let mut out = Map::with_capacity(small.len() * 2);
                out.extend(small);
                return more_members(out, map);
            }
        }
        let mut out = Map::with_capacity(small.len());
        out.extend(small);
        Ok(Value::Object(out))
    }
}

fn duplicate<E: de::Error>(key: &str) -> E {
    E::custom(format!("duplicate key `{}`", clip(key, 64)))
}

/// The rest of a large object, into `out`.
fn more_members<'de, A: MapAccess<'de>>(
    mut out: Map<String, Value>,
    mut map: A,
) -> Result<Value, A::Error> {
    while let Some(key) = map.next_key::<String>()? {
        let v = map.next_value_seed(StrictSeed)?;
        // One hash lookup per key: the entry tells whether it was seen.
        match out.entry(key) {
            serde_json::map::Entry::Occupied(e) => return Err(duplicate(e.key())),
            serde_json::map::Entry::Vacant(e) => {
                e.insert(v);
            }
        }
    }
    Ok(Value::Object(out))
}

/// Arrays with at least this many elements are written by
/// [`write_pretty_at`] on two threads.
const WIDE_MIN_ELEMENTS: usize = 128;

/// Appends `value` as `serde_json::to_vec_pretty` writes it (two-space
/// indent), as though it stood `depth` levels deep in a larger document:
/// lines after the first are indented by `depth` more levels. A long array
/// at the top of `value` (not deeper) is written on two threads.
pub(crate) fn write_pretty_at(out: &mut Vec<u8>, value: &Value, depth: usize) {
    match value {
        Value::Array(items) if items.len() >= WIDE_MIN_ELEMENTS => {
            out.push(b'[');
            let (first, second) = items.split_at(items.len() / 2);
            let guess = out.capacity().saturating_sub(out.len()) / 2;
            let rest = std::thread::scope(|s| {
                let helper = std::thread::Builder::new()
                    .name("write".into())
                    .spawn_scoped(s, || {
                        let mut part = Vec::with_capacity(guess);
                        pretty_elements(&mut part, second, depth + 1, false);
                        part
                    });
                pretty_elements(out, first, depth + 1, true);
                helper.ok().and_then(|h| h.join().ok())
            });
            match rest {
                Some(part) => out.extend_from_slice(&part),
                None => pretty_elements(out, second, depth + 1, false),
            }
            out.push(b'\n');
            indent(out, depth);
            out.push(b']');
        }
        _ => pretty_serial(out, value, depth),
    }
}

fn pretty_serial(out: &mut Vec<u8>, value: &Value, depth: usize) {
    let mut ser = serde_json::Serializer::with_formatter(
        out,
        Pretty {
            depth,
            has_value: false,
        },
    );
    serde::Serialize::serialize(value, &mut ser).expect("JSON values serialise");
}

/// Appends `items` as [`write_pretty_at`] writes an array at `depth` to the
/// buffer `out` gives, letting `kept(out, i)` write element `i` instead when
/// it returns `true`: the caller vouches that what it wrote is that element
/// laid out at `depth + 1` (a plan file's own goal, unchanged since it was
/// read).
pub(crate) fn write_pretty_array_kept<O: AsBuffer>(
    out: &mut O,
    items: &[Value],
    depth: usize,
    kept: &mut dyn FnMut(&mut O, usize) -> bool,
) {
    if items.is_empty() {
        out.buffer().extend_from_slice(b"[]");
        return;
    }
    out.buffer().push(b'[');
    for (i, v) in items.iter().enumerate() {
        let buf = out.buffer();
        buf.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
        indent(buf, depth + 1);
        if !kept(out, i) {
            pretty_serial(out.buffer(), v, depth + 1);
        }
    }
    let buf = out.buffer();
    buf.push(b'\n');
    indent(buf, depth);
    buf.push(b']');
}

/// Something with a byte buffer to append to.
pub(crate) trait AsBuffer {
    /// The buffer.
    fn buffer(&mut self) -> &mut Vec<u8>;
}

impl AsBuffer for Vec<u8> {
    fn buffer(&mut self) -> &mut Vec<u8> {
        self
    }
}

/// Array elements at `depth`, each after its separator.
fn pretty_elements(out: &mut Vec<u8>, items: &[Value], depth: usize, first: bool) {
    for (i, v) in items.iter().enumerate() {
        out.extend_from_slice(if first && i == 0 { b"\n" } else { b",\n" });
        indent(out, depth);
        pretty_serial(out, v, depth);
    }
}

fn indent(out: &mut Vec<u8>, depth: usize) {
    out.resize(out.len() + 2 * depth, b' ');
}

/// `serde_json`'s pretty layout (two spaces) starting `depth` levels deep.
struct Pretty {
    depth: usize,
    has_value: bool,
}

impl serde_json::ser::Formatter for Pretty {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"[")
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]")
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"{")
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}")
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

impl Pretty {
    /// An array or object opens one level deeper.
    fn open<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        bracket: &[u8],
    ) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    /// It closes on its own line when it has members, else right after `open`.
    fn close<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        bracket: &[u8],
    ) -> std::io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.newline(w)?;
        }
        w.write_all(bracket)
    }

    /// Each element or key starts a line, after a comma but the first.
    fn item<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w)
    }

    fn newline<W: ?Sized + std::io::Write>(&self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.depth {
            w.write_all(b"  ")?;
        }
        Ok(())
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
    fn objects_small_and_large_keep_order_and_reject_duplicates() {
        for n in [0usize, 1, 16, 17, 40] {
            let members: Vec<String> = (0..n).rev().map(|i| format!("\"k{i}\":{i}")).collect();
            let text = format!("{{{}}}", members.join(","));
            let v = parse_strict(text.as_bytes()).unwrap();
            assert_eq!(v, serde_json::from_str::<Value>(&text).unwrap());
            let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
            let want: Vec<String> = (0..n).rev().map(|i| format!("k{i}")).collect();
            assert_eq!(keys, want.iter().collect::<Vec<_>>(), "order of {n} keys");
            // A duplicate among the first members and one past the small
            // size, each reported where its value ends.
            for dup_at in [1usize, 20] {
                if n < 2 || dup_at > n {
                    continue;
                }
                let mut m = members.clone();
                m.insert(dup_at, members[0].clone());
                let text = format!("{{{}}}", m.join(","));
                let err = parse_strict(text.as_bytes()).unwrap_err();
                let first = members[0].split(':').next().unwrap().trim_matches('"');
                assert!(
                    err.message.contains(&format!("duplicate key `{first}`")),
                    "{err}"
                );
                let prefix = format!("{{{},{}", m[..dup_at].join(","), members[0]);
                assert_eq!(err.column, prefix.len(), "{text}");
            }
        }
    }

    /// A plan-like document of `n` goals, larger than the split threshold
    /// for n ≥ 1,000.
    fn wide_doc(n: usize) -> String {
        let goals: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    r#"{{"id":"G{i}","title":"part {i} \u00e9\n","criteria":[{{"id":"C1","ok":true,"n":{i}.5}}],"pad":"{}"}}"#,
                    "x".repeat(i % 300)
                )
            })
            .collect();
        format!(
            r#"{{"version":1,"goals":[{}],"updatedAt":"now","lastMutation":{{"kind":"k"}}}}"#,
            goals.join(",\n")
        )
    }

    #[test]
    fn the_split_reading_gives_the_strict_reading() {
        let text = wide_doc(1_500);
        assert!(text.len() >= WIDE_MIN_BYTES);
        // Read by the split path itself, not by the fallback.
        let (split, spans) = wide::parse(&text, "goals").unwrap();
        // Each element's range holds its text.
        let spans = spans.unwrap();
        assert_eq!(spans.len(), 1_500);
        for (i, r) in spans.iter().enumerate() {
            let one: Value = serde_json::from_str(&text[r.clone()]).unwrap();
            assert_eq!(one, split["goals"][i]);
        }
        assert!(
            wide::parse(
                &text.replacen(r#""id":"G1200","#, r#""id":"G1200","id":"x","#, 1),
                "goals"
            )
            .is_none()
        );
        let v = parse_strict_wide(text.as_bytes(), "goals").unwrap();
        assert_eq!(v, parse_strict(text.as_bytes()).unwrap());
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["version", "goals", "updatedAt", "lastMutation"]);
        assert_eq!(v["goals"].as_array().unwrap().len(), 1_500);
        assert_eq!(v["goals"][1_499]["id"], "G1499");
        // Other keys, small documents, and a key that is not an array.
        for (doc, key) in [
            (text.clone(), "criteria"),
            (wide_doc(3), "goals"),
            (
                text.replace(r#""goals":["#, r#""goals":{"a":["#)
                    .replace(r#"],"updatedAt""#, r#"]},"updatedAt""#),
                "goals",
            ),
        ] {
            assert_eq!(
                parse_strict_wide(doc.as_bytes(), key),
                parse_strict(doc.as_bytes()),
            );
        }
    }

    #[test]
    fn the_split_reading_reports_the_strict_errors() {
        let text = wide_doc(1_500);
        let bad = [
            // A duplicate inside one goal of the second half.
            text.replacen(r#""id":"G1200","#, r#""id":"G1200","id":"again","#, 1),
            // A duplicate top-level member after the goals.
            text.replacen(
                r#","updatedAt":"now""#,
                r#","updatedAt":"now","version":2"#,
                1,
            ),
            // Truncated, trailing bytes, a bad literal inside a goal.
            text[..text.len() - 3].to_owned(),
            format!("{text} {{}}"),
            text.replacen(r#""ok":true,"n":700.5"#, r#""ok":tru,"n":700.5"#, 1),
            // An object opened as an array.
            text.replacen('{', "[", 1),
        ];
        for doc in bad {
            // (Without printing a large document when one is accepted.)
            let (Err(strict), Err(wide)) = (
                parse_strict(doc.as_bytes()),
                parse_strict_wide(doc.as_bytes(), "goals"),
            ) else {
                panic!("a bad document was accepted");
            };
            assert_eq!(wide, strict);
        }
        let mut invalid = text.into_bytes();
        invalid[300_000] = 0xff;
        assert_eq!(
            parse_strict_wide(&invalid, "goals").unwrap_err(),
            parse_strict(&invalid).unwrap_err()
        );
    }

    #[test]
    fn pretty_at_a_depth_is_the_pretty_layout_inside_a_document() {
        let long: Vec<Value> = (0..300)
            .map(|i| serde_json::json!({"id": i, "n": [], "o": {}, "a": [1, {"b": [null, "é\n"]}], "e": [[]]}))
            .collect();
        for v in [
            serde_json::json!(1),
            serde_json::json!("s"),
            serde_json::json!([]),
            serde_json::json!({}),
            serde_json::json!({"a": [1, 2, {"b": {}}], "c": {"d": []}}),
            Value::Array(long.clone()),
            serde_json::json!({"goals": long, "x": [[1], []]}),
        ] {
            for depth in 0..3 {
                // `value` wrapped in `depth` one-member objects.
                let mut wrapped = v.clone();
                for _ in 0..depth {
                    wrapped = serde_json::json!({ "k": wrapped });
                }
                let whole = serde_json::to_vec_pretty(&wrapped).unwrap();
                let mut out = Vec::new();
                for d in 0..depth {
                    out.extend_from_slice(b"{\n");
                    out.resize(out.len() + 2 * (d + 1), b' ');
                    out.extend_from_slice(b"\"k\": ");
                }
                write_pretty_at(&mut out, &v, depth);
                for d in (0..depth).rev() {
                    out.push(b'\n');
                    out.resize(out.len() + 2 * d, b' ');
                    out.push(b'}');
                }
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    String::from_utf8(whole).unwrap()
                );
            }
        }
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

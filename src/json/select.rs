//! Selective strict reading: a document read as [`super::parse_strict`]
//! reads it, except that in the objects of one list the members a caller
//! does not read are checked and skipped instead of decoded.
//!
//! A skipped member is read by the same parser as every other value (the
//! same string, escape, number and nesting rules) and its objects are
//! checked for duplicate keys at any depth, but none of its strings is
//! copied and no tree is built for it. The reader accepts exactly the
//! documents [`super::parse_strict`] accepts: anything it does not accept in
//! full (including every error) gives `None`, and the caller reads the
//! document whole, which reports the error where it is.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{StrictSeed, StrictVisitor, duplicate};

/// Which members a selective read decodes: in each element of the
/// top-level array `key`, the array `list` holds objects of which only the
/// members in `keep` are decoded. Everything else is decoded in full.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Selection {
    /// The top-level member whose array is read element by element.
    pub key: &'static str,
    /// The member of each element that holds the selected objects.
    pub list: &'static str,
    /// The members of a selected object that are decoded.
    pub keep: &'static [&'static str],
}

/// `bytes` read under `sel`, or `None` when it is not read this way (not
/// UTF-8, not an object, not valid strict JSON, or too many top-level
/// members): then [`super::parse_strict`] is the reading.
pub(crate) fn parse_selected(bytes: &[u8], sel: &Selection) -> Option<Value> {
    let text = std::str::from_utf8(bytes).ok()?;
    super::wide::parse_with(text, sel.key, &|t| element(t, sel)).map(|(v, _)| v)
}

/// One element of `sel.key`'s array.
fn element(text: &str, sel: &Selection) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = Level::Element(sel).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(v)
}

/// Where a value stands in the selection.
#[derive(Clone, Copy)]
enum Level<'s> {
    /// An element of the top-level array: its `list` member is selected.
    Element(&'s Selection),
    /// The `list` member: its objects are selected.
    List(&'s Selection),
    /// A selected object: members outside `keep` are skipped.
    Selected(&'s Selection),
}

impl<'de> DeserializeSeed<'de> for Level<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// Scalars read as [`StrictVisitor`] reads them.
macro_rules! scalars_as_strict {
    () => {
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
            StrictVisitor.visit_bool(v)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
            StrictVisitor.visit_i64(v)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
            StrictVisitor.visit_u64(v)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
            StrictVisitor.visit_f64(v)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
            StrictVisitor.visit_str(v)
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
            StrictVisitor.visit_string(v)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
            StrictVisitor.visit_unit()
        }
        fn visit_none<E: de::Error>(self) -> Result<Value, E> {
            StrictVisitor.visit_none()
        }
    };
}

impl<'de> Visitor<'de> for Level<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    scalars_as_strict!();

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let Level::List(sel) = self else {
            return StrictVisitor.visit_seq(seq);
        };
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Level::Selected(sel))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut seen = Seen::default();
        // Gathered first and the map built once at its final size.
        let mut kept: Vec<(String, Value)> = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            if !seen.insert(key.clone()) {
                return Err(duplicate(&key));
            }
            let v = match self {
                Level::Element(sel) if key == sel.list => map.next_value_seed(Level::List(sel))?,
                Level::Selected(sel) if !sel.keep.contains(&key.as_ref()) => {
                    map.next_value_seed(Skip)?;
                    continue;
                }
                _ => map.next_value_seed(StrictSeed)?,
            };
            kept.push((key.into_owned(), v));
        }
        let mut out = Map::with_capacity(kept.len());
        out.extend(kept);
        Ok(Value::Object(out))
    }
}

/// The keys of one object seen so far: compared while few, hashed when many
/// (a hostile object may have thousands).
#[derive(Default)]
struct Seen<'de> {
    few: Vec<Cow<'de, str>>,
    many: Option<HashSet<Cow<'de, str>>>,
}

impl<'de> Seen<'de> {
    const FEW: usize = 16;

    /// Whether `key` is new.
    fn insert(&mut self, key: Cow<'de, str>) -> bool {
        if let Some(many) = &mut self.many {
            return many.insert(key);
        }
        if self.few.contains(&key) {
            return false;
        }
        self.few.push(key);
        if self.few.len() > Self::FEW {
            self.many = Some(self.few.drain(..).collect());
        }
        true
    }
}

/// An object key, borrowed from the text when it has no escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// A value checked as [`StrictSeed`] checks it and dropped.
struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        StrictVisitor.visit_f64(v).map(drop)
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Skip)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = Seen::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            if !seen.insert(key.clone()) {
                return Err(duplicate(&key));
            }
            map.next_value_seed(Skip)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SEL: Selection = Selection {
        key: "goals",
        list: "successCriteria",
        keep: &["id", "status"],
    };

    /// The whole reading of `text` with the selected objects' other
    /// members removed: what the selective reading must give.
    fn expected(text: &str) -> Option<Value> {
        let mut v = super::super::parse_strict(text.as_bytes()).ok()?;
        if let Some(goals) = v.get_mut("goals").and_then(Value::as_array_mut) {
            for g in goals {
                if let Some(list) = g.get_mut("successCriteria").and_then(Value::as_array_mut) {
                    for c in list {
                        if let Some(o) = c.as_object_mut() {
                            o.retain(|k, _| SEL.keep.contains(&k.as_str()));
                        }
                    }
                }
            }
        }
        Some(v)
    }

    fn both(text: &str) -> (Option<Value>, Option<Value>) {
        (parse_selected(text.as_bytes(), &SEL), expected(text))
    }

    /// Honest plans: the kept members, and everything outside the selected
    /// objects, decode as the whole reading decodes them; a criterion's
    /// other members are gone.
    #[test]
    fn keeps_what_is_selected_and_everything_outside() {
        let doc = json!({
            "version": 1,
            "goals": [
                {"id": "G1", "title": "t\u{e9}\\n", "successCriteria": [
                    {"id": "C1", "status": "pass", "scenario": "long text \"quoted\"",
                     "evidence": {"nested": [1, 2.5, -3, null, true, {"a": "\u{1f600}"}]}},
                    "not an object",
                    {"status": "pending"}
                ], "notes": {"free": ["form"]}},
                {"id": "G2", "successCriteria": "not a list"},
                {"id": "G3"},
                7
            ],
            "lastMutation": {"entries": [{"kind": "x"}]}
        });
        for text in [doc.to_string(), serde_json::to_string_pretty(&doc).unwrap()] {
            let (got, want) = both(&text);
            assert!(got.is_some());
            assert_eq!(got, want);
            let got = got.unwrap();
            assert_eq!(
                got["goals"][0]["successCriteria"][0],
                json!({"id": "C1", "status": "pass"})
            );
            assert_eq!(got["goals"][0]["notes"], doc["goals"][0]["notes"]);
        }
    }

    /// Every document the whole reading refuses is refused (`None`, so the
    /// caller reads it whole and reports the error), wherever the fault is:
    /// in a skipped member, deep inside one, or in a key that is skipped.
    #[test]
    fn refuses_what_the_strict_reader_refuses_inside_skipped_members() {
        let wrap = |criterion: &str| {
            format!(r#"{{"version":1,"goals":[{{"id":"G1","successCriteria":[{criterion}]}}]}}"#)
        };
        let deep_ok = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        let too_deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let bad = [
            r#"{"id":"C1","scenario":"a","scenario":"b"}"#.to_owned(),
            r#"{"id":"C1","id":"C2"}"#.to_owned(),
            r#"{"id":"C1","x":{"a":1,"a":2}}"#.to_owned(),
            r#"{"id":"C1","x":[{"k":[{"a":1,"b":{"c":1,"c":1}}]}]}"#.to_owned(),
            r#"{"id":"C1","sc\u0065nario":"a","scenario":"b"}"#.to_owned(),
            r#"{"id":"C1","x":1e400}"#.to_owned(),
            r#"{"id":"C1","x":"\ud800"}"#.to_owned(),
            r#"{"id":"C1","x":"\q"}"#.to_owned(),
            r#"{"id":"C1","x":"tab	inside"}"#.to_owned(),
            r#"{"id":"C1","x":01}"#.to_owned(),
            r#"{"id":"C1","x":[1,]}"#.to_owned(),
            r#"{"id":"C1","x":tru}"#.to_owned(),
            format!(r#"{{"id":"C1","x":{too_deep}}}"#),
        ];
        for c in &bad {
            let text = wrap(c);
            assert_eq!(expected(&text), None, "the strict reader refuses {c}");
            assert_eq!(
                parse_selected(text.as_bytes(), &SEL),
                None,
                "the selective reader refuses {c}"
            );
        }
        // Many members in a skipped object: the hashed duplicate check.
        let many: Vec<String> = (0..40).map(|i| format!(r#""k{i}":{i}"#)).collect();
        let ok = format!(r#"{{"id":"C1","x":{{{}}}}}"#, many.join(","));
        let dup = format!(r#"{{"id":"C1","x":{{{},"k3":0}}}}"#, many.join(","));
        assert!(both(&wrap(&ok)).0.is_some());
        assert_eq!(parse_selected(wrap(&dup).as_bytes(), &SEL), None);
        let (got, want) = both(&wrap(&format!(r#"{{"id":"C1","x":{deep_ok}}}"#)));
        assert!(got.is_some());
        assert_eq!(got, want);
        // Not UTF-8, trailing bytes, not an object.
        assert_eq!(parse_selected(b"{\"goals\":[\"\xff\"]}", &SEL), None);
        assert_eq!(parse_selected(br#"{"goals":[]} x"#, &SEL), None);
        assert_eq!(parse_selected(br#"[1]"#, &SEL), None);
    }

    /// A long list is read on two threads, with the same result.
    #[test]
    fn a_long_list_reads_the_same() {
        let goals: Vec<Value> = (0..300)
            .map(|i| {
                json!({"id": format!("G{i}"), "successCriteria": [
                    {"id": "C1", "status": "pass", "capturedEvidence": format!("ok {i}")}
                ]})
            })
            .collect();
        let text = serde_json::to_string_pretty(&json!({"version": 1, "goals": goals})).unwrap();
        let (got, want) = both(&text);
        assert!(got.is_some());
        assert_eq!(got, want);
        let mut dup = text.clone();
        dup = dup.replacen("\"ok 250\"", "\"ok\", \"capturedEvidence\": 1", 1);
        assert_eq!(expected(&dup), None);
        assert_eq!(parse_selected(dup.as_bytes(), &SEL), None);
    }
}

//! Chosen top-level members of a JSON object, read without building the rest.
//!
//! A reader that looks at a few members of many records (the repository
//! audit reads `kind`, `seq`, `files` and a handful more of every ledger
//! record) need not build every other string, array and object of each
//! record only to free them. [`object_members`] walks the whole text with
//! the same parser `serde_json::from_slice::<Value>` uses, builds only the
//! members it is asked for, and agrees with that parse on everything an
//! agent can write:
//!
//! - **Which texts are objects.** Members it skips are still parsed through
//!   `deserialize_any`, the path a `Value` takes (strings decoded and checked
//!   for UTF-8 and lone surrogates, numbers converted, so `1e400` fails,
//!   nesting limited to the same depth, trailing bytes rejected), not
//!   through `serde_json`'s laxer skipping of ignored values. A text it
//!   cannot read this way, or one `Value` would read specially (an object
//!   whose key is `serde_json`'s raw-value token), is parsed whole instead,
//!   so every failure and every oddity is decided by the `Value` parse.
//! - **What the members hold.** Each chosen member is deserialized as a
//!   `Value` by that same parser; of duplicate keys the last wins, as in a
//!   `Value`.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, Deserialize, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The key `serde_json` (feature `raw_value`) treats as a raw value when it
/// opens an object.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// What [`object_members`] read.
#[derive(Debug, PartialEq)]
pub(crate) enum Members {
    /// The text is a JSON object; the map holds the chosen members it has.
    Chosen(Map<String, Value>),
    /// The text is a JSON object that had to be parsed whole: the map holds
    /// every member (the chosen ones among them).
    Whole(Map<String, Value>),
    /// The text is not a JSON object (`Value` would not parse it, or it
    /// parses to another kind of value).
    NotObject,
}

/// The members of the JSON object `text` named in `keys` ([module
/// docs](self)).
pub(crate) fn object_members(text: &[u8], keys: &[&str]) -> Members {
    let mut de = serde_json::Deserializer::from_slice(text);
    let chosen = Chosen { keys }
        .deserialize(&mut de)
        .and_then(|m| de.end().map(|()| m));
    match chosen {
        Ok(m) => Members::Chosen(m),
        Err(_) => match serde_json::from_slice::<Value>(text) {
            Ok(Value::Object(m)) => Members::Whole(m),
            _ => Members::NotObject,
        },
    }
}

/// Why a text is handed to the whole parse.
fn whole<E: de::Error>() -> E {
    E::custom("read whole")
}

/// The top-level object, keeping the members named in `keys`.
struct Chosen<'k> {
    keys: &'k [&'k str],
}

impl<'de> DeserializeSeed<'de> for Chosen<'_> {
    type Value = Map<String, Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Chosen<'_> {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // Sized once: a record holds a handful of the chosen members.
        let mut out = Map::with_capacity(self.keys.len().min(8));
        while let Some(pick) = map.next_key_seed(Pick { keys: self.keys })? {
            match pick {
                Some(i) => {
                    let v = map.next_value::<Value>()?;
                    // The last of duplicate keys wins, as in a `Value`.
                    out.insert(self.keys[i].to_owned(), v);
                }
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(out)
    }
}

/// A top-level key: the index of the chosen key it equals, if any.
struct Pick<'k> {
    keys: &'k [&'k str],
}

impl<'de> DeserializeSeed<'de> for Pick<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Pick<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        if s == RAW_VALUE_TOKEN {
            return Err(whole());
        }
        Ok(self.keys.iter().position(|k| *k == s))
    }
}

/// Any JSON value, parsed as a `Value` is and then forgotten.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(Skip)
    }
}

/// A key of a skipped object, checked for the raw-value token.
struct SkipKey;

impl<'de> Deserialize<'de> for SkipKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SkipKey, D::Error> {
        d.deserialize_str(SkipKey)
    }
}

impl<'de> Visitor<'de> for SkipKey {
    type Value = SkipKey;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<SkipKey, E> {
        if s == RAW_VALUE_TOKEN {
            return Err(whole());
        }
        Ok(SkipKey)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_key::<SkipKey>()?.is_some() {
            map.next_value::<Skip>()?;
        }
        Ok(Skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEYS: &[&str] = &["kind", "seq", "files"];

    /// What the whole `Value` parse says of `text`, cut to `KEYS`.
    fn by_value(text: &[u8]) -> Option<Map<String, Value>> {
        match serde_json::from_slice::<Value>(text) {
            Ok(Value::Object(m)) => Some(
                m.into_iter()
                    .filter(|(k, _)| KEYS.contains(&k.as_str()))
                    .collect(),
            ),
            _ => None,
        }
    }

    fn cut(m: Members) -> Option<(Map<String, Value>, bool)> {
        match m {
            Members::Chosen(m) => Some((m, false)),
            Members::Whole(m) => Some((
                m.into_iter()
                    .filter(|(k, _)| KEYS.contains(&k.as_str()))
                    .collect(),
                true,
            )),
            Members::NotObject => None,
        }
    }

    /// Reads `text` both ways and checks they agree; whether the whole
    /// parse was needed.
    fn agree(text: &[u8]) -> Option<bool> {
        let got = cut(object_members(text, KEYS));
        let want = by_value(text);
        assert_eq!(
            got.as_ref().map(|(m, _)| m),
            want.as_ref(),
            "{}",
            String::from_utf8_lossy(text)
        );
        got.map(|(_, whole)| whole)
    }

    #[test]
    fn reads_only_the_chosen_members() {
        let text = br#"{"at":"x","kind":"k","nested":{"a":[1,2,{"b":null}]},"seq":7,"files":[{"path":"a"}],"z":1.5}"#;
        let Members::Chosen(m) = object_members(text, KEYS) else {
            panic!("not read in part");
        };
        assert_eq!(
            Value::Object(m),
            json!({"kind": "k", "seq": 7, "files": [{"path": "a"}]})
        );
        assert_eq!(agree(text), Some(false));
    }

    #[test]
    fn the_last_duplicate_wins_as_in_a_value() {
        assert_eq!(
            agree(br#"{"kind":"a","x":1,"kind":"b","seq":1,"seq":2}"#),
            Some(false)
        );
        let Members::Chosen(m) = object_members(br#"{"kind":"a","kind":"b"}"#, KEYS) else {
            panic!();
        };
        assert_eq!(m["kind"], "b");
    }

    #[test]
    fn escaped_keys_are_the_keys_they_spell() {
        assert_eq!(agree(br#"{"ki\u006ed":"k","s\u0065q":3}"#), Some(false));
    }

    /// Texts `serde_json`'s own skipping of ignored values would accept
    /// but a `Value` parse rejects: every one is not an object here either.
    #[test]
    fn skipped_members_are_checked_as_a_value_parse_checks_them() {
        let deep = format!(
            r#"{{"kind":"k","x":{}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        for text in [
            &br#"{"kind":"k","x":"\ud800"}"#[..],
            br#"{"kind":"k","x":"\udc00\ud800"}"#,
            br#"{"kind":"k","x":1e400}"#,
            br#"{"kind":"k","x":-1e400}"#,
            b"{\"kind\":\"k\",\"x\":\"\xff\"}",
            b"{\"kind\":\"k\",\"\xc3\":1}",
            br#"{"kind":"k","x":{"\ud800":1}}"#,
            br#"{"kind":"k","x":[1,]}"#,
            br#"{"kind":"k","x":01}"#,
            br#"{"kind":"k","x":tru}"#,
            br#"{"kind":"k"} x"#,
            br#"{"kind":"k""#,
            deep.as_bytes(),
        ] {
            assert_eq!(agree(text), None, "{}", String::from_utf8_lossy(text));
        }
        // Just inside the depth limit, both read it.
        let ok = format!(r#"{{"x":{}1{}}}"#, "[".repeat(100), "]".repeat(100));
        assert_eq!(agree(ok.as_bytes()), Some(false));
    }

    /// `serde_json` reads an object opened by its raw-value token as the
    /// JSON its string holds; such texts are read whole, so both agree.
    #[test]
    fn the_raw_value_token_is_read_whole() {
        for text in [
            &br#"{"$serde_json::private::RawValue":"[1]"}"#[..],
            br#"{"$serde_json::private::RawValue":"{\"kind\":\"k\"}"}"#,
            br#"{"$serde_json::private::RawValue":"nope"}"#,
            br#"{"kind":"k","x":{"$serde_json::private::RawValue":"nope"}}"#,
            br#"{"kind":"k","x":{"$serde_json::private::RawValue":"{\"seq\":1}"}}"#,
            br#"{"kind":"k","x":[{"a":1,"$serde_json::private::RawValue":"2"}]}"#,
        ] {
            let got = agree(text);
            assert_ne!(got, Some(false), "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn other_values_are_not_objects() {
        for text in [&b"[1,2]"[..], b"\"kind\"", b"null", b"7", b"", b"  "] {
            assert_eq!(object_members(text, KEYS), Members::NotObject);
            assert_eq!(agree(text), None);
        }
        assert_eq!(agree(b" {} \n"), Some(false));
    }

    /// Random texts near valid records: both readings agree on every one.
    #[test]
    fn agrees_with_a_value_parse_on_mutated_records() {
        let seed = br#"{"at":"2026-05-01T12:00:00.000Z","kind":"evidence_captured","seq":12,"prev":"ab","files":[{"path":"a.txt","size":3,"sha256":"\u0041"}],"steering":{"invariant":{"accepted":true}},"n":-1.5e3,"t":[true,false,null]}"#;
        let alphabet = b"{}[]\",:\\u0d8e1-+.eE tfn\x00\xff";
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let mut text = seed.to_vec();
            for _ in 0..(next() % 3 + 1) {
                let at = (next() % text.len() as u64) as usize;
                let b = alphabet[(next() % alphabet.len() as u64) as usize];
                match next() % 3 {
                    0 => text[at] = b,
                    1 => text.insert(at, b),
                    _ => {
                        text.remove(at);
                    }
                }
            }
            agree(&text);
        }
    }
}

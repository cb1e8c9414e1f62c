//! Typed decoding of an embedded family straight from its files' text.
//!
//! With the embedded defaults alone, a family that one file provides (at its
//! mount point, or as a key of the file merged at the top), or that files
//! mounted one level below it provide under distinct names, is decoded into
//! its Rust type from the text, without building the generic JSON tree
//! first: a hook reads seven families and three profiles on every call.
//! Anything else (two files at one place, deeper mounts, a top-level file and
//! mounted ones together) returns `None` and takes the tree path, which also
//! locates every error. The test suite checks, family by family, that the
//! text assembled here is exactly the tree's value.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, Visitor};

use super::{Content, EMBEDDED, Embedded};

/// Where an embedded family's text is.
#[derive(Debug)]
pub(super) enum Source {
    /// The family's whole JSON text.
    Whole(String),
    /// The value of the top-level key `key` of a file merged at the top.
    Field {
        /// The file's text.
        text: &'static str,
        /// The family's key.
        key: &'static str,
    },
}

/// The source of family `key` when it can be decoded without a merge.
pub(super) fn source(key: &'static str) -> Option<Source> {
    let quoted = format!("\"{key}\"");
    let own = format!("/{key}");
    let mut top: Option<&'static str> = None;
    let mut mounted: Vec<&'static Embedded> = Vec::new();
    for e in EMBEDDED {
        if e.mount.is_empty() {
            if let Content::Json(text) = e.content
                && text.contains(&quoted)
            {
                if top.is_some() {
                    return None;
                }
                top = Some(text);
            }
        } else if e.mount == own || super::is_below(e.mount, &own) {
            mounted.push(e);
        }
    }
    match (top, mounted.as_slice()) {
        (Some(text), []) => Some(Source::Field { text, key }),
        (None, [one]) if one.mount == own => match one.content {
            Content::Json(text) => Some(Source::Whole(text.to_owned())),
            Content::Text(_) => None,
        },
        (None, files) if !files.is_empty() => named_children(&own, files).map(Source::Whole),
        _ => None,
    }
}

/// `{"name": <file>, …}` for files each mounted at `own/name` (one level,
/// distinct plain names, in mount order: the order the tree's map keeps).
fn named_children(own: &str, files: &[&'static Embedded]) -> Option<String> {
    let mut names: Vec<&str> = Vec::with_capacity(files.len());
    let mut out = String::from("{");
    for e in files {
        let name = e.mount.strip_prefix(own)?.strip_prefix('/')?;
        if name.is_empty() || name.contains(['/', '~']) || names.contains(&name) {
            return None;
        }
        if !names.is_empty() {
            out.push(',');
        }
        names.push(name);
        out.push_str(&serde_json::to_string(name).ok()?);
        out.push(':');
        match e.content {
            Content::Json(text) => out.push_str(text),
            Content::Text(text) => out.push_str(&serde_json::to_string(text).ok()?),
        }
    }
    out.push('}');
    Some(out)
}

impl Source {
    /// Decodes the family (`None` when the text does not decode as `T` or
    /// the key is absent: the tree path then reports where and why).
    pub(super) fn decode<T: DeserializeOwned>(&self) -> Option<T> {
        match self {
            Source::Whole(text) => serde_json::from_str(text).ok(),
            Source::Field { text, key } => {
                let mut de = serde_json::Deserializer::from_str(text);
                let found = FieldSeed::<T> {
                    key,
                    _t: PhantomData,
                }
                .deserialize(&mut de)
                .ok()?;
                de.end().ok()?;
                found
            }
        }
    }

    /// The family's JSON text (tests compare it with the tree's value).
    #[cfg(test)]
    pub(super) fn value(&self) -> Option<serde_json::Value> {
        match self {
            Source::Whole(text) => crate::json::parse_strict_str(text).ok(),
            Source::Field { text, key } => {
                crate::json::parse_strict_str(text).ok()?.get(*key).cloned()
            }
        }
    }
}

/// The value of one key of a JSON object, the other keys skipped unparsed
/// into values (a later duplicate wins, as in the tree).
struct FieldSeed<'k, T> {
    key: &'k str,
    _t: PhantomData<T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for FieldSeed<'_, T> {
    type Value = Option<T>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for FieldSeed<'_, T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object with the key `{}`", self.key)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        let mut found = None;
        while let Some(k) = map.next_key::<String>()? {
            if k == self.key {
                found = Some(map.next_value::<T>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

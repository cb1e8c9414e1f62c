//! The known keys of a gate family: unknown-key findings (docs/gates.md#qg-7 last step)
//! and the normalised gate (known keys only, strings trimmed; docs/differences.md#r-6).

use serde_json::{Map, Value};

/// What a family defines at one place of the document.
#[derive(Debug, Clone)]
pub(crate) enum Shape {
    /// A scalar or an array of scalars: kept, strings trimmed.
    Leaf,
    /// An object with these known keys.
    Object(Vec<(String, Shape)>),
    /// An array whose elements have this shape.
    Items(Box<Shape>),
}

impl Shape {
    /// An object shape from `(key, shape)` pairs.
    pub(crate) fn object<'a>(fields: impl IntoIterator<Item = (&'a str, Shape)>) -> Shape {
        Shape::Object(fields.into_iter().map(|(k, s)| (k.to_owned(), s)).collect())
    }

    /// An object shape whose keys are all leaves.
    pub(crate) fn leaves<'a>(keys: impl IntoIterator<Item = &'a str>) -> Shape {
        Shape::object(keys.into_iter().map(|k| (k, Shape::Leaf)))
    }

    /// An array of objects whose keys are all leaves.
    pub(crate) fn items_of<'a>(keys: impl IntoIterator<Item = &'a str>) -> Shape {
        Shape::Items(Box::new(Shape::leaves(keys)))
    }
}

/// Every key of `value` that `shape` does not define, as dotted fields, in
/// document order.
pub(crate) fn unknown_keys(value: &Value, shape: &Shape, field: &str, out: &mut Vec<String>) {
    match (shape, value) {
        (Shape::Object(known), Value::Object(map)) => {
            for (k, v) in map {
                let child = join(field, k);
                match known.iter().find(|(name, _)| name == k) {
                    Some((_, s)) => unknown_keys(v, s, &child, out),
                    None => out.push(child),
                }
            }
        }
        (Shape::Items(inner), Value::Array(items)) => {
            for (i, v) in items.iter().enumerate() {
                unknown_keys(v, inner, &format!("{field}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The normalised value: known keys only, strings trimmed at any depth.
pub(crate) fn normalize(value: &Value, shape: &Shape) -> Value {
    match (shape, value) {
        (Shape::Object(known), Value::Object(map)) => {
            let mut out = Map::new();
            for (k, v) in map {
                if let Some((_, s)) = known.iter().find(|(name, _)| name == k) {
                    out.insert(k.clone(), normalize(v, s));
                }
            }
            Value::Object(out)
        }
        (Shape::Items(inner), Value::Array(items)) => {
            Value::Array(items.iter().map(|v| normalize(v, inner)).collect())
        }
        (_, v) => trim_strings(v),
    }
}

fn trim_strings(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(s.trim().to_owned()),
        Value::Array(items) => Value::Array(items.iter().map(trim_strings).collect()),
        other => other.clone(),
    }
}

fn join(field: &str, key: &str) -> String {
    if field.is_empty() {
        key.to_owned()
    } else {
        format!("{field}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_and_normalized() {
        let shape = Shape::object([
            ("a", Shape::leaves(["x"])),
            ("list", Shape::items_of(["id"])),
            ("tags", Shape::Leaf),
        ]);
        let doc = json!({"a": {"x": " v ", "y": 1}, "list": [{"id": " i ", "z": 2}, 3],
                         "tags": [" t "], "extra": true});
        let mut out = Vec::new();
        unknown_keys(&doc, &shape, "", &mut out);
        assert_eq!(out, ["a.y", "list[0].z", "extra"]);
        assert_eq!(
            normalize(&doc, &shape),
            json!({"a": {"x": "v"}, "list": [{"id": "i"}, 3], "tags": ["t"]})
        );
    }
}

//! JSON Schema of a rules override file (`evidence-gate schema rules`): the
//! repository override `.evidence-gate/rules.json` and `--rules FILE`
//! (docs/rules.md).
//!
//! An override is a JSON object whose keys are rule families; each value is
//! deep-merged into the embedded rules, so any field may be left out. The
//! schema is generated from the families' Rust types (the types the loader
//! parses the merged document into) with every `required` list dropped;
//! fields, types, enumerations and unknown-field refusals stay. The `gates`
//! family is a map of gate rule files checked by hand-written code: the
//! schema says only that each entry is an object. What depends on the merge
//! (a value the embedded rules complete, a range checked across fields) is
//! the loader's alone; a test loads every fixture of `tests/schemas/cases.json`
//! for this schema and checks the schema agrees with the loader.

use serde_json::{Map, Value, json};

use super::{RuleFamily, evidence, goal_loop, hooks, profiles, workflow};

fn family<T: RuleFamily + schemars::JsonSchema>(
    g: &mut schemars::SchemaGenerator,
    props: &mut Map<String, Value>,
) {
    let s = g.subschema_for::<T>();
    props.insert(
        T::KEY.to_owned(),
        serde_json::to_value(s).expect("schemas serialise"),
    );
}

/// Drops every `required` list: an override may leave out any field.
fn optional_fields(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.get("required").is_some_and(Value::is_array) {
                map.remove("required");
            }
            map.values_mut().for_each(optional_fields);
        }
        Value::Array(items) => items.iter_mut().for_each(optional_fields),
        _ => {}
    }
}

/// The schema document.
pub(crate) fn schema() -> Value {
    let mut g = schemars::SchemaGenerator::default();
    let mut props = Map::new();
    family::<evidence::EvidenceRules>(&mut g, &mut props);
    props.insert(
        super::gates::GatesFamily::KEY.to_owned(),
        json!({
            "description": "Gate rule files by name (docs/gates.md#qg-2): `common` and one entry per surface; each is checked by the loader.",
            "type": "object",
            "additionalProperties": {"type": "object"}
        }),
    );
    props.insert(
        super::gates::GateSettings::KEY.to_owned(),
        json!({
            "type": "object",
            "properties": {
                "surface": {
                    "description": "The repository's gate surface; `null` = not chosen.",
                    "anyOf": [{"type": "string", "pattern": "\\S"}, {"type": "null"}]
                }
            },
            "additionalProperties": false
        }),
    );
    family::<hooks::HooksRules>(&mut g, &mut props);
    family::<hooks::SubagentStopRules>(&mut g, &mut props);
    family::<hooks::Directives>(&mut g, &mut props);
    family::<goal_loop::StopRules>(&mut g, &mut props);
    family::<goal_loop::UserPromptSubmitRules>(&mut g, &mut props);
    family::<goal_loop::CreateGoalGuardRules>(&mut g, &mut props);
    family::<goal_loop::SpawnRules>(&mut g, &mut props);
    family::<goal_loop::TeamGuardRules>(&mut g, &mut props);
    family::<profiles::Profiles>(&mut g, &mut props);
    family::<profiles::TextsFamily>(&mut g, &mut props);
    family::<profiles::BlockerRules>(&mut g, &mut props);
    family::<workflow::WorkflowRules>(&mut g, &mut props);
    let mut doc = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "rules override (.evidence-gate/rules.json, --rules FILE)",
        "description": "One key per rule family, each deep-merged into the embedded rules (docs/rules.md); every field may be left out.",
        "type": "object",
        "properties": props,
        "additionalProperties": false,
        "$defs": g.take_definitions(true),
    });
    optional_fields(&mut doc);
    doc
}

#[cfg(test)]
mod tests {

    use serde_json::Value;

    use crate::rules::{FAMILIES, Layer, RuleSet};

    #[test]
    fn every_family_is_in_the_schema() {
        let doc = super::schema();
        let props = doc["properties"].as_object().unwrap();
        let keys: Vec<&str> = FAMILIES.iter().map(|f| f.key).collect();
        let mut got: Vec<&str> = props.keys().map(String::as_str).collect();
        let mut want = keys;
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
    }

    #[test]
    // Test fixtures in the source tree, read by the test alone.
    #[allow(clippy::disallowed_methods)]
    fn the_schema_accepts_exactly_what_the_loader_accepts_on_every_fixture() {
        let cases = crate::test_support::schema_cases("rules");
        let schema = super::schema();
        let validator = jsonschema::validator_for(&schema).unwrap();
        for c in &cases {
            let (file, valid) = (c.file.as_str(), c.valid);
            let bytes = std::fs::read(&c.path).unwrap();
            let loaded = RuleSet::load(&[Layer {
                name: file,
                bytes: &bytes,
            }]);
            assert_eq!(loaded.is_ok(), valid, "loader, {file}: {loaded:?}");
            let doc: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(validator.is_valid(&doc), valid, "schema, {file}");
        }
        let checked = crate::test_support::tally(&cases);
        assert!(checked.0 >= 5 && checked.1 >= 5, "{checked:?}");
    }
}

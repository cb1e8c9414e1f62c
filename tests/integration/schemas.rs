//! The JSON Schemas `evidence-gate schema NAME` prints: every one is a valid
//! schema for the `jsonschema` crate and for Python's `jsonschema` (ajv's
//! strict mode checks the same documents in `.ci/run`, through
//! `tests/schemas/ajv_check.mjs`), none uses a non-standard format, and each
//! fixture of `tests/schemas/cases.json` is accepted or refused by the schema
//! as the case says; for evidence payloads, exactly as `verify-evidence`
//! accepts or refuses it (the library tests of `src/hooks/host/schema.rs`,
//! `src/rules/schema.rs` and `src/gate/schema.rs` hold the `hook-input`,
//! `rules` and `gate` cases to the hook decoder, the rules loader and the
//! gate validator).

use std::path::Path;

use serde_json::Value;

use crate::common::{Repo, bin};
use crate::schema_support::{python_errors, schema_file};

/// Every schema the binary prints (`schema --list`).
fn names() -> Vec<String> {
    let out = std::process::Command::new(bin("evidence-gate"))
        .args(["schema", "--list"])
        .env("HOME", crate::common::temp_home())
        .env("XDG_CONFIG_HOME", crate::common::empty_config_home())
        .output()
        .unwrap();
    assert!(out.status.success());
    let names: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(names.len() >= 8, "{names:?}");
    names
}

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn schema(name: &str) -> Value {
    let out = std::process::Command::new(bin("evidence-gate"))
        .args(["schema", name])
        .env("HOME", crate::common::temp_home())
        .env("XDG_CONFIG_HOME", crate::common::empty_config_home())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn cases() -> Vec<Value> {
    let text = std::fs::read_to_string(schema_file("cases.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["cases"].as_array().unwrap().clone()
}

#[test]
fn every_schema_is_portable_and_valid_for_both_validators() {
    let dir = tempfile::tempdir().unwrap();
    let format = regex::Regex::new(r#""format":\s*"([^"]+)""#).unwrap();
    for name in names() {
        let doc = schema(&name);
        let text = serde_json::to_string(&doc).unwrap();
        for f in format.captures_iter(&text) {
            assert!(
                ["date-time", "uri", "email", "regex"].contains(&&f[1]),
                "{name}: non-standard format `{}` (ajv strict refuses it)",
                &f[1]
            );
        }
        jsonschema::validator_for(&doc).unwrap_or_else(|e| panic!("{name}: {e}"));
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, &text).unwrap();
        // Python checks the schema against its metaschema first.
        python_errors(&path, &[]);
    }
}

/// The verifier's codes for one evidence fixture, verified in a copy of the
/// example workspace (so every declared file exists and only the document's
/// own content can fail).
fn verifier_codes(fixture: &Path) -> (i32, Vec<String>) {
    let r = Repo::new();
    let example = manifest_dir().join("fixtures/payloads/example");
    for rel in ["src/rate_limit.rs", ".omo/evidence/G001/a1/cargo-test.txt"] {
        r.write(rel, std::fs::read(example.join(rel)).unwrap());
    }
    r.write("evidence.json", std::fs::read(fixture).unwrap());
    let out = r.run(
        "verify-evidence",
        &["--format", "json", "evidence.json"],
        None,
    );
    (out.code, out.codes())
}

#[test]
fn schemas_accept_and_refuse_the_fixtures_the_way_the_verifier_does() {
    let cases = cases();
    let mut by_schema: std::collections::BTreeMap<String, Vec<&Value>> = Default::default();
    for c in &cases {
        by_schema
            .entry(c["schema"].as_str().unwrap().to_owned())
            .or_default()
            .push(c);
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, cases) in by_schema {
        let doc = schema(&name);
        let validator = jsonschema::validator_for(&doc).unwrap();
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
        let instances: Vec<Value> = cases
            .iter()
            .map(|c| {
                let file = manifest_dir().join(c["file"].as_str().unwrap());
                serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap()
            })
            .collect();
        let python = python_errors(&path, &instances);
        for (i, (c, instance)) in cases.iter().zip(&instances).enumerate() {
            let file = c["file"].as_str().unwrap();
            let valid = c["valid"].as_bool().unwrap();
            let errors: Vec<String> = validator
                .iter_errors(instance)
                .map(|e| e.to_string())
                .collect();
            assert_eq!(
                errors.is_empty(),
                valid,
                "jsonschema crate, {file}: {errors:?}"
            );
            if let Some(p) = &python {
                assert_eq!(
                    p[i].is_empty(),
                    valid,
                    "Python jsonschema, {file}: {:?}",
                    p[i]
                );
            }
            if name == "evidence" {
                let (code, codes) = verifier_codes(&manifest_dir().join(file));
                if valid {
                    assert_eq!(
                        (code, codes.as_slice()),
                        (0, &[] as &[String]),
                        "verifier, {file}"
                    );
                } else {
                    assert_ne!(code, 0, "verifier accepted {file}");
                    for want in c["verifier"].as_array().unwrap() {
                        assert!(
                            codes.iter().any(|got| got == want.as_str().unwrap()),
                            "verifier, {file}: {codes:?} lacks {want}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn every_fixture_file_is_a_case() {
    let listed: Vec<String> = cases()
        .iter()
        .map(|c| c["file"].as_str().unwrap().to_owned())
        .collect();
    let dir = manifest_dir().join("tests/schemas/fixtures");
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p
                    .strip_prefix(manifest_dir())
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned();
                assert!(
                    listed.contains(&rel),
                    "{rel} is not in tests/schemas/cases.json"
                );
            }
        }
    }
}

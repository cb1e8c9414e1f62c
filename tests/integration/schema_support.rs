//! Validating documents with real consumers of JSON Schema: the `jsonschema`
//! crate in process, and Python's `jsonschema` (the reference validator of
//! many CI tools) through `tests/schemas/validate.py`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// `tests/schemas/<rel>`.
pub fn schema_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/schemas")
        .join(rel)
}

/// Errors Python `jsonschema` finds in each instance (empty: valid), or
/// `None` when python3 or its `jsonschema` package is missing: the caller
/// skips that validator, and this says so on stderr (never a silent pass).
pub fn python_errors(schema: &Path, instances: &[Value]) -> Option<Vec<Vec<String>>> {
    let child = Command::new("python3")
        .arg(schema_file("validate.py"))
        .arg(schema)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "SKIPPED LOUDLY: python3 cannot run ({e}); Python jsonschema did not check {}",
                schema.display()
            );
            return None;
        }
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&serde_json::to_vec(instances).unwrap())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    match out.status.code() {
        Some(0) => Some(serde_json::from_slice(&out.stdout).expect("validate.py prints JSON")),
        Some(4) => {
            eprintln!(
                "SKIPPED LOUDLY: the Python package jsonschema is not installed (pip install jsonschema); it did not check {}",
                schema.display()
            );
            None
        }
        _ => panic!(
            "Python jsonschema rejected {} itself or failed: {}",
            schema.display(),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

//! Helpers shared by the library's unit tests.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// One case of `tests/schemas/cases.json`: a fixture document and whether
/// its schema (and the reader the schema describes) must accept it.
pub(crate) struct SchemaCase {
    /// The fixture as `cases.json` names it (repository-relative).
    pub(crate) file: String,
    /// The fixture's path in this checkout.
    pub(crate) path: PathBuf,
    /// Whether it is valid.
    pub(crate) valid: bool,
    /// The whole case (schema-specific keys such as `rules`, `root`).
    pub(crate) case: Value,
}

/// The repository root of this checkout.
pub(crate) fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The cases of `tests/schemas/cases.json` for the schema `name`.
// Test fixtures in the source tree, read by the tests alone.
#[allow(clippy::disallowed_methods)]
pub(crate) fn schema_cases(name: &str) -> Vec<SchemaCase> {
    let root = repo_root();
    let cases: Value =
        serde_json::from_slice(&std::fs::read(root.join("tests/schemas/cases.json")).unwrap())
            .unwrap();
    cases["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["schema"] == name)
        .map(|c| {
            let file = c["file"].as_str().unwrap().to_owned();
            SchemaCase {
                path: root.join(&file),
                file,
                valid: c["valid"].as_bool().unwrap(),
                case: c.clone(),
            }
        })
        .collect()
}

/// How many of `cases` are valid and how many invalid.
pub(crate) fn tally(cases: &[SchemaCase]) -> (usize, usize) {
    let valid = cases.iter().filter(|c| c.valid).count();
    (valid, cases.len() - valid)
}

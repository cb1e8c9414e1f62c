//! `evidence-gate schema <name>`.

use clap::Args;
use serde_json::Value;

use super::{EXIT_USAGE, Io};

/// Generates one schema document.
pub(crate) type SchemaFn = fn() -> Value;

/// Every schema the binary can print: name and generator.
pub(crate) static SCHEMAS: &[(&str, SchemaFn)] = &[
    ("evidence", crate::evidence::payload::schema),
    // Goal engine (docs/engine.md#ge-1).
    ("plan", crate::goals::schema::plan),
    ("ledger-entry", crate::goals::schema::ledger_entry),
    ("ledger-index", crate::goals::index::schema),
    ("profile", crate::rules::profiles::profile_schema),
    (
        "blocker-rules",
        crate::rules::profiles::blocker_rules_schema,
    ),
    // Workflow overlap (docs/engine.md#ge-9).
    (
        "workflow-registry",
        crate::goals::workflow::registry::schema,
    ),
    ("workflow-rules", crate::rules::workflow::schema),
    // Rules override file (docs/rules.md).
    ("rules", crate::rules::schema::schema),
    // Final quality gate (docs/gates.md).
    ("gate", crate::gate::schema::schema),
    // Hook input (docs/hook-contracts.md#h-2).
    ("hook-input", crate::hooks::host::schema::schema),
];

#[derive(Args, Debug)]
pub(crate) struct SchemaArgs {
    /// Document name (`evidence`, …).
    #[arg(required_unless_present = "list")]
    name: Option<String>,
    /// Print the name of every schema, one per line.
    #[arg(long, conflicts_with = "name")]
    list: bool,
}

/// The schema document `name`, in the portable form every validator
/// accepts (see [`portable`]); `None` for an unknown name.
pub(crate) fn document(name: &str) -> Option<Value> {
    SCHEMAS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, make)| portable(make()))
}

/// Removes the `format` annotations the schema generator writes for Rust
/// integer and float types (`uint64`, `int32`, `double`, …): they are no
/// JSON Schema formats, and ajv's strict mode refuses unknown formats. The
/// bounds they stood for stay as `minimum`/`maximum`.
pub(crate) fn portable(mut schema: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                let numeric = map.get("format").and_then(Value::as_str).is_some_and(|f| {
                    matches!(
                        f,
                        "uint"
                            | "uint8"
                            | "uint16"
                            | "uint32"
                            | "uint64"
                            | "uint128"
                            | "int"
                            | "int8"
                            | "int16"
                            | "int32"
                            | "int64"
                            | "int128"
                            | "float"
                            | "double"
                    )
                });
                if numeric {
                    map.remove("format");
                }
                for (_, child) in map.iter_mut() {
                    walk(child);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut schema);
    schema
}

pub(crate) fn run(args: &SchemaArgs, io: &mut Io<'_>) -> u8 {
    let Some(name) = args.name.as_deref() else {
        let names: String = SCHEMAS.iter().map(|(n, _)| format!("{n}\n")).collect();
        return if io.stdout.write_all(names.as_bytes()).is_err() {
            EXIT_USAGE
        } else {
            0
        };
    };
    match document(name) {
        Some(doc) => {
            let mut text = serde_json::to_string_pretty(&doc).expect("schemas serialise");
            text.push('\n');
            if io.stdout.write_all(text.as_bytes()).is_err() {
                return EXIT_USAGE;
            }
            0
        }
        None => {
            let names: Vec<&str> = SCHEMAS.iter().map(|(n, _)| *n).collect();
            let _ = writeln!(
                io.stderr,
                "error: unknown schema `{}`; known: {}",
                name,
                names.join(", ")
            );
            EXIT_USAGE
        }
    }
}

//! `evidence-gate schema <name>`.

use clap::Args;
use serde_json::Value;

use super::{EXIT_USAGE, Io};

/// Generates one schema document.
pub type SchemaFn = fn() -> Value;

/// Every schema the binary can print: name and generator.
pub static SCHEMAS: &[(&str, SchemaFn)] = &[
    ("evidence", crate::evidence::payload::schema),
    // Goal engine (docs/engine.md#ge-1).
    ("plan", crate::goals::schema::plan),
    ("ledger-entry", crate::goals::schema::ledger_entry),
    ("ledger-index", crate::goals::index::schema),
    ("profile", crate::goals::profile::profile_schema),
    ("blocker-rules", crate::goals::profile::blocker_rules_schema),
    // Workflow overlap (docs/engine.md#ge-9).
    (
        "workflow-registry",
        crate::goals::workflow::registry::schema,
    ),
    ("workflow-rules", crate::goals::workflow::rules::schema),
];

#[derive(Args, Debug)]
pub(crate) struct SchemaArgs {
    /// Document name (`evidence`, …).
    name: String,
}

pub(crate) fn run(args: &SchemaArgs, io: &mut Io<'_>) -> u8 {
    match SCHEMAS.iter().find(|(n, _)| *n == args.name) {
        Some((_, make)) => {
            let mut text = serde_json::to_string_pretty(&make()).expect("schemas serialise");
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
                args.name,
                names.join(", ")
            );
            EXIT_USAGE
        }
    }
}

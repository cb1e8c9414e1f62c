//! evidence-gate makes AI coding agents prove their work.
//!
//! Data flows one way: *outside world → adapter → engine → sandboxed
//! verification → decision → adapter → outside world*.
//!
//! * [`sandbox`] owns the workspace root as a `cap_std::fs::Dir`, lexical path
//!   validation, confined no-follow non-blocking opens and streaming SHA-256;
//! * [`evidence`] owns evidence payload v1, findings with stable codes and the
//!   verdict;
//! * [`gate`] validates quality-gate documents against their rules, with
//!   every referenced artifact checked through the sandbox;
//! * [`rules`] loads the JSON policies (embedded defaults plus overrides);
//! * [`ledger`] is the one hash-chain implementation every ledger uses;
//! * [`audit`] is repository mode of `verify-evidence`: ledgers, recorded
//!   digests, completion claims and payloads re-verified in CI;
//! * [`hooks`] decodes host hook payloads, decides and encodes per host;
//! * [`text`] decides what a text shows (blank checks, report escaping);
//! * [`store`] holds the durable-write primitives (atomic replace, append,
//!   the mutation lock);
//! * [`userstate`] resolves the per-user state directory that holds the
//!   trust-bearing hook state and the witness, outside the workspace;
//! * [`goals`] is the goal engine (`ulw-loop` / `ultragoal` profiles);
//! * [`cli`] parses arguments, renders results and maps them to exit codes.
//!
//! The library never prints, never exits and never opens an ambient path:
//! the binaries hand it an [`ambient::Ambient`] capability.

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(unreachable_pub)]
#![deny(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::exit,
    clippy::dbg_macro
)]

// Front doors: the library's public API (README.md#stability-and-semver).
pub mod ambient;
pub mod audit;
pub mod evidence;
pub mod finding;
pub mod gate;
pub mod goals;
pub mod hooks;
pub mod rules;
pub mod sandbox;

/// The command line of the `evidence-gate` and `verify-evidence` binaries.
///
/// **Not API**: public only so that the binaries in `src/bin/` can call
/// [`cli::main`]; it may change in any release. Exit codes, finding codes and
/// JSON output shapes are the stable contract of the command line, not this
/// module's Rust items.
#[doc(hidden)]
pub mod cli;

// Internals.
mod digest;
mod doctor;
mod init;
mod json;
mod ledger;
mod store;
mod text;
mod time;
mod userstate;

/// Internal helpers the project's own integration tests and benches call
/// directly (hashing, ledger chaining, clocks, Codex hook trust). **Not API**:
/// they may change in any release.
#[doc(hidden)]
pub mod internals {
    pub use crate::digest::{hex, sha256_hex};
    pub use crate::init::codex_toml::{event_label, hook_trust_hash};
    pub use crate::ledger::{
        ChainedRecord, ForeignSeverity, chain_records, record_hash, verify_chain,
    };
    pub use crate::time::rfc3339_ms;
    pub use crate::userstate::workspace_id;
}

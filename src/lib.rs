//! evidence-gate makes AI coding agents prove their work.
//!
//! The same checks the `evidence-gate` and `verify-evidence` binaries run are
//! available as a library. Verifying the bundled example payload (what
//! `verify-evidence --root fixtures/payloads/example
//! fixtures/payloads/example/evidence.json` does):
//!
//! ```
//! use cap_std::fs::Dir;
//! use evidence_gate::evidence::{self, Root, Verdict, VerifyOptions};
//! use evidence_gate::rules::{RuleSet, evidence::EvidenceRules};
//!
//! // The library holds no ambient authority: the caller opens the root.
//! let dir = Dir::open_ambient_dir("fixtures/payloads/example", cap_std::ambient_authority())?;
//! let bytes = dir.read("evidence.json")?;
//! let rules: EvidenceRules = RuleSet::embedded()?.family()?;
//! let root = Root::new(dir, &rules)?;
//! let payload = evidence::payload::parse(&bytes, root.max_payload_bytes())
//!     .map_err(|f| f.message)?;
//! let opts = VerifyOptions { payload_path: Some("evidence.json"), ..Default::default() };
//! let report = evidence::verify_payload(&root, &payload, "evidence.json", opts);
//! assert_eq!(report.verdict(), Verdict::Pass);
//! assert!(report.findings().is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The front doors (the public API; see the README's "Stability and semver"):
//!
//! * [`evidence`]: evidence payload v1, the verifier
//!   ([`evidence::verify_payload`]) and its report;
//! * [`gate`]: quality-gate documents checked against their rules
//!   ([`gate::validate`]), every artifact opened through the sandbox;
//! * [`goals`]: the goal engine ([`goals::Engine`] and the types it names;
//!   [`goals::ops`] holds the commands, `create`, `checkpoint` and the
//!   others, and [`goals::steer`] the steering proposals);
//! * [`hooks`]: a host hook payload decided and encoded ([`hooks::handle`]);
//! * [`audit`]: repository mode of `verify-evidence` ([`audit::audit`]);
//! * [`rules`]: the JSON policies (embedded defaults plus overrides) and every
//!   rule family's types;
//! * [`finding`]: findings with stable codes, reports and verdicts;
//! * [`sandbox`] and [`ambient`]: the workspace root as a `cap_std::fs::Dir`
//!   with confined opens, and the capability an embedder grants the library.
//!
//! `examples/` runs each front door (`cargo run --example verify_payload`,
//! `check_gate`, `goal_checkpoint`, `hook_event`).
//!
//! Data flows one way: *outside world → adapter → engine → sandboxed
//! verification → decision → adapter → outside world*. The library never
//! prints, never exits and never opens an ambient path: the binaries (or an
//! embedder) hand it an [`ambient::Ambient`] capability.

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
pub mod workspace;

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
mod scan;
mod store;
mod text;
mod time;
mod userstate;
mod wire;

#[cfg(test)]
mod test_support;

/// Internal helpers the project's own integration tests and benches call
/// directly (hashing, ledger chaining, clocks, Codex hook trust, the goal
/// engine's plan digest and decision ids). **Not API**:
/// they may change in any release.
#[doc(hidden)]
pub mod internals {
    pub use crate::digest::{hex, sha256_hex};
    pub use crate::goals::decisions::decision_id;
    pub use crate::goals::plan::body_sha256 as plan_body_sha256;
    pub use crate::init::codex_toml::{event_label, hook_trust_hash};
    pub use crate::ledger::{
        ChainedRecord, ForeignSeverity, chain_records, record_hash, verify_chain,
    };
    pub use crate::time::rfc3339_ms;
    pub use crate::userstate::workspace_id;
}

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
#![deny(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::exit,
    clippy::dbg_macro
)]

pub mod ambient;
pub mod audit;
pub mod cli;
pub mod digest;
pub mod doctor;
pub mod evidence;
pub mod finding;
pub mod gate;
pub mod goals;
pub mod hooks;
pub mod init;
pub mod json;
pub mod ledger;
pub mod rules;
pub mod sandbox;
pub mod store;
pub mod text;
pub mod time;
pub mod userstate;
pub mod workspace;

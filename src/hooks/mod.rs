//! Host hook adapters (docs/hook-contracts.md): payload decoding into one internal event
//! per family, host-specific decision encoding, and the hook behaviours:
//! the `subagent-stop` receipt gate and the goal-loop hooks
//! ([`goal_loop`]). Goal logic stays in [`crate::goals`].
//!
//! The runner ([`run`]) is shared by every hook event: bounded stdin, host
//! auto-detection, the strict output latch, the watchdog, panic capture,
//! `EVIDENCE_GATE_HOOKS=off` and a diagnostics line for every fail-open.
//! It always returns exit status 0.

mod args;
pub mod code;
pub mod diagnostics;
pub mod directive;
pub mod event;
pub mod gate_ledger;
pub mod goal_loop;
pub mod host;
pub mod host_records;
pub mod input;
pub mod io_report;
pub mod receipt;
mod runner;
pub mod subagent_stop;
pub mod transcript;
pub mod witness;

pub use args::SYNOPSIS;
pub use code::HookCode;
pub use runner::{DEBUG_ENV, FAULT_ENV, Fault, SWITCH_ENV, run};

//! Host hook adapters (docs/hook-contracts.md): payload decoding into one internal event
//! per family, host-specific decision encoding, and the hook behaviours:
//! the `subagent-stop` receipt gate and the goal-loop hooks
//! (`goal_loop`). Goal logic stays in [`crate::goals`].
//!
//! [`handle`] decides one event for the library and the command line alike:
//! bounded stdin, `EVIDENCE_GATE_HOOKS=off`, host auto-detection, rules and
//! a diagnostics line for every fail-open. The process concerns (the output
//! latch, the watchdog, panic capture, argument parsing, the write and the
//! exit status) belong to the command-line edge.

pub(crate) mod code;
pub mod diagnostics;
pub mod directive;
pub mod event;
pub(crate) mod gate_ledger;
pub(crate) mod goal_loop;
mod handle;
pub mod host;
pub(crate) mod host_id;
pub mod host_records;
pub mod input;
pub(crate) mod io_report;
pub mod receipt;
pub mod subagent_stop;
pub(crate) mod transcript;
pub(crate) mod witness;

pub use code::HookCode;
pub use handle::{
    DEBUG_ENV, DeadlineSink, Env, FAULT_ENV, Fault, Handled, HookCall, SWITCH_ENV, Trace, handle,
};

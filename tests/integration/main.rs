//! The one integration test binary; topic modules inside.
//!
//! Tests build adversarial trees in temporary directories with `std::fs`,
//! which the library itself may not use (see `clippy.toml`).

#![allow(clippy::disallowed_methods)]

mod ci_adapters;
mod ci_audit;
mod ci_audit_codes;
mod ci_audit_gate;
mod ci_audit_properties;
mod ci_formats;
mod ci_support;
mod common;
mod evidence_cli;
mod evidence_fs;
mod evidence_lib;
mod gate_check;
mod gate_check_io;
mod gate_lib;
mod gate_template;
mod hooks_adapters;
mod hooks_docs;
mod hooks_properties;
mod hooks_receipt_codes;
mod hooks_runner;
mod hooks_subagent_stop;
mod hooks_support;
mod init_doctor;
mod properties;
mod snapshots;

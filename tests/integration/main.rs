//! The one integration test binary; topic modules inside.
//!
//! Tests build adversarial trees in temporary directories with `std::fs`,
//! which the library itself may not use (see `clippy.toml`).

#![allow(clippy::disallowed_methods)]

mod ci_adapters;
mod ci_audit;
mod ci_audit_base;
mod ci_audit_codes;
mod ci_audit_engine;
mod ci_audit_gate;
mod ci_audit_properties;
mod ci_formats;
mod ci_support;
mod common;
mod drills;
mod evidence_cli;
mod evidence_fs;
mod evidence_lib;
mod evidence_plan;
mod gate_check;
mod gate_check_io;
mod gate_lib;
mod gate_plan;
mod gate_template;
mod goals_batches;
mod goals_binding;
mod goals_checkpoint;
mod goals_cli;
mod goals_concurrency;
mod goals_durability;
mod goals_errors;
mod goals_hostile;
mod goals_keyhash;
mod goals_legacy;
mod goals_probe;
mod goals_regression;
mod goals_review;
mod goals_sabotage;
mod goals_snapshots;
mod goals_steer;
mod goals_steer_batch;
mod goals_steer_codes;
mod goals_steer_props;
mod goals_steer_regression;
mod goals_support;
mod goals_team;
mod goals_transitions;
mod goals_workflow;
mod hooks_adapters;
mod hooks_decisions;
mod hooks_docs;
mod hooks_prompt;
mod hooks_properties;
mod hooks_receipt_budget;
mod hooks_receipt_codes;
mod hooks_runner;
mod hooks_spawn;
mod hooks_stop;
mod hooks_subagent_stop;
mod hooks_support;
mod hooks_tools;
mod hygiene;
mod init_doctor;
mod init_doctor_configs;
mod policy;
mod properties;
mod snapshots;
mod verify_hostile;
mod walk_depth;

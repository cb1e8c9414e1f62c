//! `evidence-gate`: every subcommand of the product.

// On linux-gnu the C runtime calls `main` below directly, without the
// standard library's start-up (`system::entry` says what it keeps).
#![cfg_attr(all(target_os = "linux", target_env = "gnu", not(test)), no_main)]

// (A test build runs the test harness instead of `main`.)
#[cfg_attr(test, allow(dead_code))]
#[path = "shared/system.rs"]
mod system;

#[cfg(any(test, not(all(target_os = "linux", target_env = "gnu"))))]
use system::main;

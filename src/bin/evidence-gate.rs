//! `evidence-gate`: every subcommand of the product.

// On linux-gnu the C runtime calls `main` below directly, without the
// standard library's start-up (`system::entry` says what it keeps).
#![cfg_attr(all(target_os = "linux", target_env = "gnu", not(test)), no_main)]

#[path = "shared/system.rs"]
mod system;

#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    system::entry()
}

#[cfg(any(test, not(all(target_os = "linux", target_env = "gnu"))))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(system::run())
}

//! Build script: links the command-line binaries as position-dependent
//! executables on Linux with glibc.
//!
//! A position-independent executable (the toolchain's default) is relocated
//! by the dynamic loader on every start: about 17,600 pointers in 330 KB of
//! read-only-after-relocation data, which copies about 80 pages per process.
//! For a command that a hook runs on every agent turn that is 0.3 ms of a
//! 2 ms call (docs/performance.md#start-up). A position-dependent executable
//! has those pointers resolved at link time. The library and the tests are
//! unaffected (the flag is given to binaries only).
//!
//! Set `EVIDENCE_GATE_PIE=1` when building to keep the toolchain's
//! position-independent default (for example where a distribution requires
//! every executable to be PIE).

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=EVIDENCE_GATE_PIE");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let static_crt = var("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|f| f == "crt-static");
    if var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && !static_crt
        && std::env::var_os("EVIDENCE_GATE_PIE").is_none()
    {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
}

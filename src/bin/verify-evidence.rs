//! `verify-evidence`: the same as `evidence-gate verify`.

#[path = "shared/system.rs"]
mod system;

fn main() -> std::process::ExitCode {
    system::run()
}

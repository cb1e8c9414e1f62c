//! `evidence-gate`: every subcommand of the product.

#[path = "shared/system.rs"]
mod system;

fn main() -> std::process::ExitCode {
    system::run()
}

//! `evidence-gate doctor` (docs/hook-contracts.md#h-7): argument parsing and rendering.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::{EXIT_USAGE, Io};
use crate::ambient::Ambient;
use crate::doctor::{self, Options, Status};
use crate::hooks::host::Host;

#[derive(Args, Debug)]
pub(crate) struct DoctorArgs {
    /// Check only this host (codex, claude-code, gemini, agy).
    #[arg(long, value_name = "HOST")]
    host: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
    /// Extra rules file to validate with the repository's.
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// Repair what can be repaired: create the per-user hook state, remove
    /// junk planted where hook state belongs, restore the gate-ledger mirror.
    #[arg(long)]
    fix: bool,
}

pub(crate) fn run(a: &DoctorArgs, amb: &dyn Ambient, io: &mut Io<'_>) -> u8 {
    let host = match a.host.as_deref().map(|h| (h, Host::from_name(h))) {
        None => None,
        Some((_, Some(h))) => Some(h),
        Some((name, None)) => {
            let _ = writeln!(io.stderr, "error: unknown host `{name}`");
            return EXIT_USAGE;
        }
    };
    let checks = match doctor::run(
        &Options {
            host,
            rules: a.rules.clone(),
            fix: a.fix,
        },
        amb,
    ) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: doctor could not run: {e}");
            return EXIT_USAGE;
        }
    };
    let failed = checks.iter().any(|c| c.status == Status::Fail);
    if a.json {
        let v = json!({"ok": !failed, "checks": checks});
        let _ = writeln!(io.stdout, "{v}");
    } else {
        for c in &checks {
            let word = match c.status {
                Status::Ok => "ok  ",
                Status::Warn => "warn",
                Status::Fail => "fail",
            };
            let _ = writeln!(io.stdout, "{word} {:<26} {}", c.id, c.message);
            if let Some(h) = &c.hint {
                let _ = writeln!(io.stdout, "     {:<26} hint: {h}", "");
            }
        }
        let n = |s| checks.iter().filter(|c| c.status == s).count();
        let _ = writeln!(
            io.stdout,
            "doctor: {} ok, {} warn, {} fail",
            n(Status::Ok),
            n(Status::Warn),
            n(Status::Fail)
        );
    }
    u8::from(failed)
}

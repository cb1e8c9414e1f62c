//! `evidence-gate init` (docs/hook-contracts.md#h-7): argument parsing and rendering.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::{EXIT_USAGE, Io};
use crate::ambient::Ambient;
use crate::hooks::host::Host;
use crate::init::{self, Error, Options, Scope};

#[derive(Args, Debug)]
pub(crate) struct InitArgs {
    /// Host to wire: codex, claude-code, gemini or agy.
    #[arg(long, value_name = "HOST")]
    host: String,
    /// Print each target file (the default; writes nothing).
    #[arg(long, conflicts_with = "write")]
    print: bool,
    /// Merge the wiring into the host's files (unrelated keys and hooks stay).
    #[arg(long)]
    write: bool,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
    /// project, user, local (Claude Code) or plugin.
    #[arg(long, default_value = "project")]
    scope: String,
    /// The evidence-gate binary to run (default: this executable; a bare word is looked up on PATH).
    #[arg(long, value_name = "PATH")]
    binary: Option<String>,
    /// Goal-engine profile for the goal-loop hooks (ulw-loop, ultragoal, auto).
    #[arg(long, default_value = "auto")]
    profile: String,
    /// Ultrawork injection on UserPromptSubmit.
    #[arg(long)]
    with_ultrawork: bool,
    /// The worker shell guard on PreToolUse.
    #[arg(long)]
    team_guard: bool,
    /// Remove Node predecessor gates wired beside ours.
    #[arg(long)]
    replace_node_hooks: bool,
    /// Extra rules file (the matchers come from the rules).
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
}

pub(crate) fn run(a: &InitArgs, amb: &dyn Ambient, io: &mut Io<'_>) -> u8 {
    let Some(host) = Host::from_name(&a.host) else {
        let _ = writeln!(
            io.stderr,
            "error: unknown host `{}`; use codex, claude-code, gemini or agy",
            a.host
        );
        return EXIT_USAGE;
    };
    let Some(scope) = Scope::from_name(&a.scope) else {
        let _ = writeln!(
            io.stderr,
            "error: unknown scope `{}`; use project, user, local or plugin",
            a.scope
        );
        return EXIT_USAGE;
    };
    if !["ulw-loop", "ultragoal", "auto"].contains(&a.profile.as_str()) {
        let _ = writeln!(io.stderr, "error: unknown profile `{}`", a.profile);
        return EXIT_USAGE;
    }
    let opts = Options {
        host,
        write: a.write,
        scope,
        binary: a.binary.clone(),
        replace_node_hooks: a.replace_node_hooks,
        rules: a.rules.clone(),
        profile: a.profile.clone(),
        with_ultrawork: a.with_ultrawork,
        team_guard: a.team_guard,
    };
    match init::run(&opts, amb) {
        Ok(report) => {
            if a.json {
                let _ = writeln!(
                    io.stdout,
                    "{}",
                    serde_json::to_string(&report).expect("serialises")
                );
            } else {
                for f in &report.files {
                    let _ = write!(
                        io.stdout,
                        "==> {} ({}) <==\n{}",
                        f.path, f.action, f.content
                    );
                }
                for n in &report.notes {
                    let _ = writeln!(io.stdout, "note: {n}");
                }
            }
            0
        }
        Err(Error::Refused { code, message }) => {
            if a.json {
                let v = json!({"ok": false, "host": host, "error": {"code": code, "message": message}, "files": [], "notes": []});
                let _ = writeln!(io.stdout, "{v}");
            } else {
                let _ = writeln!(io.stderr, "error[{code}]: {message}");
            }
            1
        }
        Err(Error::Usage(m) | Error::Io(m)) => {
            let _ = writeln!(io.stderr, "error: {m}");
            EXIT_USAGE
        }
    }
}

//! Command-line front end: argument parsing (clap), dispatch, rendering and
//! exit codes. Logic lives in the modules it calls.

mod doctor;
mod gate;
mod goals;
mod hook;
mod init;
mod progress;
mod render;
mod schema;
mod verify;

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::Path;

use clap::{Parser, Subcommand};

use crate::ambient::Ambient;

pub use render::Format;

/// The process's standard streams and whether each is a terminal.
pub struct Io<'a> {
    /// Standard input.
    pub stdin: &'a mut dyn Read,
    /// Standard output.
    pub stdout: &'a mut dyn Write,
    /// Standard error.
    pub stderr: &'a mut dyn Write,
    /// stdin is a terminal.
    pub stdin_is_terminal: bool,
    /// stdout is a terminal (colour, progress).
    pub stdout_is_terminal: bool,
    /// stderr is a terminal.
    pub stderr_is_terminal: bool,
}

/// Exit code for usage errors and "could not verify".
pub const EXIT_USAGE: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "evidence-gate",
    version,
    about = "Makes AI coding agents prove their work.",
    long_about = "Makes AI coding agents prove their work: verifies evidence payloads inside a \
                  capability sandbox, checks quality gates, runs the goal engine and adapts host hooks.",
    after_help = "Goal engine and hooks (each with its own argument and exit conventions):\n  \
                  ulw-loop <sub> ...   the goal engine, ulw-loop profile (`evidence-gate ulw-loop help`)\n  \
                  ultragoal <sub> ...  the goal engine, Omagy Ultragoal profile (`evidence-gate ultragoal help`)\n  \
                  hook <event> ...     host hook adapters: subagent-stop, stop, user-prompt-submit, pre-tool-use,\n                       \
                  pre-tool-use-spawn; always exit 0 (`evidence-gate hook --help`)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Verify evidence payloads, or audit the repository when none is given
    /// (same as the `verify-evidence` binary).
    Verify(verify::VerifyArgs),
    /// Print a JSON Schema generated from the Rust types.
    Schema(schema::SchemaArgs),
    /// Quality gates: `gate check <FILE|->`.
    Gate(gate::GateArgs),
    /// Print or write the host hook wiring (Codex, Claude Code, Gemini CLI, agy).
    Init(init::InitArgs),
    /// Check the hook wiring, rules, state directory and recent diagnostics.
    Doctor(doctor::DoctorArgs),
}

#[derive(Parser, Debug)]
#[command(
    name = "verify-evidence",
    version,
    about = "Verify evidence payloads: every deliverable exists inside the root, is a non-empty \
             regular file reached through no symlink, hashes to its declared digest, and the \
             verdict is `passed`. Without PAYLOAD (or with --ledger), audit the repository: \
             goal-engine ledgers and their hash chains, every recorded file digest, completion \
             claims, evidence payloads under the evidence roots and the hook gate ledger.",
    after_help = "Exit status: 0 pass, 1 fail, 2 could not verify or usage error."
)]
struct VerifyCli {
    #[command(flatten)]
    args: verify::VerifyArgs,
}

/// Runs the program named by `argv[0]` and returns the exit code.
pub fn main(argv: Vec<OsString>, amb: &dyn Ambient, io: &mut Io<'_>) -> u8 {
    let stem = argv
        .first()
        .and_then(|a| Path::new(a).file_stem())
        .and_then(|s| s.to_str())
        .unwrap_or("evidence-gate")
        .to_owned();
    // `verify-evidence` only verifies: `verify-evidence hook` names a payload
    // file called `hook`, never the hook runner or the goal engine.
    if stem == "verify-evidence" {
        return match VerifyCli::try_parse_from(&argv) {
            Ok(cli) => verify::run(&cli.args, amb, io),
            Err(e) => clap_error(e, io),
        };
    }
    // Hooks are dispatched before clap: they exit 0 even on usage errors.
    if let Some(event) = stem.strip_prefix(hook::MULTI_CALL_PREFIX) {
        return hook::run(Some(event), argv.get(1..).unwrap_or(&[]), amb, io);
    }
    if argv.get(1).is_some_and(|a| a == "hook") {
        return hook::run(None, argv.get(2..).unwrap_or(&[]), amb, io);
    }
    // Goal-engine commands use their own envelope and exit codes (docs/engine.md#ge-4).
    if let Some((profile, rest)) = goals::route(&argv) {
        return goals::run(&profile, rest, amb, io);
    }
    // Under a parent command's name (`omo`, `omagy`) the anchor's top-level
    // rules apply: no argument prints the help and succeeds, an unknown word
    // is `[omo] unknown command: <x>` and exit 1 (docs/engine.md#ge-1, docs/differences.md#r-3).
    if goals::is_parent_command(&stem) {
        match argv.get(1).map(|a| a.to_string_lossy()) {
            None => {
                let _ = write!(io.stdout, "{}", top_level_help(&stem));
                return 0;
            }
            Some(word) if !word.starts_with('-') && !is_top_level_command(&word) => {
                let help = top_level_help(&stem);
                let _ = write!(io.stderr, "[{stem}] unknown command: {word}\n{help}");
                return 1;
            }
            Some(_) => {}
        }
    }
    match Cli::try_parse_from(&argv) {
        Ok(cli) => match cli.command {
            Command::Verify(args) => verify::run(&args, amb, io),
            Command::Schema(args) => schema::run(&args, io),
            Command::Gate(args) => gate::run(&args, amb, io),
            Command::Init(args) => init::run(&args, amb, io),
            Command::Doctor(args) => doctor::run(&args, amb, io),
        },
        Err(e) => clap_error(e, io),
    }
}

/// The top-level help under the name the binary was called by.
fn top_level_help(stem: &str) -> String {
    <Cli as clap::CommandFactory>::command()
        .bin_name(stem.to_owned())
        .render_help()
        .to_string()
}

/// Whether `word` names a top-level command (or `help`).
fn is_top_level_command(word: &str) -> bool {
    word == "help"
        || <Cli as clap::CommandFactory>::command()
            .get_subcommands()
            .any(|c| c.get_name() == word || c.get_all_aliases().any(|a| a == word))
}

fn clap_error(e: clap::Error, io: &mut Io<'_>) -> u8 {
    use clap::error::ErrorKind;
    let rendered = e.render().ansi().to_string();
    let plain = e.render().to_string();
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let text = if io.stdout_is_terminal {
                rendered
            } else {
                plain
            };
            let _ = io.stdout.write_all(text.as_bytes());
            0
        }
        _ => {
            let text = if io.stderr_is_terminal {
                rendered
            } else {
                plain
            };
            let _ = io.stderr.write_all(text.as_bytes());
            EXIT_USAGE
        }
    }
}

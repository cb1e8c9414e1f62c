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

/// The end of the top-level help: the commands dispatched before clap and
/// the exit status of every command.
const TOP_LEVEL_AFTER_HELP: &str = "\
Goal engine and hooks (each with its own argument conventions):
  ulw-loop <sub> ...   the goal engine, ulw-loop profile (`evidence-gate ulw-loop help`)
  ultragoal <sub> ...  the goal engine, Omagy Ultragoal profile (`evidence-gate ultragoal help`)
  hook <event> ...     host hook adapters: subagent-stop, stop, user-prompt-submit, pre-tool-use,
                       pre-tool-use-spawn (`evidence-gate hook --help`)

Exit status:
  0    success: verification passed, the gate passed, doctor found no failure, the command ran
  1    blocked: findings, a failed gate, a failed doctor check, a refused `init`, a goal-engine
       error (the goal engine uses only 0 and 1)
  2    usage error, or could not verify or check (unreadable input, invalid rules)
  130  interrupted (Ctrl-C): the process ends on SIGINT at once and the shell reports 128 + 2;
       files are replaced atomically, so none is left half-written
  `hook <event>` always exits 0: its decision is its JSON output.

Environment: NO_COLOR turns colour off, CLICOLOR_FORCE turns it on without a terminal, TERM=dumb
turns it off; the repository root is found by walking up from the current directory to the
nearest `.git` (or state directory) unless `--root` names it.";

/// Whether to colour output for a stream: `NO_COLOR` (non-empty) turns it
/// off, `CLICOLOR_FORCE` (non-empty, not `0`) turns it on even without a
/// terminal, else a terminal gets colour unless `CLICOLOR=0` or
/// `TERM=dumb` (the rules `anstream` applies, read through [`Ambient`]).
pub(crate) fn color_enabled(amb: &dyn Ambient, is_terminal: bool) -> bool {
    let set = |k: &str| crate::ambient::var(amb, k).filter(|v| !v.is_empty());
    if set("NO_COLOR").is_some() {
        return false;
    }
    if set("CLICOLOR_FORCE").is_some_and(|v| v != "0") {
        return true;
    }
    is_terminal && set("CLICOLOR").as_deref() != Some("0") && set("TERM").as_deref() != Some("dumb")
}

/// Entries that mark a repository root: a git checkout, or a directory
/// holding this tool's state or configuration.
const ROOT_MARKERS: &[&str] = &[".git", ".omo", ".omagy", ".evidence-gate"];

/// The repository root for a command run in a subdirectory, as a path
/// relative to the current directory (`.` when it is the root, `../..` two
/// levels up): the nearest directory, walking up from the current one,
/// that holds `.git` or the tool's state (`.omo`, `.omagy`,
/// `.evidence-gate`). The walk stops at `$HOME` and the filesystem root;
/// when nothing is found the current directory is the root.
pub(crate) fn find_root(amb: &dyn Ambient) -> std::path::PathBuf {
    use std::path::PathBuf;
    let Ok(cwd) = amb.current_dir() else {
        return PathBuf::from(".");
    };
    let home = crate::ambient::var(amb, "HOME").map(PathBuf::from);
    let mut up = 0usize;
    let mut dir = cwd.as_path();
    loop {
        let marked = amb
            .open_dir(dir)
            .is_ok_and(|d| ROOT_MARKERS.iter().any(|m| d.symlink_metadata(m).is_ok()));
        if marked {
            return if up == 0 {
                PathBuf::from(".")
            } else {
                (0..up).map(|_| "..").collect()
            };
        }
        if home.as_deref() == Some(dir) {
            break;
        }
        match dir.parent() {
            Some(p) => {
                dir = p;
                up += 1;
            }
            None => break,
        }
    }
    PathBuf::from(".")
}

/// The closest of `candidates` to a mistyped `word`, if any is close.
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro(word, c), c))
        .filter(|(score, _)| *score > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[derive(Parser, Debug)]
#[command(
    name = "evidence-gate",
    version,
    about = "Makes AI coding agents prove their work.",
    long_about = "Makes AI coding agents prove their work: verifies evidence payloads inside a \
                  capability sandbox, checks quality gates, runs the goal engine and adapts host hooks.",
    after_help = TOP_LEVEL_AFTER_HELP
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
    /// Check the hook wiring, rules, state directory and recent diagnostics
    /// (read-only unless --fix).
    Doctor(doctor::DoctorArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Install, e.g.: evidence-gate completions bash > ~/.local/share/bash-completion/completions/evidence-gate\n  \
                            evidence-gate completions zsh > \"${fpath[1]}/_evidence-gate\"\n  \
                            evidence-gate completions fish > ~/.config/fish/completions/evidence-gate.fish"
    )]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to standard output.
    #[command(
        after_help = "Install, e.g.: evidence-gate man > ~/.local/share/man/man1/evidence-gate.1"
    )]
    Man,
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
    after_help = "Exit status: 0 pass, 1 fail, 2 could not verify or usage error, 130 interrupted \
                  (Ctrl-C; the shell's status for SIGINT).\n\
                  The root is the nearest directory above the current one that holds `.git` \
                  (or goal-engine state), unless --root names it."
)]
struct VerifyCli {
    #[command(flatten)]
    args: verify::VerifyArgs,
}

/// The name the program was started under (`argv[0]`'s file stem).
fn program_stem(argv: &[OsString]) -> &str {
    argv.first()
        .and_then(|a| Path::new(a).file_stem())
        .and_then(|s| s.to_str())
        .unwrap_or("evidence-gate")
}

/// The hook `argv` runs, as [`main`] dispatches it: the event a hook's
/// multi-call name carries (else `None`) and the hook's arguments. `None`
/// when `argv` is no hook call (`verify-evidence` only verifies:
/// `verify-evidence hook` names a payload file called `hook`).
fn hook_call(argv: &[OsString]) -> Option<(Option<&str>, &[OsString])> {
    let stem = program_stem(argv);
    if stem == "verify-evidence" {
        return None;
    }
    if let Some(event) = stem.strip_prefix(hook::MULTI_CALL_PREFIX) {
        return Some((Some(event), argv.get(1..).unwrap_or(&[])));
    }
    if argv.get(1).is_some_and(|a| a == "hook") {
        return Some((None, argv.get(2..).unwrap_or(&[])));
    }
    None
}

/// Whether `argv` runs a hook (`evidence-gate hook …`, or the binary under
/// a hook's multi-call name), as [`main`] dispatches it.
pub fn is_hook_call(argv: &[OsString]) -> bool {
    hook_call(argv).is_some()
}

/// Runs the program named by `argv[0]` and returns the exit code.
pub fn main(argv: Vec<OsString>, amb: &dyn Ambient, io: &mut Io<'_>) -> u8 {
    let stem = program_stem(&argv).to_owned();
    // `verify-evidence` only verifies: `verify-evidence hook` names a payload
    // file called `hook`, never the hook runner or the goal engine.
    if stem == "verify-evidence" {
        return match VerifyCli::try_parse_from(&argv) {
            Ok(cli) => verify::run(&cli.args, amb, io),
            Err(e) => clap_error(e, amb, io),
        };
    }
    // Hooks are dispatched before clap: they exit 0 even on usage errors.
    if let Some((event, args)) = hook_call(&argv) {
        return hook::run(event, args, amb, io);
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
            Command::Completions { shell } => {
                let mut cmd = full_command(&stem);
                let mut out = Vec::new();
                clap_complete::generate(shell, &mut cmd, stem.clone(), &mut out);
                write_out(io, &out)
            }
            Command::Man => {
                let mut out = Vec::new();
                match clap_mangen::Man::new(full_command(&stem)).render(&mut out) {
                    Ok(()) => write_out(io, &out),
                    Err(e) => {
                        let _ = writeln!(io.stderr, "error: could not render the man page: {e}");
                        EXIT_USAGE
                    }
                }
            }
        },
        Err(e) => clap_error(e, amb, io),
    }
}

fn write_out(io: &mut Io<'_>, bytes: &[u8]) -> u8 {
    match io.stdout.write_all(bytes).and_then(|()| io.stdout.flush()) {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: cannot write to standard output: {e}");
            EXIT_USAGE
        }
    }
}

/// The whole command line as a clap description, for completions and the
/// man page: the clap-parsed commands, plus the goal-engine profiles with
/// their subcommands and global flags and the hook events, which are parsed
/// before clap (a test keeps this in step with those parsers).
pub(crate) fn full_command(stem: &str) -> clap::Command {
    use clap::{Arg, ArgAction, Command as C};
    let global = |c: C| {
        c.arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("Machine-readable output")
                .global(true),
        )
        .arg(
            Arg::new("session-id")
                .long("session-id")
                .value_name("SID")
                .help("The goal session")
                .global(true),
        )
        .arg(
            Arg::new("rules")
                .long("rules")
                .value_name("FILE")
                .help("Extra rules file")
                .global(true),
        )
        .arg(
            Arg::new("lock-timeout-ms")
                .long("lock-timeout-ms")
                .value_name("MS")
                .help("How long to wait for the state lock")
                .global(true),
        )
    };
    let mut cmd = <Cli as clap::CommandFactory>::command().bin_name(stem.to_owned());
    for (name, about) in [
        ("ulw-loop", "The goal engine, ulw-loop profile"),
        ("ultragoal", "The goal engine, Omagy Ultragoal profile"),
    ] {
        let mut p = global(C::new(name).about(about));
        // clap adds `help` itself.
        for sub in goals::SUBCOMMANDS.iter().filter(|s| **s != "help") {
            p = p.subcommand(C::new(*sub));
        }
        cmd = cmd.subcommand(p);
    }
    let mut hook =
        C::new("hook").about("Host hook adapters (always exit 0; the decision is the JSON output)");
    for e in crate::hooks::event::HookEvent::ALL {
        hook = hook.subcommand(
            C::new(e.name())
                .arg(
                    Arg::new("host")
                        .long("host")
                        .value_name("HOST")
                        .help("codex, claude-code, gemini, agy or auto"),
                )
                .arg(
                    Arg::new("profile")
                        .long("profile")
                        .value_name("PROFILE")
                        .help("ulw-loop, ultragoal or auto"),
                )
                .arg(
                    Arg::new("rules")
                        .long("rules")
                        .value_name("FILE")
                        .help("Extra rules file"),
                ),
        );
    }
    cmd.subcommand(hook)
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

fn clap_error(e: clap::Error, amb: &dyn Ambient, io: &mut Io<'_>) -> u8 {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::InvalidSubcommand
        && let Some(ContextValue::String(word)) = e.get(ContextKind::InvalidSubcommand)
    {
        let hint = match e.get(ContextKind::SuggestedSubcommand) {
            Some(ContextValue::Strings(s)) if !s.is_empty() => {
                format!("; did you mean `{}`?", s[0])
            }
            Some(ContextValue::String(s)) => format!("; did you mean `{s}`?"),
            _ => String::new(),
        };
        let usage = e
            .get(ContextKind::Usage)
            .map(|u| format!("\n\n{u}"))
            .unwrap_or_default();
        let _ = writeln!(
            io.stderr,
            "error: unknown subcommand `{word}`{hint}{usage}\n\nFor the list of commands, try '--help'."
        );
        return EXIT_USAGE;
    }
    let rendered = e.render().ansi().to_string();
    let plain = e.render().to_string();
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let text = if color_enabled(amb, io.stdout_is_terminal) {
                rendered
            } else {
                plain
            };
            let _ = io.stdout.write_all(text.as_bytes());
            0
        }
        _ => {
            let text = if color_enabled(amb, io.stderr_is_terminal) {
                rendered
            } else {
                plain
            };
            let _ = io.stderr.write_all(text.as_bytes());
            EXIT_USAGE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The binaries' hook test matches how `main` dispatches a hook: the
    /// `hook` word right after the program, or a hook's multi-call name.
    #[test]
    fn a_hook_call_is_recognised_as_main_dispatches_it() {
        let argv = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(is_hook_call(&argv(&["evidence-gate", "hook", "stop"])));
        assert!(is_hook_call(&argv(&["/usr/bin/evidence-gate-hook-stop"])));
        assert!(!is_hook_call(&argv(&[
            "evidence-gate",
            "ulw-loop",
            "status"
        ])));
        assert!(!is_hook_call(&argv(&["evidence-gate", "verify", "hook"])));
        assert!(
            !is_hook_call(&argv(&["verify-evidence", "hook"])),
            "a payload named hook"
        );
        assert!(!is_hook_call(&argv(&[])));
    }

    /// The description behind completions and the man page names every
    /// command the parsers accept, and nothing else: the clap commands, each
    /// goal-engine subcommand of both profiles, each hook event.
    #[test]
    fn the_full_description_matches_the_parsers() {
        let cmd = full_command("evidence-gate");
        cmd.clone().debug_assert();
        let names = |c: &clap::Command| -> Vec<String> {
            c.get_subcommands()
                .map(|s| s.get_name().to_owned())
                .collect()
        };
        let top = names(&cmd);
        let clap_top = names(&<Cli as clap::CommandFactory>::command());
        for n in &clap_top {
            assert!(top.contains(n), "{n}");
        }
        for profile in ["ulw-loop", "ultragoal"] {
            assert!(top.iter().any(|n| n == profile));
            let argv: Vec<OsString> = vec!["evidence-gate".into(), profile.into()];
            assert!(
                goals::route(&argv).is_some(),
                "{profile} routes to the goal engine"
            );
            let p = cmd.find_subcommand(profile).unwrap();
            let mut subs = names(p);
            subs.push("help".into());
            subs.sort();
            let mut want: Vec<String> =
                goals::SUBCOMMANDS.iter().map(|s| (*s).to_owned()).collect();
            want.sort();
            assert_eq!(subs, want, "{profile}");
            for flag in ["json", "session-id", "rules", "lock-timeout-ms"] {
                assert!(
                    p.get_arguments().any(|a| a.get_long() == Some(flag)),
                    "{flag}"
                );
            }
        }
        let hook = cmd.find_subcommand("hook").unwrap();
        let mut events = names(hook);
        events.sort();
        let mut want: Vec<String> = crate::hooks::event::HookEvent::ALL
            .iter()
            .map(|e| e.name().to_owned())
            .collect();
        want.sort();
        assert_eq!(events, want);
        let mut all: Vec<&str> = clap_top.iter().map(String::as_str).collect();
        all.extend(["ulw-loop", "ultragoal", "hook"]);
        all.sort_unstable();
        let mut got: Vec<&str> = top.iter().map(String::as_str).collect();
        got.sort_unstable();
        assert_eq!(got, all, "nothing the parsers do not accept");
    }

    #[test]
    fn suggestions_pick_the_closest_word() {
        assert_eq!(did_you_mean("stauts", ["status", "steer"]), Some("status"));
        assert_eq!(did_you_mean("vrify", ["verify", "schema"]), Some("verify"));
        assert_eq!(did_you_mean("zzzz", ["verify", "schema"]), None);
    }
}

//! The common hook machinery (hooks.md §1): usage handling, the emergency
//! switch, bounded stdin, host detection and decoding, the watchdog, the
//! output latch, panic capture and the one write of the decision. Every path
//! exits 0, except a Claude Code Stop/SubagentStop block, which exits 2 with
//! the reason on standard error once it is written.

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use cap_fs_ext::MetadataExt;
use cap_std::fs::Dir;
use serde_json::json;

use super::args::{self, HookArgs, Parsed};
use super::code::HookCode;
use super::diagnostics::Diagnostics;
use super::event::{Body, Decision, Family, HookEvent};
use super::goal_loop;
use super::host::Host;
use super::host::decode::{self, DecodeError};
use super::host::detect::detect;
use super::host::encode::{EncodeOptions, Output, encode};
use super::input::{self, InputError};
use super::io_report;
use super::subagent_stop;
use crate::ambient::{self, Ambient};
use crate::cli::Io;
use crate::rules::hooks::{HooksRules, PlumbingPolicy};
use crate::rules::{RuleSet, load_workspace};

/// `EVIDENCE_GATE_HOOKS=off` makes every hook allow (the user's switch).
pub const SWITCH_ENV: &str = "EVIDENCE_GATE_HOOKS";
/// `EVIDENCE_GATE_DEBUG=1` prints one stderr trace line.
pub const DEBUG_ENV: &str = "EVIDENCE_GATE_DEBUG";
/// Test-only fault injection (see [`Fault`]).
pub const FAULT_ENV: &str = "EVIDENCE_GATE_TEST_FAULT";

/// Faults the regression tests inject into the real binary. Each one can only
/// turn a decision into an allow plus a diagnostic, which the host's
/// environment can already get with `EVIDENCE_GATE_HOOKS=off`; the agent's
/// own shell cannot set the host's environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// No fault.
    None,
    /// Panic inside the decision.
    Panic,
    /// The decision never finishes and the deadline is 50 ms.
    Hang,
    /// The receipt verification budget is already spent.
    BudgetSpent,
}

impl Fault {
    fn from_env(amb: &dyn Ambient) -> Fault {
        match ambient::var(amb, FAULT_ENV).as_deref() {
            Some("panic") => Fault::Panic,
            Some("hang") => Fault::Hang,
            Some("budget-spent") => Fault::BudgetSpent,
            _ => Fault::None,
        }
    }
}

/// The output latch: the first of main path, watchdog or panic path to take
/// it writes (or writes nothing) and ends the process.
struct Latch(AtomicBool);

impl Latch {
    fn take(&self) -> bool {
        !self.0.swap(true, Ordering::SeqCst)
    }
}

/// A re-armable deadline; `None` disarms it.
struct Watchdog {
    deadline: Mutex<Option<Instant>>,
    cv: Condvar,
}

impl Watchdog {
    fn arm(&self, at: Instant) {
        *self.deadline.lock().unwrap_or_else(|p| p.into_inner()) = Some(at);
        self.cv.notify_all();
    }

    fn disarm(&self) {
        *self.deadline.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.cv.notify_all();
    }

    /// Waits until the deadline passes (true) or the watchdog is disarmed.
    fn wait(&self) -> bool {
        let mut g = self.deadline.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let Some(at) = *g else {
                return false;
            };
            let now = Instant::now();
            if now >= at {
                return true;
            }
            g = self
                .cv
                .wait_timeout(g, at - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

static PANIC_INFO: Mutex<Option<(String, String, u32)>> = Mutex::new(None);

fn install_panic_hook() {
    panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        let (file, line) = info
            .location()
            .map(|l| (l.file().to_owned(), l.line()))
            .unwrap_or_default();
        if let Ok(mut g) = PANIC_INFO.lock() {
            *g = Some((message, file, line));
        }
    }));
}

/// Runs `evidence-gate hook <args…>`; always returns 0.
pub fn run(args: &[String], amb: &dyn Ambient, io: &mut Io<'_>) -> u8 {
    let start = Instant::now();
    let label = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .cloned()
        .unwrap_or_default();
    let diag = Diagnostics::new(amb, &label, start);
    let proc_cwd = amb.current_dir().ok();
    if let Some(p) = &proc_cwd {
        diag.set_root(p);
    }
    let parsed = match args::parse(args) {
        Ok(Parsed::Run(a)) => a,
        Ok(Parsed::Help) => {
            let _ = writeln!(io.stderr, "{}", args::SYNOPSIS);
            return 0;
        }
        Err(msg) => {
            let _ = writeln!(io.stderr, "evidence-gate hook: {msg} ({})", args::SYNOPSIS);
            diag.write(
                HookCode::HookUsage,
                "allow",
                &msg,
                Some(json!({"args": args.len()})),
            );
            return 0;
        }
    };
    let fault = Fault::from_env(amb);
    install_panic_hook();
    let latch = Latch(AtomicBool::new(false));
    let watchdog = Watchdog {
        deadline: Mutex::new(Some(start + Duration::from_millis(4000))),
        cv: Condvar::new(),
    };
    let mut stdin_bytes = 0u64;
    // 0 unless a whole exit-2 block reached standard error: every failure
    // to decide or to write stays a fail-open exit 0.
    let mut status = 0u8;
    thread::scope(|s| {
        s.spawn(|| {
            if watchdog.wait() && latch.take() {
                let (tx, rx) = mpsc::channel();
                let diag = &diag;
                s.spawn(move || {
                    diag.write(
                        HookCode::HookDeadline,
                        "allow",
                        "the hook did not finish before hooks.deadline_ms; the call was allowed",
                        Some(json!({"elapsed_ms": start.elapsed().as_millis() as u64})),
                    );
                    let _ = tx.send(());
                });
                let _ = rx.recv_timeout(Duration::from_millis(100));
                amb.terminate(0);
            }
        });
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            main_path(
                &parsed,
                amb,
                io,
                &diag,
                &watchdog,
                fault,
                &mut stdin_bytes,
                start,
            )
        }));
        match outcome {
            Ok(output) => {
                if !latch.take() {
                    park_forever();
                }
                let (stream, bytes, code): (&mut dyn std::io::Write, &[u8], u8) = match &output {
                    None => (&mut *io.stdout, &[], 0),
                    Some(Output::Stdout(b)) => (&mut *io.stdout, b, 0),
                    Some(Output::Exit2(b)) => (&mut *io.stderr, b, 2),
                };
                if !bytes.is_empty() {
                    if stream
                        .write_all(bytes)
                        .and_then(|()| stream.flush())
                        .is_err()
                    {
                        diag.write(
                            HookCode::HookOutputWrite,
                            "allow",
                            "the decision could not be written to standard output",
                            Some(json!({"bytes": bytes.len()})),
                        );
                    } else {
                        status = code;
                    }
                }
            }
            Err(_) => {
                if !latch.take() {
                    park_forever();
                }
                let info = PANIC_INFO.lock().ok().and_then(|g| g.clone());
                let (message, file, line) = info.unwrap_or_default();
                diag.write(
                    HookCode::HookPanic,
                    "allow",
                    "a panic was caught; the call was allowed",
                    Some(json!({"panic": super::host::encode::cap_bytes(&message, 500), "file": file, "line": line})),
                );
            }
        }
        watchdog.disarm();
    });
    io_report::write(amb, stdin_bytes);
    status
}

fn park_forever() -> ! {
    loop {
        thread::park();
    }
}

/// Rules for a root: embedded, the user's configuration and `--rules` in
/// full, then `.evidence-gate/rules.json` tighten-only (threat-model.md I9).
/// An invalid repository override falls back to the trusted layers alone;
/// invalid trusted layers fall back to the embedded defaults.
fn load_rules(
    amb: &dyn Ambient,
    root: Option<&Dir>,
    rules_file: Option<&Path>,
) -> (RuleSet, Option<String>) {
    let embedded = || RuleSet::embedded().expect("embedded rules validate");
    let mut owned = Vec::new();
    match crate::rules::read_user_config(amb) {
        Ok(Some(l)) => owned.push(l),
        Ok(None) => {}
        Err(e) => return (embedded(), Some(e.to_string())),
    }
    if let Some(p) = rules_file {
        match ambient::read_file(amb, p, 4 * 1024 * 1024) {
            Ok(b) => owned.push((p.display().to_string(), b)),
            Err(e) => return (embedded(), Some(format!("{}: {e}", p.display()))),
        }
    }
    let trusted = crate::rules::layers(&owned);
    let loaded = match root {
        Some(dir) => load_workspace(dir, &trusted),
        None => RuleSet::load(&trusted),
    };
    match loaded {
        Ok(r) => (r, None),
        Err(e) => match RuleSet::load(&trusted) {
            Ok(r) => (r, Some(e.to_string())),
            Err(_) => (embedded(), Some(e.to_string())),
        },
    }
}

fn hooks_rules(set: &RuleSet) -> HooksRules {
    set.family()
        .or_else(|_| RuleSet::embedded().expect("embedded").family())
        .expect("embedded hook rules validate")
}

fn same_dir(a: &Dir, b: &Dir) -> bool {
    match (a.dir_metadata(), b.dir_metadata()) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

struct Plumbing<'a> {
    diag: &'a Diagnostics<'a>,
    hooks: HooksRules,
    family: Family,
    host: Host,
}

impl Plumbing<'_> {
    /// Records a plumbing failure and returns the allow (or notify) bytes.
    fn fail(&self, code: HookCode, message: &str, detail: serde_json::Value) -> Option<Output> {
        let notify = self.hooks.on_plumbing_failure == PlumbingPolicy::AllowAndNotify
            && self.family == Family::Stop;
        let decision = if notify {
            Decision::Notify {
                message: format!(
                    "evidence-gate could not check this stop ({code}) and allowed it; {}",
                    super::diagnostics::SEE
                ),
            }
        } else {
            Decision::Allow
        };
        self.diag
            .write(code, decision.outcome(), message, Some(detail));
        encode(
            self.host,
            self.family,
            &decision,
            &encode_options(&self.hooks),
        )
    }
}

fn encode_options(h: &HooksRules) -> EncodeOptions {
    EncodeOptions {
        max_reason_bytes: h.max_reason_bytes,
        agy_stop_block: h.hosts.agy.stop_block_decision,
    }
}

#[allow(clippy::too_many_arguments)]
fn main_path(
    a: &HookArgs,
    amb: &dyn Ambient,
    io: &mut Io<'_>,
    diag: &Diagnostics,
    watchdog: &Watchdog,
    fault: Fault,
    stdin_bytes: &mut u64,
    start: Instant,
) -> Option<Output> {
    if io.stdin_is_terminal {
        let _ = writeln!(
            io.stderr,
            "evidence-gate hook {}: reads the host's JSON payload on standard input; run it from a host's hook configuration (see `evidence-gate init`)",
            a.event.name()
        );
        return None;
    }
    let proc_cwd: Option<PathBuf> = amb.current_dir().ok();
    let proc_dir = proc_cwd.as_deref().and_then(|p| amb.open_dir(p).ok());
    let (rules, mut rules_error) = load_rules(amb, proc_dir.as_ref(), a.rules.as_deref());
    let mut rules = Arc::new(rules);
    let mut hooks = hooks_rules(&rules);
    diag.set_rules(&rules, hooks.diagnostics_max_bytes);
    let deadline = match fault {
        Fault::Hang => Duration::from_millis(50),
        _ => Duration::from_millis(hooks.deadline_ms),
    };
    watchdog.arm(start + deadline);
    let family = a.event.family();
    let mut plumbing = Plumbing {
        diag,
        hooks: hooks.clone(),
        family,
        host: a.host.unwrap_or(Host::Common),
    };
    let read = input::read_stdin(io.stdin, hooks.max_stdin_bytes);
    if ambient::var(amb, SWITCH_ENV).is_some_and(|v| v.eq_ignore_ascii_case("off")) {
        diag.write(
            HookCode::HookDisabled,
            "allow",
            "EVIDENCE_GATE_HOOKS=off: the hook allowed without checking",
            None,
        );
        return None;
    }
    let bytes = match read {
        Ok(b) => b,
        Err(InputError {
            code,
            message,
            detail,
        }) => {
            report_rules(diag, &rules, &rules_error);
            return plumbing.fail(code, &message, detail);
        }
    };
    *stdin_bytes = bytes.len() as u64;
    let parsed = input::parse_payload(&bytes);
    let obj = match parsed {
        Ok(o) => o,
        Err(InputError {
            code,
            message,
            detail,
        }) => {
            report_rules(diag, &rules, &rules_error);
            return plumbing.fail(code, &message, detail);
        }
    };
    let env_set = |k: &str| ambient::var(amb, k).is_some_and(|v| !v.is_empty());
    let (host, host_source) = detect(a.host, Some(&obj), &env_set);
    diag.set_host(host, host_source);
    plumbing.host = host;
    let env_lookup = |k: &str| ambient::var(amb, k);
    let fallback_cwd = proc_cwd.clone().unwrap_or_else(|| PathBuf::from("."));
    let ctx = decode::Context {
        process_cwd: &fallback_cwd,
        env: &env_lookup,
    };
    let decoded = match decode::decode(a.event, host, host_source, &obj, &ctx) {
        Ok(d) => d,
        Err(e) => {
            report_rules(diag, &rules, &rules_error);
            let (code, message, detail) = match e {
                DecodeError::PayloadInvalid { field, problem } => (
                    HookCode::HookPayloadInvalid,
                    format!("the payload field `{field}` {problem}"),
                    json!({"field": field}),
                ),
                DecodeError::EventMismatch { sent } => (
                    HookCode::HookEventMismatch,
                    format!(
                        "the payload is a `{sent}` event, not one for `hook {}`",
                        a.event.name()
                    ),
                    json!({"sent": sent}),
                ),
                DecodeError::EventUnsupported => (
                    HookCode::HookEventUnsupported,
                    format!("{} cannot deliver `hook {}`", host.name(), a.event.name()),
                    json!({"host": host.name()}),
                ),
            };
            return plumbing.fail(code, &message, detail);
        }
    };
    diag.set_identity(&decoded.envelope);
    let root = match amb.open_dir(&decoded.envelope.cwd) {
        Ok(d) => d,
        Err(e) => {
            report_rules(diag, &rules, &rules_error);
            return plumbing.fail(
                HookCode::HookCwdInvalid,
                "the payload's cwd is not an existing directory",
                json!({"error": e.to_string()}),
            );
        }
    };
    diag.set_root_dir(&decoded.envelope.cwd, &root);
    let same_as_process = proc_dir.as_ref().is_some_and(|p| same_dir(p, &root));
    if !same_as_process {
        let (reloaded, error) = load_rules(amb, Some(&root), a.rules.as_deref());
        (rules, rules_error) = (Arc::new(reloaded), error);
        hooks = hooks_rules(&rules);
        diag.set_rules(&rules, hooks.diagnostics_max_bytes);
    }
    report_rules(diag, &rules, &rules_error);
    let (policy, loop_policy) = match compile_policies(&rules) {
        Ok(p) => p,
        Err(e) => {
            diag.write(
                HookCode::HookRulesInvalid,
                "allow",
                "the rules' hook policy is invalid; embedded defaults are used",
                Some(json!({"problem": super::host::encode::cap_bytes(&e, 1500)})),
            );
            rules = Arc::new(RuleSet::embedded().expect("embedded rules validate"));
            hooks = hooks_rules(&rules);
            diag.set_rules(&rules, hooks.diagnostics_max_bytes);
            compile_policies(&rules).expect("embedded policies compile")
        }
    };
    match fault {
        Fault::Panic => panic!("injected test fault ({FAULT_ENV}=panic)"),
        Fault::Hang => park_forever(),
        Fault::None | Fault::BudgetSpent => {}
    }
    let canonical = if same_as_process {
        proc_cwd.as_deref()
    } else {
        None
    };
    let decision = match (a.event, &decoded.body) {
        (HookEvent::SubagentStop, Body::Stop(stop)) => subagent_stop::decide(&subagent_stop::Ctx {
            amb,
            diag,
            root: &root,
            canonical_cwd: canonical,
            env: &decoded.envelope,
            stop,
            hooks: &hooks,
            policy: &policy,
            rules: &rules,
            budget_spent: fault == Fault::BudgetSpent,
            started: start,
        }),
        (event, body) => goal_loop::decide(
            &goal_loop::Ctx {
                amb,
                diag,
                root: &root,
                canonical_cwd: canonical,
                env: &decoded.envelope,
                hooks: &hooks,
                policy: &loop_policy,
                rules: &rules,
                profile_flag: &a.profile,
                with_ultrawork: a.with_ultrawork,
            },
            event,
            body,
        ),
    };
    if ambient::var(amb, DEBUG_ENV).as_deref() == Some("1") {
        let _ = writeln!(
            io.stderr,
            "evidence-gate hook {}: host={} ({}) outcome={} elapsed_us={}",
            a.event.name(),
            host.name(),
            host_source.name(),
            decision.outcome(),
            start.elapsed().as_micros()
        );
    }
    encode(host, family, &decision, &encode_options(&hooks))
}

/// Both hook policies: the rules' cross-family checks (templates, patterns)
/// that loading alone does not make.
fn compile_policies(rules: &RuleSet) -> Result<(subagent_stop::Policy, goal_loop::Policy), String> {
    Ok((
        subagent_stop::Policy::compile(rules)?,
        goal_loop::Policy::compile(rules)?,
    ))
}

fn report_rules(diag: &Diagnostics, rules: &RuleSet, e: &Option<String>) {
    if let Some(problem) = e {
        diag.write(
            HookCode::HookRulesInvalid,
            "allow",
            "the rules override is invalid; the hook continues without it",
            Some(json!({"problem": super::host::encode::cap_bytes(problem, 1500)})),
        );
    }
    for r in rules.relaxations() {
        diag.write(
            HookCode::RulesRelaxationIgnored,
            "ignored",
            &format!(
                "{}: {} ({}) was ignored: {}; relax it in the user's rules file or the wiring's --rules",
                crate::rules::REPO_OVERRIDE,
                r.pointer,
                r.direction,
                r.why
            ),
            Some(json!({"file": crate::rules::REPO_OVERRIDE, "pointer": r.pointer, "direction": r.direction})),
        );
    }
}

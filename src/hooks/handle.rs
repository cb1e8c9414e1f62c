//! The library entry point of every hook event (docs/hook-contracts.md#h-1): the
//! emergency switch, bounded standard input, host detection and decoding,
//! rules loading and the decision, encoded for the host. It never writes
//! standard output, never ends the process and installs no global hook:
//! the command-line edge (`src/cli/hook/`) owns the output latch, the
//! watchdog, panic capture, argument parsing and the one write.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use cap_fs_ext::MetadataExt;
use cap_std::fs::Dir;
use serde_json::json;

use super::code::HookCode;
use super::diagnostics::Diagnostics;
use super::event::{Body, Decision, Family, HookEvent, StopEvent};
use super::goal_loop;
use super::host::decode::{self, DecodeError};
use super::host::detect::detect;
use super::host::encode::{EncodeOptions, Output, encode};
use super::host::{Host, HostSource};
use super::input::{self, InputError};
use super::subagent_stop;
use crate::ambient::{self, Ambient};
use crate::rules::RuleSet;
use crate::rules::hooks::{HooksRules, PlumbingPolicy};
use crate::workspace::{self, OnError, RepoRules, WorkspaceOptions};

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
    /// The decision never finishes and the deadline is 50 ms away.
    Hang,
    /// The receipt verification budget is already spent.
    BudgetSpent,
}

impl Fault {
    /// The fault named by [`FAULT_ENV`] in the process environment.
    pub fn from_env(amb: &dyn Ambient) -> Fault {
        match ambient::var(amb, FAULT_ENV).as_deref() {
            Some("panic") => Fault::Panic,
            Some("hang") => Fault::Hang,
            Some("budget-spent") => Fault::BudgetSpent,
            _ => Fault::None,
        }
    }
}

/// Rules for a root: embedded, the user's configuration and `--rules` in
/// full, then `.evidence-gate/rules.json` tighten-only (docs/threat-model.md#i9).
/// An invalid repository override falls back to the trusted layers alone;
/// invalid trusted layers fall back to the embedded defaults.
fn load_rules(
    amb: &dyn Ambient,
    root: Option<&Dir>,
    rules_file: Option<&Path>,
) -> (RuleSet, Option<String>) {
    let opts = WorkspaceOptions {
        rules_file,
        user_config: true,
        repo_rules: RepoRules::Tighten,
        on_error: OnError::Fallback,
        root_path: None,
    };
    match workspace::load_rules(amb, root, &opts) {
        Ok(l) => (l.rules, l.error),
        // `OnError::Fallback` does not fail; were it to, the embedded
        // defaults apply, as for any other unusable layer.
        Err(e) => (
            RuleSet::embedded().expect("embedded rules validate"),
            Some(e.to_string()),
        ),
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

/// What the edge asks a hook to decide: the parsed `evidence-gate hook …`
/// command line plus the test fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCall {
    /// The event.
    pub event: HookEvent,
    /// `--host`; `None` is `auto`.
    pub host: Option<Host>,
    /// `--profile` (read by the goal-loop events; `subagent-stop` ignores it).
    pub profile: String,
    /// `--with-ultrawork` (accepted by every event so wiring lines stay uniform).
    pub with_ultrawork: bool,
    /// `--rules FILE`.
    pub rules: Option<PathBuf>,
    /// The injected test fault ([`Fault::from_env`] at the edge).
    pub fault: Fault,
}

impl HookCall {
    /// A call for `event` with every flag at its default (`--host auto`,
    /// `--profile auto`, no ultrawork, no `--rules`, no fault).
    pub fn new(event: HookEvent) -> HookCall {
        HookCall {
            event,
            host: None,
            profile: "auto".to_owned(),
            with_ultrawork: false,
            rules: None,
            fault: Fault::None,
        }
    }
}

/// Where a hook reports the moment its decision must be written by: the
/// edge's watchdog allows the call when it passes (docs/hook-contracts.md#h-1). The
/// deadline is known only once the rules are loaded.
pub trait DeadlineSink: Sync {
    /// The decision must be written by `at`.
    fn arm(&self, at: Instant);
}

/// A sink for callers without a watchdog (library embedders, tests).
impl DeadlineSink for () {
    fn arm(&self, _at: Instant) {}
}

/// The context of one hook run that the edge owns.
pub struct Env<'a> {
    /// The only door to the process environment and the file system.
    pub amb: &'a dyn Ambient,
    /// The run's diagnostics writer (shared with the edge's watchdog and
    /// panic path).
    pub diag: &'a Diagnostics<'a>,
    /// The edge's watchdog.
    pub deadline: &'a dyn DeadlineSink,
    /// When the run started.
    pub start: Instant,
}

/// What a hook decided, ready for the edge to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handled {
    /// The bytes to write and how to exit; `None` writes nothing, exit 0.
    pub output: Option<Output>,
    /// How the decision was reached, when the payload was decoded.
    pub trace: Option<Trace>,
}

/// The facts of a decided call (the `EVIDENCE_GATE_DEBUG=1` line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trace {
    /// The host the payload was decoded as.
    pub host: Host,
    /// How the host was chosen.
    pub host_source: HostSource,
    /// `allow`, `block`, `deny`, … ([`Decision::outcome`]).
    pub outcome: &'static str,
}

/// Decides one hook event: reads the payload from `stdin` (bounded by the
/// rules), honours `EVIDENCE_GATE_HOOKS=off`, decodes the host's payload,
/// loads the workspace's rules and runs the event's decision. Every
/// plumbing failure is an allow (or a notify) plus a diagnostics record.
///
/// An embedder supplies the [`crate::ambient::Ambient`] (working directory, environment and
/// per-user state) and reads the decision from [`Handled::output`]; a
/// runnable program is `examples/hook_event.rs`. A payload that is not JSON
/// is a plumbing failure, so the event is allowed:
///
/// ```
/// # use std::{ffi::OsString, io, path::{Path, PathBuf}, time::Instant};
/// use evidence_gate::ambient::Ambient;
/// use evidence_gate::hooks::diagnostics::Diagnostics;
/// use evidence_gate::hooks::event::HookEvent;
/// use evidence_gate::hooks::{Env, HookCall, handle};
/// # struct Embedder(PathBuf);
/// # impl Ambient for Embedder {
/// #     fn open_dir(&self, p: &Path) -> io::Result<cap_std::fs::Dir> {
/// #         cap_std::fs::Dir::open_ambient_dir(p, cap_std::ambient_authority())
/// #     }
/// #     fn create_dir_all(&self, _: &Path) -> io::Result<()> { Err(io::Error::other("read-only")) }
/// #     fn current_dir(&self) -> io::Result<PathBuf> { Ok(self.0.clone()) }
/// #     fn var_os(&self, _: &str) -> Option<OsString> { None }
/// #     fn current_exe(&self) -> io::Result<PathBuf> { Err(io::Error::other("none")) }
/// #     fn terminate(&self, code: i32) -> ! { panic!("{code}") }
/// #     fn canonicalize(&self, p: &Path) -> io::Result<PathBuf> { Ok(p.to_path_buf()) }
/// # }
/// let workspace = tempfile::tempdir()?;
/// let amb = Embedder(workspace.path().to_path_buf()); // no HOME: no per-user state
/// let start = Instant::now();
/// let diag = Diagnostics::new(&amb, "subagent-stop", start);
/// let env = Env { amb: &amb, diag: &diag, deadline: &(), start };
/// let handled = handle(&HookCall::new(HookEvent::SubagentStop), &env, &mut &b"not json"[..]);
/// assert!(handled.output.is_none());
/// # Ok::<(), io::Error>(())
/// ```
pub fn handle(call: &HookCall, env: &Env<'_>, stdin: &mut dyn Read) -> Handled {
    let mut trace = None;
    let output = decide(call, env, stdin, &mut trace);
    Handled { output, trace }
}

fn decide(
    a: &HookCall,
    env: &Env<'_>,
    stdin: &mut dyn Read,
    trace: &mut Option<Trace>,
) -> Option<Output> {
    let Env {
        amb,
        diag,
        deadline: watchdog,
        start,
    } = *env;
    let fault = a.fault;
    let proc_cwd: Option<PathBuf> = amb.current_dir().ok();
    let proc_dir = proc_cwd.as_deref().and_then(|p| amb.open_dir(p).ok());
    let (rules, mut rules_error) = load_rules(amb, proc_dir.as_ref(), a.rules.as_deref());
    let mut rules = Arc::new(rules);
    let mut hooks = hooks_rules(&rules);
    diag.set_rules(&rules, hooks.diagnostics_max_bytes);
    watchdog.arm(start + Duration::from_millis(hooks.deadline_ms));
    let family = a.event.family();
    let mut plumbing = Plumbing {
        diag,
        hooks: hooks.clone(),
        family,
        host: a.host.unwrap_or(Host::Common),
    };
    let read = input::read_stdin(stdin, hooks.max_stdin_bytes);
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
    diag.set_root(&decoded.envelope.cwd);
    let same_as_process = proc_dir.as_ref().is_some_and(|p| same_dir(p, &root));
    if !same_as_process {
        let (reloaded, error) = load_rules(amb, Some(&root), a.rules.as_deref());
        (rules, rules_error) = (Arc::new(reloaded), error);
        hooks = hooks_rules(&rules);
        diag.set_rules(&rules, hooks.diagnostics_max_bytes);
    }
    report_rules(diag, &rules, &rules_error);
    let policies = match compile_policies(&rules, a.event, &decoded.body) {
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
            compile_policies(&rules, a.event, &decoded.body).expect("embedded policies compile")
        }
    };
    match fault {
        Fault::Panic => panic!("injected test fault ({FAULT_ENV}=panic)"),
        // The decision hangs with 50 ms left, however long the way here
        // took on a loaded machine.
        Fault::Hang => {
            watchdog.arm(Instant::now() + Duration::from_millis(50));
            loop {
                thread::park();
            }
        }
        Fault::None | Fault::BudgetSpent => {}
    }
    let canonical = if same_as_process {
        proc_cwd.as_deref()
    } else {
        None
    };
    // The workspace's canonical root, resolved once for the whole call: it
    // names the per-user state every step of the decision opens.
    let workspace: Option<PathBuf> = match canonical {
        Some(p) => Some(p.to_owned()),
        None => amb.canonicalize(&decoded.envelope.cwd).ok(),
    };
    let decision = match &policies {
        Policies::Subagent(policy, stop) => subagent_stop::decide(&subagent_stop::Ctx {
            amb,
            diag,
            root: &root,
            canonical_cwd: canonical,
            workspace: workspace.as_deref(),
            env: &decoded.envelope,
            stop,
            hooks: &hooks,
            policy,
            rules: &rules,
            budget_spent: fault == Fault::BudgetSpent,
            started: start,
        }),
        Policies::Loop(loop_policy) => goal_loop::decide(
            &goal_loop::Ctx {
                amb,
                diag,
                root: &root,
                canonical_cwd: canonical,
                workspace: workspace.as_deref(),
                env: &decoded.envelope,
                hooks: &hooks,
                policy: loop_policy,
                rules: &rules,
                profile_flag: &a.profile,
                with_ultrawork: a.with_ultrawork,
                hook_state: std::cell::OnceCell::new(),
            },
            a.event,
            &decoded.body,
        ),
    };
    *trace = Some(Trace {
        host,
        host_source,
        outcome: decision.outcome(),
    });
    encode(host, family, &decision, &encode_options(&hooks))
}

/// The hook policy a call decides with.
enum Policies<'b> {
    /// `SubagentStop`, with its payload.
    Subagent(Box<subagent_stop::Policy>, &'b StopEvent),
    /// Every goal-loop event (its parts are filled on first use).
    Loop(Box<goal_loop::Policy>),
}

/// The policy the call uses, after the rules' cross-family checks
/// (templates, patterns) that loading alone does not make. Rules with an
/// override layer must compile both policies, whichever the event uses, so
/// one override is valid or not for every event alike; the embedded
/// defaults alone, whose policies the test suite and `doctor` compile,
/// compile only the one the event uses, and of the goal-loop policy only the
/// families the event reads.
fn compile_policies<'b>(
    rules: &Arc<RuleSet>,
    event: HookEvent,
    body: &'b Body,
) -> Result<Policies<'b>, String> {
    let both = !rules.is_embedded_only();
    Ok(
        if let (HookEvent::SubagentStop, Body::Stop(stop)) = (event, body) {
            if both {
                goal_loop::Policy::compile(rules)?;
            }
            Policies::Subagent(Box::new(subagent_stop::Policy::compile(rules)?), stop)
        } else {
            if both {
                subagent_stop::Policy::compile(rules)?;
            }
            Policies::Loop(Box::new(goal_loop::Policy::compile(rules)?))
        },
    )
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

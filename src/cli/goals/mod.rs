//! `evidence-gate ulw-loop …` / `evidence-gate ultragoal …` (and the
//! multi-call names of docs/engine.md#ge-1): argument handling, the JSON
//! envelope, text output and exit codes. The logic is in [`crate::goals`].

mod args;
mod commands;
mod json;
mod render;
mod steer;
mod workflow;

use std::ffi::OsString;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::Io;
use crate::ambient::{self, Ambient};
use crate::goals::plan::Plan;
use crate::goals::profile::ProjectRoot;
use crate::goals::{Engine, ErrorKind, GoalError};
use crate::rules::RuleSet;
use crate::rules::profiles::ProfileError;
use crate::workspace::{OnError, RepoRules, Workspace, WorkspaceError, WorkspaceOptions};

/// Subcommands this build implements.
pub(crate) const SUBCOMMANDS: &[&str] = &[
    "help",
    "create-goals",
    "status",
    "complete-goals",
    "criteria",
    "record-evidence",
    "checkpoint",
    "add-goal",
    "record-review-blockers",
    "repair",
    "steer",
    "workflow",
];

/// What routing needs from a profile: compiled from the embedded profile
/// files by the build (`build.rs`; every command line passes through
/// routing, and decoding the files took longer than the rest of routing).
#[derive(Debug, PartialEq, Eq)]
struct RouteInfo {
    name: &'static str,
    display_name: &'static str,
    invocation_names: &'static [&'static str],
    parent_commands: &'static [&'static str],
    /// The profile's `compat/subcommandWord`.
    subcommand_word: Option<&'static str>,
}

impl RouteInfo {
    /// Whether `word` selects this profile after a parent command or
    /// `evidence-gate`: its name, or its `compat/subcommandWord`.
    fn is_word(&self, word: &str) -> bool {
        self.name == word || self.subcommand_word == Some(word)
    }
}

mod route_table {
    use super::RouteInfo;
    include!(concat!(env!("OUT_DIR"), "/route_table.rs"));
}

/// The routing view of every embedded profile.
fn embedded_profiles() -> &'static [RouteInfo] {
    route_table::ROUTES
}

/// Whether `stem` (argv[0]'s file stem) is a profile's parent command
/// (`omo`, `omagy`, …).
pub(crate) fn is_parent_command(stem: &str) -> bool {
    embedded_profiles()
        .iter()
        .any(|p| p.parent_commands.contains(&stem))
}

/// Decides whether argv addresses the goal engine: returns the profile name
/// and the arguments after it. `--profile <name>` (or `--profile=<name>`)
/// right after the profile word selects another profile
/// (`evidence-gate ultragoal --profile omx status`), and a profile's
/// `compat/subcommandWord` may follow its name (`evidence-gate omx ultragoal
/// status`).
pub(crate) fn route(argv: &[OsString]) -> Option<(String, Vec<String>)> {
    let (name, rest) = route_profile(argv)?;
    let profiles = embedded_profiles();
    let (name, mut rest) = match rest.first().map(String::as_str) {
        Some("--profile") if rest.len() > 1 => (rest[1].clone(), rest[2..].to_vec()),
        Some(t) if t.starts_with("--profile=") => {
            (t["--profile=".len()..].to_owned(), rest[1..].to_vec())
        }
        _ => (name, rest),
    };
    if let Some(p) = profiles.iter().find(|p| p.name == name)
        && let Some(word) = p.subcommand_word
        && rest.first().map(String::as_str) == Some(word)
    {
        rest.remove(0);
    }
    Some((name, rest))
}

fn route_profile(argv: &[OsString]) -> Option<(String, Vec<String>)> {
    let stem = argv
        .first()
        .and_then(|a| Path::new(a).file_stem())
        .and_then(|s| s.to_str())?;
    let first = argv.get(1).map(|a| a.to_string_lossy());
    let profiles = embedded_profiles();
    let rest = || -> Vec<String> {
        argv.iter()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    };
    for p in profiles {
        if p.invocation_names.contains(&stem) {
            return Some((p.name.to_owned(), rest()));
        }
    }
    for p in profiles {
        if p.parent_commands.contains(&stem) {
            if first.as_deref().is_some_and(|w| p.is_word(w)) {
                return Some((p.name.to_owned(), rest()[1..].to_vec()));
            }
            if first.as_deref().is_some_and(|s| SUBCOMMANDS.contains(&s)) {
                return Some((p.name.to_owned(), rest()));
            }
        }
    }
    let first = first?;
    profiles
        .iter()
        .find(|p| p.name == first.as_ref())
        .map(|p| (p.name.to_owned(), rest()[1..].to_vec()))
}

/// Global flags (every subcommand).
fn global_flags() -> Vec<args::Flag> {
    vec![
        args::Flag::switch("--json"),
        args::Flag::value("--session-id"),
        args::Flag::value("--rules"),
        args::Flag::value("--lock-timeout-ms"),
    ]
}

/// Splits the subcommand from the arguments (global flags may precede it).
fn split_head(tokens: &[String]) -> (Option<String>, Vec<String>) {
    let globals = global_flags();
    let mut i = 0;
    let mut leading = Vec::new();
    while i < tokens.len() {
        let t = &tokens[i];
        let name = t.split_once('=').map_or(t.as_str(), |(n, _)| n);
        match globals.iter().find(|f| f.name == name) {
            Some(f) => {
                leading.push(t.clone());
                i += 1;
                if f.value && !t.contains('=') && i < tokens.len() && !tokens[i].starts_with("--") {
                    leading.push(tokens[i].clone());
                    i += 1;
                }
            }
            None => break,
        }
    }
    let head = tokens.get(i).cloned();
    let mut rest = leading;
    rest.extend(tokens.iter().skip(i + 1).cloned());
    (head, rest)
}

/// One member of a JSON body: a value, or the plan (moved, not copied: it
/// can be megabytes).
pub(crate) enum Field {
    Value(Value),
    Plan(Box<Plan>),
}

/// An ordered JSON body (without `ok`).
#[derive(Default)]
pub(crate) struct Body(Vec<(String, Field)>);

impl Body {
    pub(crate) fn insert(&mut self, key: &str, value: Value) {
        self.0.push((key.to_owned(), Field::Value(value)));
    }
    /// Appends a typed value in its serialised shape.
    pub(crate) fn put<T: serde::Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        self.insert(key, json::to_value(value));
    }
    pub(crate) fn extend(&mut self, map: Map<String, Value>) {
        self.0
            .extend(map.into_iter().map(|(k, v)| (k, Field::Value(v))));
    }
    /// Appends `plan` as `"plan"`.
    pub(crate) fn plan(&mut self, plan: Plan) {
        self.0
            .push(("plan".to_owned(), Field::Plan(Box::new(plan))));
    }
    /// Repeats each value member named in `aliases` under its alias
    /// (`compat/outputAliases`); a member already present is kept, and an
    /// absent one is repeated as `null` (the foreign tool prints the key).
    pub(crate) fn alias(&mut self, aliases: &std::collections::BTreeMap<String, String>) {
        let mut extra = Vec::new();
        for (ours, theirs) in aliases {
            if self.0.iter().any(|(k, _)| k == theirs) {
                continue;
            }
            match self.0.iter().find(|(k, _)| k == ours) {
                Some((_, Field::Value(v))) => extra.push((theirs.clone(), Field::Value(v.clone()))),
                Some(_) => {}
                None => extra.push((theirs.clone(), Field::Value(Value::Null))),
            }
        }
        self.0.extend(extra);
    }
    /// Puts `plan` first (the anchor's `{ok, plan, …}` order).
    /// Whether the body carries a plan of more than `goals` goals.
    fn plan_larger_than(&self, goals: usize) -> bool {
        self.0
            .iter()
            .any(|(_, f)| matches!(f, Field::Plan(p) if p.goal_count() > goals))
    }

    pub(crate) fn plan_first(&mut self, plan: Plan) {
        self.0
            .insert(0, ("plan".to_owned(), Field::Plan(Box::new(plan))));
    }
}

struct Envelope<'a> {
    ok: bool,
    body: &'a Body,
    warnings: &'a [Value],
    /// Set when a plan member is printed from its encoded bytes: the string
    /// that stands for it in the serialised envelope.
    placeholder: Option<&'a str>,
}

impl Envelope<'_> {
    /// The envelope's pretty JSON plus `\n`, written to `out`. A plan whose
    /// file bytes are at hand ([`Plan::encoded`]) is not serialised again: a
    /// placeholder string, unguessable in this process, stands for it and is
    /// replaced by those bytes indented one level, which is what serialising
    /// it in place writes (pretty JSON has raw newlines only between
    /// tokens). The bytes go to `out` as they are indented, never gathered
    /// into another buffer the size of the plan.
    fn write_pretty(
        ok: bool,
        body: &Body,
        warnings: &[Value],
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let mut plans = body.0.iter().filter_map(|(_, f)| match f {
            Field::Plan(p) => Some(p),
            Field::Value(_) => None,
        });
        let encoded = match (plans.next(), plans.next()) {
            (Some(p), None) => p.encoded(),
            _ => None,
        };
        let Some(plan) = encoded.and_then(without_final_newline) else {
            let env = Envelope {
                ok,
                body,
                warnings,
                placeholder: None,
            };
            let mut text = serde_json::to_vec_pretty(&env).expect("json");
            text.push(b'\n');
            return out.write_all(&text);
        };
        use std::hash::{BuildHasher, Hasher};
        let nonce = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let placeholder = format!("\u{1}evidence-gate plan {nonce:016x}\u{1}");
        let env = Envelope {
            ok,
            body,
            warnings,
            placeholder: Some(&placeholder),
        };
        let text = serde_json::to_vec_pretty(&env).expect("json");
        let quoted = serde_json::to_vec(&placeholder).expect("json");
        let Some(at) = crate::scan::find(&text, &quoted) else {
            // Not reached: the plan member is in the envelope.
            out.write_all(&text)?;
            return out.write_all(b"\n");
        };
        out.write_all(&text[..at])?;
        for piece in plan {
            let mut from = 0;
            for nl in crate::scan::byte_positions(b'\n', piece) {
                out.write_all(&piece[from..=nl])?;
                out.write_all(b"  ")?;
                from = nl + 1;
            }
            out.write_all(&piece[from..])?;
        }
        out.write_all(&text[at + quoted.len()..])?;
        out.write_all(b"\n")
    }

    /// [`Envelope::write_pretty`] into a buffer.
    #[cfg(test)]
    fn to_pretty(ok: bool, body: &Body, warnings: &[Value]) -> Vec<u8> {
        let mut out = Vec::new();
        Envelope::write_pretty(ok, body, warnings, &mut out).expect("a buffer takes every write");
        out
    }
}

/// A plan file's pieces without the file's final `\n` (`None` when it does
/// not end with one).
fn without_final_newline(mut pieces: Vec<&[u8]>) -> Option<Vec<&[u8]>> {
    pieces.retain(|p| !p.is_empty());
    let last = pieces.pop()?.strip_suffix(b"\n")?;
    pieces.push(last);
    Some(pieces)
}

impl serde::Serialize for Envelope<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("ok", &self.ok)?;
        for (k, f) in &self.body.0 {
            match f {
                Field::Value(v) => m.serialize_entry(k, v)?,
                Field::Plan(p) => match (self.placeholder, p.encoded()) {
                    (Some(stand_in), Some(_)) => m.serialize_entry(k, stand_in)?,
                    _ => m.serialize_entry(k, p.doc())?,
                },
            }
        }
        if !self.warnings.is_empty() {
            m.serialize_entry("warnings", self.warnings)?;
        }
        m.end()
    }
}

/// Output of one command: the JSON body (without `ok`) or text, and the exit code.
pub(crate) struct Reply {
    pub ok: bool,
    pub body: Body,
    pub text: String,
    pub warnings: Vec<Value>,
}

impl Reply {
    pub(crate) fn new(body: Body, text: String) -> Reply {
        Reply {
            ok: true,
            body,
            text,
            warnings: Vec::new(),
        }
    }
}

/// Runs a goal-engine command line for `profile`.
pub(crate) fn run(profile: &str, tokens: Vec<String>, amb: &dyn Ambient, io: &mut Io<'_>) -> u8 {
    let (head, rest) = split_head(&tokens);
    let json_mode = rest.iter().any(|t| t == "--json");
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        dispatch(profile, head.as_deref(), &rest, amb, io)
    }));
    std::panic::set_hook(previous);
    let outcome = outcome.unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let sink = diagnostics_sink(amb);
        crate::goals::diagnostics::panicked(&sink, profile, head.as_deref().unwrap_or("help"), &what);
        Outcome::Error(
            GoalError::new(
                ErrorKind::Unexpected,
                format!(
                    "internal error: {what}. This is a defect in evidence-gate; please report it (`evidence-gate doctor` lists it; the line is in the per-user state directory, hooks/diagnostics.jsonl)."
                ),
            ),
            display_name(profile),
        )
    });
    emit(outcome, json_mode, io)
}

fn display_name(profile: &str) -> String {
    embedded_profiles()
        .iter()
        .find(|p| p.name == profile)
        .map_or_else(|| profile.to_owned(), |p| p.display_name.to_owned())
}

pub(crate) enum Outcome {
    Reply(Reply),
    /// Text printed to stdout with an exit code (help, unknown subcommand).
    Plain(String, u8),
    /// An unknown subcommand: the message on stderr, the help on stdout, exit 1.
    Unknown {
        message: String,
        help: String,
    },
    Error(GoalError, String),
}

/// Plans above this many goals are freed off the answering thread.
const LARGE_PLAN_GOALS: usize = 100;

/// Frees `v` on a helper thread. The answer is printed already; freeing a
/// large plan's tree is about a tenth of a command on a 1,000-goal plan, and
/// the process can exit without waiting for it (an in-process caller loses
/// nothing: the thread still frees it). Below [`LARGE_PLAN_GOALS`] the
/// thread would cost more than it saves.
fn drop_later<T: Send + 'static>(v: T) {
    // A thread that cannot be spawned drops `v` here, as before.
    let _ = std::thread::Builder::new()
        .name("free".into())
        .spawn(move || drop(v));
}

fn emit(outcome: Outcome, json_mode: bool, io: &mut Io<'_>) -> u8 {
    match outcome {
        Outcome::Plain(text, code) => {
            let _ = io.stdout.write_all(text.as_bytes());
            code
        }
        Outcome::Unknown { message, help } => {
            let _ = writeln!(io.stderr, "{message}");
            let _ = io.stdout.write_all(help.as_bytes());
            1
        }
        Outcome::Reply(r) => {
            let code = if r.ok { 0 } else { 1 };
            if json_mode {
                let mut out = std::io::BufWriter::with_capacity(64 * 1024, &mut *io.stdout);
                let _ = Envelope::write_pretty(r.ok, &r.body, &r.warnings, &mut out);
                let _ = std::io::Write::flush(&mut out);
            } else {
                let mut text = r.text;
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                let _ = io.stdout.write_all(text.as_bytes());
                for w in &r.warnings {
                    let _ = writeln!(
                        io.stderr,
                        "warning: {}: {}",
                        w["code"].as_str().unwrap_or(""),
                        w["message"].as_str().unwrap_or("")
                    );
                }
            }
            if r.body.plan_larger_than(LARGE_PLAN_GOALS) {
                drop_later(r.body);
            }
            code
        }
        Outcome::Error(e, display) => {
            if json_mode {
                let mut err = Map::new();
                err.insert("code".into(), json!(e.code()));
                err.insert("message".into(), json!(e.message));
                if let Some(d) = e.details() {
                    err.insert("details".into(), d);
                }
                if let Some(l) = e.legacy_code() {
                    err.insert("legacyCode".into(), json!(l));
                }
                let v = json!({"ok": false, "error": Value::Object(err)});
                let mut text = serde_json::to_string_pretty(&v).expect("json");
                text.push('\n');
                let _ = io.stdout.write_all(text.as_bytes());
            } else {
                let _ = writeln!(io.stderr, "[{display}] {}", e.message);
            }
            1
        }
    }
}

fn dispatch(
    profile: &str,
    head: Option<&str>,
    rest: &[String],
    amb: &dyn Ambient,
    io: &mut Io<'_>,
) -> Outcome {
    let fallback_display = display_name(profile);
    let fail = |e: GoalError| Outcome::Error(e, fallback_display.clone());
    let globals = args::parse(rest, &global_flags());
    // Run from a subdirectory, the command works on the repository root.
    let mut root_path = super::find_root(amb);
    let rules_file = match globals.text("--rules") {
        Err(e) => return fail(e),
        Ok(path) => path,
    };
    let opts = WorkspaceOptions {
        rules_file: rules_file.as_deref().map(Path::new),
        user_config: true,
        repo_rules: RepoRules::Tighten,
        on_error: OnError::Fail,
        root_path: None,
    };
    let (ws, profiles) = loop {
        let dir = match amb.open_dir(&root_path) {
            Ok(d) => d,
            Err(e) => return fail(GoalError::io(&root_path.display().to_string(), "open", &e)),
        };
        let opts = WorkspaceOptions {
            root_path: Some(&root_path),
            ..opts
        };
        let ws = match Workspace::open(amb, dir, &opts) {
            Ok(ws) => ws,
            Err(WorkspaceError::RulesFile { path, error }) => {
                return fail(GoalError::from(crate::rules::RulesError {
                    file: path.display().to_string(),
                    pointer: String::new(),
                    problem: format!("cannot read the rules file: {error}"),
                }));
            }
            Err(WorkspaceError::UserConfig(e) | WorkspaceError::Rules(e)) => return fail(e.into()),
        };
        let found = match ws.profile(profile) {
            Ok(p) => Ok(p),
            Err(ProfileError::Rules(e)) => return fail(e.into()),
            Err(unknown) => Err(unknown),
        };
        // A profile whose foreign tool keeps its state in the directory it
        // runs in works on the current directory, with that directory's
        // rules, as the hooks do with the payload's `cwd`.
        let here = Path::new(".");
        let cwd_root = found
            .as_ref()
            .is_ok_and(|p| p.compat.project_root == ProjectRoot::Cwd);
        if cwd_root && root_path != here {
            root_path = here.to_path_buf();
            continue;
        }
        break (ws, found);
    };
    let p = match profiles {
        Ok(p) => p,
        Err(e) => return fail(GoalError::from(e.into_rules_error())),
    };
    let display = p.display_name.clone();
    let fail = |e: GoalError| Outcome::Error(e, display.clone());
    let explicit = match globals.one(&p.session.flag) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let lock_timeout_ms = match lock_timeout(&globals, amb) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let sink = crate::goals::diagnostics::Sink::of(amb, &ws);
    let (root, rules) = ws.into_parts();
    let engine = match Engine::open(
        amb,
        (root, &root_path),
        &rules,
        profile,
        explicit,
        lock_timeout_ms,
        sink,
    ) {
        Ok(e) => e,
        Err(e) => return fail(e),
    };
    let head = match head {
        None | Some("help" | "--help" | "-h") => {
            return Outcome::Plain(crate::goals::handoff::help(&engine), 0);
        }
        Some(h) => p.compat.subcommand_aliases.get(h).map_or(h, String::as_str),
    };
    if !SUBCOMMANDS.contains(&head) {
        // Exit 1 like every goal-engine error (docs/engine.md#ge-4).
        let guess = super::did_you_mean(head, SUBCOMMANDS.iter().copied());
        if rest.iter().any(|t| t == "--json") {
            let hint = guess
                .map(|g| format!(" Did you mean `{g}`?"))
                .unwrap_or_default();
            return fail(GoalError::new(
                ErrorKind::SubcommandUnknown {
                    command: head.to_owned(),
                },
                format!("Unknown {display} subcommand: {head}.{hint}"),
            ));
        }
        let hint = guess
            .map(|g| format!("; did you mean `{g}`?"))
            .unwrap_or_default();
        return Outcome::Unknown {
            message: format!("[{display}] unknown subcommand `{head}`{hint}"),
            help: crate::goals::handoff::help(&engine),
        };
    }
    let env = |k: &str| ambient::var(amb, k);
    let worker = crate::goals::team::env_marker(&engine.profile.team.worker_env, &env);
    if let Some(marker) = &worker
        && !crate::goals::team::worker_may_run(head, rest)
    {
        return fail(crate::goals::team::forbidden(&engine.profile, head, marker));
    }
    // The read-only forms a worker may run are the ones that need no
    // session authority either.
    if !crate::goals::team::worker_may_run(head, rest)
        && let Err(e) = crate::goals::authority::check(&engine, head, &env, &|id| {
            session_bound_above(amb, &engine, id)
        })
    {
        return fail(e);
    }
    match commands::run(&engine, head, rest, io, worker.as_deref()) {
        Ok(mut r) => {
            r.warnings.extend(relaxation_warnings(&rules));
            if let Some(aliases) = engine.profile.compat.output_aliases.get(head) {
                r.body.alias(aliases);
            }
            Outcome::Reply(r)
        }
        Err(e) => fail(e),
    }
}

/// Whether a session pointer above the project directory binds `id` to a
/// directory holding it (`compat/sessionAuthority`).
fn session_bound_above(amb: &dyn Ambient, engine: &Engine, id: &str) -> bool {
    let Some(a) = &engine.profile.compat.session_authority else {
        return false;
    };
    let Some(project) = engine
        .root_abs()
        .and_then(|r| amb.canonicalize(Path::new(r)).ok())
    else {
        return false;
    };
    crate::goals::authority::bound_above(
        &project,
        &a.pointer,
        &a.id_key,
        id,
        &|p| ambient::read_file(amb, p, 64 * 1024).ok(),
        &|p| amb.canonicalize(p).ok(),
    )
}

/// `RULES_RELAXATION_IGNORED` warnings: repository values that would relax
/// policy and were ignored (docs/threat-model.md#i9).
pub(crate) fn relaxation_warnings(rules: &RuleSet) -> Vec<Value> {
    rules
        .relaxations()
        .iter()
        .map(|r| {
            serde_json::json!({
                "code": "RULES_RELAXATION_IGNORED",
                "message": format!(
                    "{}: {} ({}) was ignored: {}. Relax it in the user's rules file or with --rules.",
                    crate::rules::REPO_OVERRIDE, r.pointer, r.direction, r.why
                ),
                "file": crate::rules::REPO_OVERRIDE,
                "pointer": r.pointer,
            })
        })
        .collect()
}

/// The engine's diagnostics target: the per-user state of the workspace at
/// the current directory (docs/threat-model.md#tm-3), never the workspace itself.
fn diagnostics_sink(amb: &dyn Ambient) -> crate::goals::diagnostics::Sink {
    crate::goals::diagnostics::Sink::at(amb, &super::find_root(amb))
}

fn lock_timeout(globals: &args::Args, amb: &dyn Ambient) -> Result<Option<u64>, GoalError> {
    let bad = |flag: &str, v: &str| {
        GoalError::new(
            ErrorKind::ArgumentMissing {
                flag: Some(flag.to_owned()),
            },
            format!("Invalid {flag} {v:?}; expected a whole number of milliseconds."),
        )
    };
    if let Some(v) = globals.one("--lock-timeout-ms")? {
        let v = v.unwrap_or_default();
        return v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| bad("--lock-timeout-ms", v));
    }
    match ambient::var(amb, "EVIDENCE_GATE_LOCK_TIMEOUT_MS") {
        Some(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| bad("EVIDENCE_GATE_LOCK_TIMEOUT_MS", &v)),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goals::plan::ulw_loop_plan as plan;

    /// The routing table the build compiles is the embedded profiles'
    /// routing view: every embedded profile file, each field as decoded
    /// from its text (a profile file added or changed without a rebuild,
    /// or missing from the embedded list, fails here).
    #[test]
    fn the_compiled_route_table_is_the_embedded_profiles() {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Decoded {
            name: String,
            display_name: String,
            invocation_names: Vec<String>,
            parent_commands: Vec<String>,
            #[serde(default)]
            compat: Value,
        }
        let mut decoded: Vec<Decoded> = crate::rules::EMBEDDED
            .iter()
            .filter(|e| e.mount.starts_with("/profiles/"))
            .map(|e| match e.content {
                crate::rules::Content::Json(text) => serde_json::from_str(text).unwrap(),
                crate::rules::Content::Text(_) => panic!("{}: a profile is JSON", e.file),
            })
            .collect();
        decoded.sort_by(|a, b| a.name.cmp(&b.name));
        let mut table: Vec<&RouteInfo> = embedded_profiles().iter().collect();
        table.sort_by_key(|r| r.name);
        assert_eq!(table.len(), decoded.len());
        for (r, d) in table.iter().zip(&decoded) {
            assert_eq!(r.name, d.name);
            assert_eq!(r.display_name, d.display_name);
            assert_eq!(r.invocation_names, d.invocation_names.as_slice());
            assert_eq!(r.parent_commands, d.parent_commands.as_slice());
            assert_eq!(
                r.subcommand_word,
                d.compat.get("subcommandWord").and_then(Value::as_str)
            );
        }
        // Routing does not depend on the table's order: no name, multi-call
        // name or parent command word selects two profiles.
        let mut owner: std::collections::BTreeMap<&str, &str> = Default::default();
        for r in &table {
            for w in std::iter::once(r.name).chain(r.invocation_names.iter().copied()) {
                let first = *owner.entry(w).or_insert(r.name);
                assert_eq!(first, r.name, "`{w}` names two profiles");
            }
        }
        for r in &table {
            for other in &table {
                if r.name != other.name {
                    assert!(
                        r.parent_commands
                            .iter()
                            .all(|c| !other.parent_commands.contains(c)
                                || r.subcommand_word.is_some()
                                || other.subcommand_word.is_some()),
                        "{} and {} share a parent command",
                        r.name,
                        other.name
                    );
                }
            }
        }
        assert_eq!(
            route(&["omo".into(), "ulw-loop".into(), "status".into()]),
            Some(("ulw-loop".to_owned(), vec!["status".to_owned()]))
        );
        assert_eq!(
            route(&["omx".into(), "ultragoal".into(), "status".into()]),
            Some(("omx".to_owned(), vec!["status".to_owned()]))
        );
    }

    /// A plan printed from the bytes a commit wrote is byte for byte the
    /// plan serialised in place, wherever it stands in the answer, whatever
    /// the other members hold (the placeholder's text included).
    #[test]
    fn a_plan_printed_from_its_file_bytes_equals_the_serialised_answer() {
        let text = r#"{"version":1,"lastMutation":{"revision":2,"fromSeq":1,"entries":[{"m":"a\nb"}]},"z":{"a":[],"b":{},"c":[1,{"d":"x\ny"}]},"goals":[{"id":"G1","title":"t \"q\" é","objective":"o","status":"pending","successCriteria":[{"id":"C1","status":"pending"}]}]}"#;
        // The plan from the bytes a commit wrote (`from_file`), or serialised.
        let answer = |from_file: bool, first: bool, warnings: &[Value]| {
            let mut p = plan(text);
            if from_file {
                // In pieces, as a commit keeps it: the body's text and the
                // `lastMutation` member between its members.
                let file = crate::goals::plan::BodyText::of(p.doc()).file(p.doc());
                assert_eq!(file.to_vec(), p.encode());
                p.set_encoded(file);
            }
            assert_eq!(p.encoded().is_some(), from_file);
            let mut b = Body::default();
            b.insert(
                "before",
                json!({"k": ["v", {"\u{1}evidence-gate plan": 1}]}),
            );
            if first {
                b.plan_first(p);
            } else {
                b.plan(p);
            }
            b.insert(
                "after",
                json!("\u{1}evidence-gate plan 0000000000000000\u{1}"),
            );
            Envelope::to_pretty(true, &b, warnings)
        };
        let warnings = [json!({"code": "W", "message": "m"})];
        for first in [true, false] {
            for w in [&[][..], &warnings[..]] {
                let (a, b) = (answer(true, first, w), answer(false, first, w));
                assert_eq!(String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
            }
        }
        // A change after the write drops the bytes: the plan is serialised.
        let mut p = plan(text);
        let file = crate::goals::plan::BodyText::of(p.doc()).file(p.doc());
        p.set_encoded(file);
        p.set("revision", json!(9));
        assert!(p.encoded().is_none());
    }
}

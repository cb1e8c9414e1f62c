//! `evidence-gate init` (docs/hook-contracts.md#h-7): renders, and with `--write`
//! merges, the host wiring for the hooks of this build.

mod agy;
pub(crate) mod codex_toml;
pub(crate) mod wiring;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::ambient::{self, Ambient};
use crate::hooks::host::Host;
use crate::store::{self, Durability};
use crate::workspace::{OnError, RepoRules, Workspace, WorkspaceError, WorkspaceOptions};
use wiring::{Binary, Row};

/// Where the wiring goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The repository's configuration.
    Project,
    /// The user's configuration.
    User,
    /// Claude Code's `settings.local.json`.
    Local,
    /// A plugin's `hooks/hooks.json` (the current directory is the plugin root).
    Plugin,
}

impl Scope {
    /// The `--scope` value.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
            Scope::Local => "local",
            Scope::Plugin => "plugin",
        }
    }

    /// Parses a `--scope` value.
    pub(crate) fn from_name(s: &str) -> Option<Scope> {
        match s {
            "project" => Some(Scope::Project),
            "user" => Some(Scope::User),
            "local" => Some(Scope::Local),
            "plugin" => Some(Scope::Plugin),
            _ => None,
        }
    }
}

/// `init` options.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// The host.
    pub host: Host,
    /// `--write` (else print).
    pub write: bool,
    /// `--scope`.
    pub scope: Scope,
    /// `--binary`.
    pub binary: Option<String>,
    /// `--replace-node-hooks`.
    pub replace_node_hooks: bool,
    /// `--rules FILE`, for the matchers.
    pub rules: Option<PathBuf>,
    /// `--profile` of the goal-loop hooks (`auto`, `ulw-loop`, `ultragoal`).
    pub profile: String,
    /// `--with-ultrawork`.
    pub with_ultrawork: bool,
    /// `--team-guard` (Claude Code has it on by default).
    pub team_guard: bool,
    /// `--only`: wire only these events (hook names such as
    /// `subagent-stop`, or host event names such as `SubagentStop`); empty
    /// wires every event the host supports.
    pub only: Vec<String>,
}

/// One file `init` printed or wrote.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FileOut {
    /// Display path (`.codex/hooks.json`, `~/.claude/settings.json`).
    pub path: String,
    /// `print`, `create`, `update` or `unchanged`.
    pub action: &'static str,
    /// The full content.
    pub content: String,
}

/// The result of a successful `init`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Report {
    /// Always true here.
    pub ok: bool,
    /// The host.
    pub host: Host,
    /// Files printed or written.
    pub files: Vec<FileOut>,
    /// Notes for the user.
    pub notes: Vec<String>,
}

/// Why `init` did not finish.
#[derive(Debug, Clone)]
pub(crate) enum Error {
    /// Bad options (exit 2).
    Usage(String),
    /// A refusal with an `INIT_*` code (exit 1).
    Refused {
        /// `INIT_CONFIG_INVALID`, `INIT_BINARY_UNRESOLVED`.
        code: &'static str,
        /// One sentence.
        message: String,
    },
    /// An I/O error (exit 2).
    Io(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    Workspace,
    Home,
    /// Codex's home: `$CODEX_HOME` when set (absolute), else `~/.codex`;
    /// Codex reads its user hooks and config only there.
    CodexHome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    HooksJson,
    CodexToml,
}

#[derive(Debug, Clone, Copy)]
struct Target {
    base: Base,
    rel: &'static str,
    kind: Kind,
}

/// The hook wiring files `init` writes inside a workspace (every host and
/// scope), repo-relative: `verify-evidence --base` reports a change to any
/// of them (`WIRING_CHANGED`).
pub(crate) fn workspace_wiring_files() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for host in Host::NAMED {
        for scope in [Scope::Project, Scope::Local, Scope::Plugin, Scope::User] {
            for t in targets(*host, scope).unwrap_or_default() {
                if t.base == Base::Workspace && !out.contains(&t.rel) {
                    out.push(t.rel);
                }
            }
        }
    }
    out
}

fn targets(host: Host, scope: Scope) -> Result<Vec<Target>, Error> {
    targets_of(host, scope).ok_or_else(|| {
        Error::Usage(format!(
            "scope `{}` is not available for {}; use {}",
            scope.name(),
            host.name(),
            [Scope::Project, Scope::User, Scope::Local, Scope::Plugin]
                .into_iter()
                .filter(|s| targets_of(host, *s).is_some())
                .map(Scope::name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

fn targets_of(host: Host, scope: Scope) -> Option<Vec<Target>> {
    use Base::{CodexHome, Home, Workspace};
    let t = |base, rel, kind| Target { base, rel, kind };
    let list = match (host, scope) {
        (Host::Codex, Scope::Project) => vec![
            t(Workspace, ".codex/hooks.json", Kind::HooksJson),
            t(Workspace, ".codex/config.toml", Kind::CodexToml),
        ],
        (Host::Codex, Scope::User) => vec![
            t(CodexHome, "hooks.json", Kind::HooksJson),
            t(CodexHome, "config.toml", Kind::CodexToml),
        ],
        (Host::Codex, Scope::Plugin) => vec![
            t(Workspace, "hooks/hooks.json", Kind::HooksJson),
            t(CodexHome, "config.toml", Kind::CodexToml),
        ],
        (Host::ClaudeCode, Scope::Plugin) => {
            vec![t(Workspace, "hooks/hooks.json", Kind::HooksJson)]
        }
        (Host::ClaudeCode, Scope::Project) => {
            vec![t(Workspace, ".claude/settings.json", Kind::HooksJson)]
        }
        (Host::ClaudeCode, Scope::Local) => {
            vec![t(Workspace, ".claude/settings.local.json", Kind::HooksJson)]
        }
        (Host::ClaudeCode, Scope::User) => vec![t(Home, ".claude/settings.json", Kind::HooksJson)],
        (Host::Gemini, Scope::Project) => {
            vec![t(Workspace, ".gemini/settings.json", Kind::HooksJson)]
        }
        (Host::Gemini, Scope::User) => vec![t(Home, ".gemini/settings.json", Kind::HooksJson)],
        (Host::Agy, Scope::Project) => vec![t(Workspace, ".agents/hooks.json", Kind::HooksJson)],
        (Host::Agy, Scope::User) => vec![t(Home, ".gemini/config/hooks.json", Kind::HooksJson)],
        _ => return None,
    };
    Some(list)
}

fn resolve_binary(
    o: &Options,
    amb: &dyn Ambient,
    notes: &mut Vec<String>,
) -> Result<Binary, Error> {
    if o.scope == Scope::Plugin {
        let var = if o.host == Host::Codex {
            "PLUGIN_ROOT"
        } else {
            "CLAUDE_PLUGIN_ROOT"
        };
        notes.push(format!(
            "the plugin ships the binary as ${{{var}}}/bin/evidence-gate"
        ));
        return Ok(Binary::PluginRoot(var));
    }
    let unresolved = |message: String| Error::Refused {
        code: "INIT_BINARY_UNRESOLVED",
        message,
    };
    let path = match &o.binary {
        Some(b) if !b.contains('/') && !b.contains('\\') => {
            notes.push(format!(
                "`{b}` is resolved on PATH when the host runs the hook"
            ));
            return Ok(Binary::Bare(b.clone()));
        }
        Some(b) => {
            let p = PathBuf::from(b);
            if p.is_absolute() {
                p
            } else {
                amb.current_dir()
                    .map_err(|e| Error::Io(e.to_string()))?
                    .join(p)
            }
        }
        // Project wiring is committed: it names the binary as found on
        // PATH, never this machine's path to it.
        None if o.scope == Scope::Project => return Ok(portable(amb, notes)),
        None => amb
            .current_exe()
            .map_err(|e| unresolved(format!("the running executable cannot be named: {e}")))?,
    };
    if !is_executable(amb, &path) {
        return Err(unresolved(format!(
            "`{}` is not an existing executable file",
            path.display()
        )));
    }
    let text = path
        .to_str()
        .ok_or_else(|| unresolved(format!("`{}` is not valid UTF-8", path.display())))?;
    if text.contains("/target/debug/") || text.contains("/target/release/") {
        notes.push(format!(
            "warning: `{text}` is a build-output path; a `cargo clean` breaks the wiring (install the binary, or pass --binary)"
        ));
    }
    Ok(Binary::Path(text.to_owned()))
}

/// The binary's name on PATH.
const PORTABLE_NAME: &str = "evidence-gate";

/// The command word of project-scoped wiring: `evidence-gate`, looked up on
/// PATH when the host runs the hook. A note says when PATH finds no such
/// executable, or another one than the running binary.
fn portable(amb: &dyn Ambient, notes: &mut Vec<String>) -> Binary {
    match find_on_path(amb, PORTABLE_NAME) {
        None => notes.push(format!(
            "warning: `{PORTABLE_NAME}` is not on PATH, so these hooks cannot start until it is: install it (`cargo install --locked --path .` in a checkout, or copy the binary into a PATH directory), or rerun with `--binary PATH` to wire an absolute path (for this machine only; not for committed files)"
        )),
        Some(found) => {
            let me = amb.current_exe().and_then(|p| amb.canonicalize(&p)).ok();
            if me.is_some() && amb.canonicalize(&found).ok() != me {
                notes.push(format!(
                    "`{PORTABLE_NAME}` on PATH is {}, not the running binary; the hooks run the one on PATH",
                    found.display()
                ));
            }
        }
    }
    notes.push(format!(
        "the commands name `{PORTABLE_NAME}` as found on PATH, so the committed files work on every machine that has it installed (`--binary PATH` wires an absolute path instead)"
    ));
    Binary::Bare(PORTABLE_NAME.to_owned())
}

/// The first executable `name` in a PATH directory.
pub(crate) fn find_on_path(amb: &dyn Ambient, name: &str) -> Option<PathBuf> {
    let file = if cfg!(windows) {
        format!("{name}.exe")
    } else {
        name.to_owned()
    };
    let path = amb.var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(&file))
        .find(|c| is_executable(amb, c))
}

/// Keeps the rows `only` names (hook names or host event names, case,
/// `-` and `_` ignored); a name the host does not wire is a usage error
/// that lists what it does wire.
pub(crate) fn select_rows(host: Host, rows: Vec<Row>, only: &[String]) -> Result<Vec<Row>, String> {
    if only.is_empty() {
        return Ok(rows);
    }
    let norm = |s: &str| s.replace(['-', '_'], "").to_ascii_lowercase();
    for want in only {
        let w = norm(want);
        if !rows
            .iter()
            .any(|r| norm(r.event.name()) == w || norm(r.host_event) == w)
        {
            let mut names: Vec<&str> = rows.iter().map(|r| r.event.name()).collect();
            names.dedup();
            return Err(format!(
                "--only `{want}`: {} wires no such event; it wires {} (hook names or the host's event names)",
                host.name(),
                names.join(", ")
            ));
        }
    }
    Ok(rows
        .into_iter()
        .filter(|r| {
            only.iter()
                .any(|w| norm(w) == norm(r.event.name()) || norm(w) == norm(r.host_event))
        })
        .collect())
}

fn is_executable(amb: &dyn Ambient, path: &Path) -> bool {
    // Installs often link the binary (`~/.local/bin/evidence-gate -> …`).
    let Ok(path) = ambient::resolve_leaf_links(amb, path) else {
        return false;
    };
    let Some((parent, name)) = ambient::split(&path) else {
        return false;
    };
    let Ok(dir) = amb.open_dir(&parent) else {
        return false;
    };
    let Ok(meta) = dir.metadata(&name) else {
        return false;
    };
    #[cfg(unix)]
    {
        use cap_std::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

fn shape(o: &Options, amb: &dyn Ambient) -> Result<wiring::Shape, Error> {
    let root = amb
        .current_dir()
        .and_then(|d| amb.open_dir(&d))
        .map_err(|e| Error::Io(e.to_string()))?;
    let opts = WorkspaceOptions {
        rules_file: o.rules.as_deref(),
        user_config: true,
        repo_rules: RepoRules::Tighten,
        on_error: OnError::Fail,
        root_path: None,
    };
    let ws = Workspace::open(amb, root, &opts).map_err(|e| match e {
        WorkspaceError::RulesFile { path, error } => {
            Error::Usage(format!("--rules {}: {error}", path.display()))
        }
        WorkspaceError::UserConfig(e) | WorkspaceError::Rules(e) => Error::Usage(e.to_string()),
    })?;
    let rules = ws.rules();
    wiring::Shape::from_rules(rules, &o.profile, o.with_ultrawork, o.team_guard)
        .map_err(|e| Error::Usage(e.to_string()))
}

/// Event keys start with an upper-case letter (`AfterAgent`, `Stop`);
/// Gemini's switches beside them (`enabled`, `disabled`) do not.
fn is_event_name(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_uppercase())
}

/// The rendered document for a JSON target, merged into `existing` when given.
fn render_json(
    host: Host,
    hooks: &Map<String, Value>,
    existing: Option<Value>,
    replace_node: bool,
    notes: &mut Vec<String>,
    display: &str,
) -> Result<Value, Error> {
    let invalid = |why: &str| Error::Refused {
        code: "INIT_CONFIG_INVALID",
        message: format!("{display}: {why}; the file was left untouched"),
    };
    let mut doc = match existing {
        None => Value::Object(Map::new()),
        Some(Value::Object(m)) => Value::Object(m),
        Some(_) => return Err(invalid("not a JSON object")),
    };
    let obj = doc.as_object_mut().expect("object");
    if host == Host::Codex {
        let extra: Vec<&String> = obj
            .keys()
            .filter(|k| *k != "hooks" && *k != "description")
            .collect();
        if !extra.is_empty() {
            notes.push(format!(
                "warning: {display} has root keys other than `hooks` and `description` ({}); Codex refuses such files",
                extra.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let slot = obj
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(events) = slot else {
        return Err(invalid("`hooks` is not an object"));
    };
    let mut emptied = Vec::new();
    for (event, groups) in events.iter_mut() {
        let groups = match groups {
            Value::Array(groups) => groups,
            // Gemini keeps hook-system switches beside the events
            // (`hooks.enabled`, `hooks.notifications`): settings, not events.
            _ if host == Host::Gemini && !is_event_name(event) => continue,
            _ => return Err(invalid(&format!("`hooks.{event}` is not an array"))),
        };
        let had = groups.len();
        for g in groups.iter_mut() {
            let Some(handlers) = g.get_mut("hooks").and_then(Value::as_array_mut) else {
                continue;
            };
            let before = handlers.len();
            for h in handlers.iter() {
                if wiring::is_node_predecessor(h) {
                    if replace_node {
                        notes.push(format!("removed the Node predecessor hook on {event}"));
                    } else {
                        notes.push(format!(
                            "warning: a Node predecessor gate is wired on {event}; two gates double every block (rerun with --replace-node-hooks to remove it)"
                        ));
                    }
                }
            }
            handlers.retain(|h| {
                !(wiring::is_ours(h) || (replace_node && wiring::is_node_predecessor(h)))
            });
            if handlers.is_empty() && before > 0 {
                *g = Value::Null;
            }
        }
        groups.retain(|g| !g.is_null());
        if had > 0 && groups.is_empty() {
            emptied.push(event.clone());
        }
    }
    events.retain(|event, _| !emptied.contains(event));
    for (event, groups) in hooks {
        let list = events
            .entry(event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let (Value::Array(list), Value::Array(new)) = (list, groups) {
            list.extend(new.iter().cloned());
        }
    }
    if host == Host::Gemini {
        let tools = obj
            .entry("tools")
            .or_insert_with(|| Value::Object(Map::new()));
        match tools {
            Value::Object(t) => {
                t.insert("enableHooks".into(), json!(true));
            }
            _ => return Err(invalid("`tools` is not an object")),
        }
    }
    Ok(doc)
}

/// Runs `init`.
pub(crate) fn run(o: &Options, amb: &dyn Ambient) -> Result<Report, Error> {
    let mut notes = Vec::new();
    let targets = targets(o.host, o.scope)?;
    let binary = resolve_binary(o, amb, &mut notes)?;
    let rows = select_rows(o.host, wiring::rows(o.host, &shape(o, amb)?), &o.only)
        .map_err(Error::Usage)?;
    // agy's argument-free links live in the user's configuration only: the
    // repository never receives a binary.
    let binary = if o.host == Host::Agy && o.write && o.scope == Scope::User {
        agy::links(o, amb, &binary, &rows, &mut notes)?
    } else {
        agy::Commands::Shared(binary)
    };
    let hooks = binary.hooks_object(o.host, &rows);
    match o.host {
        Host::Gemini | Host::Agy => notes.push(format!(
            "{} has no SubagentStop event, so the worker evidence gate is not wired there; `verify-evidence` in CI is the backstop",
            o.host.name()
        )),
        Host::Codex if !o.team_guard => notes.push(
            "the team boundary guard for workers' shell commands is off on Codex (each guarded shell call pays a hook start); add --team-guard to wire it".into(),
        ),
        _ => {}
    }
    match (o.host, o.scope, o.write) {
        (Host::Agy, Scope::User, false) => notes.push("with --write, the agy commands point at argument-free links in ~/.gemini/config/bin/ (evidence-gate-hook-<event>), for builds that run only a bare executable path".into()),
        (Host::Agy, Scope::Project, _) => notes.push("agy: the project commands run `hook <event> --host agy …` and no binary is placed in the repository; an agy build that runs only an argument-free executable path needs the user wiring instead (`evidence-gate init --host agy --scope user --write` links evidence-gate-hook-<event> under ~/.gemini/config/bin)".into()),
        _ => {}
    }
    let home = || {
        ambient::var(amb, "HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .ok_or_else(|| Error::Usage("user scope needs HOME".into()))
    };
    let cwd = amb.current_dir().map_err(|e| Error::Io(e.to_string()))?;
    let mut files = Vec::new();
    for t in targets {
        let (base, prefix) = match t.base {
            Base::Workspace => (cwd.clone(), String::new()),
            Base::Home => (home()?, "~/".to_owned()),
            Base::CodexHome => match ambient::var(amb, "CODEX_HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
            {
                Some(h) => (h, "$CODEX_HOME/".to_owned()),
                None => (home()?.join(".codex"), "~/.codex/".to_owned()),
            },
        };
        let display = format!("{prefix}{}", t.rel);
        let abs = base.join(t.rel);
        let existing = if o.write {
            read_existing(amb, &abs)?
        } else {
            None
        };
        let content = match t.kind {
            Kind::CodexToml => {
                let text = match &existing {
                    Some(b) => String::from_utf8(b.clone()).map_err(|_| Error::Refused {
                        code: "INIT_CONFIG_INVALID",
                        message: format!("{display}: not UTF-8; the file was left untouched"),
                    })?,
                    None => String::new(),
                };
                codex_toml::edit(&text, o.scope == Scope::Plugin).map_err(|why| {
                    Error::Refused {
                        code: "INIT_CONFIG_INVALID",
                        message: format!(
                            "{display}: {why}; the file was left untouched (fix it, then rerun `evidence-gate init`)"
                        ),
                    }
                })?
            }
            Kind::HooksJson => {
                let parsed = match &existing {
                    Some(b) => Some(crate::json::parse_strict(b).map_err(|e| Error::Refused {
                        code: "INIT_CONFIG_INVALID",
                        message: format!(
                            "{display}: not valid JSON ({e}); the file was left untouched"
                        ),
                    })?),
                    None => None,
                };
                let doc = render_json(
                    o.host,
                    &hooks,
                    parsed,
                    o.replace_node_hooks,
                    &mut notes,
                    &display,
                )?;
                let mut s = serde_json::to_string_pretty(&doc).expect("serialises");
                s.push('\n');
                s
            }
        };
        let action = if !o.write {
            "print"
        } else {
            write_file(amb, &abs, existing.as_deref(), &content)?
        };
        files.push(FileOut {
            path: display,
            action,
            content,
        });
    }
    if o.host == Host::Codex {
        if o.scope == Scope::Project {
            notes.push(format!(
                "Codex loads a project's .codex/ (these hooks included) only when the project is trusted: `[projects.\"{}\"]` with `trust_level = \"trusted\"` in $CODEX_HOME/config.toml (default ~/.codex/config.toml)",
                cwd.display()
            ));
        }
        if o.scope == Scope::Plugin {
            notes.push(
                "Codex runs plugin hooks only from an installed, enabled plugin: give this directory a `.codex-plugin/plugin.json` and `bin/evidence-gate`, list it in a marketplace, then `codex plugin marketplace add <marketplace dir>` and `codex plugin add <name>@<marketplace>`; a plugin hook is trusted by `trusted_hash` and `trusted_content_hash` (the bundle's hash, so a new bin/evidence-gate needs trusting again)".into(),
            );
        }
        notes.push(
            "Codex runs a hook only after it is trusted: review it in `/hooks`; `codex exec` skips untrusted hooks silently, and a hook changed by a later `init --write` (another --binary, profile or flag) must be trusted again".into(),
        );
    }
    if o.host == Host::Gemini {
        notes.push("Gemini runs hooks while `hooksConfig.enabled` is not false (the default); headless runs in an untrusted folder need GEMINI_CLI_TRUST_WORKSPACE=true".into());
    }
    Ok(Report {
        ok: true,
        host: o.host,
        files,
        notes,
    })
}

fn read_existing(amb: &dyn Ambient, abs: &Path) -> Result<Option<Vec<u8>>, Error> {
    match ambient::read_file(amb, abs, 16 * 1024 * 1024) {
        Ok(b) => Ok(Some(b)),
        Err(ambient::ReadError::NotFound) => Ok(None),
        Err(e) => Err(Error::Io(format!("{}: {e}", abs.display()))),
    }
}

fn write_file(
    amb: &dyn Ambient,
    abs: &Path,
    existing: Option<&[u8]>,
    content: &str,
) -> Result<&'static str, Error> {
    if existing == Some(content.as_bytes()) {
        return Ok("unchanged");
    }
    let io = |e: std::io::Error| Error::Io(format!("{}: {e}", abs.display()));
    // A symlinked configuration (dotfile managers) is written through, so
    // the link stays a link.
    let target = ambient::resolve_leaf_links(amb, abs).map_err(io)?;
    let (parent, name) = ambient::split(&target).ok_or_else(|| Error::Io("no file name".into()))?;
    amb.create_dir_all(&parent).map_err(io)?;
    let dir = amb.open_dir(&parent).map_err(io)?;
    let name = name
        .to_str()
        .ok_or_else(|| Error::Io("non-UTF-8 file name".into()))?;
    if let Some(old) = existing {
        let bak = format!("{name}.evidence-gate.bak");
        if !dir.exists(&bak) {
            store::atomic_replace(&dir, &bak, old, Durability::Synced).map_err(io)?;
        }
    }
    store::atomic_replace(&dir, name, content.as_bytes(), Durability::Synced).map_err(io)?;
    Ok(if existing.is_some() {
        "update"
    } else {
        "create"
    })
}

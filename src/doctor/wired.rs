//! Checks of the host configuration files: wiring, matchers, binaries, Node
//! predecessors, Codex features and trust, Gemini enablement.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Check, Places, Status};
use crate::ambient::{self, Ambient};
use crate::hooks::event::HookEvent;
use crate::hooks::host::Host;
use crate::init::codex_toml;
use crate::init::wiring::{self, Row, Shape, first_token};

/// One configuration file that exists.
struct Config {
    display: String,
    doc: Value,
}

fn config_files(host: Host) -> &'static [(bool, &'static str)] {
    // (in home?, relative path)
    match host {
        Host::Codex => &[(false, ".codex/hooks.json"), (true, ".codex/hooks.json")],
        Host::ClaudeCode => &[
            (false, ".claude/settings.json"),
            (false, ".claude/settings.local.json"),
            (true, ".claude/settings.json"),
            (false, "hooks/hooks.json"),
        ],
        Host::Gemini => &[
            (false, ".gemini/settings.json"),
            (true, ".gemini/settings.json"),
        ],
        Host::Agy => &[
            (false, ".agents/hooks.json"),
            (true, ".gemini/config/hooks.json"),
        ],
        Host::Common => &[],
    }
}

fn load(amb: &dyn Ambient, places: &Places, host: Host, checks: &mut Vec<Check>) -> Vec<Config> {
    let mut out = Vec::new();
    for (home, rel) in config_files(host) {
        let (base, prefix) = if *home {
            match &places.home {
                Some(h) => (h.clone(), "~/"),
                None => continue,
            }
        } else {
            (places.workspace.clone(), "")
        };
        let mut display = format!("{prefix}{rel}");
        let mut file = base.join(rel);
        // Codex reads its user hooks from $CODEX_HOME, not always ~/.codex.
        if host == Host::Codex
            && *home
            && let Some(ch) = codex_home(amb, places)
            && ch != base.join(".codex")
        {
            display = format!("{}/hooks.json", ch.display());
            file = ch.join("hooks.json");
        }
        match ambient::read_file(amb, &file, 16 * 1024 * 1024) {
            Ok(bytes) => match crate::json::parse_strict(&bytes) {
                Ok(doc) => match ignored_by_host(host, &doc) {
                    Some(why) => checks.push(
                        Check::new(
                            format!("hooks.wired.{}", host.name()),
                            Status::Fail,
                            format!("{display}: {why}, so none of its hooks run"),
                        )
                        .hint(format!("edit {display}; then rerun `evidence-gate doctor`")),
                    ),
                    None => out.push(Config { display, doc }),
                },
                Err(e) => checks.push(Check::new(
                    format!("hooks.wired.{}", host.name()),
                    Status::Fail,
                    format!("{display} is not valid JSON: {e}"),
                )),
            },
            Err(ambient::ReadError::NotFound) => {}
            Err(e) => checks.push(Check::new(
                format!("hooks.wired.{}", host.name()),
                Status::Fail,
                format!("{display}: {e}"),
            )),
        }
    }
    out
}

/// Why the host runs no hook of a configuration file at all: Codex refuses
/// a hooks file with root keys other than `hooks` and `description`, and
/// Claude Code's `disableAllHooks` turns every hook off.
fn ignored_by_host(host: Host, doc: &Value) -> Option<String> {
    let obj = doc.as_object()?;
    match host {
        Host::Codex => {
            let extra: Vec<&str> = obj
                .keys()
                .map(String::as_str)
                .filter(|k| !matches!(*k, "hooks" | "description"))
                .collect();
            (!extra.is_empty()).then(|| {
                format!(
                    "Codex refuses a hooks file with root keys other than `hooks` and `description` ({})",
                    extra.join(", ")
                )
            })
        }
        Host::ClaudeCode => (obj.get("disableAllHooks") == Some(&Value::Bool(true)))
            .then(|| "`disableAllHooks` is true".to_owned()),
        _ => None,
    }
}

/// `(event, matcher, handler)` for every handler in a configuration.
fn handlers(doc: &Value) -> Vec<(String, Option<String>, Value)> {
    let mut out = Vec::new();
    let Some(events) = doc.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, groups) in events {
        for g in groups.as_array().into_iter().flatten() {
            let matcher = g.get("matcher").and_then(Value::as_str).map(str::to_owned);
            for h in g
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.push((event.clone(), matcher.clone(), h.clone()));
            }
        }
    }
    out
}

/// Worst of two statuses.
fn worse(a: Status, b: Status) -> Status {
    match (a, b) {
        (Status::Fail, _) | (_, Status::Fail) => Status::Fail,
        (Status::Warn, _) | (_, Status::Warn) => Status::Warn,
        _ => Status::Ok,
    }
}

/// Several findings of one check id folded into one check.
struct Fold {
    id: String,
    status: Status,
    messages: Vec<String>,
    hint: Option<String>,
}

impl Fold {
    fn new(id: String) -> Fold {
        Fold {
            id,
            status: Status::Ok,
            messages: Vec::new(),
            hint: None,
        }
    }

    fn add(&mut self, c: Check) {
        self.status = worse(self.status, c.status);
        if c.status != Status::Ok || self.messages.is_empty() {
            self.messages.push(c.message);
        }
        if self.hint.is_none() {
            self.hint = c.hint;
        }
    }

    fn push(self, ok_message: String, checks: &mut Vec<Check>) {
        if self.messages.is_empty() {
            return;
        }
        let message = if self.status == Status::Ok {
            ok_message
        } else {
            self.messages
                .into_iter()
                .filter(|m| !m.is_empty())
                .collect::<Vec<_>>()
                .join("; ")
        };
        let mut c = Check::new(self.id, self.status, message);
        c.hint = self.hint;
        checks.push(c);
    }
}

pub(super) fn check_hosts(
    amb: &dyn Ambient,
    places: &Places,
    hosts: &[Host],
    shape: &Shape,
    only: &[String],
    checks: &mut Vec<Check>,
) -> Result<(), String> {
    let mut node = Vec::new();
    for host in hosts {
        let rows = crate::init::select_rows(*host, wiring::rows(*host, shape), only)?;
        let configs = load(amb, places, *host, checks);
        let wired_id = format!("hooks.wired.{}", host.name());
        let all: Vec<(String, String, Option<String>, Value)> = configs
            .iter()
            .flat_map(|c| {
                handlers(&c.doc)
                    .into_iter()
                    .map(|(e, m, h)| (c.display.clone(), e, m, h))
            })
            .collect();
        for (file, event, _, h) in &all {
            if wiring::is_node_predecessor(h) {
                node.push(format!("{file} ({event})"));
            }
        }
        let mut problems = Vec::new();
        let mut found = 0;
        let mut files = Vec::new();
        let mut matchers = Fold::new(format!("hooks.matchers.{}", host.name()));
        let mut roundtrips = Fold::new(format!("shell.roundtrip.{}", host.name()));
        let mut binaries: Vec<String> = Vec::new();
        let mut slowest = 0u128;
        for r in &rows {
            let want_host = format!("--host {}", host.name());
            let command_of =
                |h: &Value| h.get("command").and_then(Value::as_str).map(str::to_owned);
            let ours = all.iter().find(|(_, e, _, h)| {
                e == r.host_event
                    && wiring::is_ours(h)
                    && command_of(h).as_deref().and_then(wiring::subcommand_of) == Some(r.event)
            });
            let Some((file, _, matcher, h)) = ours else {
                problems.push(format!(
                    "{} (`hook {}`) is not wired",
                    r.host_event,
                    r.event.name()
                ));
                continue;
            };
            files.push(file.clone());
            let cmd = command_of(h).unwrap_or_default();
            let multi_call = first_token(&cmd).is_some_and(|t| {
                t.rsplit(['/', '\\'])
                    .next()
                    .unwrap_or(&t)
                    .starts_with("evidence-gate-hook-")
            });
            if !multi_call && !passes_host(&cmd, host.name()) {
                problems.push(format!(
                    "{}: the `hook {}` command must pass `{want_host}`",
                    r.host_event,
                    r.event.name()
                ));
                continue;
            }
            if let Some(p) = timeout_problem(*host, h.get("timeout")) {
                problems.push(format!("{} (`hook {}`): {p}", r.host_event, r.event.name()));
                continue;
            }
            found += 1;
            if let Some(c) = check_matcher(r, matcher.as_deref()) {
                matchers.add(c);
            }
            if let Some(tok) = first_token(&cmd)
                && !binaries.contains(&tok)
            {
                binaries.push(tok);
                check_binary(amb, &cmd, checks);
            }
            let (c, ms) = super::roundtrip::check(amb, *host, r, &cmd, &places.workspace);
            slowest = slowest.max(ms);
            roundtrips.add(c);
        }
        files.sort();
        files.dedup();
        let message = format!(
            "{found}/{} events wired in {}",
            rows.len(),
            if files.is_empty() {
                "no file".into()
            } else {
                files.join(", ")
            }
        );
        checks.push(if problems.is_empty() {
            Check::new(wired_id, Status::Ok, message)
        } else {
            Check::new(
                wired_id,
                Status::Fail,
                format!("{message}; {}", problems.join("; ")),
            )
            .hint(format!(
                "run `evidence-gate init --host {} --write`",
                host.name()
            ))
        });
        matchers.push(
            "every matcher compiles and equals what `init` writes from the rules".into(),
            checks,
        );
        roundtrips.push(
            format!("every wired command ran as the host runs it: exit 0, empty stdout (slowest {slowest} ms)"),
            checks,
        );
        match host {
            Host::Codex => codex_checks(amb, places, checks),
            Host::Gemini => gemini_enabled(&configs, checks),
            _ => {}
        }
    }
    checks.push(if node.is_empty() {
        Check::new("hooks.node_predecessors", Status::Ok, "no Node gate or ulw-loop hook wired beside ours")
    } else {
        Check::new("hooks.node_predecessors", Status::Warn, format!("Node predecessors wired: {}", node.join(", ")))
            .hint("two gates double every block; `evidence-gate init --write --replace-node-hooks` removes them")
    });
    Ok(())
}

/// True when `cmd` passes `--host <name>` or `--host=<name>` (the hook's
/// argument parser takes both; the last one given wins).
fn passes_host(cmd: &str, name: &str) -> bool {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let mut last = None;
    for (i, w) in words.iter().enumerate() {
        if *w == "--host" {
            last = words.get(i + 1).copied();
        } else if let Some(v) = w.strip_prefix("--host=") {
            last = Some(v);
        }
    }
    last == Some(name)
}

fn timeout_problem(host: Host, t: Option<&Value>) -> Option<String> {
    let t = t.and_then(Value::as_u64);
    let (lo, hi, unit) = if host == Host::Gemini {
        (1000, 60_000, "milliseconds")
    } else {
        (1, 60, "seconds")
    };
    match t {
        Some(v) if (lo..=hi).contains(&v) => None,
        Some(v) => Some(format!("timeout {v} is outside {lo}–{hi} {unit}")),
        None => Some(format!(
            "no timeout ({lo}–{hi} {unit}); the host default lets a stalled hook hang the session"
        )),
    }
}

fn check_matcher(r: &Row, got: Option<&str>) -> Option<Check> {
    let want = r.matcher.as_deref()?;
    let id = String::new();
    let what = format!("{} (`hook {}`)", r.host_event, r.event.name());
    Some(match got {
        Some(m) if regex::Regex::new(m).is_err() => Check::new(
            id,
            Status::Fail,
            format!("{what}: matcher `{m}` does not compile"),
        ),
        Some(m) if m == want || r.alt_matchers.iter().any(|a| a == m) => {
            Check::new(id, Status::Ok, String::new())
        }
        Some(m) if r.event == HookEvent::SubagentStop => Check::new(
            id,
            Status::Warn,
            format!("SubagentStop matcher `{m}` differs from subagent_stop.gated_agents `{want}`"),
        )
        .hint("the binary re-filters by the rules, but a narrower matcher skips gated workers"),
        Some(m) => Check::new(
            id,
            Status::Warn,
            format!(
                "{what}: matcher `{m}` differs from `{want}` (what `init` writes from the rules)"
            ),
        )
        .hint("the hook re-checks tool names itself, but a narrower matcher skips guarded calls"),
        None => Check::new(
            id,
            Status::Warn,
            format!("{what} has no matcher: the hook runs for every call (it re-filters)"),
        ),
    })
}

fn check_binary(amb: &dyn Ambient, cmd: &str, checks: &mut Vec<Check>) {
    let id = "binary.reachable";
    let Some(tok) = first_token(cmd) else {
        checks.push(Check::new(
            id,
            Status::Fail,
            "an evidence-gate command is empty",
        ));
        return;
    };
    if tok.contains("${") {
        checks.push(Check::new(
            id,
            Status::Warn,
            format!("`{tok}` is resolved by the host (plugin root); not checked here"),
        ));
        return;
    }
    let path = if tok.contains('/') {
        Some(PathBuf::from(&tok))
    } else {
        ambient::var(amb, "PATH").and_then(|p| {
            p.split(':')
                .filter(|d| !d.is_empty())
                .map(|d| Path::new(d).join(&tok))
                .find(|c| executable(amb, c))
        })
    };
    let Some(path) = path.filter(|p| executable(amb, p)) else {
        checks.push(
            Check::new(
                id,
                Status::Fail,
                format!("`{tok}` is not an existing executable"),
            )
            .hint("install evidence-gate or rerun `evidence-gate init --write --binary PATH`"),
        );
        return;
    };
    let ours = env!("CARGO_PKG_VERSION");
    let same = amb.current_exe().ok().and_then(|me| identity(amb, &me)) == identity(amb, &path);
    let version = if same {
        Some(ours.to_owned())
    } else {
        super::roundtrip::version_of(&path)
    };
    checks.push(match version {
        Some(v) if v == ours => Check::new(
            id,
            Status::Ok,
            format!("`{}` is evidence-gate {v}", path.display()),
        ),
        Some(v) => Check::new(
            id,
            Status::Warn,
            format!("`{}` is version {v}; this doctor is {ours}", path.display()),
        )
        .hint("reinstall so that the hooks and this doctor agree"),
        None => Check::new(
            id,
            Status::Fail,
            format!("`{}` does not report a version", path.display()),
        ),
    });
}

fn identity(amb: &dyn Ambient, p: &Path) -> Option<(u64, u64)> {
    use cap_fs_ext::MetadataExt;
    let p = ambient::resolve_leaf_links(amb, p).ok()?;
    let (parent, name) = ambient::split(&p)?;
    let m = amb.open_dir(&parent).ok()?.metadata(&name).ok()?;
    Some((m.dev(), m.ino()))
}

fn executable(amb: &dyn Ambient, p: &Path) -> bool {
    let Ok(p) = ambient::resolve_leaf_links(amb, p) else {
        return false;
    };
    let Some((parent, name)) = ambient::split(&p) else {
        return false;
    };
    let Ok(meta) = amb.open_dir(&parent).and_then(|d| d.metadata(&name)) else {
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

fn read_text(amb: &dyn Ambient, p: &Path) -> Option<String> {
    ambient::read_file(amb, p, 4 * 1024 * 1024)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
}

/// Codex's home: `$CODEX_HOME` when set (absolute), else `~/.codex`.
fn codex_home(amb: &dyn Ambient, places: &Places) -> Option<PathBuf> {
    ambient::var(amb, "CODEX_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| places.home.as_ref().map(|h| h.join(".codex")))
}

fn codex_checks(amb: &dyn Ambient, places: &Places, checks: &mut Vec<Check>) {
    let home = codex_home(amb, places);
    let user_config = home.as_ref().map(|h| h.join("config.toml"));
    let config_name = user_config.as_ref().map_or_else(
        || "$CODEX_HOME/config.toml".to_owned(),
        |p| p.display().to_string(),
    );
    // Parsed as TOML (a `hooks = false` inside a string is no switch); a
    // file Codex cannot parse is a failure of its own.
    let mut parse = |path: PathBuf, name: String| {
        let text = read_text(amb, &path)?;
        match codex_toml::parse(&text) {
            Ok(doc) => Some(doc),
            Err(e) => {
                checks.push(
                    Check::new(
                        "codex.config",
                        Status::Fail,
                        format!("{name} is not valid TOML: {e}"),
                    )
                    .hint(format!(
                        "fix {name} at that line; Codex does not start with it"
                    )),
                );
                None
            }
        }
    };
    let user_doc = user_config
        .clone()
        .and_then(|f| parse(f, config_name.clone()));
    let project_doc = parse(
        places.workspace.join(".codex/config.toml"),
        ".codex/config.toml".into(),
    );
    let disabled = project_doc.iter().chain(user_doc.iter()).any(|d| {
        codex_toml::feature(d, "hooks") == Some(false)
            || codex_toml::feature(d, "codex_hooks") == Some(false)
    });
    let managed_only = home
        .as_ref()
        .and_then(|h| parse(h.join("requirements.toml"), "requirements.toml".into()))
        .is_some_and(|d| codex_toml::managed_hooks_only(&d));
    checks.push(if disabled {
        Check::new(
            "codex.features",
            Status::Fail,
            "[features] hooks = false in config.toml",
        )
        .hint("set `hooks = true` under [features]")
    } else if managed_only {
        Check::new(
            "codex.features",
            Status::Fail,
            "requirements.toml allows managed hooks only; ours are skipped",
        )
    } else {
        Check::new(
            "codex.features",
            Status::Ok,
            "hooks are not disabled in config.toml",
        )
    });
    let project_hooks = places.workspace.join(".codex/hooks.json");
    let wired_in_project = read_text(amb, &project_hooks).is_some();
    if wired_in_project {
        let ws = places.workspace.display().to_string();
        checks.push(
            if user_doc
                .as_ref()
                .is_some_and(|d| codex_toml::project_trusted(d, &ws))
            {
                Check::new(
                    "codex.project_trust",
                    Status::Ok,
                    format!("{config_name} trusts this project (trust_level = \"trusted\")"),
                )
            } else {
                Check::new(
                    "codex.project_trust",
                    Status::Fail,
                    format!("{config_name} does not trust this project: Codex loads no project hooks (\"Untrusted project-local configuration is disabled\")"),
                )
                .hint(format!("add `[projects.\"{ws}\"]` with `trust_level = \"trusted\"` to {config_name} (or trust the project when Codex asks)"))
            },
        );
    }
    let mut sources = vec![TrustSource::file(project_hooks)];
    sources.extend(
        home.as_ref()
            .map(|h| TrustSource::file(h.join("hooks.json"))),
    );
    let plugins = user_doc
        .as_ref()
        .map(codex_toml::enabled_plugins)
        .unwrap_or_default();
    if let Some(h) = &home {
        sources.extend(installed_plugin_hooks(amb, h, &plugins));
    }
    let states = user_doc
        .as_ref()
        .map(codex_toml::hook_states)
        .unwrap_or_default();
    let installed_ours = sources
        .iter()
        .filter(|s| s.plugin.is_some())
        .any(|s| count_ours(amb, &s.path) > 0);
    codex_scope_checks(amb, places, home.as_deref(), installed_ours, checks);
    if let Some(check) = codex_trust(amb, &sources, &states, &config_name, &places.workspace) {
        checks.push(check);
    }
}

/// A hooks file Codex reads and how its `[hooks.state]` keys are spelled.
struct TrustSource {
    /// The file on disk.
    path: PathBuf,
    /// The key before `:<event>:<group>:<handler>`: the file's absolute path
    /// (project and user hooks), or `<plugin id>:<path in the plugin>`.
    key_prefix: String,
    /// `Some(id)` for an installed plugin's hooks.
    plugin: Option<String>,
}

impl TrustSource {
    fn file(path: PathBuf) -> TrustSource {
        TrustSource {
            key_prefix: path.display().to_string(),
            path,
            plugin: None,
        }
    }
}

/// The hooks files of the enabled plugins Codex installed under
/// `<codex home>/plugins/cache/<marketplace>/<name>/<version>/hooks/hooks.json`
/// (Codex 0.171.0 keys their trust as `<name>@<marketplace>:hooks/hooks.json:…`).
fn installed_plugin_hooks(amb: &dyn Ambient, home: &Path, ids: &[String]) -> Vec<TrustSource> {
    let mut out = Vec::new();
    for id in ids {
        let Some((name, market)) = id.rsplit_once('@') else {
            continue;
        };
        let plain = |s: &str| !s.is_empty() && s != ".." && !s.contains(['/', '\\']);
        if !plain(name) || !plain(market) {
            continue;
        }
        let root = home.join("plugins/cache").join(market).join(name);
        let Ok(dir) = amb.open_dir(&root) else {
            continue;
        };
        let mut versions: Vec<String> = dir
            .entries()
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter(|v| plain(v))
            .collect();
        versions.sort();
        for v in versions {
            let path = root.join(&v).join("hooks/hooks.json");
            if read_text(amb, &path).is_some() {
                out.push(TrustSource {
                    path,
                    key_prefix: format!("{id}:hooks/hooks.json"),
                    plugin: Some(id.clone()),
                });
            }
        }
    }
    out
}

/// True when a hook command runs an `evidence-gate…` executable.
fn is_ours(cmd: &str) -> bool {
    first_token(cmd).is_some_and(|t| {
        Path::new(&t)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("evidence-gate"))
    })
}

/// The evidence-gate command handlers in a hooks file.
fn count_ours(amb: &dyn Ambient, path: &Path) -> usize {
    let Some(doc) = read_text(amb, path).and_then(|t| serde_json::from_str::<Value>(&t).ok())
    else {
        return 0;
    };
    let Some(events) = doc.get("hooks").and_then(Value::as_object) else {
        return 0;
    };
    events
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|g| g.get("hooks").and_then(Value::as_array))
        .flatten()
        .filter(|h| is_ours(h.get("command").and_then(Value::as_str).unwrap_or_default()))
        .count()
}

/// `codex.home` and `codex.plugin`: evidence-gate hooks in a file Codex
/// does not read.
fn codex_scope_checks(
    amb: &dyn Ambient,
    places: &Places,
    codex_home: Option<&Path>,
    installed_ours: bool,
    checks: &mut Vec<Check>,
) {
    // User hooks written to ~/.codex while $CODEX_HOME points elsewhere.
    if let (Some(home), Some(ch)) = (&places.home, codex_home) {
        let dot = home.join(".codex");
        if ch != dot.as_path() && count_ours(amb, &dot.join("hooks.json")) > 0 {
            checks.push(
                Check::new(
                    "codex.home",
                    Status::Fail,
                    format!(
                        "~/.codex/hooks.json holds evidence-gate hooks, but CODEX_HOME is {}: Codex reads only {}/hooks.json, so these hooks never run",
                        ch.display(),
                        ch.display()
                    ),
                )
                .hint("rerun `evidence-gate init --host codex --scope user --write` with the same CODEX_HOME (it writes $CODEX_HOME/hooks.json)"),
            );
        }
    }
    // A plugin's hooks file in this directory that no installed plugin carries.
    let here = places.workspace.join("hooks/hooks.json");
    let plugin_source = read_text(amb, &here)
        .is_some_and(|t| t.contains("${PLUGIN_ROOT}/") && count_ours(amb, &here) > 0);
    if plugin_source && !installed_ours {
        checks.push(
            Check::new(
                "codex.plugin",
                Status::Fail,
                "hooks/hooks.json here is a plugin's hooks file (${PLUGIN_ROOT}), but no enabled plugin installed in Codex carries evidence-gate hooks: Codex runs plugin hooks only from an installed plugin ($CODEX_HOME/plugins/cache/<marketplace>/<name>/<version>/) enabled by `[plugins.\"<name>@<marketplace>\"] enabled = true`",
            )
            .hint("give the plugin a `.codex-plugin/plugin.json` (with bin/evidence-gate), list it in a marketplace, then `codex plugin marketplace add <marketplace dir>` and `codex plugin add <name>@<marketplace>`; trust its hooks in `/hooks`"),
        );
    }
}

/// `codex.trust`: every evidence-gate handler in the hooks files Codex
/// reads needs a `[hooks.state]` entry whose `trusted_hash` equals the hash
/// Codex computes for it now ([`codex_toml::hook_trust_hash`]); Codex skips
/// an untrusted or `modified` hook without a word under `codex exec`. A
/// plugin hook also needs `trusted_content_hash`, the hash of the plugin's
/// bundle when it was trusted, which doctor cannot recompute: a matching
/// plugin hook is a warning, never ok.
fn codex_trust(
    amb: &dyn Ambient,
    sources: &[TrustSource],
    states: &[codex_toml::HookState],
    config_name: &str,
    workspace: &Path,
) -> Option<Check> {
    let mut ours = 0usize;
    let (mut untrusted, mut modified, mut disabled) = (Vec::new(), Vec::new(), Vec::new());
    let (mut no_content, mut content_unverified) = (Vec::new(), Vec::new());
    for src in sources {
        let Some(doc) =
            read_text(amb, &src.path).and_then(|t| serde_json::from_str::<Value>(&t).ok())
        else {
            continue;
        };
        let Some(events) = doc.get("hooks").and_then(Value::as_object) else {
            continue;
        };
        for (event, groups) in events {
            for (gi, g) in groups.as_array().into_iter().flatten().enumerate() {
                let matcher = g.get("matcher").and_then(Value::as_str);
                let handlers = g.get("hooks").and_then(Value::as_array);
                for (hi, h) in handlers.into_iter().flatten().enumerate() {
                    let cmd = h.get("command").and_then(Value::as_str).unwrap_or_default();
                    let Some(hash) =
                        codex_toml::hook_trust_hash(event, matcher, h).filter(|_| is_ours(cmd))
                    else {
                        continue;
                    };
                    ours += 1;
                    let key = format!(
                        "{}:{}:{gi}:{hi}",
                        src.key_prefix,
                        codex_toml::event_label(event)
                    );
                    let state = states.iter().rev().find(|s| s.key == key);
                    match state.and_then(|s| s.trusted_hash.as_deref()) {
                        None => untrusted.push(key.clone()),
                        Some(t) if t != hash => modified.push(key.clone()),
                        Some(_) if src.plugin.is_some() => {
                            if state
                                .and_then(|s| s.trusted_content_hash.as_deref())
                                .is_none()
                            {
                                no_content.push(key.clone());
                            } else {
                                content_unverified.push(key.clone());
                            }
                        }
                        Some(_) => {}
                    }
                    if state.and_then(|s| s.enabled) == Some(false) {
                        disabled.push(key);
                    }
                }
            }
        }
    }
    if ours == 0 {
        return None;
    }
    let hint = format!(
        "run `codex` in {} (with the same CODEX_HOME), open `/hooks` and trust (and enable) the listed evidence-gate hooks; \
         repeat after every `init --write` that changes a hook (another --binary, profile or flag) and after a plugin update; \
         `codex exec --dangerously-bypass-hook-trust` runs them for one run without trust",
        workspace.display()
    );
    if untrusted.is_empty() && modified.is_empty() && disabled.is_empty() && no_content.is_empty() {
        if content_unverified.is_empty() {
            return Some(Check::new(
                "codex.trust",
                Status::Ok,
                format!(
                    "{config_name} trusts all {ours} evidence-gate hook(s): each `trusted_hash` matches the hook as wired now"
                ),
            ));
        }
        return Some(
            Check::new(
                "codex.trust",
                Status::Warn,
                format!(
                    "{config_name}: every evidence-gate hook's `trusted_hash` matches; the plugin hooks' `trusted_content_hash` (the plugin bundle's hash, bin/evidence-gate included) cannot be recomputed here, so a plugin changed since it was trusted is listed `modified` by Codex and skipped: {}",
                    content_unverified.join(", ")
                ),
            )
            .hint(hint),
        );
    }
    let mut parts = Vec::new();
    if !untrusted.is_empty() {
        parts.push(format!(
            "never trusted (no `trusted_hash`): {}",
            untrusted.join(", ")
        ));
    }
    if !modified.is_empty() {
        parts.push(format!(
            "modified since trusted (`trusted_hash` no longer matches; Codex lists it as `modified`): {}",
            modified.join(", ")
        ));
    }
    if !no_content.is_empty() {
        parts.push(format!(
            "plugin hooks without `trusted_content_hash` (Codex lists them as `modified`): {}",
            no_content.join(", ")
        ));
    }
    if !disabled.is_empty() {
        parts.push(format!(
            "disabled (`enabled = false`): {}",
            disabled.join(", ")
        ));
    }
    Some(
        Check::new(
            "codex.trust",
            Status::Fail,
            format!(
                "{config_name}: Codex skips these evidence-gate hooks (silently under `codex exec`): {}",
                parts.join("; ")
            ),
        )
        .hint(hint),
    )
}

fn gemini_enabled(configs: &[Config], checks: &mut Vec<Check>) {
    // Gemini 0.61 reads `hooksConfig.enabled` (default true); `hooks.enabled`
    // is the older spelling. `tools.enableHooks` is no longer read.
    let off = configs.iter().find(|c| {
        ["/hooks/enabled", "/hooksConfig/enabled"]
            .iter()
            .any(|p| c.doc.pointer(p) == Some(&Value::Bool(false)))
    });
    checks.push(match off {
        Some(c) => Check::new(
            "gemini.enabled",
            Status::Fail,
            format!("{} turns the hook system off (`enabled: false`)", c.display),
        )
        .hint("set `hooksConfig.enabled` (or `hooks.enabled`) to true, or remove it"),
        None => Check::new(
            "gemini.enabled",
            Status::Ok,
            "the hook system is on (hooksConfig.enabled is not false; it defaults to true)",
        ),
    });
}

//! What `init` wires per host (docs/hook-contracts.md#h-7), as data: one row per wired
//! handler, derived from the host's event support and the rules.

use serde_json::{Map, Value, json};

use crate::hooks::event::HookEvent;
use crate::hooks::host::Host;

/// How the binary is named in a generated command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Binary {
    /// A bare word resolved on `PATH` at run time (`evidence-gate`).
    Bare(String),
    /// An absolute path.
    Path(String),
    /// The plugin-root variable form (`${PLUGIN_ROOT}/bin/evidence-gate`).
    PluginRoot(&'static str),
}

impl Binary {
    /// The command's first token, quoted for a shell when needed (Unix: bare
    /// when only `[A-Za-z0-9/._+-]`, else double-quoted).
    pub(crate) fn token(&self) -> String {
        match self {
            Binary::Bare(w) => w.clone(),
            Binary::PluginRoot(var) => format!("${{{var}}}/bin/evidence-gate"),
            Binary::Path(p) => {
                let bare = p
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/._+-".contains(c));
                if bare {
                    p.clone()
                } else {
                    format!("\"{}\"", p.replace('\\', "\\\\").replace('"', "\\\""))
                }
            }
        }
    }
}

/// One wired handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    /// The subcommand.
    pub event: HookEvent,
    /// The host's event name.
    pub host_event: &'static str,
    /// The host matcher, when the event takes one.
    pub matcher: Option<String>,
    /// Other matchers `doctor` accepts for this row (the opt-in variants).
    pub alt_matchers: Vec<String>,
    /// Timeout in seconds.
    pub timeout_s: u64,
    /// `statusMessage` (always starts `evidence-gate:`).
    pub status: &'static str,
    /// Arguments after `--host <h>` (`--profile <P>`, `--with-ultrawork`).
    pub extra: Vec<String>,
}

/// What shapes the wiring: `init`'s options and the rules it reads.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    /// `subagent_stop.gated_agents` (the SubagentStop matcher).
    pub gated_agents: String,
    /// `--profile` (`auto` unless given).
    pub profile: String,
    /// `--with-ultrawork`.
    pub with_ultrawork: bool,
    /// `--team-guard` (on by default for Claude Code).
    pub team_guard: bool,
    /// `create_goal_guard.tool_names`.
    pub create_goal_tools: Vec<String>,
    /// `team_guard.shell_tools`.
    pub shell_tools: Vec<String>,
    /// `spawn.tool_names`.
    pub spawn_tools: Vec<String>,
}

impl Shape {
    /// The shape for `init`'s options over loaded rules.
    pub(crate) fn from_rules(
        rules: &crate::rules::RuleSet,
        profile: &str,
        with_ultrawork: bool,
        team_guard: bool,
    ) -> Result<Shape, crate::rules::RulesError> {
        use crate::rules::goal_loop::{CreateGoalGuardRules, SpawnRules, TeamGuardRules};
        let sub: crate::rules::hooks::SubagentStopRules = rules.family()?;
        let goal: CreateGoalGuardRules = rules.family()?;
        let team: TeamGuardRules = rules.family()?;
        let spawn: SpawnRules = rules.family()?;
        Ok(Shape {
            gated_agents: sub.gated_agents,
            profile: profile.to_owned(),
            with_ultrawork,
            team_guard,
            create_goal_tools: goal.tool_names,
            shell_tools: team.shell_tools,
            spawn_tools: spawn.tool_names,
        })
    }
}

/// Each host's own names for shell and spawn tools (the matchers list only
/// those that the rules also name).
fn host_tools(host: Host) -> (&'static [&'static str], &'static [&'static str]) {
    match host {
        // Codex 0.171 reports its shell tool to hooks as `Bash` with a string
        // `tool_input.command` (recorded: fixtures/hosts/codex/pre-tool-use/real-*);
        // the older names stay for older releases.
        Host::Codex | Host::Common => (
            &["Bash", "shell", "exec_command", "local_shell"],
            &[
                "spawn_agent",
                "collaborationspawn_agent",
                "collaboration.spawn_agent",
            ],
        ),
        Host::ClaudeCode => (&["Bash"], &["Task", "Agent"]),
        Host::Gemini => (&["run_shell_command"], &[]),
        Host::Agy => (&["run_command"], &[]),
    }
}

fn alternation(names: &[&str]) -> Option<String> {
    match names {
        [] => None,
        [one] => Some(format!("^{}$", regex::escape(one))),
        many => Some(format!(
            "^({})$",
            many.iter()
                .map(|n| regex::escape(n))
                .collect::<Vec<_>>()
                .join("|")
        )),
    }
}

fn known<'a>(wanted: &'a [&'a str], rules: &[String]) -> Vec<&'a str> {
    wanted
        .iter()
        .copied()
        .filter(|w| rules.iter().any(|r| r == w))
        .collect()
}

/// The rows for a host (docs/hook-contracts.md#h-7 table, per-host notes).
pub(crate) fn rows(host: Host, shape: &Shape) -> Vec<Row> {
    let profile = vec!["--profile".to_owned(), shape.profile.clone()];
    let (shells, spawns) = host_tools(host);
    let shells = known(shells, &shape.shell_tools);
    let spawns = known(spawns, &shape.spawn_tools);
    let team_default = host == Host::ClaudeCode;
    let team = shape.team_guard || team_default;
    let row =
        |event, host_event, matcher: Option<String>, timeout_s, status, extra: Vec<String>| Row {
            event,
            host_event,
            matcher,
            alt_matchers: Vec::new(),
            timeout_s,
            status,
            extra,
        };
    let mut out = Vec::new();
    let (stop_event, prompt_event, tool_event) = match host {
        Host::Gemini => ("AfterAgent", Some("BeforeAgent"), "BeforeTool"),
        Host::Agy => ("Stop", None, "PreToolUse"),
        Host::Codex | Host::ClaudeCode | Host::Common => {
            ("Stop", Some("UserPromptSubmit"), "PreToolUse")
        }
    };
    if matches!(host, Host::Codex | Host::ClaudeCode | Host::Common) {
        out.push(row(
            HookEvent::SubagentStop,
            "SubagentStop",
            Some(shape.gated_agents.clone()),
            10,
            "evidence-gate: checking worker evidence",
            Vec::new(),
        ));
    }
    out.push(row(
        HookEvent::Stop,
        stop_event,
        None,
        10,
        "evidence-gate: checking goal-loop resume",
        profile.clone(),
    ));
    if let Some(ev) = prompt_event {
        let mut extra = profile.clone();
        if shape.with_ultrawork {
            extra.push("--with-ultrawork".to_owned());
        }
        out.push(row(
            HookEvent::UserPromptSubmit,
            ev,
            None,
            10,
            "evidence-gate: checking steering",
            extra,
        ));
    }
    // The create_goal guard exists only on Codex (no such tool elsewhere, and
    // guarding state the hook cannot see bricks sessions).
    let goal_tools: Vec<&str> = if matches!(host, Host::Codex | Host::Common) {
        shape.create_goal_tools.iter().map(String::as_str).collect()
    } else {
        Vec::new()
    };
    let with_team: Vec<&str> = goal_tools.iter().chain(shells.iter()).copied().collect();
    let tool_names = if team {
        with_team.clone()
    } else {
        goal_tools.clone()
    };
    if let Some(m) = alternation(&tool_names) {
        let mut r = row(
            HookEvent::PreToolUse,
            tool_event,
            Some(m),
            5,
            "evidence-gate: checking tool use",
            profile.clone(),
        );
        if !team {
            r.alt_matchers.extend(alternation(&with_team));
        }
        out.push(r);
    }
    if let Some(m) = alternation(&spawns) {
        out.push(row(
            HookEvent::PreToolUseSpawn,
            "PreToolUse",
            Some(m),
            5,
            "evidence-gate: checking spawns",
            profile,
        ));
    }
    out
}

/// The command line of a row.
pub(crate) fn command(binary: &Binary, row: &Row, host: Host) -> String {
    let mut cmd = format!(
        "{} hook {} --host {}",
        binary.token(),
        row.event.name(),
        host.name()
    );
    for a in &row.extra {
        cmd.push(' ');
        cmd.push_str(a);
    }
    cmd
}

/// The hook subcommand a wired command runs: the word after `hook`, or the
/// event of a multi-call name (`evidence-gate-hook-<event>`).
pub(crate) fn subcommand_of(cmd: &str) -> Option<HookEvent> {
    let first = first_token(cmd)?;
    let stem = first.rsplit(['/', '\\']).next().unwrap_or(&first);
    let stem = stem.trim_end_matches(".exe");
    if let Some(e) = stem.strip_prefix("evidence-gate-hook-") {
        return HookEvent::from_name(e);
    }
    let rest = if cmd.trim_start().starts_with('"') {
        let r = cmd.trim_start();
        r[1..].split_once('"').map_or("", |(_, rest)| rest)
    } else {
        cmd.trim_start()
            .split_once(char::is_whitespace)
            .map_or("", |(_, rest)| rest)
    };
    let mut words = rest.split_whitespace();
    while let Some(w) = words.next() {
        if w == "hook" {
            return words.next().and_then(HookEvent::from_name);
        }
    }
    None
}

/// The hooks object (`{"<Event>": [groups]}`) in the host's layout.
pub(crate) fn hooks_object(host: Host, binary: &Binary, rows: &[Row]) -> Map<String, Value> {
    let windows = matches!(binary, Binary::Bare(_));
    hooks_object_with(host, rows, &|r| command(binary, r, host), windows)
}

/// [`hooks_object`] with each row's command given by `command_of`;
/// `windows` adds Codex's `commandWindows` (only a bare first word runs
/// under PowerShell, so only a `PATH` install has one).
pub(crate) fn hooks_object_with(
    host: Host,
    rows: &[Row],
    command_of: &dyn Fn(&Row) -> String,
    windows: bool,
) -> Map<String, Value> {
    let mut hooks = Map::new();
    for r in rows {
        let cmd = command_of(r);
        let handler = match host {
            Host::Gemini => json!({
                "type": "command",
                "name": r.status.trim_start_matches("evidence-gate: "),
                "command": cmd,
                "timeout": r.timeout_s * 1000,
            }),
            Host::Codex => {
                let mut h = json!({
                    "type": "command",
                    "command": cmd,
                    "timeout": r.timeout_s,
                    "statusMessage": r.status,
                });
                if windows {
                    h["commandWindows"] = json!(cmd);
                }
                h
            }
            Host::ClaudeCode | Host::Agy | Host::Common => json!({
                "type": "command",
                "command": cmd,
                "timeout": r.timeout_s,
                "statusMessage": r.status,
            }),
        };
        let mut group = Map::new();
        if let Some(m) = &r.matcher {
            group.insert("matcher".into(), json!(m));
        }
        group.insert("hooks".into(), json!([handler]));
        hooks
            .entry(r.host_event.to_owned())
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .expect("array")
            .push(Value::Object(group));
    }
    hooks
}

/// True when a handler's command is one of ours (first token `evidence-gate`
/// or a multi-call name) or its `statusMessage` starts `evidence-gate:`.
pub(crate) fn is_ours(handler: &Value) -> bool {
    let status = handler
        .get("statusMessage")
        .and_then(Value::as_str)
        .is_some_and(|s| s.starts_with("evidence-gate:"));
    let first = handler
        .get("command")
        .and_then(Value::as_str)
        .and_then(first_token);
    let name = first
        .as_deref()
        .map(|t| t.rsplit(['/', '\\']).next().unwrap_or(t));
    status
        || name.is_some_and(|n| {
            let n = n.trim_end_matches(".exe");
            n == "evidence-gate" || n.starts_with("evidence-gate-hook-")
        })
}

/// True when a handler runs a Node predecessor gate.
pub(crate) fn is_node_predecessor(handler: &Value) -> bool {
    handler
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| {
            c.contains("lazycodex-executor-verify")
                || (c.contains("dist/cli.js") && c.contains(" hook ") && c.contains("ulw-loop"))
        })
}

/// The first shell word of a command (double quotes honoured).
pub(crate) fn first_token(cmd: &str) -> Option<String> {
    let cmd = cmd.trim_start();
    if let Some(rest) = cmd.strip_prefix('"') {
        return rest.find('"').map(|i| rest[..i].replace("\\\"", "\""));
    }
    cmd.split_whitespace().next().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_ownership() {
        assert_eq!(
            Binary::Path("/opt/eg/evidence-gate".into()).token(),
            "/opt/eg/evidence-gate"
        );
        assert_eq!(
            Binary::Path("/Users/a b/evidence-gate".into()).token(),
            "\"/Users/a b/evidence-gate\""
        );
        assert_eq!(
            first_token("\"/a b/evidence-gate\" hook x").as_deref(),
            Some("/a b/evidence-gate")
        );
        assert!(is_ours(
            &json!({"command": "/x/evidence-gate hook subagent-stop"})
        ));
        assert!(is_ours(
            &json!({"command": "/x/.agents/bin/evidence-gate-hook-stop"})
        ));
        assert!(is_ours(
            &json!({"command": "run", "statusMessage": "evidence-gate: x"})
        ));
        assert!(!is_ours(&json!({"command": "node dist/cli.js hook stop"})));
        assert!(is_node_predecessor(
            &json!({"command": "node \"${PLUGIN_ROOT}/components/lazycodex-executor-verify/dist/cli.js\" hook subagent-stop"})
        ));
    }
}

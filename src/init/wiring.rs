//! What `init` wires per host (hooks.md §7.3), as data: one row per hook
//! event this build implements. Later hooks add rows here.

use serde_json::{Map, Value, json};

use crate::hooks::event::HookEvent;
use crate::hooks::host::Host;

/// How the binary is named in a generated command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binary {
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
    pub fn token(&self) -> String {
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
pub struct Row {
    /// The subcommand.
    pub event: HookEvent,
    /// The host's event name.
    pub host_event: &'static str,
    /// The host matcher, when the event takes one.
    pub matcher: Option<String>,
    /// Timeout in seconds.
    pub timeout_s: u64,
    /// `statusMessage` (always starts `evidence-gate:`).
    pub status: &'static str,
}

/// The rows for a host: events this build implements that the host can deliver.
pub fn rows(host: Host, gated_agents: &str) -> Vec<Row> {
    let mut out = Vec::new();
    if matches!(host, Host::Codex | Host::ClaudeCode) {
        out.push(Row {
            event: HookEvent::SubagentStop,
            host_event: "SubagentStop",
            matcher: Some(gated_agents.to_owned()),
            timeout_s: 10,
            status: "evidence-gate: checking worker evidence",
        });
    }
    out.retain(|r| r.event.implemented());
    out
}

/// The command line of a row.
pub fn command(binary: &Binary, row: &Row, host: Host) -> String {
    format!(
        "{} hook {} --host {}",
        binary.token(),
        row.event.name(),
        host.name()
    )
}

/// The hooks object (`{"<Event>": [groups]}`) in the host's layout.
pub fn hooks_object(host: Host, binary: &Binary, rows: &[Row]) -> Map<String, Value> {
    let mut hooks = Map::new();
    for r in rows {
        let cmd = command(binary, r, host);
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
                // PowerShell runs a bare first word; only a PATH install has one
                // that is valid on Windows too.
                if let Binary::Bare(_) = binary {
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
pub fn is_ours(handler: &Value) -> bool {
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
pub fn is_node_predecessor(handler: &Value) -> bool {
    handler
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| {
            c.contains("lazycodex-executor-verify")
                || (c.contains("dist/cli.js") && c.contains(" hook ") && c.contains("ulw-loop"))
        })
}

/// The first shell word of a command (double quotes honoured).
pub fn first_token(cmd: &str) -> Option<String> {
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

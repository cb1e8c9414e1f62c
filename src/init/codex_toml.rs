//! The line-based, format-preserving edit of Codex's `config.toml` that
//! `init --write` makes (`[features] hooks = true`, plus the plugin switches
//! for plugin scope), and the matching read `doctor` makes. Only the
//! `[features]` table is looked at; every other line stays as it is.

/// `[features] hooks = true`, plus the plugin switches for plugin scope.
fn wanted(plugin: bool) -> Vec<&'static str> {
    let mut v = vec!["hooks = true"];
    if plugin {
        v.extend(["plugin_hooks = true", "plugins = true"]);
    }
    v
}

fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}

/// The name of the standard table a line opens (`[features]`,
/// `[ features ]  # switches`, `["features"]`), or `None` for any other line
/// (array-of-tables headers `[[…]]` included: they never open `[features]`).
pub fn table_header(line: &str) -> Option<String> {
    let l = line.trim();
    let inner = l.strip_prefix('[')?;
    if inner.starts_with('[') {
        return None;
    }
    let (name, rest) = inner.split_once(']')?;
    let rest = rest.trim_start();
    if !(rest.is_empty() || rest.starts_with('#')) {
        return None;
    }
    Some(unquote(name.trim()).to_owned())
}

fn is_header_line(line: &str) -> bool {
    line.trim_start().starts_with('[')
}

/// The bare key of a `key = value` line (`"hooks"` unquoted).
fn key_of(line: &str) -> Option<&str> {
    let l = line.trim_start();
    if l.starts_with('#') {
        return None;
    }
    let (k, _) = l.split_once('=')?;
    Some(unquote(k.trim()))
}

/// True when the root table defines `features` itself (`features.hooks =
/// true`, `features = { … }`): a `[features]` table added after that would
/// define it twice, which makes the whole file invalid TOML.
pub fn features_outside_table(text: &str) -> bool {
    text.lines()
        .take_while(|l| !is_header_line(l))
        .filter_map(key_of)
        .any(|k| k == "features" || k.starts_with("features.") || k.starts_with("\"features\"."))
}

/// The value text of `key` in the `[features]` table (or a root dotted key
/// `features.<key>`), comment removed.
pub fn feature_value(text: &str, key: &str) -> Option<String> {
    let dotted = format!("features.{key}");
    let mut table: Option<String> = None;
    for line in text.lines() {
        if is_header_line(line) {
            table = table_header(line);
            continue;
        }
        let Some(k) = key_of(line) else { continue };
        let hit = match table.as_deref() {
            None => k.replace(' ', "") == dotted,
            Some("features") => k == key,
            Some(_) => false,
        };
        if hit {
            let v = line.split_once('=').map(|(_, v)| v).unwrap_or_default();
            return Some(v.split('#').next().unwrap_or_default().trim().to_owned());
        }
    }
    None
}

/// True when `text` marks the project at `path` trusted
/// (`[projects."<path>"]` with `trust_level = "trusted"`): Codex loads a
/// project's `.codex/` layer, hooks included, only then.
pub fn project_trusted(text: &str, path: &str) -> bool {
    let wanted = [
        format!("[projects.\"{path}\"]"),
        format!("[projects.'{path}']"),
    ];
    let mut inside = false;
    for line in text.lines() {
        if is_header_line(line) {
            let head = line.split('#').next().unwrap_or_default().trim();
            inside = wanted.iter().any(|w| w == head);
            continue;
        }
        if inside && key_of(line) == Some("trust_level") {
            let v = line.split_once('=').map(|(_, v)| v).unwrap_or_default();
            let v = v.split('#').next().unwrap_or_default().trim();
            if v == "\"trusted\"" || v == "'trusted'" {
                return true;
            }
        }
    }
    false
}

/// One `[hooks.state."<key>"]` table: Codex's per-hook record of the hash
/// the user trusted and whether the hook is switched off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookState {
    /// `<hooks.json path>:<event label>:<group index>:<handler index>`.
    pub key: String,
    /// The hash trusted in `/hooks` (`sha256:<hex>`), if any.
    pub trusted_hash: Option<String>,
    /// A plugin hook's trusted bundle hash: Codex (0.171.0) lists a plugin
    /// hook's `currentHash` as `<hook hash>/<plugin content hash>` and
    /// trusts it only while `trusted_hash` equals the first and
    /// `trusted_content_hash` the second (measured with `hooks/list`).
    pub trusted_content_hash: Option<String>,
    /// `enabled = false` switches the hook off.
    pub enabled: Option<bool>,
}

/// The `[hooks.state."<key>"]` tables with their `trusted_hash` and
/// `enabled` values (line-based, like the rest of this module).
pub fn hook_states(text: &str) -> Vec<HookState> {
    let mut out: Vec<HookState> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if is_header_line(line) {
            inside = false;
            if let Some(key) = state_key(line) {
                out.push(HookState {
                    key,
                    trusted_hash: None,
                    trusted_content_hash: None,
                    enabled: None,
                });
                inside = true;
            }
            continue;
        }
        let Some(cur) = out.last_mut().filter(|_| inside) else {
            continue;
        };
        let value = || {
            let v = line.split_once('=').map(|(_, v)| v).unwrap_or_default();
            let v = v.split('#').next().unwrap_or_default().trim();
            v.to_owned()
        };
        match key_of(line) {
            Some("trusted_hash") => {
                let v = value();
                let v = unquote(&v);
                cur.trusted_hash = Some(v.to_owned());
            }
            Some("trusted_content_hash") => {
                let v = value();
                cur.trusted_content_hash = Some(unquote(&v).to_owned());
            }
            Some("enabled") => cur.enabled = value().parse().ok(),
            _ => {}
        }
    }
    out
}

/// The plugin ids (`<name>@<marketplace>`) with a `[plugins."<id>"]` table
/// that says `enabled = true`: the plugins Codex loads (hooks included)
/// from `$CODEX_HOME/plugins/cache/<marketplace>/<name>/<version>/`.
pub fn enabled_plugins(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if is_header_line(line) {
            let head = line.split('#').next().unwrap_or_default().trim();
            current = head
                .strip_prefix("[plugins.")
                .and_then(|r| r.strip_suffix(']'))
                .map(|id| unquote(id.trim()).to_owned());
            continue;
        }
        if let Some(id) = &current
            && key_of(line) == Some("enabled")
        {
            let v = line.split_once('=').map(|(_, v)| v).unwrap_or_default();
            if v.split('#').next().unwrap_or_default().trim() == "true" && !out.contains(id) {
                out.push(id.clone());
            }
        }
    }
    out
}

fn state_key(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("[hooks.state.")?;
    let (key, _) = rest.rsplit_once(']')?;
    Some(unquote(key.trim()).to_owned())
}

/// Codex's label for a hook event in trust keys and hashes
/// (`PreToolUse` → `pre_tool_use`).
pub fn event_label(event: &str) -> String {
    let mut out = String::with_capacity(event.len() + 4);
    for (i, ch) in event.chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

/// The trust hash Codex (0.171.0) computes for one command handler of a
/// hooks file, the value `codex app-server`'s `hooks/list` reports as
/// `currentHash` and `/hooks` stores as `trusted_hash` (recorded:
/// `fixtures/hosts/codex/hooks-list/`). Codex hashes a normalized identity,
/// not the file text: the event label, the matcher (dropped for
/// `UserPromptSubmit` and `Stop`, which take none) and the one handler with
/// `timeout` defaulted to 600 (at least 1), `async` to false and an absent
/// `statusMessage` left out; that object, keys sorted, compact JSON, is
/// SHA-256 hashed and written `sha256:<hex>`. `None` for a handler Codex
/// does not run as a command (another type, an empty command).
pub fn hook_trust_hash(
    event: &str,
    matcher: Option<&str>,
    handler: &serde_json::Value,
) -> Option<String> {
    use serde_json::{Map, Value};
    use sha2::{Digest, Sha256};
    if handler.get("type").and_then(Value::as_str) != Some("command") {
        return None;
    }
    let command = handler.get("command").and_then(Value::as_str)?;
    if command.trim().is_empty() {
        return None;
    }
    let timeout = match handler.get("timeout") {
        None | Some(Value::Null) => 600,
        Some(t) => t.as_u64()?.max(1),
    };
    let is_async = match handler.get("async") {
        None | Some(Value::Null) => false,
        Some(a) => a.as_bool()?,
    };
    let status = match handler.get("statusMessage") {
        None | Some(Value::Null) => None,
        Some(s) => Some(s.as_str()?),
    };
    let label = event_label(event);
    let matcher = matcher.filter(|_| !matches!(label.as_str(), "user_prompt_submit" | "stop"));
    // Keys inserted in sorted order (the map keeps insertion order).
    let mut h = Map::new();
    h.insert("async".into(), Value::Bool(is_async));
    h.insert("command".into(), Value::from(command));
    if let Some(s) = status {
        h.insert("statusMessage".into(), Value::from(s));
    }
    h.insert("timeout".into(), Value::from(timeout));
    h.insert("type".into(), Value::from("command"));
    let mut id = Map::new();
    id.insert("event_name".into(), Value::from(label));
    id.insert("hooks".into(), Value::Array(vec![Value::Object(h)]));
    if let Some(m) = matcher {
        id.insert("matcher".into(), Value::from(m));
    }
    let bytes = serde_json::to_vec(&Value::Object(id)).ok()?;
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Some(format!("sha256:{hex}"))
}

/// Adds the missing `[features]` keys without touching anything else. An
/// explicit choice (`hooks = false`) is kept, and a root that defines
/// `features` with a dotted key or an inline table is left as it is (see
/// [`features_outside_table`]).
pub fn edit(existing: &str, plugin: bool) -> String {
    if features_outside_table(existing) {
        return existing.to_owned();
    }
    let lines: Vec<&str> = existing.lines().collect();
    let header = lines
        .iter()
        .position(|l| table_header(l).as_deref() == Some("features"));
    let wanted = wanted(plugin);
    match header {
        Some(h) => {
            let end = lines[h + 1..]
                .iter()
                .position(|l| is_header_line(l))
                .map_or(lines.len(), |i| h + 1 + i);
            let present = |key: &str| lines[h + 1..end].iter().any(|l| key_of(l) == Some(key));
            let add: Vec<&str> = wanted
                .iter()
                .filter(|w| !present(w.split('=').next().unwrap_or_default().trim()))
                .copied()
                .collect();
            let mut out: Vec<&str> = lines[..=h].to_vec();
            out.extend(add);
            out.extend(&lines[h + 1..]);
            let mut s = out.join("\n");
            s.push('\n');
            s
        }
        None => {
            let mut s = existing.to_owned();
            if !s.is_empty() && !s.ends_with('\n') {
                s.push('\n');
            }
            if !s.is_empty() {
                s.push('\n');
            }
            s.push_str("[features]\n");
            for w in wanted {
                s.push_str(w);
                s.push('\n');
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_preserves_the_rest() {
        assert_eq!(edit("", false), "[features]\nhooks = true\n");
        let s = "model = \"x\" # keep\n\n[features]\nweb = true\n\n[other]\na = 1\n";
        assert_eq!(
            edit(s, true),
            "model = \"x\" # keep\n\n[features]\nhooks = true\nplugin_hooks = true\nplugins = true\nweb = true\n\n[other]\na = 1\n"
        );
        let has = "[features]\nhooks = false\n";
        assert_eq!(edit(has, false), has, "an explicit choice is kept");
    }

    #[test]
    fn headers_with_spaces_comments_or_quotes_are_the_features_table() {
        for s in [
            "[features] # switches\nweb = true\n",
            "[ features ]\nweb = true\n",
            "[\"features\"]\nweb = true\n",
        ] {
            let out = edit(s, false);
            assert_eq!(out.matches("features").count(), 1, "{out}");
            assert!(out.contains("\nhooks = true\n"), "{out}");
        }
        assert_eq!(table_header("[[features]]"), None);
        assert_eq!(table_header("[features] x = 1"), None);
    }

    #[test]
    fn root_dotted_or_inline_features_are_left_alone() {
        for s in ["features.web = true\n", "features = { web = true }\n[x]\n"] {
            assert!(features_outside_table(s));
            assert_eq!(edit(s, false), s);
        }
        assert!(!features_outside_table("[x]\nfeatures.web = true\n"));
    }

    #[test]
    fn project_trust_and_hook_state_are_read() {
        let t = "[projects.\"/w/repo\"]\ntrust_level = \"trusted\" # yes\n[hooks.state.\"/w/repo/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:1\"\n";
        assert!(project_trusted(t, "/w/repo"));
        assert!(!project_trusted(t, "/w/other"));
        assert!(!project_trusted(
            "[projects.\"/w/repo\"]\ntrust_level = \"untrusted\"\n",
            "/w/repo"
        ));
        assert!(!project_trusted(
            "[other]\ntrust_level = \"trusted\"\n",
            "/w/repo"
        ));
        let keys: Vec<String> = hook_states(t).into_iter().map(|s| s.key).collect();
        assert_eq!(keys, ["/w/repo/.codex/hooks.json:stop:0:0"]);
    }

    #[test]
    fn feature_values() {
        assert_eq!(
            feature_value("[features] # c\nhooks = false # off\n", "hooks").as_deref(),
            Some("false")
        );
        assert_eq!(
            feature_value("features.hooks = false\n", "hooks").as_deref(),
            Some("false")
        );
        assert_eq!(feature_value("[other]\nhooks = false\n", "hooks"), None);
    }

    #[test]
    fn hook_states_read_hash_and_enabled() {
        let t = "[hooks.state.\"/r/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:ab\" # mine\nenabled = false\n[other]\ntrusted_hash = \"x\"\n[hooks.state.'/r/.codex/hooks.json:pre_tool_use:1:0']\nenabled = true\n";
        assert_eq!(
            hook_states(t),
            [
                HookState {
                    key: "/r/.codex/hooks.json:stop:0:0".into(),
                    trusted_hash: Some("sha256:ab".into()),
                    trusted_content_hash: None,
                    enabled: Some(false),
                },
                HookState {
                    key: "/r/.codex/hooks.json:pre_tool_use:1:0".into(),
                    trusted_hash: None,
                    trusted_content_hash: None,
                    enabled: Some(true),
                },
            ]
        );
    }

    #[test]
    fn plugin_states_and_enabled_plugins() {
        let t = "[plugins.\"evidence-gate@eg-local\"]\nenabled = true\n[plugins.\"off@m\"]\nenabled = false\n[hooks.state.\"evidence-gate@eg-local:hooks/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:a\"\ntrusted_content_hash = \"sha256:b\"\n";
        assert_eq!(enabled_plugins(t), ["evidence-gate@eg-local"]);
        let s = hook_states(t);
        assert_eq!(s[0].key, "evidence-gate@eg-local:hooks/hooks.json:stop:0:0");
        assert_eq!(s[0].trusted_content_hash.as_deref(), Some("sha256:b"));
    }

    #[test]
    fn event_labels_are_snake_case() {
        assert_eq!(event_label("PreToolUse"), "pre_tool_use");
        assert_eq!(event_label("Stop"), "stop");
        assert_eq!(event_label("SubagentStop"), "subagent_stop");
        assert_eq!(event_label("UserPromptSubmit"), "user_prompt_submit");
    }

    /// The hash equals Codex 0.171.0's own `currentHash` from `hooks/list`
    /// for every hook of both recorded wirings (two binaries).
    #[test]
    fn trust_hash_matches_recorded_codex_hooks_list() {
        let mut checked = 0;
        for (name, text) in [
            (
                "trusted",
                include_str!(
                    "../../fixtures/hosts/codex/hooks-list/recorded-codex-0.171.0-trusted.json"
                ),
            ),
            (
                "modified",
                include_str!(
                    "../../fixtures/hosts/codex/hooks-list/recorded-codex-0.171.0-modified.json"
                ),
            ),
        ] {
            let doc: serde_json::Value = serde_json::from_str(text).unwrap();
            for e in doc["result"]["data"][0]["hooks"].as_array().unwrap() {
                let label = e["key"].as_str().unwrap().split(':').rev().nth(2).unwrap();
                let event: String = label
                    .split('_')
                    .map(|w| w[..1].to_uppercase() + &w[1..])
                    .collect();
                let handler = serde_json::json!({
                    "type": "command",
                    "command": e["command"],
                    "timeout": e["timeoutSec"],
                    "statusMessage": e["statusMessage"],
                });
                assert_eq!(
                    hook_trust_hash(&event, e["matcher"].as_str(), &handler).as_deref(),
                    e["currentHash"].as_str(),
                    "{name}: {}",
                    e["key"]
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 10);
    }

    /// Recorded with the same Codex (hand-edited hooks file): `Stop` drops its
    /// matcher, an absent `timeout` hashes as 600, an absent `statusMessage`
    /// is left out, and the command, matcher or timeout each change the hash.
    #[test]
    fn trust_hash_normalizes_like_codex() {
        let stop = serde_json::json!({"type": "command", "command": "/b/evidence-gate hook stop", "timeout": 10});
        let h = |e: &str, m: Option<&str>, v: &serde_json::Value| hook_trust_hash(e, m, v).unwrap();
        assert_eq!(h("Stop", Some("xyz"), &stop), h("Stop", None, &stop));
        let no_timeout =
            serde_json::json!({"type": "command", "command": "/b/evidence-gate hook stop"});
        let t600 = serde_json::json!({"type": "command", "command": "/b/evidence-gate hook stop", "timeout": 600});
        assert_eq!(h("Stop", None, &no_timeout), h("Stop", None, &t600));
        let other = serde_json::json!({"type": "command", "command": "/c/evidence-gate hook stop", "timeout": 10});
        assert_ne!(h("Stop", None, &stop), h("Stop", None, &other));
        assert_ne!(h("Stop", None, &stop), h("Stop", None, &t600));
        assert_ne!(
            h("PreToolUse", Some("^a$"), &stop),
            h("PreToolUse", Some("^b$"), &stop)
        );
        assert_eq!(
            hook_trust_hash("Stop", None, &serde_json::json!({"type": "prompt"})),
            None
        );
        assert_eq!(
            hook_trust_hash(
                "Stop",
                None,
                &serde_json::json!({"type": "command", "command": " "})
            ),
            None
        );
    }
}

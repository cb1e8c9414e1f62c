//! Codex's `config.toml`, edited and read as a TOML document (`toml_edit`):
//! `init --write` adds `[features] hooks = true` (plus the plugin switches
//! for plugin scope) and keeps every comment, key order, blank line and
//! string of the user's file; `doctor` reads the features, the project trust
//! and the per-hook trust records from the same parse. Text that only looks
//! like TOML (a `[features]` line inside a multi-line string) is a string.

use toml_edit::{DocumentMut, Item, Table, Value};

/// `[features]` keys `init` sets: `hooks`, plus the plugin switches for
/// plugin scope.
fn wanted(plugin: bool) -> &'static [&'static str] {
    if plugin {
        &["hooks", "plugin_hooks", "plugins"]
    } else {
        &["hooks"]
    }
}

/// Parses `text` as a TOML document; the error names the line and column.
pub(crate) fn parse(text: &str) -> Result<DocumentMut, String> {
    text.parse::<DocumentMut>()
        .map_err(|e| one_line(&e.to_string()))
}

/// `toml_edit`'s error (a heading, a source excerpt with a caret, the
/// reason) as one line: `TOML parse error at line 3, column 1: <reason>`.
fn one_line(report: &str) -> String {
    let mut lines = report.lines().map(str::trim_end).filter(|l| !l.is_empty());
    let head = lines.next().unwrap_or("TOML parse error").to_owned();
    let reason: Vec<&str> = lines
        .filter(|l| !l.trim_start().starts_with('|') && !l.contains(" | "))
        .map(str::trim)
        .collect();
    if reason.is_empty() {
        head
    } else {
        format!("{head}: {}", reason.join("; "))
    }
}

/// The value of `features.<key>` as a boolean (`[features] hooks = false`,
/// `features.hooks = false`, `features = { hooks = false }`), if set.
pub(crate) fn feature(doc: &DocumentMut, key: &str) -> Option<bool> {
    doc.get("features")?.get(key)?.as_bool()
}

/// True when `doc` marks the project at `path` trusted
/// (`[projects."<path>"]` with `trust_level = "trusted"`): Codex loads a
/// project's `.codex/` layer, hooks included, only then.
pub(crate) fn project_trusted(doc: &DocumentMut, path: &str) -> bool {
    doc.get("projects")
        .and_then(|p| p.get(path))
        .and_then(|p| p.get("trust_level"))
        .and_then(Item::as_str)
        == Some("trusted")
}

/// True when some table of `doc` sets `allow_managed_hooks_only = true`
/// (Codex's `requirements.toml`: only managed hooks run).
pub(crate) fn managed_hooks_only(doc: &DocumentMut) -> bool {
    fn walk(t: &dyn toml_edit::TableLike) -> bool {
        t.iter().any(|(k, v)| {
            (k == "allow_managed_hooks_only" && v.as_bool() == Some(true))
                || v.as_table_like().is_some_and(walk)
        })
    }
    walk(doc.as_table())
}

/// One `[hooks.state."<key>"]` table: Codex's per-hook record of the hash
/// the user trusted and whether the hook is switched off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HookState {
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
/// `enabled` values.
pub(crate) fn hook_states(doc: &DocumentMut) -> Vec<HookState> {
    let Some(states) = doc
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(Item::as_table_like)
    else {
        return Vec::new();
    };
    let text = |v: &Item, key: &str| v.get(key).and_then(Item::as_str).map(str::to_owned);
    states
        .iter()
        .map(|(key, v)| HookState {
            key: key.to_owned(),
            trusted_hash: text(v, "trusted_hash"),
            trusted_content_hash: text(v, "trusted_content_hash"),
            enabled: v.get("enabled").and_then(Item::as_bool),
        })
        .collect()
}

/// The plugin ids (`<name>@<marketplace>`) with a `[plugins."<id>"]` table
/// that says `enabled = true`: the plugins Codex loads (hooks included)
/// from `$CODEX_HOME/plugins/cache/<marketplace>/<name>/<version>/`.
pub(crate) fn enabled_plugins(doc: &DocumentMut) -> Vec<String> {
    let Some(plugins) = doc.get("plugins").and_then(Item::as_table_like) else {
        return Vec::new();
    };
    plugins
        .iter()
        .filter(|(_, v)| v.get("enabled").and_then(Item::as_bool) == Some(true))
        .map(|(id, _)| id.to_owned())
        .collect()
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

/// Adds the missing `[features]` keys and changes nothing else. An explicit
/// choice (`hooks = false`) is kept; a root that defines `features` with
/// dotted keys or an inline table gets the keys in the same form (a second
/// `[features]` table would make the file invalid). A file that is not TOML,
/// or whose `features` is not a table, is refused with the reason.
pub(crate) fn edit(existing: &str, plugin: bool) -> Result<String, String> {
    let mut doc = parse(existing)?;
    let had_content = !existing.trim().is_empty();
    let features = doc.as_table_mut().entry("features").or_insert_with(|| {
        let mut t = Table::new();
        if had_content {
            t.decor_mut().set_prefix("\n");
        }
        Item::Table(t)
    });
    match features {
        Item::Table(t) => {
            for &key in wanted(plugin) {
                if !t.contains_key(key) {
                    t.insert(key, toml_edit::value(true));
                }
            }
        }
        Item::Value(Value::InlineTable(t)) => {
            for &key in wanted(plugin) {
                if !t.contains_key(key) {
                    t.insert(key, Value::from(true));
                }
            }
        }
        _ => return Err("`features` is not a table".into()),
    }
    let mut out = doc.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> DocumentMut {
        parse(text).unwrap()
    }

    #[test]
    fn edit_preserves_the_rest() {
        assert_eq!(edit("", false).unwrap(), "[features]\nhooks = true\n");
        let s = "model = \"x\" # keep\n\n[features]\nweb = true\n\n[other]\na = 1\n";
        assert_eq!(
            edit(s, true).unwrap(),
            "model = \"x\" # keep\n\n[features]\nweb = true\nhooks = true\nplugin_hooks = true\nplugins = true\n\n[other]\na = 1\n"
        );
        let has = "[features]\nhooks = false\n";
        assert_eq!(edit(has, false).unwrap(), has, "an explicit choice is kept");
        assert_eq!(
            edit("model = \"x\"\n", false).unwrap(),
            "model = \"x\"\n\n[features]\nhooks = true\n"
        );
    }

    #[test]
    fn headers_with_spaces_comments_or_quotes_are_the_features_table() {
        for s in [
            "[features] # switches\nweb = true\n",
            "[ features ]\nweb = true\n",
            "[\"features\"]\nweb = true\n",
        ] {
            let out = edit(s, false).unwrap();
            assert_eq!(out.matches("features").count(), 1, "{out}");
            assert!(out.starts_with(s), "{out}");
            assert!(out.ends_with("\nhooks = true\n"), "{out}");
            assert_eq!(feature(&doc(&out), "hooks"), Some(true));
        }
    }

    /// A dotted or inline `features` gets the key in its own form (a
    /// second `[features]` table would make the file invalid TOML).
    #[test]
    fn root_dotted_or_inline_features_get_the_key_in_their_form() {
        let out = edit("features.web = true\n", false).unwrap();
        assert_eq!(out, "features.web = true\nfeatures.hooks = true\n");
        let out = edit("features = { web = true }\n[x]\n", false).unwrap();
        assert_eq!(out, "features = { web = true , hooks = true }\n[x]\n");
        for out in [
            edit("features.web = true\n", false).unwrap(),
            edit("features = { web = true }\n[x]\n", false).unwrap(),
        ] {
            assert_eq!(feature(&doc(&out), "hooks"), Some(true), "{out}");
        }
        assert_eq!(
            edit("features = 3\n", false).unwrap_err(),
            "`features` is not a table"
        );
    }

    /// A multi-line string holding `[features]` and `hooks = …`
    /// text is a string, not a table; the real table is added after it.
    #[test]
    fn text_inside_multi_line_strings_is_not_toml_structure() {
        let s = "instructions = \"\"\"\nExample config:\n[features]\nhooks = false\n\"\"\"\n# my comment\nmodel = 'o3'   # aligned\n";
        let out = edit(s, false).unwrap();
        assert!(out.starts_with(s), "the user's text is untouched: {out}");
        assert_eq!(&out[s.len()..], "\n[features]\nhooks = true\n");
        let d = doc(&out);
        assert_eq!(feature(&d, "hooks"), Some(true));
        assert!(
            d["instructions"]
                .as_str()
                .unwrap()
                .contains("[features]\nhooks = false")
        );
        assert_eq!(
            feature(&doc(s), "hooks"),
            None,
            "doctor reads no switch from a string"
        );
    }

    #[test]
    fn invalid_toml_is_refused_with_the_line() {
        let e = edit("model = \"x\"\n[features\n", false).unwrap_err();
        assert!(e.starts_with("TOML parse error at line 2"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn project_trust_and_hook_state_are_read() {
        let t = doc(
            "[projects.\"/w/repo\"]\ntrust_level = \"trusted\" # yes\n[hooks.state.\"/w/repo/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:1\"\n",
        );
        assert!(project_trusted(&t, "/w/repo"));
        assert!(!project_trusted(&t, "/w/other"));
        assert!(!project_trusted(
            &doc("[projects.\"/w/repo\"]\ntrust_level = \"untrusted\"\n"),
            "/w/repo"
        ));
        assert!(!project_trusted(
            &doc("[other]\ntrust_level = \"trusted\"\n"),
            "/w/repo"
        ));
        let keys: Vec<String> = hook_states(&t).into_iter().map(|s| s.key).collect();
        assert_eq!(keys, ["/w/repo/.codex/hooks.json:stop:0:0"]);
    }

    #[test]
    fn feature_values() {
        assert_eq!(
            feature(&doc("[features] # c\nhooks = false # off\n"), "hooks"),
            Some(false)
        );
        assert_eq!(
            feature(&doc("features.hooks = false\n"), "hooks"),
            Some(false)
        );
        assert_eq!(feature(&doc("[other]\nhooks = false\n"), "hooks"), None);
        assert!(managed_hooks_only(&doc(
            "allow_managed_hooks_only = true\n"
        )));
        assert!(!managed_hooks_only(&doc(
            "note = \"\"\"\nallow_managed_hooks_only = true\n\"\"\"\n"
        )));
    }

    #[test]
    fn hook_states_read_hash_and_enabled() {
        let t = doc(
            "[hooks.state.\"/r/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:ab\" # mine\nenabled = false\n[other]\ntrusted_hash = \"x\"\n[hooks.state.'/r/.codex/hooks.json:pre_tool_use:1:0']\nenabled = true\n",
        );
        assert_eq!(
            hook_states(&t),
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
        let t = doc(
            "[plugins.\"evidence-gate@eg-local\"]\nenabled = true\n[plugins.\"off@m\"]\nenabled = false\n[hooks.state.\"evidence-gate@eg-local:hooks/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:a\"\ntrusted_content_hash = \"sha256:b\"\n",
        );
        assert_eq!(enabled_plugins(&t), ["evidence-gate@eg-local"]);
        let s = hook_states(&t);
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

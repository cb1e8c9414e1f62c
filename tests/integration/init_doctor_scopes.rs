//! `init` and `doctor codex.trust` for Codex hooks at user and plugin scope,
//! on `hooks/list` answers of the real Codex 0.171.0
//! (`fixtures/hosts/codex/hooks-list/recorded-codex-0.171.0-{user,plugin}-*.json`):
//! user hooks are keyed by `$CODEX_HOME/hooks.json`, an installed plugin's by
//! `<name>@<marketplace>:hooks/hooks.json`, and a plugin hook runs only while
//! both `trusted_hash` and `trusted_content_hash` match.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::bin;
use crate::hooks_support::*;

const PLUGIN_ID: &str = "evidence-gate@eg-local";

/// The hooks a recorded Codex `hooks/list` answer lists.
pub(crate) fn load(name: &str) -> Vec<Value> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hosts/codex/hooks-list")
        .join(name);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    v["result"]["data"][0]["hooks"].as_array().unwrap().clone()
}

/// The hooks file Codex listed, rebuilt position by position (the group
/// and handler indexes are the last two parts of each key).
pub(crate) fn hooks_file(entries: &[Value]) -> String {
    let mut hooks = serde_json::Map::new();
    for e in entries {
        let key = e["key"].as_str().unwrap();
        let mut it = key.rsplit(':');
        let (_, gi, label) = (it.next(), it.next().unwrap(), it.next().unwrap());
        let event: String = label
            .split('_')
            .map(|w| w[..1].to_uppercase() + &w[1..])
            .collect();
        let mut group = json!({"hooks": [{
            "type": "command",
            "command": e["command"],
            "timeout": e["timeoutSec"],
            "statusMessage": e["statusMessage"],
        }]});
        if let Some(m) = e["matcher"].as_str() {
            group["matcher"] = json!(m);
        }
        let groups = hooks.entry(event).or_insert_with(|| json!([]));
        let gi: usize = gi.parse().unwrap();
        let arr = groups.as_array_mut().unwrap();
        while arr.len() <= gi {
            arr.push(Value::Null);
        }
        arr[gi] = group;
    }
    json!({ "hooks": hooks }).to_string()
}

/// `[hooks.state]` tables for `entries`: `trusted_hash` is the hook hash
/// (a plugin's `currentHash` is `<hook hash>/<content hash>`), and with
/// `content` the plugin's `trusted_content_hash` too.
fn states(entries: &[Value], codex_home: &Path, content: bool) -> String {
    let mut text = String::new();
    for e in entries {
        let key = e["key"]
            .as_str()
            .unwrap()
            .replace("${CODEX_HOME}", codex_home.to_str().unwrap());
        let hash = e["currentHash"].as_str().unwrap();
        let (hook, bundle) = hash.split_once('/').unwrap_or((hash, ""));
        text.push_str(&format!(
            "[hooks.state.\"{key}\"]\ntrusted_hash = \"{hook}\"\n"
        ));
        if content && !bundle.is_empty() {
            text.push_str(&format!("trusted_content_hash = \"{bundle}\"\n"));
        }
    }
    text
}

fn doctor(h: &HookRepo, codex_home: &Path) -> Vec<Value> {
    let run = h.run(
        &["doctor", "--json", "--host", "codex"],
        b"",
        &[
            ("HOME", h.state_home.path().to_str().unwrap()),
            ("CODEX_HOME", codex_home.to_str().unwrap()),
        ],
    );
    let v: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    v["checks"].as_array().unwrap().clone()
}

fn find<'a>(checks: &'a [Value], id: &str) -> Option<&'a Value> {
    checks.iter().find(|c| c["id"] == id)
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// User scope: Codex 0.171.0 keys user hooks by `$CODEX_HOME/hooks.json`
/// (recorded `source: "user"`); the recorded hashes pass, and the same
/// hashes under another file's key are never trusted.
#[test]
fn doctor_codex_trust_user_scope_is_keyed_by_codex_home() {
    let h = HookRepo::new();
    let ch = h.state_home.path().join("codex-home");
    let entries = load("recorded-codex-0.171.0-user-trusted.json");
    assert!(
        entries
            .iter()
            .all(|e| e["trustStatus"] == "trusted" && e["source"] == "user")
    );
    write(&ch.join("hooks.json"), &hooks_file(&entries));
    write(
        &ch.join("config.toml"),
        &format!("[features]\nhooks = true\n{}", states(&entries, &ch, false)),
    );
    let checks = doctor(&h, &ch);
    let t = find(&checks, "codex.trust").unwrap();
    assert_eq!(t["status"], "ok", "{t}");
    assert!(
        t["message"]
            .as_str()
            .unwrap()
            .contains("all 5 evidence-gate hook(s)"),
        "{t}"
    );
    assert!(find(&checks, "codex.home").is_none(), "{checks:?}");
    // Trusted under ~/.codex's key, but Codex reads $CODEX_HOME: never trusted.
    let dot = h.state_home.path().join(".codex");
    write(
        &ch.join("config.toml"),
        &format!(
            "[features]\nhooks = true\n{}",
            states(&entries, &dot, false)
        ),
    );
    let t = doctor(&h, &ch)
        .into_iter()
        .find(|c| c["id"] == "codex.trust")
        .unwrap();
    assert_eq!(t["status"], "fail", "{t}");
    assert!(
        t["message"].as_str().unwrap().contains(&format!(
            "never trusted (no `trusted_hash`): {}/hooks.json:",
            ch.display()
        )),
        "{t}"
    );
}

/// Hooks in ~/.codex/hooks.json while CODEX_HOME points elsewhere never run
/// (Codex reads only `$CODEX_HOME/hooks.json`); doctor says so. `init
/// --scope user` now writes where Codex reads.
#[test]
fn codex_user_scope_follows_codex_home() {
    let h = HookRepo::new();
    let ch = h.state_home.path().join("codex-home");
    std::fs::create_dir_all(&ch).unwrap();
    let entries = load("recorded-codex-0.171.0-user-trusted.json");
    let dot = h.state_home.path().join(".codex");
    write(&dot.join("hooks.json"), &hooks_file(&entries));
    let checks = doctor(&h, &ch);
    let c = find(&checks, "codex.home").unwrap_or_else(|| panic!("{checks:?}"));
    assert_eq!(c["status"], "fail", "{c}");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains(&format!("Codex reads only {}/hooks.json", ch.display())),
        "{c}"
    );
    // Honest use: init with the same CODEX_HOME writes there.
    let exe = bin("evidence-gate");
    let run = h.run(
        &[
            "init",
            "--json",
            "--write",
            "--host",
            "codex",
            "--scope",
            "user",
            "--binary",
            exe.to_str().unwrap(),
        ],
        b"",
        &[
            ("HOME", h.state_home.path().to_str().unwrap()),
            ("CODEX_HOME", ch.to_str().unwrap()),
        ],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let paths: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["$CODEX_HOME/hooks.json", "$CODEX_HOME/config.toml"],
        "{v}"
    );
    assert!(ch.join("hooks.json").exists() && ch.join("config.toml").exists());
    std::fs::remove_file(dot.join("hooks.json")).unwrap();
    let checks = doctor(&h, &ch);
    assert!(find(&checks, "codex.home").is_none(), "{checks:?}");
    // Wired where Codex reads, but not yet trusted in /hooks.
    let t = find(&checks, "codex.trust").unwrap();
    assert_eq!(t["status"], "fail", "{t}");
    assert!(
        t["message"].as_str().unwrap().contains("never trusted"),
        "{t}"
    );
}

/// The installed plugin's directory and the user config enabling it.
fn install_plugin(ch: &Path, entries: &[Value], states_text: &str) -> PathBuf {
    let root = ch.join("plugins/cache/eg-local/evidence-gate/0.1.0");
    write(&root.join("hooks/hooks.json"), &hooks_file(entries));
    write(
        &root.join(".codex-plugin/plugin.json"),
        r#"{"name": "evidence-gate", "version": "0.1.0"}"#,
    );
    write(
        &ch.join("config.toml"),
        &format!(
            "[features]\nhooks = true\n\n[plugins.\"{PLUGIN_ID}\"]\nenabled = true\n\n{states_text}"
        ),
    );
    root
}

/// Plugin scope: Codex 0.171.0 keys an installed plugin's hooks as
/// `<name>@<marketplace>:hooks/hooks.json:…`, hashes the unexpanded
/// `${PLUGIN_ROOT}` command, and lists `currentHash` as
/// `<hook hash>/<plugin content hash>`. Recorded: with both
/// `trusted_hash` and `trusted_content_hash` the hooks are `trusted`; with
/// `trusted_hash` alone Codex lists them `modified` and skips them.
#[test]
fn doctor_codex_trust_plugin_scope_needs_the_content_hash() {
    let h = HookRepo::new();
    let ch = h.state_home.path().join("codex-home");
    let trusted = load("recorded-codex-0.171.0-plugin-trusted.json");
    assert!(trusted.iter().all(|e| {
        e["trustStatus"] == "trusted"
            && e["source"] == "plugin"
            && e["pluginId"] == PLUGIN_ID
            && e["key"]
                .as_str()
                .unwrap()
                .starts_with("evidence-gate@eg-local:hooks/hooks.json:")
            && e["command"]
                .as_str()
                .unwrap()
                .starts_with("${PLUGIN_ROOT}/bin/evidence-gate ")
    }));
    let no_content = load("recorded-codex-0.171.0-plugin-no-content-hash.json");
    assert!(no_content.iter().all(|e| e["trustStatus"] == "modified"));

    // Both hashes as Codex trusted them: the hook hash matches, but doctor
    // cannot recompute the bundle hash, so it warns instead of claiming ok.
    install_plugin(&ch, &trusted, &states(&trusted, &ch, true));
    let checks = doctor(&h, &ch);
    let t = find(&checks, "codex.trust").unwrap();
    assert_eq!(t["status"], "warn", "{t}");
    let m = t["message"].as_str().unwrap();
    assert!(
        m.contains("trusted_content_hash")
            && m.contains("evidence-gate@eg-local:hooks/hooks.json:stop:0:0"),
        "{t}"
    );
    assert!(find(&checks, "codex.plugin").is_none(), "{checks:?}");

    // `trusted_hash` alone: Codex said `modified`; doctor fails, naming them.
    install_plugin(&ch, &no_content, &states(&no_content, &ch, false));
    let t = doctor(&h, &ch)
        .into_iter()
        .find(|c| c["id"] == "codex.trust")
        .unwrap();
    assert_eq!(t["status"], "fail", "{t}");
    assert!(
        t["message"]
            .as_str()
            .unwrap()
            .contains("plugin hooks without `trusted_content_hash` (Codex lists them as `modified`): evidence-gate@eg-local:hooks/hooks.json:"),
        "{t}"
    );

    // Nothing trusted: never trusted.
    install_plugin(&ch, &trusted, "");
    let t = doctor(&h, &ch)
        .into_iter()
        .find(|c| c["id"] == "codex.trust")
        .unwrap();
    assert_eq!(t["status"], "fail", "{t}");
    assert!(
        t["message"].as_str().unwrap().contains("never trusted"),
        "{t}"
    );

    // A hook hash that is not the hook as wired now: modified.
    let mut wrong = states(&trusted, &ch, true);
    wrong = wrong.replacen("trusted_hash = \"sha256:", "trusted_hash = \"sha256:00", 1);
    install_plugin(&ch, &trusted, &wrong);
    let t = doctor(&h, &ch)
        .into_iter()
        .find(|c| c["id"] == "codex.trust")
        .unwrap();
    assert_eq!(t["status"], "fail", "{t}");
    assert!(
        t["message"]
            .as_str()
            .unwrap()
            .contains("modified since trusted"),
        "{t}"
    );
}

/// `init --scope plugin` writes a plugin's hooks/hooks.json; Codex runs it
/// only from an installed, enabled plugin. Until then doctor fails
/// `codex.plugin`; a disabled plugin is not installed for Codex either.
#[test]
fn doctor_codex_plugin_source_not_installed() {
    let h = HookRepo::new();
    let ch = h.state_home.path().join("codex-home");
    std::fs::create_dir_all(&ch).unwrap();
    let run = h.run(
        &[
            "init", "--json", "--write", "--host", "codex", "--scope", "plugin",
        ],
        b"",
        &[
            ("HOME", h.state_home.path().to_str().unwrap()),
            ("CODEX_HOME", ch.to_str().unwrap()),
        ],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(h.join("hooks/hooks.json").exists());
    assert!(
        ch.join("config.toml").exists(),
        "plugin scope writes $CODEX_HOME/config.toml"
    );
    let checks = doctor(&h, &ch);
    let c = find(&checks, "codex.plugin").unwrap_or_else(|| panic!("{checks:?}"));
    assert_eq!(c["status"], "fail", "{c}");
    assert!(
        c["hint"].as_str().unwrap().contains("codex plugin add"),
        "{c}"
    );
    // Installed but switched off: still not loaded.
    let trusted = load("recorded-codex-0.171.0-plugin-trusted.json");
    install_plugin(&ch, &trusted, &states(&trusted, &ch, true));
    let cfg = std::fs::read_to_string(ch.join("config.toml")).unwrap();
    std::fs::write(
        ch.join("config.toml"),
        cfg.replace("enabled = true", "enabled = false"),
    )
    .unwrap();
    let checks = doctor(&h, &ch);
    assert_eq!(find(&checks, "codex.plugin").unwrap()["status"], "fail");
    // Enabled: the plugin carries the hooks; codex.plugin is gone.
    std::fs::write(ch.join("config.toml"), cfg).unwrap();
    let checks = doctor(&h, &ch);
    assert!(find(&checks, "codex.plugin").is_none(), "{checks:?}");
    assert_eq!(find(&checks, "codex.trust").unwrap()["status"], "warn");
}

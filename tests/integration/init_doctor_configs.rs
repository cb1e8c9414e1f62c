//! `init --write` and `doctor` on host configuration files as users really
//! write them: TOML headers with comments, root dotted keys, Gemini's
//! hook-system switches beside the events, and files the host ignores.

use serde_json::{Value, json};

use crate::common::bin;
use crate::hooks_support::*;

fn home(h: &HookRepo) -> (&'static str, &str) {
    ("HOME", h.state_home.path().to_str().unwrap())
}

fn init_json(h: &HookRepo, args: &[&str]) -> (i32, Value) {
    let exe = bin("evidence-gate");
    let mut a = vec!["init", "--json", "--write"];
    a.extend_from_slice(args);
    a.extend(["--binary", exe.to_str().unwrap()]);
    let run = h.run(&a, b"", &[home(h)]);
    (
        run.code,
        serde_json::from_str(&run.stdout).unwrap_or(Value::Null),
    )
}

fn doctor(h: &HookRepo, host: &str) -> (i32, Vec<Value>) {
    let run = h.run(&["doctor", "--json", "--host", host], b"", &[home(h)]);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    (run.code, v["checks"].as_array().unwrap().clone())
}

fn check<'a>(checks: &'a [Value], id: &str, status: &str) -> &'a Value {
    checks
        .iter()
        .find(|c| c["id"] == id && c["status"] == status)
        .unwrap_or_else(|| panic!("no {status} check {id}: {checks:?}"))
}

fn read(h: &HookRepo, rel: &str) -> String {
    std::fs::read_to_string(h.join(rel)).unwrap()
}

/// Lines that open the `[features]` table (a second one is invalid TOML).
fn features_headers(toml: &str) -> usize {
    toml.lines()
        .filter(|l| {
            let l = l.trim();
            l.starts_with('[') && !l.starts_with("[[") && {
                let name = l[1..].split(']').next().unwrap().trim();
                name == "features" || name == "\"features\""
            }
        })
        .count()
}

#[test]
fn init_write_keeps_codex_config_toml_valid_under_commented_or_spaced_headers() {
    for (existing, want) in [
        (
            "[features] # switches\nweb_search = true\n",
            "[features] # switches\nweb_search = true\nhooks = true\n",
        ),
        (
            "model = \"x\"\n[ features ]\nweb_search = true\n",
            "model = \"x\"\n[ features ]\nweb_search = true\nhooks = true\n",
        ),
    ] {
        let h = HookRepo::new();
        h.write(".codex/config.toml", existing);
        let (code, v) = init_json(&h, &["--host", "codex"]);
        assert_eq!(code, 0, "{v}");
        let out = read(&h, ".codex/config.toml");
        assert_eq!(features_headers(&out), 1, "{out}");
        assert_eq!(out, want);
    }
}

/// A root that defines `features` with dotted keys gets `features.hooks`
/// in the same form (a `[features]` table would define it twice).
#[test]
fn init_write_adds_hooks_to_root_dotted_features_in_their_form() {
    let h = HookRepo::new();
    let existing = "features.web_search = true\n\n[model]\nname = \"x\"\n";
    h.write(".codex/config.toml", existing);
    let (code, v) = init_json(&h, &["--host", "codex"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        read(&h, ".codex/config.toml"),
        "features.web_search = true\nfeatures.hooks = true\n\n[model]\nname = \"x\"\n"
    );
    assert_eq!(v["files"][1]["action"], "update");
}

/// The line-based edit put `hooks = true` inside a multi-line
/// string that held `[features]` text, and doctor then said ok. The string,
/// comments and layout stay as written; the real table is added; doctor
/// reads the switch from a TOML parse.
#[test]
fn init_write_never_edits_inside_a_multi_line_string() {
    let h = HookRepo::new();
    let existing = "# my Codex settings\nmodel = \"gpt-5\"   # aligned\ndeveloper_instructions = \"\"\"\nWhen editing TOML, write:\n[features]\nhooks = false\n\"\"\"\n\n[projects.\"/elsewhere\"]\ntrust_level = \"trusted\"\n";
    h.write(".codex/config.toml", existing);
    let (code, v) = init_json(&h, &["--host", "codex"]);
    assert_eq!(code, 0, "{v}");
    let out = read(&h, ".codex/config.toml");
    assert!(
        out.starts_with(existing),
        "the user's text is untouched: {out}"
    );
    assert_eq!(&out[existing.len()..], "\n[features]\nhooks = true\n");
    let (_, checks) = doctor(&h, "codex");
    check(&checks, "codex.features", "ok");
}

/// A config.toml that is not TOML is refused with the line, never rewritten;
/// doctor fails it with the same reason.
#[test]
fn invalid_codex_config_toml_is_refused_and_failed_by_doctor() {
    let h = HookRepo::new();
    let broken = "model = \"gpt-5\"\n[features\nhooks = true\n";
    h.write(".codex/config.toml", broken);
    let (code, v) = init_json(&h, &["--host", "codex"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["error"]["code"], "INIT_CONFIG_INVALID");
    let m = v["error"]["message"].as_str().unwrap();
    assert!(m.contains("TOML parse error at line 2"), "{m}");
    assert!(m.contains("left untouched"), "{m}");
    assert_eq!(read(&h, ".codex/config.toml"), broken);
    let (code, checks) = doctor(&h, "codex");
    assert_eq!(code, 1);
    let c = check(&checks, "codex.config", "fail");
    assert!(
        c["message"].as_str().unwrap().contains("not valid TOML"),
        "{c}"
    );
}

#[test]
fn doctor_reads_hooks_false_under_a_commented_header_or_a_dotted_key() {
    for config in [
        "[features] # switches\nhooks = false\n",
        "features.hooks = false\n",
    ] {
        let h = HookRepo::new();
        init_json(&h, &["--host", "codex"]);
        h.write(".codex/config.toml", config);
        let (code, checks) = doctor(&h, "codex");
        assert_eq!(code, 1, "{config:?}: {checks:?}");
        check(&checks, "codex.features", "fail");
    }
}

#[test]
fn init_write_merges_gemini_settings_with_hook_system_switches() {
    let h = HookRepo::new();
    let mine = json!({"matcher": "write_file", "hooks": [
        {"type": "command", "name": "mine", "command": "x.sh", "timeout": 5000}]});
    h.write(
        ".gemini/settings.json",
        json!({"hooks": {"enabled": true, "notifications": false,
            "disabled": ["old-hook"], "BeforeTool": [mine]}})
        .to_string(),
    );
    let (code, v) = init_json(&h, &["--host", "gemini"]);
    assert_eq!(code, 0, "{v}");
    let doc: Value = serde_json::from_str(&read(&h, ".gemini/settings.json")).unwrap();
    assert_eq!(doc["hooks"]["enabled"], true);
    assert_eq!(doc["hooks"]["notifications"], false);
    assert_eq!(doc["hooks"]["disabled"], json!(["old-hook"]));
    assert_eq!(doc["hooks"]["BeforeTool"], json!([mine]));
    assert!(
        doc["hooks"]["AfterAgent"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .contains("hook stop --host gemini")
    );
    let (code, checks) = doctor(&h, "gemini");
    assert_eq!(code, 0, "{checks:?}");
    check(&checks, "hooks.wired.gemini", "ok");
}

#[test]
fn init_write_still_refuses_a_non_array_event() {
    let h = HookRepo::new();
    let bad = json!({"hooks": {"AfterAgent": {"command": "x"}}}).to_string();
    h.write(".gemini/settings.json", &bad);
    let (code, v) = init_json(&h, &["--host", "gemini"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(read(&h, ".gemini/settings.json"), bad);
}

#[test]
fn doctor_fails_config_files_the_host_ignores() {
    let h = HookRepo::new();
    init_json(&h, &["--host", "codex"]);
    let mut doc: Value = serde_json::from_str(&read(&h, ".codex/hooks.json")).unwrap();
    doc.as_object_mut()
        .unwrap()
        .insert("$schema".into(), json!("https://example.com/hooks.json"));
    h.write(".codex/hooks.json", doc.to_string());
    let (code, checks) = doctor(&h, "codex");
    assert_eq!(code, 1, "{checks:?}");
    let c = check(&checks, "hooks.wired.codex", "fail");
    assert!(c["message"].as_str().unwrap().contains("$schema"), "{c}");

    init_json(&h, &["--host", "claude-code"]);
    let mut doc: Value = serde_json::from_str(&read(&h, ".claude/settings.json")).unwrap();
    doc["disableAllHooks"] = json!(true);
    h.write(".claude/settings.json", doc.to_string());
    let (code, checks) = doctor(&h, "claude-code");
    assert_eq!(code, 1, "{checks:?}");
    let c = check(&checks, "hooks.wired.claude-code", "fail");
    assert!(c["message"].as_str().unwrap().contains("disableAllHooks"));

    init_json(&h, &["--host", "gemini"]);
    let mut doc: Value = serde_json::from_str(&read(&h, ".gemini/settings.json")).unwrap();
    doc["hooksConfig"] = json!({"enabled": false});
    h.write(".gemini/settings.json", doc.to_string());
    let (code, checks) = doctor(&h, "gemini");
    assert_eq!(code, 1, "{checks:?}");
    check(&checks, "gemini.enabled", "fail");
}

/// Dotfile managers link the real file from elsewhere; the link leaves its
/// own directory, which a directory handle does not follow.
#[test]
fn init_write_writes_through_a_symlinked_settings_file() {
    let h = HookRepo::new();
    let mine = json!({"permissions": {"allow": ["Bash(ls)"]}});
    h.write("dotfiles/claude.json", mine.to_string());
    std::fs::create_dir_all(h.join(".claude")).unwrap();
    std::os::unix::fs::symlink("../dotfiles/claude.json", h.join(".claude/settings.json")).unwrap();
    let (code, v) = init_json(&h, &["--host", "claude-code"]);
    assert_eq!(code, 0, "{v}");
    let link = std::fs::symlink_metadata(h.join(".claude/settings.json")).unwrap();
    assert!(link.file_type().is_symlink(), "the link stays a link");
    let doc: Value = serde_json::from_str(&read(&h, "dotfiles/claude.json")).unwrap();
    assert_eq!(doc["permissions"], mine["permissions"]);
    assert!(doc["hooks"]["SubagentStop"].is_array(), "{doc}");
    let (code, checks) = doctor(&h, "claude-code");
    assert_eq!(code, 0, "{checks:?}");
    check(&checks, "hooks.wired.claude-code", "ok");
}

/// `init --write --host <host> --binary <link>`, which must succeed.
fn init_with_binary(h: &HookRepo, host: &str, link: &std::path::Path) {
    let run = h.run(
        &[
            "init",
            "--json",
            "--write",
            "--host",
            host,
            "--binary",
            link.to_str().unwrap(),
        ],
        b"",
        &[home(h)],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

#[test]
fn a_symlinked_binary_and_rules_file_are_followed() {
    let h = HookRepo::new();
    std::fs::create_dir_all(h.join("bin")).unwrap();
    std::os::unix::fs::symlink(bin("evidence-gate"), h.join("bin/evidence-gate")).unwrap();
    let link = h.join("bin/evidence-gate");
    init_with_binary(&h, "claude-code", &link);
    let (code, checks) = doctor(&h, "claude-code");
    assert_eq!(code, 0, "{checks:?}");
    check(&checks, "binary.reachable", "ok");

    h.write(
        "shared/rules.json",
        r#"{"subagent_stop": {"max_attempts": 1}}"#,
    );
    std::fs::create_dir_all(h.join("conf")).unwrap();
    std::os::unix::fs::symlink("../shared/rules.json", h.join("conf/rules.json")).unwrap();
    let payload = h.codex(Some("no receipt"));
    let rules = h.join("conf/rules.json");
    let args = ["--host", "codex", "--rules", rules.to_str().unwrap()];
    let first = h.hook("subagent-stop", &args, &payload, &[]);
    assert!(
        block_reason(&first).contains("attempt 1 of 1"),
        "{}",
        first.stdout
    );
    assert!(!h.diag_codes().contains(&"HOOK_RULES_INVALID".to_owned()));
}

#[test]
fn agy_links_the_binary_behind_a_symlink() {
    let h = HookRepo::new();
    std::fs::create_dir_all(h.join("opt/eg")).unwrap();
    std::fs::create_dir_all(h.join("bin")).unwrap();
    std::fs::copy(bin("evidence-gate"), h.join("opt/eg/evidence-gate")).unwrap();
    std::os::unix::fs::symlink("../opt/eg/evidence-gate", h.join("bin/evidence-gate")).unwrap();
    let link = h.join("bin/evidence-gate");
    let run = h.run(
        &[
            "init",
            "--json",
            "--write",
            "--host",
            "agy",
            "--scope",
            "user",
            "--binary",
            link.to_str().unwrap(),
        ],
        b"",
        &[home(&h)],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let multi = h
        .state_home
        .path()
        .join(".gemini/config/bin/evidence-gate-hook-stop");
    let meta = std::fs::symlink_metadata(&multi).unwrap();
    assert!(meta.is_file(), "a link to the binary, not to the symlink");
    let (code, checks) = doctor(&h, "agy");
    assert_eq!(code, 0, "{checks:?}");
    check(&checks, "shell.roundtrip.agy", "ok");
    check(&checks, "binary.reachable", "ok");
    assert!(
        !h.diag_codes().contains(&"HOOK_USAGE".to_owned()),
        "doctor's version probe is no hook call: {:?}",
        h.diag_codes()
    );
}

/// The hook parser takes `--host=<h>` and lets the last `--host` win; the
/// wiring check reads the command the same way.
#[test]
fn doctor_reads_the_host_flag_as_the_hook_parses_it() {
    let h = HookRepo::new();
    init_json(&h, &["--host", "codex"]);
    let text = read(&h, ".codex/hooks.json");
    h.write(
        ".codex/hooks.json",
        text.replace("--host codex", "--host=codex"),
    );
    h.trust_codex_project();
    let (code, checks) = doctor(&h, "codex");
    assert_eq!(code, 0, "{checks:?}");
    check(&checks, "hooks.wired.codex", "ok");
    h.write(
        ".codex/hooks.json",
        text.replace("--host codex", "--host codex --host claude-code"),
    );
    let (code, checks) = doctor(&h, "codex");
    assert_eq!(code, 1, "{checks:?}");
    let c = check(&checks, "hooks.wired.codex", "fail");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("must pass `--host codex`"),
        "{c}"
    );
}

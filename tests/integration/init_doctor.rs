//! `evidence-gate init` and `evidence-gate doctor` (hooks.md §7), and the
//! generated `adapters/` templates kept in sync with `init`.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::bin;
use crate::hooks_support::*;

fn init_json(h: &HookRepo, args: &[&str]) -> (i32, Value) {
    let mut a = vec!["init", "--json"];
    a.extend_from_slice(args);
    let run = h.run(&a, b"", &[("HOME", h.state_home.path().to_str().unwrap())]);
    (
        run.code,
        serde_json::from_str(&run.stdout).unwrap_or(Value::Null),
    )
}

fn exe() -> String {
    bin("evidence-gate").to_str().unwrap().to_owned()
}

/// (adapter file, init arguments, index of the file in the output)
const ADAPTERS: &[(&str, &[&str], usize)] = &[
    (
        "codex/hooks.json",
        &["--host", "codex", "--binary", "evidence-gate"],
        0,
    ),
    (
        "codex/config.toml",
        &["--host", "codex", "--binary", "evidence-gate"],
        1,
    ),
    (
        "codex/plugin/hooks/hooks.json",
        &["--host", "codex", "--scope", "plugin"],
        0,
    ),
    (
        "claude-code/settings.json",
        &["--host", "claude-code", "--binary", "evidence-gate"],
        0,
    ),
    (
        "claude-code/plugin/hooks/hooks.json",
        &["--host", "claude-code", "--scope", "plugin"],
        0,
    ),
    (
        "gemini-cli/settings.json",
        &["--host", "gemini", "--binary", "evidence-gate"],
        0,
    ),
    (
        "agy/hooks.json",
        &["--host", "agy", "--binary", "evidence-gate"],
        0,
    ),
];

/// The adapters are `init --print` output; `UPDATE_ADAPTERS=1 cargo test
/// adapters_are_generated` rewrites them after a deliberate change.
#[test]
fn adapters_are_generated_by_init() {
    let h = HookRepo::new();
    let update = std::env::var_os("UPDATE_ADAPTERS").is_some();
    for (file, args, idx) in ADAPTERS {
        let (code, v) = init_json(&h, args);
        assert_eq!(code, 0, "{args:?}");
        let content = v["files"][idx]["content"].as_str().unwrap();
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("adapters")
            .join(file);
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, content).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("adapters/{file}: {e} (UPDATE_ADAPTERS=1 regenerates)"));
        assert_eq!(
            on_disk, content,
            "adapters/{file} differs from `init` (UPDATE_ADAPTERS=1 regenerates)"
        );
        if file.ends_with(".json") {
            check_wiring_rules(file, &serde_json::from_str(content).unwrap());
        }
    }
}

/// hooks.md §7.3: root and handler keys, timeout units, status messages.
fn check_wiring_rules(file: &str, doc: &Value) {
    let gemini = file.starts_with("gemini");
    if file.starts_with("codex") {
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["hooks"], "{file}: Codex root holds only `hooks`");
    }
    if gemini {
        assert_eq!(doc["tools"]["enableHooks"], true);
    }
    for (_event, groups) in doc["hooks"].as_object().unwrap() {
        for g in groups.as_array().unwrap() {
            if let Some(m) = g["matcher"].as_str() {
                assert!(regex::Regex::new(m).is_ok());
            }
            for handler in g["hooks"].as_array().unwrap() {
                let allowed: &[&str] = if gemini {
                    &["type", "name", "command", "timeout"]
                } else if file.starts_with("codex") {
                    &[
                        "type",
                        "command",
                        "timeout",
                        "statusMessage",
                        "commandWindows",
                    ]
                } else {
                    &["type", "command", "timeout", "statusMessage"]
                };
                for k in handler.as_object().unwrap().keys() {
                    assert!(allowed.contains(&k.as_str()), "{file}: key {k}");
                }
                assert_eq!(handler["type"], "command");
                let t = handler["timeout"].as_u64().unwrap();
                if gemini {
                    assert!((1000..=60_000).contains(&t), "{file}: milliseconds");
                } else {
                    assert!((1..=60).contains(&t), "{file}: seconds");
                    assert!(
                        handler["statusMessage"]
                            .as_str()
                            .unwrap()
                            .starts_with("evidence-gate:")
                    );
                }
                if let Some(w) = handler["commandWindows"].as_str() {
                    assert!(
                        !w.starts_with('"'),
                        "{file}: a bare first word for PowerShell"
                    );
                }
            }
        }
    }
}

/// Project wiring is committed, so it names `evidence-gate` as
/// found on PATH, never this machine's absolute path (nor a build directory).
#[test]
fn print_writes_nothing_and_names_the_binary_on_path() {
    let h = HookRepo::new();
    let before = h.repo.snapshot();
    let run = h.run(
        &["init", "--host", "codex"],
        b"",
        &[("PATH", "/usr/bin:/bin")],
    );
    assert_eq!(run.code, 0);
    assert!(
        run.stdout
            .starts_with("==> .codex/hooks.json (print) <==\n")
    );
    assert!(
        run.stdout
            .contains("\"command\": \"evidence-gate hook subagent-stop --host codex\""),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains(&exe()),
        "no absolute path: {}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("==> .codex/config.toml (print) <==\n[features]\nhooks = true\n")
    );
    assert!(
        run.stdout.contains("`evidence-gate` is not on PATH"),
        "says how to make the command resolve: {}",
        run.stdout
    );
    assert!(run.stdout.contains("--binary PATH"), "{}", run.stdout);
    assert_eq!(h.repo.snapshot(), before);
    // With the binary on PATH there is nothing to warn about.
    let dir = Path::new(&exe())
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let run = h.run(
        &["init", "--host", "claude-code"],
        b"",
        &[("PATH", &format!("{dir}:/usr/bin:/bin"))],
    );
    assert_eq!(run.code, 0);
    assert!(!run.stdout.contains("not on PATH"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("\"command\": \"evidence-gate hook subagent-stop --host claude-code\""),
        "{}",
        run.stdout
    );
    // User scope is not committed: it names this executable.
    let run = h.run(
        &["init", "--host", "claude-code", "--scope", "user"],
        b"",
        &[("HOME", h.state_home.path().to_str().unwrap())],
    );
    assert!(
        run.stdout
            .contains(&format!("{} hook subagent-stop --host claude-code", exe())),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("build-output path"),
        "warns about target/"
    );
}

/// The doctor's Codex trust check hashes the command as written: the
/// portable command hashes the same as Codex does for it.
#[test]
fn portable_project_wiring_passes_doctor_with_the_binary_on_path() {
    let h = HookRepo::new();
    let dir = Path::new(&exe())
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let path = format!("{dir}:/usr/bin:/bin");
    let env = [
        ("HOME", h.state_home.path().to_str().unwrap()),
        ("PATH", path.as_str()),
    ];
    let run = h.run(&["init", "--host", "claude-code", "--write"], b"", &env);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(h.join(".claude/settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        doc["hooks"]["Stop"][0]["hooks"][0]["command"],
        "evidence-gate hook stop --host claude-code --profile auto"
    );
    let run = h.run(&["doctor", "--json", "--host", "claude-code"], b"", &env);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let checks = v["checks"].as_array().unwrap();
    assert_eq!(
        status(checks, "hooks.wired.claude-code"),
        "ok",
        "{checks:?}"
    );
    assert_eq!(status(checks, "binary.reachable"), "ok", "{checks:?}");
    assert_eq!(
        status(checks, "shell.roundtrip.claude-code"),
        "ok",
        "{checks:?}"
    );
}

/// `--only subagent-stop` wires the worker evidence gate alone; `doctor
/// --only` expects just that; an event the host lacks is a usage error.
#[test]
fn init_only_wires_the_listed_events() {
    let h = HookRepo::new();
    let (code, v) = init_json(
        &h,
        &[
            "--host",
            "codex",
            "--write",
            "--binary",
            &exe(),
            "--only",
            "subagent-stop",
        ],
    );
    assert_eq!(code, 0, "{v}");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(h.join(".codex/hooks.json")).unwrap())
            .unwrap();
    let events: Vec<&String> = doc["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(events, ["SubagentStop"]);
    // Host event names work too, and a second run with more events adds them.
    let (code, _) = init_json(
        &h,
        &[
            "--host",
            "codex",
            "--write",
            "--binary",
            &exe(),
            "--only",
            "SubagentStop,stop",
        ],
    );
    assert_eq!(code, 0);
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(h.join(".codex/hooks.json")).unwrap())
            .unwrap();
    let events: Vec<&String> = doc["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(events, ["SubagentStop", "Stop"]);
    h.trust_codex_project();
    let (_, checks) = doctor(&h, &["--host", "codex", "--only", "subagent-stop", "stop"]);
    assert_eq!(status(&checks, "hooks.wired.codex"), "ok", "{checks:?}");
    let (_, checks) = doctor(&h, &["--host", "codex"]);
    assert_eq!(
        status(&checks, "hooks.wired.codex"),
        "fail",
        "all events expected without --only"
    );
    let run = h.run(
        &["init", "--host", "gemini", "--only", "subagent-stop"],
        b"",
        &[],
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("gemini wires no such event; it wires stop, user-prompt-submit"),
        "{}",
        run.stderr
    );
}

#[test]
fn write_merges_replaces_ours_and_keeps_the_rest() {
    let h = HookRepo::new();
    let existing = json!({
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {
            "SubagentStop": [
                {"matcher": "^old$", "hooks": [{"type": "command", "command": "/old/evidence-gate hook subagent-stop --host claude-code", "timeout": 10}]},
                {"matcher": "^x$", "hooks": [{"type": "command", "command": "echo unrelated"}]}
            ],
            "PreToolUse": [{"matcher": "^Bash$", "hooks": [{"type": "command", "command": "lint-hook"}]}]
        }
    });
    h.write(
        ".claude/settings.json",
        serde_json::to_string_pretty(&existing).unwrap(),
    );
    let (code, v) = init_json(
        &h,
        &["--host", "claude-code", "--write", "--binary", &exe()],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["files"][0]["action"], "update");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(h.join(".claude/settings.json")).unwrap())
            .unwrap();
    assert_eq!(doc["permissions"], existing["permissions"]);
    let pre = doc["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(
        pre[0], existing["hooks"]["PreToolUse"][0],
        "the unrelated hook stays first"
    );
    assert_eq!(pre.len(), 3, "plus our team guard and spawn guard: {pre:?}");
    assert_eq!(pre[1]["matcher"], "^Bash$");
    assert_eq!(pre[2]["matcher"], "^(Task|Agent)$");
    let ss = doc["hooks"]["SubagentStop"].as_array().unwrap();
    assert_eq!(
        ss.len(),
        2,
        "old handler removed, unrelated kept, ours added: {ss:?}"
    );
    assert_eq!(ss[0]["matcher"], "^x$");
    assert!(
        ss[1]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .starts_with(&exe())
    );
    let bak = h.join(".claude/settings.json.evidence-gate.bak");
    assert_eq!(
        serde_json::from_str::<Value>(&std::fs::read_to_string(&bak).unwrap()).unwrap(),
        existing
    );
    let (_, v) = init_json(
        &h,
        &["--host", "claude-code", "--write", "--binary", &exe()],
    );
    assert_eq!(v["files"][0]["action"], "unchanged");
    // The backup is kept once: the original, not the previous write.
    assert_eq!(
        serde_json::from_str::<Value>(&std::fs::read_to_string(&bak).unwrap()).unwrap(),
        existing
    );
}

#[test]
fn codex_plugin_scope_enables_plugin_hooks() {
    let h = HookRepo::new();
    let (code, v) = init_json(&h, &["--host", "codex", "--scope", "plugin"]);
    assert_eq!(code, 0);
    assert_eq!(v["files"][1]["path"], "~/.codex/config.toml");
    assert_eq!(
        v["files"][1]["content"],
        "[features]\nhooks = true\nplugin_hooks = true\nplugins = true\n"
    );
}

#[test]
fn write_codex_creates_hooks_and_edits_config_toml() {
    let h = HookRepo::new();
    h.write(
        ".codex/config.toml",
        "model = \"gpt-5\"\n\n[features]\nweb_search = true\n",
    );
    let (code, v) = init_json(&h, &["--host", "codex", "--write", "--binary", &exe()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["files"][0]["action"], "create");
    assert_eq!(
        std::fs::read_to_string(h.join(".codex/config.toml")).unwrap(),
        "model = \"gpt-5\"\n\n[features]\nweb_search = true\nhooks = true\n"
    );
    assert!(
        v["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("/hooks"))
    );
}

#[test]
fn unparsable_target_is_never_overwritten() {
    let h = HookRepo::new();
    h.write(".claude/settings.json", "{ not json");
    let (code, v) = init_json(
        &h,
        &["--host", "claude-code", "--write", "--binary", &exe()],
    );
    assert_eq!(code, 1);
    assert_eq!(v["ok"], false);
    assert_eq!(v["error"]["code"], "INIT_CONFIG_INVALID");
    assert_eq!(
        std::fs::read_to_string(h.join(".claude/settings.json")).unwrap(),
        "{ not json"
    );
    let run = h.run(
        &[
            "init",
            "--host",
            "claude-code",
            "--write",
            "--binary",
            &exe(),
        ],
        b"",
        &[],
    );
    assert_eq!(run.code, 1);
    assert!(run.stderr.starts_with("error[INIT_CONFIG_INVALID]"));
}

#[test]
fn unresolved_binary_is_refused() {
    let h = HookRepo::new();
    let (code, v) = init_json(
        &h,
        &["--host", "codex", "--binary", "/no/such/evidence-gate"],
    );
    assert_eq!(code, 1);
    assert_eq!(v["error"]["code"], "INIT_BINARY_UNRESOLVED");
    h.write("not-exec", "x");
    let (code, v) = init_json(&h, &["--host", "codex", "--binary", "./not-exec"]);
    assert_eq!(code, 1);
    assert_eq!(v["error"]["code"], "INIT_BINARY_UNRESOLVED");
}

#[test]
fn node_predecessors_are_reported_and_removed_on_request() {
    let h = HookRepo::new();
    let node = json!({"hooks": {"SubagentStop": [{"matcher": "^lazycodex-worker-(low|medium|high)$", "hooks": [
        {"type": "command", "command": "node \"${PLUGIN_ROOT}/components/lazycodex-executor-verify/dist/cli.js\" hook subagent-stop", "timeout": 10}]}]}});
    h.write(".codex/hooks.json", node.to_string());
    let (_, v) = init_json(&h, &["--host", "codex", "--write", "--binary", &exe()]);
    assert!(v["notes"].to_string().contains("Node predecessor"));
    let text = std::fs::read_to_string(h.join(".codex/hooks.json")).unwrap();
    assert!(
        text.contains("lazycodex-executor-verify"),
        "kept without the flag"
    );
    let run = h.run(&["doctor", "--host", "codex", "--json"], b"", &[]);
    let d: Value = serde_json::from_str(&run.stdout).unwrap();
    let np = d["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "hooks.node_predecessors")
        .unwrap()
        .clone();
    assert_eq!(np["status"], "warn");
    let (_, _) = init_json(
        &h,
        &[
            "--host",
            "codex",
            "--write",
            "--binary",
            &exe(),
            "--replace-node-hooks",
        ],
    );
    let text = std::fs::read_to_string(h.join(".codex/hooks.json")).unwrap();
    assert!(!text.contains("lazycodex-executor-verify"));
}

#[test]
fn init_usage_errors_exit_2() {
    let h = HookRepo::new();
    assert_eq!(h.run(&["init", "--host", "vim"], b"", &[]).code, 2);
    assert_eq!(
        h.run(&["init", "--host", "codex", "--scope", "local"], b"", &[])
            .code,
        2
    );
    assert_eq!(
        h.run(&["init", "--host", "codex", "--print", "--write"], b"", &[])
            .code,
        2
    );
    assert_eq!(h.run(&["init"], b"", &[]).code, 2);
}

#[test]
fn gemini_and_agy_get_the_goal_loop_hooks_but_no_subagent_stop() {
    let h = HookRepo::new();
    let (code, v) = init_json(&h, &["--host", "gemini", "--binary", "evidence-gate"]);
    assert_eq!(code, 0);
    assert!(
        v["notes"]
            .to_string()
            .contains("gemini has no SubagentStop event")
    );
    let doc: Value = serde_json::from_str(v["files"][0]["content"].as_str().unwrap()).unwrap();
    let events: Vec<&String> = doc["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(events, ["AfterAgent", "BeforeAgent"]);
    assert_eq!(
        doc["hooks"]["AfterAgent"][0]["hooks"][0]["command"],
        "evidence-gate hook stop --host gemini --profile auto"
    );
    assert_eq!(doc["tools"]["enableHooks"], true);
    let (_, v) = init_json(
        &h,
        &[
            "--host",
            "gemini",
            "--binary",
            "evidence-gate",
            "--team-guard",
        ],
    );
    let doc: Value = serde_json::from_str(v["files"][0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        doc["hooks"]["BeforeTool"][0]["matcher"],
        "^run_shell_command$"
    );
    let (_, v) = init_json(&h, &["--host", "agy", "--binary", "evidence-gate"]);
    let doc: Value = serde_json::from_str(v["files"][0]["content"].as_str().unwrap()).unwrap();
    let events: Vec<&String> = doc["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(events, ["Stop"]);
}

// --- doctor ---------------------------------------------------------------------

fn doctor(h: &HookRepo, args: &[&str]) -> (i32, Vec<Value>) {
    let mut a = vec!["doctor", "--json"];
    a.extend_from_slice(args);
    let run = h.run(&a, b"", &[("HOME", h.state_home.path().to_str().unwrap())]);
    let v: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    assert_eq!(v["ok"], run.code == 0);
    (run.code, v["checks"].as_array().unwrap().clone())
}

fn status<'a>(checks: &'a [Value], id: &str) -> &'a str {
    checks
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}: {checks:?}"))["status"]
        .as_str()
        .unwrap()
}

#[test]
fn doctor_passes_after_init_write() {
    let h = HookRepo::new();
    init_json(&h, &["--host", "codex", "--write", "--binary", &exe()]);
    h.trust_codex_project();
    let (code, checks) = doctor(&h, &[]);
    assert_eq!(code, 0, "{checks:?}");
    assert_eq!(status(&checks, "codex.project_trust"), "ok");
    assert_eq!(status(&checks, "hooks.wired.codex"), "ok");
    assert_eq!(status(&checks, "hooks.matchers.codex"), "ok");
    assert_eq!(status(&checks, "binary.reachable"), "ok");
    assert_eq!(status(&checks, "codex.features"), "ok");
    assert_eq!(status(&checks, "codex.trust"), "ok");
    assert_eq!(status(&checks, "rules.valid"), "ok");
    assert_eq!(status(&checks, "state.writable"), "ok");
    assert_eq!(status(&checks, "lock.works"), "ok");
    assert_eq!(
        status(&checks, "hosts.support"),
        "warn",
        "cells without a recorded payload stay experimental"
    );
    let support = checks.iter().find(|c| c["id"] == "hosts.support").unwrap();
    let msg = support["message"].as_str().unwrap();
    assert!(
        msg.contains(
            "supported: codex/subagent-stop, codex/stop, codex/user-prompt-submit, codex/pre-tool-use;"
        ),
        "{msg}"
    );
    assert!(
        msg.contains("experimental (synth fixtures only): codex/pre-tool-use-spawn"),
        "the Codex spawn guard has no recorded payload yet: {msg}"
    );
    // Threat-model §6 "I5 without fixtures": no recorded compaction record,
    // so the context-pressure escape is off for codex, and doctor says so.
    assert_eq!(status(&checks, "hosts.records"), "warn");
    let records = checks.iter().find(|c| c["id"] == "hosts.records").unwrap();
    assert!(
        records["message"]
            .as_str()
            .unwrap()
            .contains("off (no recorded compaction record, fail closed): codex"),
        "{records}"
    );
    let text = h.run(
        &["doctor"],
        b"",
        &[("HOME", h.state_home.path().to_str().unwrap())],
    );
    assert!(
        text.stdout
            .lines()
            .any(|l| l.starts_with("ok   hooks.wired.codex")
                && l.contains("5/5 events wired in .codex/hooks.json"))
    );
}

#[test]
fn doctor_fails_on_wiring_mistakes() {
    let h = HookRepo::new();
    init_json(&h, &["--host", "codex", "--write", "--binary", &exe()]);
    let path = h.join(".codex/hooks.json");
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut wrong = good.clone();
    wrong["hooks"]["SubagentStop"][0]["matcher"] = json!("^lazycodex-worker-low$");
    wrong["hooks"]["SubagentStop"][0]["hooks"][0]["timeout"] = json!(600);
    wrong["hooks"].as_object_mut().unwrap().remove("Stop");
    h.write(".codex/hooks.json", wrong.to_string());
    h.write(".codex/config.toml", "[features]\nhooks = false\n");
    let (code, checks) = doctor(&h, &["--host", "codex"]);
    assert_eq!(code, 1);
    assert_eq!(status(&checks, "hooks.wired.codex"), "fail");
    let wired = checks
        .iter()
        .find(|c| c["id"] == "hooks.wired.codex")
        .unwrap();
    let msg = wired["message"].as_str().unwrap();
    assert!(msg.contains("3/5 events wired"), "{msg}");
    assert!(msg.contains("Stop (`hook stop`) is not wired"), "{msg}");
    assert!(msg.contains("timeout 600"), "{msg}");
    assert_eq!(status(&checks, "codex.features"), "fail");
    let mut fixed = wrong.clone();
    fixed["hooks"]["SubagentStop"][0]["hooks"][0]["timeout"] = json!(10);
    fixed["hooks"]["Stop"] = good["hooks"]["Stop"].clone();
    h.write(".codex/hooks.json", fixed.to_string());
    h.write(".codex/config.toml", "[features]\nhooks = true\n");
    h.trust_codex_project();
    let (code, checks) = doctor(&h, &["--host", "codex"]);
    assert_eq!(code, 0, "{checks:?}");
    assert_eq!(
        status(&checks, "hooks.matchers.codex"),
        "warn",
        "matcher differs from the rules"
    );
    assert_eq!(status(&checks, "shell.roundtrip.codex"), "ok");
    let mut pre = fixed.clone();
    pre["hooks"]["SubagentStop"] = good["hooks"]["SubagentStop"].clone();
    pre["hooks"]["PreToolUse"][0]["matcher"] =
        json!("^(create_goal|Bash|shell|exec_command|local_shell)$");
    h.write(".codex/hooks.json", pre.to_string());
    let (_, checks) = doctor(&h, &["--host", "codex"]);
    assert_eq!(
        status(&checks, "hooks.matchers.codex"),
        "ok",
        "the --team-guard matcher is accepted"
    );
    // Codex 0.171 names its shell tool `Bash`; the old
    // team-guard matcher never fires and doctor no longer calls it ok.
    pre["hooks"]["PreToolUse"][0]["matcher"] =
        json!("^(create_goal|shell|exec_command|local_shell)$");
    h.write(".codex/hooks.json", pre.to_string());
    let (_, checks) = doctor(&h, &["--host", "codex"]);
    assert_eq!(
        status(&checks, "hooks.matchers.codex"),
        "warn",
        "a team-guard matcher without Bash misses Codex's shell tool"
    );
    let (code, checks) = doctor(&h, &["--host", "claude-code"]);
    assert_eq!(code, 1);
    assert_eq!(status(&checks, "hooks.wired.claude-code"), "fail");
}

#[test]
fn doctor_reports_invalid_rules_and_recent_panics() {
    let h = HookRepo::new();
    h.write(
        ".evidence-gate/rules.json",
        r#"{"subagent_stop":{"max_attempts":11}}"#,
    );
    let (code, checks) = doctor(&h, &["--host", "codex"]);
    assert_eq!(code, 1);
    assert_eq!(status(&checks, "rules.valid"), "fail");
    let h = HookRepo::new();
    h.stop_env(
        &h.codex(Some("done")),
        &[("EVIDENCE_GATE_TEST_FAULT", "panic")],
    );
    let (_, checks) = doctor(&h, &["--host", "codex"]);
    assert_eq!(status(&checks, "diagnostics.recent"), "warn");
    let c = checks
        .iter()
        .find(|c| c["id"] == "diagnostics.recent")
        .unwrap();
    assert!(c["message"].as_str().unwrap().contains("HOOK_PANIC×1"));
}

fn recent(checks: &[Value]) -> Value {
    checks
        .iter()
        .find(|c| c["id"] == "diagnostics.recent")
        .unwrap()
        .clone()
}

/// threat-model.md §3 ("diagnostics"): the hooks' diagnostics live in the
/// workspace's per-user state directory, so an agent that deletes or plants
/// `.omo/evidence-gate/diagnostics.jsonl` changes nothing doctor reports.
#[test]
fn doctor_ignores_diagnostics_deleted_or_planted_in_the_workspace() {
    let h = HookRepo::new();
    h.stop_env(
        &h.codex(Some("done")),
        &[("EVIDENCE_GATE_TEST_FAULT", "panic")],
    );
    let in_tree = h.join(".omo/evidence-gate/diagnostics.jsonl");
    assert!(!in_tree.exists(), "no diagnostics in the workspace");
    let (_, checks) = doctor(&h, &["--host", "codex"]);
    let before = recent(&checks);
    assert_eq!(before["status"], "warn");
    assert!(before["message"].as_str().unwrap().contains("HOOK_PANIC×1"));
    // The agent deletes whatever it can reach of the record of the panic…
    let _ = std::fs::remove_file(&in_tree);
    let _ = std::fs::remove_file(h.join(".omo/evidence-gate/diagnostics.jsonl.1"));
    let (_, checks) = doctor(&h, &["--host", "codex"]);
    assert_eq!(
        recent(&checks),
        before,
        "deleting in-tree files hides nothing"
    );
    // …and plants records of its own.
    let ts = "2999-01-01T00:00:00.000Z";
    let planted: String = (0..20)
        .map(|_| {
            format!(
                "{}\n",
                json!({"v": 1, "ts": ts, "code": "HOOK_PANIC", "level": "error", "event": "subagent-stop", "agent_type": "worker"})
            )
        })
        .collect();
    h.write(".omo/evidence-gate/diagnostics.jsonl", planted);
    let (_, checks) = doctor(&h, &["--host", "codex"]);
    assert_eq!(
        recent(&checks),
        before,
        "planted in-tree records count for nothing"
    );
}

/// Honest use: a fail-open is still recorded (per-user) and doctor shows it.
#[test]
fn a_fail_open_is_recorded_per_user_and_shown_by_doctor() {
    let h = HookRepo::new();
    let run = h.run(&["hook", "subagent-stop"], b"nope", &[]);
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout, "");
    assert_eq!(h.diag_codes(), ["HOOK_JSON_INVALID"]);
    assert!(h.diagnostics_path().starts_with(h.state_home.path()));
    assert!(!h.join(".omo/evidence-gate/diagnostics.jsonl").exists());
    let (_, checks) = doctor(&h, &["--host", "codex"]);
    let c = recent(&checks);
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("HOOK_JSON_INVALID×1"),
        "{c}"
    );
}

/// When the per-user state directory lies inside the workspace, the hooks'
/// diagnostics are not written there either (never into the workspace).
#[test]
fn diagnostics_never_fall_back_into_the_workspace() {
    let h = HookRepo::new();
    let inside = h.join(".state");
    let inside = inside.to_str().unwrap();
    let run = h.run(
        &["hook", "subagent-stop"],
        b"nope",
        &[("XDG_STATE_HOME", inside), ("HOME", inside)],
    );
    assert_eq!(run.code, 0);
    let mut stack = vec![h.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            assert!(
                !p.to_string_lossy().contains("diagnostics.jsonl"),
                "diagnostics in the workspace: {}",
                p.display()
            );
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            }
        }
    }
}

#[test]
fn doctor_catches_a_shell_that_prints_to_stdout() {
    let h = HookRepo::new();
    init_json(&h, &["--host", "codex", "--write", "--binary", &exe()]);
    let shell = h.write(
        "noisy-shell",
        "#!/bin/sh\necho 'Welcome back!'\nshift\nexec sh -c \"$1\"\n",
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shell, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = h.run(
        &["doctor", "--host", "codex", "--json"],
        b"",
        &[
            ("HOME", h.state_home.path().to_str().unwrap()),
            ("SHELL", shell.to_str().unwrap()),
        ],
    );
    assert_eq!(run.code, 1);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let c = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "shell.roundtrip.codex")
        .unwrap();
    assert_eq!(c["status"], "fail");
    assert!(c["message"].as_str().unwrap().contains("printed"));
}

#[test]
fn doctor_usage_error_exits_2() {
    let h = HookRepo::new();
    assert_eq!(h.run(&["doctor", "--host", "vim"], b"", &[]).code, 2);
}

/// Project wiring never places a binary in the repository; agy
/// gets commands. The argument-free links are made for user scope only,
/// under ~/.gemini/config/bin.
#[test]
fn agy_project_write_wires_commands_and_links_nothing_into_the_repository() {
    let h = HookRepo::new();
    let (code, v) = init_json(&h, &["--host", "agy", "--write", "--team-guard"]);
    assert_eq!(code, 0, "{v}");
    assert!(
        !h.join(".agents/bin").exists(),
        "no binary in the repository"
    );
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(h.join(".agents/hooks.json")).unwrap())
            .unwrap();
    assert_eq!(
        doc["hooks"]["Stop"][0]["hooks"][0]["command"],
        "evidence-gate hook stop --host agy --profile auto"
    );
    assert!(
        v["notes"].to_string().contains("--scope user --write"),
        "{v}"
    );
}

#[test]
fn agy_user_write_links_argument_free_executables() {
    let h = HookRepo::new();
    let (code, v) = init_json(
        &h,
        &[
            "--host",
            "agy",
            "--scope",
            "user",
            "--write",
            "--binary",
            &exe(),
            "--team-guard",
        ],
    );
    assert_eq!(code, 0, "{v}");
    let home = h.state_home.path();
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(home.join(".gemini/config/hooks.json")).unwrap(),
    )
    .unwrap();
    let stop = doc["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    let link = home.join(".gemini/config/bin/evidence-gate-hook-stop");
    assert_eq!(
        stop,
        link.to_str().unwrap(),
        "an argument-free absolute path"
    );
    assert!(!h.join(".agents").exists(), "nothing in the repository");
    let pre = doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        pre.ends_with("/.gemini/config/bin/evidence-gate-hook-pre-tool-use"),
        "{pre}"
    );
    assert_eq!(doc["hooks"]["PreToolUse"][0]["matcher"], "^run_command$");
    // The link runs as `hook stop --host auto`: an agy Stop on a live plan blocks.
    h.write_plan(
        &format!("{ULW}/agy-conv-7"),
        &plan(Some("agy-conv-7"), None, vec![goal("G1", "pending", &[])]),
    );
    let payload = fixture("agy/stop/synth-stop.json", h.path());
    let out = std::process::Command::new(&link)
        .current_dir(h.path())
        .env("XDG_STATE_HOME", h.state_home.path())
        .env("XDG_CONFIG_HOME", h.state_home.path().join("config"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(payload.to_string().as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["decision"], "block");
    assert!(v["reason"].as_str().unwrap().contains("G1 — Title of G1"));
    let (_, checks) = doctor(&h, &["--host", "agy"]);
    assert_eq!(status(&checks, "hooks.wired.agy"), "ok", "{checks:?}");
}

/// Codex loads no project hooks from an untrusted project,
/// and `$CODEX_HOME` moves its config; doctor reads both.
#[test]
fn doctor_fails_an_untrusted_codex_project_and_honours_codex_home() {
    let h = HookRepo::new();
    init_json(&h, &["--host", "codex", "--write", "--binary", &exe()]);
    let (code, checks) = doctor(&h, &["--host", "codex"]);
    assert_eq!(code, 1, "{checks:?}");
    assert_eq!(status(&checks, "codex.project_trust"), "fail");
    // Trust recorded in a CODEX_HOME elsewhere counts, ~/.codex does not then.
    let codex_home = tempfile::tempdir().unwrap();
    let repo = std::fs::canonicalize(h.repo.path()).unwrap();
    let key = format!("{}/.codex/hooks.json:stop:0:0", repo.display());
    std::fs::write(
        codex_home.path().join("config.toml"),
        format!("[projects.\"{}\"]\ntrust_level = \"trusted\"\n[hooks.state.\"{key}\"]\ntrusted_hash = \"sha256:x\"\n", repo.display()),
    )
    .unwrap();
    let run = h.run(
        &["doctor", "--json", "--host", "codex"],
        b"",
        &[
            ("HOME", h.state_home.path().to_str().unwrap()),
            ("CODEX_HOME", codex_home.path().to_str().unwrap()),
        ],
    );
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let checks = v["checks"].as_array().unwrap().clone();
    assert_eq!(status(&checks, "codex.project_trust"), "ok");
    // A recorded hash that no longer matches is a failure naming the hook;
    // the hooks never trusted are named too.
    assert_eq!(run.code, 1, "{checks:?}");
    let trust = checks.iter().find(|c| c["id"] == "codex.trust").unwrap();
    assert_eq!(trust["status"], "fail");
    let msg = trust["message"].as_str().unwrap();
    assert!(msg.contains(&format!("modified since trusted (`trusted_hash` no longer matches; Codex lists it as `modified`): {key}")), "{trust}");
    assert!(
        msg.contains("never trusted") && msg.contains(":pre_tool_use:1:0"),
        "{trust}"
    );
    assert!(
        trust["hint"].as_str().unwrap().contains("/hooks"),
        "{trust}"
    );
    assert!(
        !trust.to_string().contains("custom subagent roles"),
        "{trust}"
    );
}

/// The trust hashes Codex 0.171.0 itself reported
/// (`hooks/list`, recorded in `fixtures/hosts/codex/hooks-list/`) pass
/// `codex.trust`; after a re-wire with another binary (the second recording,
/// where Codex lists every hook as `modified`) the old hashes fail, naming
/// each hook; an entry-less hook fails as never trusted.
#[test]
fn doctor_codex_trust_checks_recorded_codex_hashes() {
    let h = HookRepo::new();
    let repo = std::fs::canonicalize(h.repo.path()).unwrap();
    use crate::init_doctor_scopes::{hooks_file, load};
    // Rebuild the hooks file Codex listed, position by position.
    let wire = |entries: &[Value]| h.write(".codex/hooks.json", hooks_file(entries));
    let config = |entries: &[Value], skip: usize| {
        let mut text = format!(
            "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            repo.display()
        );
        for e in entries.iter().skip(skip) {
            let key = e["key"]
                .as_str()
                .unwrap()
                .replace("${FIXTURE_ROOT}", repo.to_str().unwrap());
            text.push_str(&format!(
                "[hooks.state.\"{key}\"]\ntrusted_hash = \"{}\"\n",
                e["currentHash"].as_str().unwrap()
            ));
        }
        let dir = h.state_home.path().join(".codex");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), text).unwrap();
    };
    let trust = |h: &HookRepo| -> Value {
        let (_, checks) = doctor(h, &["--host", "codex"]);
        checks
            .into_iter()
            .find(|c| c["id"] == "codex.trust")
            .unwrap()
    };
    let trusted = load("recorded-codex-0.171.0-trusted.json");
    assert!(trusted.iter().all(|e| e["trustStatus"] == "trusted"));
    wire(&trusted);
    config(&trusted, 0);
    let t = trust(&h);
    assert_eq!(t["status"], "ok", "{t}");
    assert!(
        t["message"]
            .as_str()
            .unwrap()
            .contains("all 5 evidence-gate hook(s)"),
        "{t}"
    );
    // Re-wired with another binary: Codex reported every hook `modified`.
    let modified = load("recorded-codex-0.171.0-modified.json");
    assert!(modified.iter().all(|e| e["trustStatus"] == "modified"));
    wire(&modified);
    let t = trust(&h);
    assert_eq!(t["status"], "fail", "{t}");
    let msg = t["message"].as_str().unwrap();
    assert!(msg.contains("modified since trusted"), "{t}");
    for e in &modified {
        let key = e["key"]
            .as_str()
            .unwrap()
            .replace("${FIXTURE_ROOT}", repo.to_str().unwrap());
        assert!(msg.contains(&key), "{key}: {t}");
    }
    assert!(!msg.contains("never trusted"), "{t}");
    // Trusting the new hashes (what `/hooks` records) passes again.
    config(&modified, 0);
    assert_eq!(trust(&h)["status"], "ok");
    // A hook without an entry is named as never trusted.
    config(&modified, 1);
    let t = trust(&h);
    assert_eq!(t["status"], "fail", "{t}");
    let first = modified[0]["key"]
        .as_str()
        .unwrap()
        .replace("${FIXTURE_ROOT}", repo.to_str().unwrap());
    assert!(
        t["message"]
            .as_str()
            .unwrap()
            .contains(&format!("never trusted (no `trusted_hash`): {first}")),
        "{t}"
    );
}

/// Gemini 0.61 reads `hooksConfig.enabled` (default true);
/// settings without `tools.enableHooks` work.
#[test]
fn doctor_accepts_gemini_hooks_enabled_by_default() {
    let h = HookRepo::new();
    init_json(&h, &["--host", "gemini-cli", "--write", "--binary", &exe()]);
    let mut doc: Value = serde_json::from_str(
        &std::fs::read_to_string(h.repo.path().join(".gemini/settings.json")).unwrap(),
    )
    .unwrap();
    doc.as_object_mut().unwrap().remove("tools");
    h.write(".gemini/settings.json", doc.to_string());
    let (code, checks) = doctor(&h, &["--host", "gemini"]);
    assert_eq!(status(&checks, "gemini.enabled"), "ok", "{checks:?}");
    assert_eq!(code, 0, "{checks:?}");
    doc["hooksConfig"] = json!({"enabled": false});
    h.write(".gemini/settings.json", doc.to_string());
    let (code, checks) = doctor(&h, &["--host", "gemini"]);
    assert_eq!(status(&checks, "gemini.enabled"), "fail");
    assert_eq!(code, 1);
}

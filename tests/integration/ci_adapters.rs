//! The CI adapters: the GitHub Action (`adapters/github-actions/action.yml`),
//! its example workflow and the pre-commit hook definition, parsed
//! structurally, and the action's scripts run the way a runner runs them.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value};

use crate::ci_support::*;
use crate::common::{Repo, bin};

/// A small YAML reader for the subset the adapters use: block mappings and
/// sequences, `- key: value` items, `|` and `>-` block scalars, flow
/// sequences of plain scalars and quoted strings. Anything else panics, so
/// a file that drifts out of the subset fails the test instead of passing it.
mod yaml {
    use serde_json::{Map, Value};

    struct Line {
        indent: usize,
        text: String,
    }

    pub fn parse(src: &str) -> Value {
        let lines: Vec<Line> = src
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|l| {
                assert!(!l.contains('\t'), "tabs are not YAML indentation: {l:?}");
                Line {
                    indent: l.len() - l.trim_start().len(),
                    text: l.trim_start().to_owned(),
                }
            })
            .collect();
        let (v, end) = block(&lines, 0, lines[0].indent);
        assert_eq!(
            end,
            lines.len(),
            "unparsed YAML from line {:?}",
            lines.get(end).map(|l| &l.text)
        );
        v
    }

    fn is_item(l: &Line) -> bool {
        l.text == "-" || l.text.starts_with("- ")
    }

    fn block(lines: &[Line], i: usize, indent: usize) -> (Value, usize) {
        if is_item(&lines[i]) {
            sequence(lines, i, indent)
        } else {
            mapping(lines, i, indent, None)
        }
    }

    fn split_key(text: &str) -> Option<(&str, &str)> {
        if let Some(k) = text.strip_suffix(':') {
            return Some((k, ""));
        }
        let (k, v) = text.split_once(": ")?;
        (!k.contains(' ') || k.starts_with('"')).then_some((k, v))
    }

    fn mapping(lines: &[Line], mut i: usize, indent: usize, first: Option<&str>) -> (Value, usize) {
        let mut map = Map::new();
        let mut first = first;
        while i < lines.len() {
            let text = match first.take() {
                Some(t) => t,
                None if lines[i].indent == indent && !is_item(&lines[i]) => lines[i].text.as_str(),
                None => break,
            };
            let (key, value) =
                split_key(text).unwrap_or_else(|| panic!("not a `key: value` line: {text:?}"));
            i += 1;
            let v = match value.trim() {
                "" if i < lines.len()
                    && (lines[i].indent > indent
                        || (lines[i].indent == indent && is_item(&lines[i]))) =>
                {
                    let (v, next) = block(lines, i, lines[i].indent);
                    i = next;
                    v
                }
                "" => Value::Null,
                "|" | ">-" | ">" => {
                    let mut body = Vec::new();
                    while i < lines.len() && lines[i].indent > indent {
                        body.push(lines[i].text.clone());
                        i += 1;
                    }
                    let sep = if value.trim() == "|" { "\n" } else { " " };
                    Value::String(body.join(sep))
                }
                v => scalar(v),
            };
            map.insert(unquote(key), v);
        }
        (Value::Object(map), i)
    }

    fn sequence(lines: &[Line], mut i: usize, indent: usize) -> (Value, usize) {
        let mut items = Vec::new();
        while i < lines.len() && lines[i].indent == indent && is_item(&lines[i]) {
            let rest = lines[i].text.strip_prefix('-').unwrap().trim_start();
            if rest.is_empty() {
                let (v, next) = block(lines, i + 1, lines[i + 1].indent);
                items.push(v);
                i = next;
            } else if split_key(rest).is_some() {
                let (v, next) = mapping(lines, i, indent + 2, Some(rest));
                items.push(v);
                i = next;
            } else {
                items.push(scalar(rest));
                i += 1;
            }
        }
        (Value::Array(items), i)
    }

    fn unquote(s: &str) -> String {
        let s = s.trim();
        if (s.starts_with('"') && s.ends_with('"') && s.len() >= 2)
            || (s.starts_with('\'') && s.ends_with('\'') && s.len() >= 2)
        {
            s[1..s.len() - 1].to_owned()
        } else {
            s.to_owned()
        }
    }

    fn scalar(s: &str) -> Value {
        let s = s.trim();
        if s.starts_with('[') || s.starts_with('{') {
            let (v, rest) = flow(s);
            assert!(
                rest.trim().is_empty(),
                "trailing text after a flow value: {s:?}"
            );
            return v;
        }
        Value::String(unquote(s))
    }

    /// A flow value (`[a, {k: v}]`, `{k: [x]}`, a plain or quoted scalar)
    /// at the start of `s`, and the rest of `s`.
    fn flow(s: &str) -> (Value, &str) {
        let s = s.trim_start();
        if let Some(mut rest) = s.strip_prefix('[') {
            let mut items = Vec::new();
            loop {
                rest = rest.trim_start();
                if let Some(r) = rest.strip_prefix(']') {
                    return (Value::Array(items), r);
                }
                let (v, r) = flow(rest);
                items.push(v);
                rest = r.trim_start();
                rest = rest.strip_prefix(',').unwrap_or(rest);
            }
        }
        if let Some(mut rest) = s.strip_prefix('{') {
            let mut map = Map::new();
            loop {
                rest = rest.trim_start();
                if let Some(r) = rest.strip_prefix('}') {
                    return (Value::Object(map), r);
                }
                let colon = rest.find(':').expect("`key: value` in a flow mapping");
                let key = unquote(&rest[..colon]);
                let (v, r) = flow(&rest[colon + 1..]);
                map.insert(key, v);
                rest = r.trim_start();
                rest = rest.strip_prefix(',').unwrap_or(rest);
            }
        }
        let end = s.find([',', ']', '}']).unwrap_or(s.len());
        (Value::String(unquote(&s[..end])), &s[end..])
    }

    #[test]
    fn reads_the_subset() {
        let v = parse(
            "a: 1\nb:\n  - x\n  - k: v\n    j: \"w\"\nc: |\n  one\n  two\nd: [p, \"q\"]\ne:\n- y\nf: [{u: a@v4}, {u: b, w: [1]}]\n",
        );
        assert_eq!(
            v,
            serde_json::json!({"a": "1", "b": ["x", {"k": "v", "j": "w"}], "c": "one\ntwo", "d": ["p", "q"], "e": ["y"], "f": [{"u": "a@v4"}, {"u": "b", "w": ["1"]}]})
        );
    }
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read_yaml(rel: &str) -> Value {
    yaml::parse(&std::fs::read_to_string(manifest_dir().join(rel)).unwrap())
}

fn str_at<'v>(v: &'v Value, pointer: &str) -> &'v str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer}"))
}

fn steps(action: &Value) -> &Vec<Value> {
    action["runs"]["steps"].as_array().expect("runs.steps")
}

#[test]
fn the_action_is_a_composite_that_builds_by_default_and_audits_with_github_format() {
    let a = read_yaml("adapters/github-actions/action.yml");
    assert!(!str_at(&a, "/name").is_empty());
    assert!(!str_at(&a, "/description").is_empty());
    assert_eq!(str_at(&a, "/runs/using"), "composite");
    let inputs = a["inputs"].as_object().unwrap();
    let names: Vec<&str> = inputs.keys().map(String::as_str).collect();
    assert_eq!(names, ["root", "args", "format", "install", "version"]);
    for (name, i) in inputs {
        assert!(!str_at(i, "/description").is_empty(), "{name}");
        assert!(i.get("default").is_some(), "{name} has a default");
        assert_eq!(str_at(i, "/required"), "false", "{name}");
    }
    assert_eq!(str_at(&a, "/inputs/install/default"), "build");
    assert_eq!(str_at(&a, "/inputs/format/default"), "github");
    assert_eq!(str_at(&a, "/inputs/root/default"), ".");
    let steps = steps(&a);
    assert_eq!(steps.len(), 3);
    for s in steps {
        assert_eq!(str_at(s, "/shell"), "bash");
        let run = str_at(s, "/run");
        assert!(run.starts_with("set -euo pipefail"), "{run}");
        // Inputs reach scripts only through `env`, never by `${{ }}`
        // substitution into the script text (script injection).
        assert!(!run.contains("${{"), "expression inside a script: {run}");
    }
    assert_eq!(str_at(&steps[0], "/if"), "inputs.install == 'build'");
    assert_eq!(str_at(&steps[1], "/if"), "inputs.install == 'release'");
    assert!(steps[2].get("if").is_none(), "the audit always runs");
    assert_eq!(
        str_at(&steps[2], "/env/EVIDENCE_GATE_FORMAT"),
        "${{ inputs.format }}"
    );
    assert!(
        str_at(&steps[0], "/run").contains("cargo build --release --locked --bin verify-evidence")
    );
}

#[test]
fn the_example_workflow_checks_out_and_uses_the_action() {
    let w = read_yaml("adapters/github-actions/example-workflow.yml");
    assert!(w["on"].get("pull_request").is_some() && w["on"].get("push").is_some());
    let job = &w["jobs"]["verify-evidence"];
    assert_eq!(str_at(job, "/runs-on"), "ubuntu-latest");
    let steps = job["steps"].as_array().unwrap();
    assert!(str_at(&steps[0], "/uses").starts_with("actions/checkout@"));
    assert!(str_at(&steps[1], "/uses").ends_with("/adapters/github-actions@main"));
    assert_eq!(str_at(&steps[1], "/with/args"), "--strict");
}

#[test]
fn the_pre_commit_hook_runs_repository_mode_once() {
    let h = read_yaml("adapters/pre-commit/pre-commit-hooks.yaml");
    let hooks = h.as_array().unwrap();
    assert_eq!(hooks.len(), 1);
    let hook = &hooks[0];
    assert_eq!(str_at(hook, "/id"), "verify-evidence");
    assert_eq!(str_at(hook, "/entry"), "verify-evidence");
    assert_eq!(str_at(hook, "/language"), "system");
    assert_eq!(str_at(hook, "/pass_filenames"), "false");
    assert_eq!(str_at(hook, "/always_run"), "true");
    assert_eq!(hook["args"], serde_json::json!(["--allow-empty"]));
    // The README's local-hook block carries the same definition.
    let readme = include_str!("../../README.md");
    let block = fenced_after(readme, "repo: local");
    let local = yaml::parse(&block);
    let readme_hook = &local["repos"][0]["hooks"][0];
    let mut want = hook.as_object().unwrap().clone();
    let got: &Map<String, Value> = readme_hook.as_object().unwrap();
    want.retain(|k, _| k != "stages");
    let mut got = got.clone();
    got.retain(|k, _| k != "stages");
    assert_eq!(Value::Object(got), Value::Object(want));
}

/// The fenced block of the README that contains `marker`.
fn fenced_after(text: &str, marker: &str) -> String {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("README lacks {marker:?}"));
    let start = text[..at].rfind("```").unwrap();
    let body_start = start + text[start..].find('\n').unwrap() + 1;
    let end = body_start + text[body_start..].find("```").unwrap();
    text[body_start..end].to_owned()
}

#[test]
fn the_readme_shows_a_five_line_workflow_using_the_action() {
    let readme = include_str!("../../README.md");
    let block = fenced_after(readme, "adapters/github-actions@");
    assert_eq!(block.lines().count(), 5, "{block}");
    let w = yaml::parse(&block);
    let steps = w["jobs"]["evidence"]["steps"].as_array().unwrap();
    assert!(str_at(&steps[0], "/uses").starts_with("actions/checkout@"));
    assert!(str_at(&steps[1], "/uses").ends_with("/adapters/github-actions@main"));
}

/// Runs one step's script the way a runner does (`bash -e {0}` after the
/// step's own `set -euo pipefail`), with the runner's variables.
fn run_step(script: &str, cwd: &Path, env: &[(&str, String)]) -> std::process::Output {
    let mut cmd = Command::new("bash");
    cmd.arg("-e").arg("-c").arg(script).current_dir(cwd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("bash")
}

#[test]
fn the_action_scripts_build_from_the_checkout_and_audit() {
    let a = read_yaml("adapters/github-actions/action.yml");
    let steps = steps(&a);
    let runner = tempfile::tempdir().unwrap();
    let temp = runner.path().join("temp");
    std::fs::create_dir_all(&temp).unwrap();
    let fake = runner.path().join("bin");
    std::fs::create_dir_all(&fake).unwrap();
    // A stand-in for cargo records its arguments and "builds" by copying the
    // test's own binary where `--target-dir` says.
    std::fs::write(
        fake.join("cargo"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$RUNNER_TEMP/cargo-args\"\nmkdir -p \"$RUNNER_TEMP/evidence-gate-target/release\"\ncp '{}' \"$RUNNER_TEMP/evidence-gate-target/release/verify-evidence\"\n",
            bin("verify-evidence").display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(fake.join("cargo"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let github_env = runner.path().join("github_env");
    std::fs::write(&github_env, "").unwrap();
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap());
    let action_path = manifest_dir().join("adapters/github-actions");
    let base_env = vec![
        ("PATH", path),
        ("RUNNER_TEMP", temp.display().to_string()),
        ("GITHUB_ENV", github_env.display().to_string()),
        ("GITHUB_ACTION_PATH", action_path.display().to_string()),
    ];
    let repo = Repo::new();
    Run4::new(&repo, STATE);
    let built = run_step(str_at(&steps[0], "/run"), repo.path(), &base_env);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let args = std::fs::read_to_string(temp.join("cargo-args")).unwrap();
    let args: Vec<&str> = args.lines().collect();
    let manifest = args[args.iter().position(|a| *a == "--manifest-path").unwrap() + 1];
    assert_eq!(
        std::fs::canonicalize(manifest).unwrap(),
        manifest_dir().join("Cargo.toml").canonicalize().unwrap(),
        "the action builds its own checkout"
    );
    let exported = std::fs::read_to_string(&github_env).unwrap();
    let bin_path = exported
        .lines()
        .find_map(|l| l.strip_prefix("EVIDENCE_GATE_BIN="))
        .expect("EVIDENCE_GATE_BIN exported")
        .to_owned();
    let audit = |args: &str| {
        let mut env = base_env.clone();
        env.push(("EVIDENCE_GATE_BIN", bin_path.clone()));
        env.push(("EVIDENCE_GATE_ROOT", ".".into()));
        env.push(("EVIDENCE_GATE_FORMAT", "github".into()));
        env.push(("EVIDENCE_GATE_ARGS", args.into()));
        run_step(str_at(&steps[2], "/run"), repo.path(), &env)
    };
    for args in ["", "--strict", "  --strict   --allow-empty "] {
        let out = audit(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("PASSED: audited 1 state directory")
        );
    }
    repo.write(DELIVERABLE, "edited\n");
    let out = audit("");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("::error file=src/limiter.rs,title=LEDGER_DIGEST_MISMATCH::"),
        "{stdout}"
    );
    // An invalid extra argument is a usage error, never a pass.
    assert_eq!(audit("--no-such-flag").status.code(), Some(2));
}

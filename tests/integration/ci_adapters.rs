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
    assert_eq!(
        names,
        ["root", "args", "base", "format", "install", "version"]
    );
    for (name, i) in inputs {
        assert!(!str_at(i, "/description").is_empty(), "{name}");
        assert!(i.get("default").is_some(), "{name} has a default");
        assert_eq!(str_at(i, "/required"), "false", "{name}");
    }
    assert_eq!(str_at(&a, "/inputs/install/default"), "build");
    assert_eq!(str_at(&a, "/inputs/format/default"), "github");
    assert_eq!(str_at(&a, "/inputs/root/default"), ".");
    assert_eq!(str_at(&a, "/inputs/base/default"), "auto");
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
    // The base commit `--base` compares with must be in the checkout.
    assert_eq!(str_at(&steps[0], "/with/fetch-depth"), "0");
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
    // docs/ci.md's local-hook block carries the same definition.
    let readme = include_str!("../../docs/ci.md");
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

/// The fenced block of a document that contains `marker`.
fn fenced_after(text: &str, marker: &str) -> String {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("the document lacks {marker:?}"));
    let start = text[..at].rfind("```").unwrap();
    let body_start = start + text[start..].find('\n').unwrap() + 1;
    let end = body_start + text[body_start..].find("```").unwrap();
    text[body_start..end].to_owned()
}

#[test]
fn the_ci_document_shows_a_five_line_workflow_using_the_action() {
    let readme = include_str!("../../docs/ci.md");
    let block = fenced_after(readme, "adapters/github-actions@");
    assert_eq!(block.lines().count(), 5, "{block}");
    let w = yaml::parse(&block);
    let steps = w["jobs"]["evidence"]["steps"].as_array().unwrap();
    assert!(str_at(&steps[0], "/uses").starts_with("actions/checkout@"));
    assert_eq!(str_at(&steps[0], "/with/fetch-depth"), "0");
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

/// The audit step's base selection (threat-model.md I8): the pull request's
/// base commit, the push's previous commit, none for a first push or another
/// event, `none` off, anything else as given; a base missing from the
/// checkout is fetched from origin, and one that cannot be fetched is exit 2.
#[test]
fn the_action_passes_the_right_base_for_each_event() {
    let a = read_yaml("adapters/github-actions/action.yml");
    let script = str_at(&steps(&a)[2], "/run").to_owned();
    assert_eq!(
        str_at(&steps(&a)[2], "/env/EVIDENCE_GATE_PR_BASE"),
        "${{ github.event.pull_request.base.sha }}"
    );
    assert_eq!(
        str_at(&steps(&a)[2], "/env/EVIDENCE_GATE_PUSH_BEFORE"),
        "${{ github.event.before }}"
    );
    assert_eq!(
        str_at(&steps(&a)[2], "/env/EVIDENCE_GATE_EVENT"),
        "${{ github.event_name }}"
    );
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("gitconfig"), "").unwrap();
    let repo = Repo::new();
    let git_env = vec![
        ("HOME", home.path().display().to_string()),
        (
            "XDG_CONFIG_HOME",
            home.path().join("config").display().to_string(),
        ),
        ("GIT_CONFIG_NOSYSTEM", "1".to_owned()),
        (
            "GIT_CONFIG_GLOBAL",
            home.path().join("gitconfig").display().to_string(),
        ),
        ("GIT_AUTHOR_NAME", "CI".to_owned()),
        ("GIT_AUTHOR_EMAIL", "ci@example.invalid".to_owned()),
        ("GIT_COMMITTER_NAME", "CI".to_owned()),
        ("GIT_COMMITTER_EMAIL", "ci@example.invalid".to_owned()),
    ];
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(repo.path())
            .envs(git_env.iter().map(|(k, v)| (*k, v.as_str())))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    git(&["init", "-q"]);
    repo.write("a.txt", "a\n");
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "one"]);
    let first = git(&["rev-parse", "HEAD"]);
    repo.write("a.txt", "b\n");
    git(&["commit", "-q", "-am", "two"]);
    // A stand-in binary that records its arguments.
    let fake = home.path().join("verify-evidence");
    let args_file = home.path().join("args");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n",
            args_file.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let zeros = "0".repeat(40);
    let missing = "1234567890abcdef1234567890abcdef12345678";
    let run = |base: &str, event: &str, pr: &str, before: &str| {
        let _ = std::fs::remove_file(&args_file);
        let mut env = git_env.clone();
        env.extend([
            ("PATH", std::env::var("PATH").unwrap()),
            ("EVIDENCE_GATE_BIN", fake.display().to_string()),
            ("EVIDENCE_GATE_ROOT", ".".to_owned()),
            ("EVIDENCE_GATE_FORMAT", "github".to_owned()),
            ("EVIDENCE_GATE_ARGS", "--strict".to_owned()),
            ("EVIDENCE_GATE_BASE", base.to_owned()),
            ("EVIDENCE_GATE_EVENT", event.to_owned()),
            ("EVIDENCE_GATE_PR_BASE", pr.to_owned()),
            ("EVIDENCE_GATE_PUSH_BEFORE", before.to_owned()),
        ]);
        let out = run_step(&script, repo.path(), &env);
        let args = std::fs::read_to_string(&args_file).unwrap_or_default();
        let args: Vec<String> = args.lines().map(str::to_owned).collect();
        (out, args)
    };
    let with_base = |b: &str| -> Vec<String> {
        ["--root", ".", "--format", "github", "--strict", "--base", b]
            .map(str::to_owned)
            .to_vec()
    };
    let without: Vec<String> = ["--root", ".", "--format", "github", "--strict"]
        .map(str::to_owned)
        .to_vec();
    for (base, event, pr, before, want) in [
        (
            "auto",
            "pull_request",
            first.as_str(),
            "",
            with_base(&first),
        ),
        (
            "auto",
            "pull_request_target",
            first.as_str(),
            "",
            with_base(&first),
        ),
        ("auto", "push", "", first.as_str(), with_base(&first)),
        // A first push: the previous commit is all zeros.
        ("auto", "push", "", zeros.as_str(), without.clone()),
        ("auto", "push", "", "", without.clone()),
        (
            "auto",
            "workflow_dispatch",
            first.as_str(),
            first.as_str(),
            without.clone(),
        ),
        ("none", "pull_request", first.as_str(), "", without.clone()),
        ("HEAD~1", "push", "", zeros.as_str(), with_base("HEAD~1")),
    ] {
        let (out, args) = run(base, event, pr, before);
        assert!(
            out.status.success(),
            "{base} {event}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(args, want, "{base} {event} pr={pr:?} before={before:?}");
    }
    // Not in the checkout and no origin to fetch it from: could not verify.
    let (out, args) = run("auto", "pull_request", missing, "");
    assert_eq!(out.status.code(), Some(2));
    assert!(args.is_empty(), "the audit did not run: {args:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("::error title=evidence-gate::cannot fetch the base commit"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // With an origin that has it, the missing base is fetched first.
    let upstream = Repo::new();
    let up = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(upstream.path())
            .envs(git_env.iter().map(|(k, v)| (*k, v.as_str())))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    up(&["init", "-q"]);
    upstream.write("u.txt", "u\n");
    up(&["add", "-A"]);
    up(&["commit", "-q", "-m", "upstream"]);
    let theirs = up(&["rev-parse", "HEAD"]);
    git(&["remote", "add", "origin", upstream.path().to_str().unwrap()]);
    let (out, args) = run("auto", "pull_request", &theirs, "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(args, with_base(&theirs));
}

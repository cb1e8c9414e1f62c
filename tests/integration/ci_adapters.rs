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

/// The steps of the action by their role.
const SOURCES: usize = 0;
const CACHE: usize = 1;
const BUILD: usize = 2;
const RELEASE: usize = 3;
const AUDIT: usize = 4;

#[test]
fn the_action_is_a_composite_that_builds_once_and_audits_with_github_format() {
    let a = read_yaml("adapters/github-actions/action.yml");
    assert!(!str_at(&a, "/name").is_empty());
    assert!(!str_at(&a, "/description").is_empty());
    assert_eq!(str_at(&a, "/runs/using"), "composite");
    let inputs = a["inputs"].as_object().unwrap();
    let names: Vec<&str> = inputs.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "root",
            "args",
            "base",
            "format",
            "output-file",
            "install",
            "version",
            "sha256"
        ]
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
    assert_eq!(str_at(&a, "/inputs/output-file/default"), "");
    assert_eq!(
        str_at(&a, "/outputs/report-file/value"),
        "${{ steps.audit.outputs.report-file }}"
    );
    let steps = steps(&a);
    assert_eq!(steps.len(), 5);
    for (i, s) in steps.iter().enumerate() {
        if i == CACHE {
            continue;
        }
        assert_eq!(str_at(s, "/shell"), "bash");
        let run = str_at(s, "/run");
        assert!(run.starts_with("set -euo pipefail"), "{run}");
        // Inputs reach scripts only through `env`, never by `${{ }}`
        // substitution into the script text (script injection).
        assert!(!run.contains("${{"), "expression inside a script: {run}");
        assert_bash_3_2(run);
    }
    assert_eq!(str_at(&steps[SOURCES], "/if"), "inputs.install == 'build'");
    // Built once per source digest: the cache holds the binary.
    assert!(str_at(&steps[CACHE], "/uses").starts_with("actions/cache@"));
    assert_eq!(str_at(&steps[CACHE], "/if"), "inputs.install == 'build'");
    assert_eq!(
        str_at(&steps[CACHE], "/with/key"),
        "evidence-gate-${{ runner.os }}-${{ runner.arch }}-${{ steps.sources.outputs.digest }}"
    );
    assert_eq!(
        str_at(&steps[BUILD], "/if"),
        "inputs.install == 'build' && steps.cache.outputs.cache-hit != 'true'"
    );
    assert_eq!(
        str_at(&steps[RELEASE], "/if"),
        "inputs.install == 'release'"
    );
    assert!(steps[AUDIT].get("if").is_none(), "the audit always runs");
    assert_eq!(str_at(&steps[AUDIT], "/id"), "audit");
    assert_eq!(
        str_at(&steps[AUDIT], "/env/EVIDENCE_GATE_FORMAT"),
        "${{ inputs.format }}"
    );
    assert_eq!(
        str_at(&steps[AUDIT], "/env/EVIDENCE_GATE_OUTPUT"),
        "${{ inputs.output-file }}"
    );
    assert!(
        str_at(&steps[BUILD], "/run")
            .contains("cargo build --release --locked --bin verify-evidence")
    );
    // The release is pinned by a checksum the workflow gives, not one
    // downloaded next to the archive.
    let release = str_at(&steps[RELEASE], "/run");
    assert!(!release.contains(".sha256\""), "{release}");
    assert_eq!(
        str_at(&steps[RELEASE], "/env/WANT_SHA256"),
        "${{ inputs.sha256 }}"
    );
    for s in steps {
        let text = serde_json::to_string(s).unwrap();
        assert!(!text.contains("evidence-gate/evidence-gate"), "{text}");
    }
}

/// Constructs bash 3.2 (macOS's /bin/bash) lacks or gets wrong: an empty
/// array expanded as `"${a[@]}"` is an unbound variable under `set -u`
/// before bash 4.4, and the rest are bash-4 features.
fn assert_bash_3_2(script: &str) {
    let bare = regex::Regex::new(r#"(^|[^+])"\$\{[A-Za-z_]+\[@\]\}""#).unwrap();
    for line in script.lines() {
        assert!(
            !bare.is_match(line),
            "unguarded array expansion (bash 3.2): {line}"
        );
        for bash4 in [
            "declare -A",
            "local -A",
            "mapfile",
            "readarray",
            ",,}",
            "^^}",
            "|&",
            "&>>",
            ";;&",
            "coproc",
            "${!",
        ] {
            assert!(!line.contains(bash4), "`{bash4}` is not bash 3.2: {line}");
        }
    }
}

#[test]
fn the_example_workflow_checks_out_pins_the_action_and_uploads_sarif() {
    let w = read_yaml("adapters/github-actions/example-workflow.yml");
    assert!(w["on"].get("pull_request").is_some() && w["on"].get("push").is_some());
    let job = &w["jobs"]["verify-evidence"];
    assert_eq!(str_at(job, "/runs-on"), "ubuntu-latest");
    let steps = job["steps"].as_array().unwrap();
    assert!(str_at(&steps[0], "/uses").starts_with("actions/checkout@"));
    // The base commit `--base` compares with must be in the checkout.
    assert_eq!(str_at(&steps[0], "/with/fetch-depth"), "0");
    // Pinned by commit, in the user's own words for owner and SHA; never a
    // namespace the project does not own, never a branch.
    assert_eq!(
        str_at(&steps[1], "/uses"),
        "OWNER/evidence-gate/adapters/github-actions@<full commit sha>"
    );
    assert_eq!(str_at(&steps[1], "/with/args"), "--strict");
    assert_eq!(str_at(&steps[1], "/with/format"), "sarif");
    assert_eq!(str_at(&steps[1], "/with/output-file"), "evidence.sarif");
    assert!(str_at(&steps[2], "/uses").starts_with("github/codeql-action/upload-sarif@"));
    assert!(str_at(&steps[2], "/if").starts_with("always()"));
    assert_eq!(
        str_at(&steps[2], "/with/sarif_file"),
        "${{ steps.evidence.outputs.report-file }}"
    );
    assert_eq!(str_at(&w, "/permissions/security-events"), "write");
    let text = std::fs::read_to_string(
        manifest_dir().join("adapters/github-actions/example-workflow.yml"),
    )
    .unwrap();
    assert!(
        text.contains("full 40-character SHA"),
        "the pin is explained in words"
    );
}

#[test]
fn the_pre_commit_hook_runs_repository_mode_once() {
    let h = read_yaml(".pre-commit-hooks.yaml");
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
    assert_eq!(
        str_at(&steps[1], "/uses"),
        "OWNER/evidence-gate/adapters/github-actions@<full commit sha>"
    );
    assert!(!readme.contains("evidence-gate/evidence-gate/"));
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
    let github_output = runner.path().join("github_output");
    std::fs::write(&github_output, "").unwrap();
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap());
    let action_path = manifest_dir().join("adapters/github-actions");
    let base_env = vec![
        ("PATH", path),
        ("RUNNER_TEMP", temp.display().to_string()),
        ("GITHUB_ENV", github_env.display().to_string()),
        ("GITHUB_OUTPUT", github_output.display().to_string()),
        ("GITHUB_ACTION_PATH", action_path.display().to_string()),
    ];
    let repo = Repo::new();
    Run4::new(&repo, STATE);
    // The cache key: a digest of the action's sources, the same twice.
    let keyed = run_step(str_at(&steps[SOURCES], "/run"), repo.path(), &base_env);
    assert!(
        keyed.status.success(),
        "{}",
        String::from_utf8_lossy(&keyed.stderr)
    );
    let outputs = std::fs::read_to_string(&github_output).unwrap();
    let digest = outputs
        .lines()
        .find_map(|l| l.strip_prefix("digest="))
        .expect("digest output")
        .to_owned();
    assert_eq!(digest.len(), 64, "{digest}");
    run_step(str_at(&steps[SOURCES], "/run"), repo.path(), &base_env);
    assert_eq!(
        std::fs::read_to_string(&github_output)
            .unwrap()
            .matches(&digest)
            .count(),
        2,
        "the same sources, the same key"
    );
    let built = run_step(str_at(&steps[BUILD], "/run"), repo.path(), &base_env);
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
        run_step(str_at(&steps[AUDIT], "/run"), repo.path(), &env)
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
    let script = str_at(&steps(&a)[AUDIT], "/run").to_owned();
    assert_eq!(
        str_at(&steps(&a)[AUDIT], "/env/EVIDENCE_GATE_PR_BASE"),
        "${{ github.event.pull_request.base.sha }}"
    );
    assert_eq!(
        str_at(&steps(&a)[AUDIT], "/env/EVIDENCE_GATE_PUSH_BEFORE"),
        "${{ github.event.before }}"
    );
    assert_eq!(
        str_at(&steps(&a)[AUDIT], "/env/EVIDENCE_GATE_EVENT"),
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

/// The audit step with no extra arguments (an empty array under `set -u`,
/// the bash 3.2 trap), run by `bash --posix`; a root below the checkout
/// reports repository-relative paths, and `output-file` receives the report
/// and becomes the `report-file` output.
#[test]
fn the_action_audit_step_reports_repository_paths_and_writes_the_output_file() {
    let a = read_yaml("adapters/github-actions/action.yml");
    let script = str_at(&steps(&a)[AUDIT], "/run").to_owned();
    let workspace = Repo::new();
    let audited = crate::ci_support::audited_repo();
    std::fs::create_dir_all(workspace.join("sub")).unwrap();
    std::fs::rename(audited.path(), workspace.join("sub/dir")).unwrap();
    let github_output = workspace.join("github_output");
    let run = |root: &str, format: &str, output: &str| {
        std::fs::write(&github_output, "").unwrap();
        let mut cmd = Command::new("bash");
        cmd.arg("--posix")
            .arg("-e")
            .arg("-c")
            .arg(&script)
            .current_dir(workspace.path())
            .env("HOME", crate::common::temp_home())
            .env("XDG_CONFIG_HOME", workspace.config.path())
            .env("XDG_STATE_HOME", workspace.config.path().join("state"))
            .env("GITHUB_OUTPUT", &github_output)
            .env("GITHUB_WORKSPACE", workspace.path())
            .env("EVIDENCE_GATE_BIN", bin("verify-evidence"))
            .env("EVIDENCE_GATE_ROOT", root)
            .env("EVIDENCE_GATE_FORMAT", format)
            .env("EVIDENCE_GATE_ARGS", "")
            .env("EVIDENCE_GATE_BASE", "none")
            .env("EVIDENCE_GATE_OUTPUT", output)
            .env("EVIDENCE_GATE_EVENT", "push");
        let out = cmd.output().unwrap();
        let outputs = std::fs::read_to_string(&github_output).unwrap();
        (out, outputs)
    };
    // Annotations on the log: every file repository-relative.
    let absolute = workspace.join("sub/dir/").display().to_string();
    for root in ["sub/dir", "./sub/dir/", absolute.as_str()] {
        let (out, outputs) = run(root, "github", "");
        assert_eq!(
            out.status.code(),
            Some(1),
            "{root}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let files: Vec<&str> = stdout
            .lines()
            .filter_map(|l| l.split(" file=").nth(1))
            .collect();
        assert_eq!(files.len(), 4, "{stdout}");
        assert!(
            files.iter().all(|f| f.starts_with("sub/dir/")),
            "{root}: {stdout}"
        );
        assert_eq!(outputs.trim(), "report-file=");
    }
    // SARIF to a file for upload-sarif: the step still fails (exit 1), the
    // output names the file, and the file is the whole report.
    let (out, outputs) = run("sub/dir", "sarif", "reports/evidence.sarif");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "the report goes to the file only");
    assert_eq!(outputs.trim(), "report-file=reports/evidence.sarif");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(workspace.join("reports/evidence.sarif")).unwrap())
            .unwrap();
    let results = doc["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for r in results {
        let uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap();
        assert!(uri.starts_with("sub/dir/"), "{uri}");
    }
    // The root itself: no prefix, the plain invocation.
    let (out, _) = run(".", "github", "");
    assert_eq!(
        out.status.code(),
        Some(1),
        "nothing to audit at the workspace root"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("NOTHING_TO_VERIFY"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `install: release`: the archive from the action's own repository's
/// release, checked against the workflow's `sha256` (a mismatch is exit 2
/// and installs nothing).
#[test]
fn the_action_installs_a_release_only_with_the_pinned_checksum() {
    let a = read_yaml("adapters/github-actions/action.yml");
    let script = str_at(&steps(&a)[RELEASE], "/run").to_owned();
    let runner = tempfile::tempdir().unwrap();
    let temp = runner.path().join("temp");
    std::fs::create_dir_all(&temp).unwrap();
    // The "released" archive, served by a stand-in curl from a directory.
    let served = runner.path().join("served");
    let name = "evidence-gate-v9.9.9-x86_64-unknown-linux-musl";
    std::fs::create_dir_all(served.join(name)).unwrap();
    std::fs::copy(
        bin("verify-evidence"),
        served.join(name).join("verify-evidence"),
    )
    .unwrap();
    let tar = Command::new("tar")
        .args(["-czf", &format!("{name}.tar.gz"), name])
        .current_dir(&served)
        .status()
        .unwrap();
    assert!(tar.success());
    let archive = std::fs::read(served.join(format!("{name}.tar.gz"))).unwrap();
    let sha = evidence_gate::internals::sha256_hex(&archive);
    let fake = runner.path().join("bin");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::write(
        fake.join("curl"),
        format!(
            "#!/bin/sh\nout=''\nurl=''\nwhile [ $# -gt 0 ]; do case \"$1\" in --output) out=\"$2\"; shift 2;; -*) shift;; *) url=\"$1\"; shift;; esac; done\nprintf '%s\\n' \"$url\" >> '{log}'\ncp '{served}'/\"${{url##*/}}\" \"$out\"\n",
            log = runner.path().join("urls").display(),
            served = served.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(fake.join("curl"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let github_env = runner.path().join("github_env");
    let action_path = runner
        .path()
        .join("work/_actions/someone/evidence-gate/0123456789abcdef0123456789abcdef01234567/adapters/github-actions");
    let install = |want: &str| {
        std::fs::write(&github_env, "").unwrap();
        let env = vec![
            (
                "PATH",
                format!("{}:{}", fake.display(), std::env::var("PATH").unwrap()),
            ),
            ("RUNNER_TEMP", temp.display().to_string()),
            ("RUNNER_OS", "Linux".to_owned()),
            ("RUNNER_ARCH", "X64".to_owned()),
            ("GITHUB_ENV", github_env.display().to_string()),
            ("GITHUB_SERVER_URL", "https://github.example".to_owned()),
            ("GITHUB_ACTION_PATH", action_path.display().to_string()),
            ("VERSION", "v9.9.9".to_owned()),
            ("WANT_SHA256", want.to_owned()),
        ];
        run_step(&script, runner.path(), &env)
    };
    let wrong = install(&"0".repeat(64));
    assert_eq!(wrong.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("checksum mismatch"));
    assert_eq!(std::fs::read_to_string(&github_env).unwrap(), "");
    let missing = install("");
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("needs the version and sha256"));
    let ok = install(&sha.to_uppercase());
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let exported = std::fs::read_to_string(&github_env).unwrap();
    let bin_path = exported
        .lines()
        .find_map(|l| l.strip_prefix("EVIDENCE_GATE_BIN="))
        .expect("EVIDENCE_GATE_BIN exported");
    let version = Command::new(bin_path).arg("--version").output().unwrap();
    assert!(version.status.success());
    let urls = std::fs::read_to_string(runner.path().join("urls")).unwrap();
    assert!(
        urls.lines().all(|u| u
            == "https://github.example/someone/evidence-gate/releases/download/v9.9.9/evidence-gate-v9.9.9-x86_64-unknown-linux-musl.tar.gz"),
        "{urls}"
    );
}

/// docs/ci-formats.md documents every input and output of the action and
/// carries the pre-commit hook as the manifest defines it.
#[test]
fn the_ci_formats_doc_matches_the_action_and_the_hook() {
    let doc = std::fs::read_to_string(manifest_dir().join("docs/ci-formats.md")).unwrap();
    let a = read_yaml("adapters/github-actions/action.yml");
    for section in ["inputs", "outputs"] {
        for (name, i) in a[section].as_object().unwrap() {
            let default = i.get("default").and_then(Value::as_str).unwrap_or("");
            let shown = if default.is_empty() {
                "empty".to_owned()
            } else {
                format!("`{default}`")
            };
            let row = format!("| `{name}` |");
            assert!(
                doc.contains(&row),
                "docs/ci-formats.md lacks the {section} row {row}"
            );
            if section == "inputs" {
                assert!(
                    doc.contains(&format!("| `{name}` | {shown} |")),
                    "docs/ci-formats.md: `{name}` default is {shown}"
                );
            }
        }
    }
    assert!(doc.contains("uses: OWNER/evidence-gate/adapters/github-actions@<full commit sha>"));
    assert!(!doc.contains("evidence-gate/evidence-gate/"));
    let block = fenced_after(&doc, "- repo: local");
    let local = yaml::parse(&block);
    let hook = &read_yaml(".pre-commit-hooks.yaml")[0];
    let mut want = hook.as_object().unwrap().clone();
    want.retain(|k, _| k != "stages");
    assert_eq!(local["repos"][0]["hooks"][0], Value::Object(want));
}

/// The project's own workflows: CI runs `.ci/run`; a version tag builds
/// Linux, macOS and Windows binaries with the `dist` profile and publishes
/// them with SHA-256 checksums.
#[test]
fn the_workflows_run_ci_and_release_checksummed_binaries_on_tags() {
    let ci = read_yaml(".github/workflows/ci.yml");
    let steps = ci["jobs"]["ci"]["steps"].as_array().unwrap();
    assert!(
        steps
            .iter()
            .any(|s| s.get("run").and_then(Value::as_str) == Some("bash .ci/run"))
    );
    let rel = read_yaml(".github/workflows/release.yml");
    assert_eq!(rel["on"]["push"]["tags"], serde_json::json!(["v*"]));
    let build = &rel["jobs"]["build"];
    let targets: Vec<&str> = build["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| str_at(m, "/target"))
        .collect();
    for want in ["linux", "apple-darwin", "windows"] {
        assert!(
            targets.iter().any(|t| t.contains(want)),
            "{want}: {targets:?}"
        );
    }
    let runs: Vec<&str> = build["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s.get("run").and_then(Value::as_str))
        .collect();
    assert!(
        runs.iter()
            .any(|r| r.contains("cargo build --locked --profile dist"))
    );
    assert!(
        runs.iter()
            .any(|r| r.contains("sha256sum") && r.contains("shasum -a 256"))
    );
    let publish: Vec<&str> = rel["jobs"]["release"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s.get("run").and_then(Value::as_str))
        .collect();
    assert!(publish.iter().any(|r| r.contains("SHA256SUMS")));
    // The archive names the action's `install: release` downloads.
    let action =
        std::fs::read_to_string(manifest_dir().join("adapters/github-actions/action.yml")).unwrap();
    assert!(action.contains(r#"name="evidence-gate-$VERSION-$triple.$ext""#));
    assert!(
        runs.iter()
            .any(|r| r.contains(r#"name="evidence-gate-$VERSION-$TARGET""#))
    );
    for t in &targets {
        assert!(
            action.contains(t),
            "the action knows the release target {t}"
        );
    }
}

//! Regressions found by an adversarial review of `verify` and `gate check`:
//! hostile names in the text output, symlinked files named on the command
//! line, and rules that the gate command must refuse instead of panicking.

use serde_json::json;

use crate::common::Repo;
use crate::evidence_cli::payload;

/// A repository with a plan written by the real goal engine.
fn repo_with_plan() -> Repo {
    let r = Repo::new();
    let run = r.run(
        "evidence-gate",
        &[
            "ulw-loop",
            "create-goals",
            "--brief",
            "Add a limiter",
            "--json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{} {}", run.stdout, run.stderr);
    r
}

#[test]
fn text_output_escapes_control_characters_of_untrusted_paths() {
    let r = Repo::new();
    let forged = "a\n::warning file=x::forged\u{1b}[2J";
    r.write(
        "p.json",
        serde_json::to_vec(&payload(json!([{"path": forged}]))).unwrap(),
    );
    let run = r.run("verify-evidence", &["p.json"], None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "one finding line and the summary: {lines:?}"
    );
    assert!(
        lines[0].starts_with("PATH_CONTROL_CHAR a\\u{a}::warning"),
        "{lines:?}"
    );
    assert!(!run.stdout.contains('\u{1b}'), "{:?}", run.stdout);
    assert!(lines[1].starts_with("FAILED:"), "{lines:?}");
}

#[cfg(unix)]
#[test]
fn a_symlinked_payload_or_rules_file_named_on_the_command_line_is_followed() {
    let r = Repo::new();
    r.write("src/lib.rs", "pub fn f() {}\n");
    r.write(
        "shared/p.json",
        serde_json::to_vec(&payload(json!([{"path": "src/lib.rs"}]))).unwrap(),
    );
    r.write(
        "shared/rules.json",
        r#"{"evidence":{"deliverables":{"deny":["src/**"]}}}"#,
    );
    r.symlink("../shared/p.json", "links/p.json");
    r.symlink(r.join("shared/rules.json"), "links/rules.json");
    let run = r.run(
        "verify-evidence",
        &["--format", "json", "links/p.json"],
        None,
    );
    assert_eq!(run.code, 0, "{} {}", run.stdout, run.stderr);
    let run = r.run(
        "verify-evidence",
        &[
            "--format",
            "json",
            "links/p.json",
            "--rules",
            "links/rules.json",
        ],
        None,
    );
    assert_eq!(run.code, 1, "{} {}", run.stdout, run.stderr);
    assert_eq!(run.codes(), ["PATH_NOT_ALLOWED"]);
    r.write("gate.json", "{}");
    r.write("shared/gate-rules.json", r#"{"evidence":{"bogus":1}}"#);
    r.symlink("../shared/gate-rules.json", "links/gate-rules.json");
    let run = r.run(
        "evidence-gate",
        &[
            "gate",
            "check",
            "gate.json",
            "--json",
            "--rules",
            "links/gate-rules.json",
        ],
        None,
    );
    assert_eq!(run.code, 2, "{} {}", run.stdout, run.stderr);
    assert_eq!(run.json()["error"]["details"]["pointer"], "/evidence/bogus");
    r.symlink("loop-b", "links/loop-a");
    r.symlink("loop-a", "links/loop-b");
    let run = r.run(
        "verify-evidence",
        &["--format", "json", "links/loop-a"],
        None,
    );
    assert_eq!(run.code, 2, "{} {}", run.stdout, run.stderr);
    assert_eq!(run.codes(), ["PAYLOAD_UNREADABLE"]);
}

#[test]
fn gate_check_refuses_an_evidence_root_the_path_limits_reject() {
    let r = Repo::new();
    r.write("gate.json", "{}");
    r.write(
        "rules.json",
        r#"{"evidence":{"limits":{"maxComponentBytes":13}},
            "profiles":{"ulw-loop":{"evidenceRoot":"x/aaaaaaaaaaaaaaaaaaaa"}}}"#,
    );
    let before = r.snapshot();
    let run = r.run(
        "evidence-gate",
        &[
            "gate",
            "check",
            "gate.json",
            "--json",
            "--rules",
            "rules.json",
        ],
        None,
    );
    assert_eq!(run.code, 2, "{} {}", run.stdout, run.stderr);
    let v = run.json();
    assert_eq!(v["error"]["code"], "RULES_INVALID");
    assert_eq!(
        v["error"]["details"]["pointer"],
        "/profiles/ulw-loop/evidenceRoot"
    );
    assert_eq!(r.snapshot(), before);
}

#[test]
fn gate_check_text_output_escapes_control_characters() {
    let r = Repo::new();
    r.write("gate.json", r#"{"x\n::error::forged": 1}"#);
    // The user may name their own gate rules; the name is shown in the header.
    let name = "evil\n::error::forged";
    let mut rules: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/rules/gates/lazycodex.json"
        ))
        .unwrap(),
    )
    .unwrap();
    rules["name"] = json!(name);
    r.user_rules(json!({"gates": {name: rules}}).to_string());
    let run = r.run(
        "evidence-gate",
        &["gate", "check", "gate.json", "--surface", name],
        None,
    );
    assert_eq!(run.code, 1, "{} {}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("GATE_FIELD_UNKNOWN x\\u{a}::error"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.lines().all(|l| !l.starts_with("::")),
        "{}",
        run.stdout
    );
}

#[test]
fn a_state_directory_named_twice_is_audited_once() {
    let r = repo_with_plan();
    let run = r.run(
        "verify-evidence",
        &[
            "--format",
            "json",
            "--plan-dir",
            ".omo/ulw-loop",
            "--plan-dir",
            "./.omo/ulw-loop/",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{} {}", run.stdout, run.stderr);
    assert_eq!(run.json()["reports"].as_array().unwrap().len(), 1);
    std::fs::write(r.join(".omo/ulw-loop/goals.json"), "{").unwrap();
    let run = r.run(
        "verify-evidence",
        &[
            "--format",
            "json",
            "--plan-dir",
            ".omo/ulw-loop",
            "--plan-dir",
            ".omo/ulw-loop",
        ],
        None,
    );
    assert_eq!(run.code, 1, "{} {}", run.stdout, run.stderr);
    assert_eq!(run.codes(), ["PLAN_CORRUPT"]);
}

#[cfg(unix)]
#[test]
fn gate_check_accepts_an_absolute_path_through_a_symlink_to_the_repository() {
    let outer = Repo::new();
    let repo = outer.mkdir("repo");
    std::fs::write(repo.join("gate.json"), "{}").unwrap();
    outer.symlink("repo", "logical");
    let logical = outer.join("logical/gate.json");
    let run = crate::common::run_in(
        &repo,
        "evidence-gate",
        &["gate", "check", logical.to_str().unwrap(), "--json"],
        None,
        &[],
    );
    assert_eq!(run.code, 1, "{} {}", run.stdout, run.stderr);
    assert_eq!(run.json()["verdict"], "fail");
    let elsewhere = outer.write("other/gate.json", "{}");
    let run = crate::common::run_in(
        &repo,
        "evidence-gate",
        &["gate", "check", elsewhere.to_str().unwrap(), "--json"],
        None,
        &[],
    );
    assert_eq!(run.code, 2, "{} {}", run.stdout, run.stderr);
    assert_eq!(run.json()["error"]["code"], "PATH_ABSOLUTE");
}

#[test]
fn verify_evidence_treats_hook_and_goal_engine_names_as_payload_files() {
    let r = Repo::new();
    for name in ["hook", "ulw-loop", "ultragoal"] {
        r.write(
            name,
            serde_json::to_vec(&payload(json!([{"path": "missing.rs"}]))).unwrap(),
        );
        let before = r.snapshot();
        let run = r.run("verify-evidence", &[name, "--format", "json"], None);
        assert_eq!(run.code, 1, "{name}: {} {}", run.stdout, run.stderr);
        assert_eq!(run.codes(), ["FILE_MISSING"], "{name}");
        assert_eq!(run.json()["reports"][0]["subject"], name);
        assert_eq!(r.snapshot(), before, "{name}: the verifier wrote nothing");
    }
    let run = r.run(
        "verify-evidence",
        &["ulw-loop", "create-goals", "--brief", "x"],
        None,
    );
    assert_eq!(run.code, 2, "{} {}", run.stdout, run.stderr);
    assert!(
        !r.join(".omo").exists(),
        "verify-evidence never runs the goal engine"
    );
}

#[test]
fn allow_empty_accepts_an_empty_named_state_directory_and_an_empty_ledger() {
    let r = Repo::new();
    r.mkdir(".omo/ulw-loop/s1");
    let named = ["--format", "json", "--plan-dir", ".omo/ulw-loop/s1"];
    let run = r.run("verify-evidence", &named, None);
    assert_eq!(run.code, 1, "{} {}", run.stdout, run.stderr);
    assert_eq!(run.codes(), ["NOTHING_TO_VERIFY"]);
    let run = r.run(
        "verify-evidence",
        &[&named[..], &["--allow-empty"]].concat(),
        None,
    );
    assert_eq!(run.code, 0, "{} {}", run.stdout, run.stderr);
    let mut v = run.json();
    let policy = v.as_object_mut().unwrap().remove("policy").unwrap();
    assert_eq!(policy["sources"], json!(["embedded"]));
    assert_eq!(v, json!({"verdict": "pass", "reports": []}));

    r.write(".omo/evidence-gate/ledger.jsonl", "");
    let run = r.run("verify-evidence", &["--format", "json"], None);
    assert_eq!(run.code, 1, "{} {}", run.stdout, run.stderr);
    assert_eq!(run.codes(), ["NOTHING_TO_VERIFY"]);
    let run = r.run(
        "verify-evidence",
        &["--format", "json", "--allow-empty"],
        None,
    );
    assert_eq!(run.code, 0, "{} {}", run.stdout, run.stderr);
    // Anything else in the subject still fails.
    r.write(".omo/evidence-gate/ledger.jsonl", "{\"seq\":");
    let run = r.run(
        "verify-evidence",
        &["--format", "json", "--allow-empty"],
        None,
    );
    assert_eq!(run.code, 1, "{} {}", run.stdout, run.stderr);
    assert!(
        run.codes().contains(&"LEDGER_TORN_TAIL".to_owned()),
        "{:?}",
        run.codes()
    );
}

#[cfg(unix)]
#[test]
fn a_symlinked_unscoped_ledger_is_reported_once_as_a_state_file() {
    let r = repo_with_plan();
    let outside = tempfile::tempdir().unwrap();
    let moved = outside.path().join("ledger.jsonl");
    std::fs::rename(r.join(".omo/ulw-loop/ledger.jsonl"), &moved).unwrap();
    r.symlink(&moved, ".omo/ulw-loop/ledger.jsonl");
    let run = r.run("verify-evidence", &["--format", "json"], None);
    assert_eq!(run.code, 1, "{} {}", run.stdout, run.stderr);
    let v = run.json();
    let subjects: Vec<&str> = v["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, [".omo/ulw-loop"], "{v}");
    let symlinks = run.codes().iter().filter(|c| *c == "PATH_SYMLINK").count();
    assert_eq!(symlinks, 1, "{:?}", run.codes());
}

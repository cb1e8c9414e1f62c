//! `verify-evidence` payload mode: payload-level findings, bad input, rules,
//! output shapes and exit codes, driven through the real binaries.

use serde_json::{Value, json};

use crate::common::Repo;

/// A passing payload around `deliverables`.
pub fn payload(deliverables: Value) -> Value {
    json!({
        "evidence": 1,
        "summary": "Implemented the feature and ran its tests.",
        "deliverables": deliverables,
        "verification": {"verdict": "passed", "by": "lazycodex-qa-executor",
                         "checks": [{"command": "cargo test", "exitCode": 0}]}
    })
}

/// Writes `value` as `p.json` and runs `verify-evidence --format json p.json`.
pub fn verify(repo: &Repo, value: &Value, extra: &[&str]) -> crate::common::Run {
    repo.write("p.json", serde_json::to_vec(value).unwrap());
    let mut args = vec!["--format", "json", "p.json"];
    args.extend_from_slice(extra);
    repo.run("verify-evidence", &args, None)
}

fn repo_with_src() -> Repo {
    let r = Repo::new();
    r.write("src/lib.rs", "pub fn f() {}\n");
    r
}

fn assert_fail(run: &crate::common::Run, code: &str) {
    assert_eq!(
        run.code, 1,
        "exit status for {code}: stdout={} stderr={}",
        run.stdout, run.stderr
    );
    assert!(
        run.codes().contains(&code.to_owned()),
        "expected {code} in {:?}",
        run.codes()
    );
    assert_eq!(run.json()["verdict"], "fail");
}

#[test]
fn valid_payload_passes_with_digests_in_both_binaries() {
    let r = repo_with_src();
    let sha = evidence_gate::internals::sha256_hex(b"pub fn f() {}\n");
    let p = payload(json!([{"path": "src/lib.rs", "sha256": sha}, {"path": "src/lib.rs"}]));
    let run = verify(&r, &p, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let v = run.json();
    assert_eq!(v["verdict"], "pass");
    let report = &v["reports"][0];
    assert_eq!(report["subject"], "p.json");
    assert_eq!(report["kind"], "payload");
    assert_eq!(
        report["files"],
        json!([{"path": "src/lib.rs", "size": 14, "sha256": sha}])
    );
    let keys: Vec<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["subject", "kind", "verdict", "findings", "files"]);
    let top: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(top, ["verdict", "reports"]);
    let same = r.run(
        "evidence-gate",
        &["verify", "--format", "json", "p.json"],
        None,
    );
    assert_eq!(same.code, 0);
    assert_eq!(same.stdout, run.stdout);
}

#[test]
fn text_format_lists_findings_then_one_summary_line() {
    let r = repo_with_src();
    r.write(
        "p.json",
        serde_json::to_vec(&payload(
            json!([{"path": "missing.rs"}, {"path": "/etc/passwd"}]),
        ))
        .unwrap(),
    );
    let run = r.run("verify-evidence", &["p.json"], None);
    assert_eq!(run.code, 1);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    assert!(
        lines[0].starts_with("PATH_ABSOLUTE /etc/passwd: deliverables[1]"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("FILE_MISSING missing.rs: deliverables[0]"),
        "{}",
        lines[1]
    );
    assert_eq!(lines[2], "FAILED: 2 findings in 1 payload");
    assert!(
        !run.stdout.contains('\x1b'),
        "no colour when stdout is not a terminal"
    );
    let ok = r.run("verify-evidence", &["--quiet", "p.json"], None);
    assert_eq!(ok.code, 1);
    r.write(
        "ok.json",
        serde_json::to_vec(&payload(json!([{"path": "src/lib.rs"}]))).unwrap(),
    );
    let ok = r.run("verify-evidence", &["ok.json"], None);
    assert_eq!(ok.code, 0);
    assert!(
        ok.stdout.starts_with("PASSED: 1 payload verified"),
        "{}",
        ok.stdout
    );
    let quiet = r.run("verify-evidence", &["--quiet", "ok.json"], None);
    assert_eq!((quiet.code, quiet.stdout.as_str()), (0, ""));
}

#[test]
fn no_deliverables_is_a_failure_never_a_pass() {
    let r = Repo::new();
    let run = verify(&r, &payload(json!([])), &[]);
    assert_fail(&run, "EVIDENCE_NO_DELIVERABLES");
    assert_eq!(run.json()["reports"][0]["files"], json!([]));
}

#[test]
fn glob_that_may_match_nothing_is_invalid() {
    let r = Repo::new();
    let run = verify(
        &r,
        &payload(json!([{"glob": "src/**/*.rs", "min": 0}])),
        &[],
    );
    assert_fail(&run, "GLOB_INVALID");
}

#[test]
fn parse_errors() {
    let r = Repo::new();
    for (name, bytes) in [
        ("not-json", b"not json".to_vec()),
        ("truncated", br#"{"evidence":1,"summary":"x""#.to_vec()),
        ("duplicate", br#"{"evidence":1,"evidence":1}"#.to_vec()),
        (
            "nested-duplicate",
            br#"{"evidence":1,"verification":{"by":"a","by":"b"}}"#.to_vec(),
        ),
        (
            "bad-utf8",
            b"{\"evidence\":1,\"summary\":\"\xff\"}".to_vec(),
        ),
        ("trailing", b"{} {}".to_vec()),
    ] {
        r.write("p.json", &bytes);
        let run = r.run("verify-evidence", &["--format", "json", "p.json"], None);
        assert_eq!(run.code, 1, "{name}");
        assert_eq!(run.codes(), ["EVIDENCE_PARSE_ERROR"], "{name}");
    }
}

#[test]
fn over_one_mebibyte_is_a_parse_error_from_file_and_stdin() {
    let r = Repo::new();
    let mut big = serde_json::to_string(&payload(json!([{"path": "a"}]))).unwrap();
    big.insert_str(1, &format!("\"pad\":\"{}\",", "x".repeat(1024 * 1024)));
    r.write("big.json", &big);
    let run = r.run("verify-evidence", &["--format", "json", "big.json"], None);
    assert_eq!(run.code, 1);
    assert_eq!(run.codes(), ["EVIDENCE_PARSE_ERROR"]);
    let run = r.run(
        "verify-evidence",
        &["--format", "json", "-"],
        Some(big.as_bytes()),
    );
    assert_eq!(run.code, 1);
    assert_eq!(run.codes(), ["EVIDENCE_PARSE_ERROR"]);
    assert_eq!(run.json()["reports"][0]["subject"], "<stdin>");
}

#[test]
fn schema_errors() {
    let r = repo_with_src();
    let base = payload(json!([{"path": "src/lib.rs"}]));
    let mut cases: Vec<(&str, Value)> = Vec::new();
    let mut v = base.clone();
    v["evidence"] = json!(2);
    cases.push(("version 2", v));
    let mut v = base.clone();
    v["evidence"] = json!("1");
    cases.push(("version string", v));
    let mut v = base.clone();
    v.as_object_mut().unwrap().remove("summary");
    cases.push(("missing summary", v));
    let mut v = base.clone();
    v["summary"] = json!("   ");
    cases.push(("blank summary", v));
    let mut v = base.clone();
    v["summary"] = json!("x".repeat(4001));
    cases.push(("long summary", v));
    let mut v = base.clone();
    v["deliverable"] = json!([]);
    cases.push(("unknown top-level field", v));
    let mut v = base.clone();
    v["deliverables"] = json!([{"path": "src/lib.rs", "sha": "x"}]);
    cases.push(("unknown deliverable field", v));
    let mut v = base.clone();
    v["deliverables"] = json!([{"path": "src/lib.rs", "glob": "*"}]);
    cases.push(("path and glob", v));
    let mut v = base.clone();
    v["deliverables"] = json!([{}]);
    cases.push(("neither path nor glob", v));
    let mut v = base.clone();
    v["deliverables"] = json!("src/lib.rs");
    cases.push(("deliverables not an array", v));
    let mut v = base.clone();
    v["verification"]["verdict"] = json!("ok");
    cases.push(("unknown verdict", v));
    let mut v = base.clone();
    v["verification"]["by"] = json!(" ");
    cases.push(("blank by", v));
    let mut v = base.clone();
    v["verification"]["checks"] = json!([{"command": "x", "exitCode": "0"}]);
    cases.push(("exitCode string", v));
    let mut v = base.clone();
    v["agent"] = json!({"type": "w", "name": "x"});
    cases.push(("unknown agent field", v));
    cases.push(("array document", json!([base.clone()])));
    for (name, v) in cases {
        let run = verify(&r, &v, &[]);
        assert_eq!(run.code, 1, "{name}: {}", run.stdout);
        assert!(
            run.codes().contains(&"EVIDENCE_SCHEMA_INVALID".to_owned()),
            "{name}: {:?}",
            run.codes()
        );
    }
}

#[test]
fn schema_error_message_names_the_field() {
    let r = repo_with_src();
    let mut v = payload(json!([{"path": "src/lib.rs"}]));
    v["deliverables"] = json!([{"path": "src/lib.rs"}, {"path": "a", "sha": "x"}]);
    let run = verify(&r, &v, &[]);
    let msg = run.json()["reports"][0]["findings"][0]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        msg.contains("deliverables[1]") && msg.contains("sha"),
        "{msg}"
    );
}

#[test]
fn artifact_findings() {
    let r = repo_with_src();
    r.write(".omo/evidence/G1/a1/out.txt", "test output\n");
    let mut v = payload(json!([{"path": "src/lib.rs"}]));
    v["artifacts"] = json!([
        {"id": "unit", "kind": "cli-transcript", "path": ".omo/evidence/G1/a1/out.txt"},
        {"id": "unit", "kind": "video", "path": ".omo/evidence/G1/a1/out.txt"},
        {"id": "log", "kind": "log", "path": "src/lib.rs"}
    ]);
    v["verification"]["checks"] =
        json!([{"command": "cargo test", "exitCode": 0, "artifact": "nope"}]);
    let run = verify(&r, &v, &[]);
    assert_eq!(run.code, 1);
    let codes = run.codes();
    for c in [
        "ARTIFACT_ID_DUPLICATE",
        "ARTIFACT_KIND_UNKNOWN",
        "ARTIFACT_OUTSIDE_EVIDENCE_ROOT",
        "ARTIFACT_REF_UNKNOWN",
    ] {
        assert!(codes.contains(&c.to_owned()), "{c} in {codes:?}");
    }
    // The evidence root itself is not "under" the evidence root.
    let mut v = payload(json!([{"path": "src/lib.rs"}]));
    v["artifacts"] = json!([{"id": "a", "kind": "log", "path": ".omo/evidence"}]);
    assert_fail(&verify(&r, &v, &[]), "ARTIFACT_OUTSIDE_EVIDENCE_ROOT");
    // A valid artifact is hashed and listed.
    let mut v = payload(json!([{"path": "src/lib.rs"}]));
    v["artifacts"] =
        json!([{"id": "unit", "kind": "cli-transcript", "path": ".omo/evidence/G1/a1/out.txt"}]);
    v["verification"]["checks"] =
        json!([{"command": "cargo test", "exitCode": 0, "artifact": "unit"}]);
    let run = verify(&r, &v, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        run.json()["reports"][0]["files"].as_array().unwrap().len(),
        2
    );
}

#[test]
fn verdict_findings() {
    let r = repo_with_src();
    for verdict in ["failed", "blocked"] {
        let mut v = payload(json!([{"path": "src/lib.rs"}]));
        v["verification"]["verdict"] = json!(verdict);
        assert_fail(&verify(&r, &v, &[]), "VERDICT_NOT_PASSED");
    }
    let mut v = payload(json!([{"path": "src/lib.rs"}]));
    v["verification"]["checks"] = json!([{"command": "cargo test", "exitCode": 0}, {"command": "cargo clippy", "exitCode": 101}]);
    assert_fail(&verify(&r, &v, &[]), "VERDICT_INCONSISTENT");
}

#[test]
fn placeholder_texts() {
    let r = repo_with_src();
    let mut cases = Vec::new();
    let mut v = payload(json!([{"path": "src/lib.rs"}]));
    v["summary"] = json!(" TBD ");
    cases.push(v);
    let mut v = payload(json!([{"path": "src/lib.rs"}]));
    v["summary"] = json!("Did the work. <replace:summary>");
    cases.push(v);
    let mut v = payload(json!([{"path": "src/lib.rs"}]));
    v["verification"]["by"] = json!("todo");
    cases.push(v);
    let mut v = payload(json!([{"path": "src/lib.rs"}]));
    v["verification"]["checks"] = json!([{"command": "{{test command}}", "exitCode": 0}]);
    cases.push(v);
    let mut v = payload(json!([{"path": "src/lib.rs"}]));
    v["summary"] = json!("...");
    cases.push(v);
    for v in cases {
        assert_fail(&verify(&r, &v, &[]), "PLACEHOLDER_TEXT");
    }
}

#[test]
fn digest_findings() {
    let r = repo_with_src();
    let wrong = evidence_gate::internals::sha256_hex(b"other");
    assert_fail(
        &verify(
            &r,
            &payload(json!([{"path": "src/lib.rs", "sha256": wrong}])),
            &[],
        ),
        "DIGEST_MISMATCH",
    );
    let upper = evidence_gate::internals::sha256_hex(b"pub fn f() {}\n").to_uppercase();
    assert_fail(
        &verify(
            &r,
            &payload(json!([{"path": "src/lib.rs", "sha256": upper}])),
            &[],
        ),
        "DIGEST_INVALID",
    );
    assert_fail(
        &verify(
            &r,
            &payload(json!([{"path": "src/lib.rs", "sha256": "abc"}])),
            &[],
        ),
        "DIGEST_INVALID",
    );
}

#[test]
fn all_findings_of_a_payload_are_reported() {
    let r = repo_with_src();
    let mut v = payload(json!([{"path": "a/../b"}, {"path": "missing"}, {"glob": "x/["}]));
    v["verification"]["verdict"] = json!("blocked");
    let run = verify(&r, &v, &[]);
    assert_eq!(run.code, 1);
    let mut codes = run.codes();
    codes.sort();
    assert_eq!(
        codes,
        [
            "FILE_MISSING",
            "GLOB_INVALID",
            "PATH_TRAVERSAL",
            "VERDICT_NOT_PASSED"
        ]
    );
}

#[test]
fn several_payloads_report_in_order_and_the_worst_verdict_wins() {
    let r = repo_with_src();
    r.write(
        "good.json",
        serde_json::to_vec(&payload(json!([{"path": "src/lib.rs"}]))).unwrap(),
    );
    r.write(
        "bad.json",
        serde_json::to_vec(&payload(json!([{"path": "nope"}]))).unwrap(),
    );
    let run = r.run(
        "verify-evidence",
        &["--format", "json", "good.json", "bad.json", "absent.json"],
        None,
    );
    assert_eq!(
        run.code, 1,
        "a definitive failure outranks could-not-verify"
    );
    let v = run.json();
    let verdicts: Vec<&str> = v["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["pass", "fail", "error"]);
    assert_eq!(v["reports"][2]["findings"][0]["code"], "PAYLOAD_UNREADABLE");
}

#[test]
fn unreadable_payloads_are_could_not_verify() {
    let r = Repo::new();
    r.mkdir("dir.json");
    for p in ["absent.json", "dir.json"] {
        let run = r.run("verify-evidence", &["--format", "json", p], None);
        assert_eq!(run.code, 2, "{p}");
        assert_eq!(run.codes(), ["PAYLOAD_UNREADABLE"], "{p}");
        assert_eq!(run.json()["verdict"], "error");
    }
}

#[test]
fn missing_root_is_could_not_verify() {
    let r = Repo::new();
    r.write(
        "p.json",
        serde_json::to_vec(&payload(json!([{"path": "a"}]))).unwrap(),
    );
    let run = r.run(
        "verify-evidence",
        &["--format", "json", "--root", "no/such/dir", "p.json"],
        None,
    );
    assert_eq!(run.code, 2);
    assert_eq!(run.codes(), ["ROOT_UNAVAILABLE"]);
    let text = r.run(
        "verify-evidence",
        &["--root", "no/such/dir", "p.json"],
        None,
    );
    assert_eq!(text.code, 2);
    assert!(
        text.stdout
            .lines()
            .last()
            .unwrap()
            .starts_with("ERROR: could not verify"),
        "{}",
        text.stdout
    );
}

#[test]
fn invalid_rules_are_could_not_verify_and_name_the_file() {
    let r = repo_with_src();
    let p = payload(json!([{"path": "src/lib.rs"}]));
    r.write(
        "typo.json",
        r#"{"evidence":{"deliverables":{"alow":["**"]}}}"#,
    );
    let run = verify(&r, &p, &["--rules", "typo.json"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.codes(), ["RULES_INVALID"]);
    let f = &run.json()["reports"][0]["findings"][0];
    assert_eq!(f["detail"]["file"], "typo.json");
    assert_eq!(f["detail"]["pointer"], "/evidence/deliverables/alow");
    for (name, content) in [
        ("notjson.json", "{"),
        ("family.json", r#"{"evidense":{}}"#),
        ("type.json", r#"{"evidence":{"hardLinks":"maybe"}}"#),
        (
            "range.json",
            r#"{"evidence":{"limits":{"maxPathBytes":1}}}"#,
        ),
        (
            "glob.json",
            r#"{"evidence":{"deliverables":{"deny":["a/[x"]}}}"#,
        ),
    ] {
        r.write(name, content);
        let run = verify(&r, &p, &["--rules", name]);
        assert_eq!(
            (run.code, run.codes()),
            (2, vec!["RULES_INVALID".to_owned()]),
            "{name}"
        );
    }
    let run = verify(&r, &p, &["--rules", "absent-rules.json"]);
    assert_eq!(
        (run.code, run.codes()),
        (2, vec!["RULES_INVALID".to_owned()])
    );
    // The repository override (applied with --repo-rules) is validated the same way.
    r.write(
        ".evidence-gate/rules.json",
        r#"{"evidence":{"limits":{"maxFileBytes":"big"}}}"#,
    );
    let run = verify(&r, &p, &["--repo-rules"]);
    assert_eq!(
        (run.code, run.codes()),
        (2, vec!["RULES_INVALID".to_owned()])
    );
    assert_eq!(
        run.json()["reports"][0]["findings"][0]["detail"]["file"],
        ".evidence-gate/rules.json"
    );
}

#[test]
fn rules_override_deny_and_size_limit() {
    let r = repo_with_src();
    r.write("secrets/key.txt", "hunter2\n");
    r.write(
        ".evidence-gate/rules.json",
        r#"{"evidence":{"deliverables":{"deny":["secrets/**"]}}}"#,
    );
    // threat-model.md I9: the repository does not configure its verifier
    // unless --repo-rules says so.
    let run = verify(&r, &payload(json!([{"path": "secrets/key.txt"}])), &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_fail(
        &verify(
            &r,
            &payload(json!([{"path": "secrets/key.txt"}])),
            &["--repo-rules"],
        ),
        "PATH_NOT_ALLOWED",
    );
    // --rules applies after the embedded defaults.
    r.write(
        "small.json",
        r#"{"evidence":{"limits":{"maxFileBytes":4}}}"#,
    );
    assert_fail(
        &verify(
            &r,
            &payload(json!([{"path": "src/lib.rs"}])),
            &["--rules", "small.json"],
        ),
        "FILE_TOO_LARGE",
    );
    r.write(
        "allow.json",
        r#"{"evidence":{"deliverables":{"allow":["docs/**"]}}}"#,
    );
    assert_fail(
        &verify(
            &r,
            &payload(json!([{"path": "src/lib.rs"}])),
            &["--rules", "allow.json"],
        ),
        "PATH_NOT_ALLOWED",
    );
}

#[test]
fn bad_input_writes_nothing() {
    let r = repo_with_src();
    r.write("typo.json", "{");
    r.write("p.json", b"{\"evidence\":");
    let before = r.snapshot();
    for args in [
        vec!["p.json"],
        vec!["--rules", "typo.json", "p.json"],
        vec!["--root", "nope", "p.json"],
        vec!["absent.json"],
        vec!["--format", "yaml", "p.json"],
    ] {
        let run = r.run("verify-evidence", &args, None);
        assert_ne!(run.code, 0, "{args:?}");
    }
    let run = r.run("verify-evidence", &["-"], Some(b"\x00\x01garbage"));
    assert_eq!(run.code, 1);
    assert_eq!(before, r.snapshot(), "verify must never write");
}

#[test]
fn usage_errors_exit_2() {
    let r = Repo::new();
    for args in [
        vec!["--format", "yaml", "x.json"],
        vec!["-", "-"],
        vec!["--bogus"],
        vec!["x.json", "--strict"],
        vec!["x.json", "--allow-empty"],
        vec!["--plan-dir", "../elsewhere"],
        vec!["--plan-dir", "src"],
    ] {
        let run = r.run("verify-evidence", &args, None);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(!run.stderr.is_empty());
        assert!(run.stdout.is_empty());
    }
    // A payload with a --plan-dir under no profile's state directory: refused
    // by the audit, which runs first, with no report.
    r.write("x.json", serde_json::to_vec(&payload(json!([]))).unwrap());
    for (args, stdin) in [
        (vec!["x.json", "--plan-dir", "src"], None),
        (vec!["-", "--plan-dir", ".omo/elsewhere"], Some(&b"{}"[..])),
    ] {
        let run = r.run("verify-evidence", &args, stdin);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr
                .contains("lies under no profile's state directory"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty());
    }
    let help = r.run("verify-evidence", &["--help"], None);
    assert_eq!(help.code, 0);
    assert!(help.stdout.contains("--root") && help.stdout.contains("Exit status"));
    let help = r.run("evidence-gate", &["--help"], None);
    assert_eq!(help.code, 0);
    assert!(help.stdout.contains("verify"));
}

#[test]
fn schema_command_prints_the_generated_schema() {
    let r = Repo::new();
    let run = r.run("evidence-gate", &["schema", "evidence"], None);
    assert_eq!(run.code, 0);
    let s = run.json();
    assert_eq!(s["additionalProperties"], json!(false));
    let required: Vec<&str> = s["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for k in ["evidence", "summary", "deliverables", "verification"] {
        assert!(required.contains(&k), "{k} required");
    }
    assert!(s["$defs"]["Deliverable"]["anyOf"].is_array());
    let unknown = r.run("evidence-gate", &["schema", "nope"], None);
    assert_eq!(unknown.code, 2);
    assert!(unknown.stderr.contains("evidence"));
}

#[test]
fn bundled_example_passes() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/payloads/example");
    let payload = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/payloads/example/evidence.json"
    );
    let run = crate::common::run_in(
        std::path::Path::new(root),
        "verify-evidence",
        &["--format", "json", "--root", root, payload],
        None,
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        run.json()["reports"][0]["files"].as_array().unwrap().len(),
        2
    );
}

#[test]
fn every_code_is_documented_in_the_codes_document() {
    let readme = include_str!("../../docs/codes.md");
    for c in evidence_gate::evidence::Code::ALL {
        assert!(
            readme.contains(&format!("`{}`", c.name())),
            "docs/codes.md lacks `{}`",
            c.name()
        );
    }
}

/// `verify-evidence PAYLOAD --plan-dir DIR`: the named plan is the payload's
/// context, so a goal or criterion the plan lacks is reported, and the
/// summary counts the payload that was verified.
#[test]
fn a_payload_checked_against_a_plan_dir_reports_unknown_goals_and_criteria() {
    let r = crate::goals_support::repo_with_plan("- a\n- b");
    r.write("src/lib.rs", "pub fn f() {}\n");
    let mut p = payload(json!([{"path": "src/lib.rs"}]));
    let dir = [crate::goals_support::STATE];
    let plan_dir = ["--plan-dir", dir[0]];

    p["goalId"] = json!("G009-nope");
    let run = verify(&r, &p, &plan_dir);
    assert_fail(&run, "GOAL_UNKNOWN");
    let payload_report = &run.json()["reports"][0];
    assert_eq!(payload_report["subject"], "p.json");
    assert_eq!(payload_report["findings"][0]["code"], "GOAL_UNKNOWN");

    p["goalId"] = json!("G001-a");
    p["criterionIds"] = json!(["C001", "C009"]);
    let run = verify(&r, &p, &plan_dir);
    assert_fail(&run, "CRITERION_UNKNOWN");
    let findings = &run.json()["reports"][0]["findings"];
    assert_eq!(findings.as_array().unwrap().len(), 1, "{findings}");
    assert!(
        findings[0]["message"].as_str().unwrap().contains("C009"),
        "{findings}"
    );

    // Honest use: the goal and criterion exist; the payload and the plan's
    // state directory both pass, and the text summary counts one payload.
    p["criterionIds"] = json!(["C001"]);
    let run = verify(&r, &p, &plan_dir);
    assert_eq!(run.code, 0, "{}", run.stdout);
    r.write("p.json", serde_json::to_vec(&p).unwrap());
    let text = r.run("verify-evidence", &["p.json", "--plan-dir", dir[0]], None);
    assert_eq!(text.code, 0, "{}", text.stdout);
    let summary = text.stdout.lines().last().unwrap();
    assert!(
        summary.starts_with("PASSED: audited 1 state directory, 0 gate ledgers and 1 payload: "),
        "{summary}"
    );
    // Without --plan-dir there is no plan context: the payload alone passes.
    p["goalId"] = json!("G009-nope");
    let alone = verify(&r, &p, &[]);
    assert_eq!(alone.code, 0, "{}", alone.stdout);
}

/// The audit hands `verify-evidence PAYLOAD --plan-dir` the goals of the
/// plans it read itself, so the payloads are judged against the same plan
/// bytes as the audit, read once: every named directory's plan that
/// decodes, none when no directory is named, and nothing of a plan the audit
/// refuses (a symlink in its place, a corrupt file).
#[test]
fn the_audit_hands_the_payloads_the_plans_it_read() {
    use cap_std::fs::Dir;
    use evidence_gate::audit::{self, AuditOptions, Silent};
    use evidence_gate::evidence::PlanContext;
    use evidence_gate::rules::RuleSet;
    use evidence_gate::sandbox::{PathLimits, RelPath};

    let r = crate::goals_support::repo_with_plan("- a\n- b");
    let plan = std::fs::read(r.path().join(".omo/ulw-loop/goals.json")).unwrap();
    r.write(".omo/ulw-loop/s1/goals.json", &plan);
    r.write(
        ".omo/ulw-loop/s2/goals.json",
        "{\"version\": 1, \"goals\": [",
    );
    std::fs::create_dir_all(r.path().join(".omo/ulw-loop/s3")).unwrap();
    std::os::unix::fs::symlink(
        r.path().join(".omo/ulw-loop/goals.json"),
        r.path().join(".omo/ulw-loop/s3/goals.json"),
    )
    .unwrap();
    let rules = RuleSet::embedded().unwrap();
    let layouts = audit::layout::from_rules(&rules).unwrap();
    let dir = Dir::open_ambient_dir(r.path(), cap_std::ambient_authority()).unwrap();
    let goals_of = |named: &[&str]| {
        let named: Vec<RelPath> = named
            .iter()
            .map(|d| RelPath::parse(d, PathLimits::default()).unwrap())
            .collect();
        audit::audit(
            &dir,
            &rules.family().unwrap(),
            &AuditOptions {
                layouts: &layouts,
                plan_dirs: &named,
                strict: false,
                allow_empty: true,
                allow_legacy: true,
                gates: None,
            },
            &mut Silent,
        )
        .unwrap()
        .plan_goals
    };
    // Honest use: the named plan's goals and criteria, as a payload sees them.
    let one = goals_of(&[".omo/ulw-loop/s1"]).expect("the named plan decodes");
    assert!(one.goal_exists("G001-a") && one.goal_exists("G002-b"));
    assert!(one.criterion_exists("G001-a", "C001"));
    assert!(!one.goal_exists("G009-nope"));
    assert!(!one.criterion_exists("G001-a", "C009"));
    // A corrupt plan and a symlinked one give no context of their own.
    assert!(goals_of(&[".omo/ulw-loop/s2"]).is_none());
    assert!(goals_of(&[".omo/ulw-loop/s3"]).is_none());
    let mixed = goals_of(&[".omo/ulw-loop/s1", ".omo/ulw-loop/s2", ".omo/ulw-loop/s3"]);
    assert!(mixed.expect("s1 decodes").goal_exists("G001-a"));
    // No directory named: the whole repository is audited, no plan context.
    assert!(goals_of(&[]).is_none());
}

#[test]
fn payload_mode_summaries_count_in_proper_plurals() {
    let r = repo_with_src();
    r.write(
        "p.json",
        serde_json::to_vec(&payload(json!([{"path": "missing.rs"}]))).unwrap(),
    );
    r.write(
        "q.json",
        serde_json::to_vec(&payload(json!([{"path": "gone.rs"}]))).unwrap(),
    );
    let one = r.run("verify-evidence", &["p.json"], None);
    assert_eq!(
        one.stdout.lines().last(),
        Some("FAILED: 1 finding in 1 payload")
    );
    let two = r.run("verify-evidence", &["p.json", "q.json"], None);
    assert_eq!(
        two.stdout.lines().last(),
        Some("FAILED: 2 findings in 2 payloads")
    );
}

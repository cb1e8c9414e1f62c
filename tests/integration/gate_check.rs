//! `evidence-gate gate check` driven through the real binary on the
//! fixtures of `fixtures/gates/`: valid gates of both families, one hostile
//! gate per finding code (code AND exit status), the exit-2 conditions, the
//! output shapes and read-only behaviour.

use std::path::Path;

use serde_json::Value;

use crate::common::{Repo, Run};

pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/gates");
pub const ATTEMPT: &str = ".omo/evidence/ulw/demo/G001-rate-limit/a1";

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// A repository holding a copy of `fixtures/gates/`.
pub fn fixture_repo() -> Repo {
    let r = Repo::new();
    copy_tree(Path::new(FIXTURES), r.path());
    r
}

fn check(r: &Repo, file: &str, extra: &[&str]) -> Run {
    let mut args = vec!["gate", "check", file, "--json"];
    args.extend_from_slice(extra);
    r.run("evidence-gate", &args, None)
}

fn codes(run: &Run) -> Vec<String> {
    run.json()["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("no findings: {}", run.stdout))
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_owned())
        .collect()
}

fn first_error(run: &Run) -> Value {
    run.json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["severity"] == "error")
        .cloned()
        .unwrap_or(Value::Null)
}

#[derive(Clone, Copy)]
enum Setup {
    None,
    SymlinkLeaf,
    SymlinkAttemptDir,
}

/// Every hostile fixture checked by the binary: file, flags, the first
/// error's code and field, and the exit status.
const HOSTILE: &[(&str, &[&str], &str, &str, i32, Setup)] = &[
    (
        "directory-artifact",
        &[],
        "NOT_REGULAR_FILE",
        "manualQa.artifactRefs[0].path",
        1,
        Setup::None,
    ),
    (
        "symlinked-artifact",
        &[],
        "PATH_SYMLINK",
        "manualQa.artifactRefs[0].path",
        1,
        Setup::SymlinkLeaf,
    ),
    (
        "symlinked-attempt-dir",
        &[],
        "PATH_SYMLINK",
        "manualQa.artifactRefs[0].path",
        1,
        Setup::SymlinkAttemptDir,
    ),
    (
        "outside-evidence-root",
        &[],
        "GATE_ARTIFACT_OUTSIDE_SCOPE",
        "manualQa.artifactRefs[0].path",
        1,
        Setup::None,
    ),
    (
        "absolute-path",
        &[],
        "PATH_ABSOLUTE",
        "manualQa.artifactRefs[0].path",
        1,
        Setup::None,
    ),
    (
        "traversal-path",
        &[],
        "PATH_TRAVERSAL",
        "manualQa.artifactRefs[0].path",
        1,
        Setup::None,
    ),
    (
        "missing-artifact",
        &[],
        "FILE_MISSING",
        "manualQa.artifactRefs[0].path",
        1,
        Setup::None,
    ),
    (
        "empty-artifact",
        &[],
        "FILE_EMPTY",
        "manualQa.artifactRefs[0].path",
        1,
        Setup::None,
    ),
    (
        "zero-of-zero",
        &[],
        "GATE_COVERAGE_EMPTY",
        "criteriaCoverage.totalCriteria",
        1,
        Setup::None,
    ),
    (
        "negative-count",
        &[],
        "GATE_COVERAGE_NOT_INTEGER",
        "criteriaCoverage.passCount",
        1,
        Setup::None,
    ),
    (
        "fractional-count",
        &[],
        "GATE_COVERAGE_NOT_INTEGER",
        "criteriaCoverage.totalCriteria",
        1,
        Setup::None,
    ),
    (
        "exponent-count",
        &[],
        "GATE_COVERAGE_NOT_INTEGER",
        "criteriaCoverage.totalCriteria",
        1,
        Setup::None,
    ),
    (
        "integral-float-count",
        &[],
        "GATE_COVERAGE_NOT_INTEGER",
        "criteriaCoverage.passCount",
        1,
        Setup::None,
    ),
    (
        "pass-below-total",
        &[],
        "GATE_COVERAGE_INCOMPLETE",
        "criteriaCoverage.passCount",
        1,
        Setup::None,
    ),
    (
        "pass-above-total",
        &[],
        "GATE_COVERAGE_INCONSISTENT",
        "criteriaCoverage.passCount",
        1,
        Setup::None,
    ),
    (
        "count-not-a-number",
        &[],
        "GATE_FIELD_TYPE",
        "criteriaCoverage.totalCriteria",
        1,
        Setup::None,
    ),
    (
        "replace-placeholder",
        &[],
        "GATE_FIELD_PLACEHOLDER",
        "codeReview.evidence",
        1,
        Setup::None,
    ),
    (
        "placeholder-word",
        &[],
        "GATE_FIELD_PLACEHOLDER",
        "manualQa.surfaceEvidence[0].invocation",
        1,
        Setup::None,
    ),
    (
        "placeholder-path",
        &[],
        "GATE_FIELD_PLACEHOLDER",
        "manualQa.artifactRefs[0].path",
        1,
        Setup::None,
    ),
    (
        "wrong-reviewer-role",
        &[],
        "GATE_ROLE_NOT_ACCEPTED",
        "codeReview.by",
        1,
        Setup::None,
    ),
    (
        "wrong-reviewer-role-omo-senpi",
        &["--surface", "omo-senpi"],
        "GATE_ROLE_NOT_ACCEPTED",
        "gateReview.by",
        1,
        Setup::None,
    ),
    (
        "missing-section",
        &[],
        "GATE_SECTION_MISSING",
        "iteration",
        1,
        Setup::None,
    ),
    (
        "duplicate-key",
        &[],
        "GATE_JSON_INVALID",
        "qualityGate",
        1,
        Setup::None,
    ),
    (
        "not-json",
        &[],
        "GATE_JSON_INVALID",
        "qualityGate",
        1,
        Setup::None,
    ),
    (
        "not-an-object",
        &[],
        "GATE_JSON_INVALID",
        "qualityGate",
        1,
        Setup::None,
    ),
    (
        "blockers-not-empty",
        &[],
        "GATE_BLOCKERS_NOT_EMPTY",
        "codeReview.blockers",
        1,
        Setup::None,
    ),
    (
        "blockers-not-array",
        &[],
        "GATE_FIELD_TYPE",
        "codeReview.blockers",
        1,
        Setup::None,
    ),
    (
        "full-rerun-false",
        &[],
        "GATE_VALUE_MISMATCH",
        "iteration.fullRerun",
        1,
        Setup::None,
    ),
    (
        "full-rerun-string",
        &[],
        "GATE_FIELD_TYPE",
        "iteration.fullRerun",
        1,
        Setup::None,
    ),
    (
        "recommendation-comment",
        &[],
        "GATE_VALUE_MISMATCH",
        "codeReview.recommendation",
        1,
        Setup::None,
    ),
    (
        "code-quality-block",
        &[],
        "GATE_VALUE_MISMATCH",
        "codeReview.codeQualityStatus",
        1,
        Setup::None,
    ),
    (
        "surface-not-applicable",
        &[],
        "GATE_VERDICT_INVALID",
        "manualQa.surfaceEvidence[0].verdict",
        1,
        Setup::None,
    ),
    (
        "adversarial-without-reason",
        &[],
        "GATE_VERDICT_INVALID",
        "manualQa.adversarialCases[0].verdict",
        1,
        Setup::None,
    ),
    (
        "unsupported-surface",
        &[],
        "GATE_SURFACE_UNSUPPORTED",
        "manualQa.surfaceEvidence[1].surface",
        1,
        Setup::None,
    ),
    (
        "unsupported-kind",
        &[],
        "GATE_ARTIFACT_KIND_UNSUPPORTED",
        "manualQa.artifactRefs[1].kind",
        1,
        Setup::None,
    ),
    (
        "duplicate-artifact-id",
        &[],
        "GATE_ARTIFACT_ID_DUPLICATE",
        "manualQa.artifactRefs",
        1,
        Setup::None,
    ),
    (
        "unknown-artifact-ref",
        &[],
        "GATE_ARTIFACT_REF_UNKNOWN",
        "manualQa.surfaceEvidence[1].artifactRefs[0]",
        1,
        Setup::None,
    ),
    (
        "incompatible-artifact",
        &[],
        "GATE_SURFACE_ARTIFACT_INCOMPATIBLE",
        "manualQa.surfaceEvidence",
        1,
        Setup::None,
    ),
    (
        "empty-artifact-list",
        &[],
        "GATE_ARRAY_EMPTY",
        "iteration.rerunCommands",
        1,
        Setup::None,
    ),
    (
        "blank-text",
        &[],
        "GATE_FIELD_REQUIRED",
        "criteriaCoverage.originalIntent",
        1,
        Setup::None,
    ),
    (
        "text-wrong-type",
        &[],
        "GATE_FIELD_TYPE",
        "criteriaCoverage.originalIntent",
        1,
        Setup::None,
    ),
    (
        "many-errors",
        &[],
        "GATE_COVERAGE_NOT_INTEGER",
        "criteriaCoverage.totalCriteria",
        1,
        Setup::None,
    ),
    (
        "ultragoal-watch",
        &["--profile", "ultragoal"],
        "GATE_VALUE_MISMATCH",
        "codeReview.architectStatus",
        1,
        Setup::None,
    ),
    (
        "ultragoal-missing-cleanup",
        &["--profile", "ultragoal"],
        "GATE_SECTION_MISSING",
        "cleanup",
        1,
        Setup::None,
    ),
    (
        "ultragoal-no-status-field",
        &["--profile", "ultragoal"],
        "GATE_FIELD_REQUIRED",
        "codeReview.architectStatus",
        1,
        Setup::None,
    ),
    (
        "ultragoal-empty-commands",
        &["--profile", "ultragoal"],
        "GATE_ARRAY_EMPTY",
        "verification.commands",
        1,
        Setup::None,
    ),
    (
        "ultragoal-blockers",
        &["--profile", "ultragoal"],
        "GATE_BLOCKERS_NOT_EMPTY",
        "codeReview.blockers",
        1,
        Setup::None,
    ),
];

/// Hostile fixtures that need plan context; `gate_lib` checks them.
pub const PLAN_CONTEXT_FIXTURES: &[&str] = &[
    "earlier-attempt",
    "attempt-dir-itself",
    "sibling-prefix",
    "unknown-criterion-ref",
    "ambiguous-criterion-ref",
    "uncovered-criterion",
];

/// Fixtures that pass (with warnings) rather than fail.
const PASSING_VARIANTS: &[(&str, &str)] = &[
    ("code-quality-watch", "GATE_CODE_QUALITY_WATCH"),
    ("unknown-field", "GATE_FIELD_UNKNOWN"),
];

#[test]
fn valid_fixtures_pass_with_their_files_recorded() {
    let r = fixture_repo();
    for (file, flags, files) in [
        ("lazycodex.json", &["--surface", "lazycodex"][..], 5),
        ("lazycodex.json", &[][..], 5),
        ("omo-senpi.json", &["--surface", "omo-senpi"][..], 4),
        ("ultragoal.json", &["--profile", "ultragoal"][..], 3),
        (
            "ultragoal-ai-slop-cleaner.json",
            &["--profile", "ultragoal"][..],
            3,
        ),
    ] {
        let run = check(&r, file, flags);
        assert_eq!(run.code, 0, "{file}: {}", run.stdout);
        let v = run.json();
        assert_eq!(v["ok"], true);
        assert_eq!(v["verdict"], "pass");
        assert_eq!(v["scope"]["kind"], "none");
        assert_eq!(codes(&run), ["GATE_PLAN_CONTEXT_SKIPPED"], "{file}");
        assert_eq!(v["findings"][0]["severity"], "info");
        let listed = v["files"].as_array().unwrap();
        assert_eq!(listed.len(), files, "{file}");
        for f in listed {
            let bytes = std::fs::read(r.join(f["path"].as_str().unwrap())).unwrap();
            assert_eq!(f["size"], bytes.len());
            assert_eq!(f["sha256"], evidence_gate::digest::sha256_hex(&bytes));
            assert_eq!(f.as_object().unwrap().len(), 3);
        }
    }
    let v = check(&r, "lazycodex.json", &[]).json();
    assert_eq!(v["rules"], "lazycodex");
    assert_eq!(v["family"], "five-section");
    assert_eq!(v["scope"]["dir"], ".omo/evidence");
    let v = check(&r, "ultragoal.json", &["--profile", "ultragoal"]).json();
    assert_eq!(v["rules"], "ultragoal");
    assert_eq!(v["family"], "ultragoal");
    assert_eq!(v["scope"]["dir"], ".omagy/evidence");
}

#[cfg(unix)]
#[test]
fn every_hostile_fixture_fails_with_its_code_and_exit_status() {
    for &(name, flags, code, field, exit, setup) in HOSTILE {
        let r = fixture_repo();
        match setup {
            Setup::None => {}
            Setup::SymlinkLeaf => r.symlink(
                "cli-transcript.txt",
                &format!("{ATTEMPT}/linked-transcript.txt"),
            ),
            Setup::SymlinkAttemptDir => {
                r.symlink("a1", ".omo/evidence/ulw/demo/G001-rate-limit/a2")
            }
        }
        let file = format!("hostile/{name}.json");
        let run = check(&r, &file, flags);
        assert_eq!(run.code, exit, "{name}: {}{}", run.stdout, run.stderr);
        let v = run.json();
        assert_eq!(v["ok"], false, "{name}");
        assert_eq!(v["verdict"], "fail", "{name}");
        let first = first_error(&run);
        assert_eq!(first["code"], code, "{name}: {}", run.stdout);
        assert_eq!(first["field"], field, "{name}: {}", run.stdout);
        assert!(
            field == "qualityGate"
                || first["message"]
                    .as_str()
                    .unwrap()
                    .contains(field.split('[').next().unwrap()),
            "{name}: the message names the field: {}",
            first["message"]
        );
        // Text output: the first line and one line per finding.
        let mut args = vec!["gate", "check", file.as_str()];
        args.extend_from_slice(flags);
        let text = r.run("evidence-gate", &args, None);
        assert_eq!(text.code, exit, "{name}");
        assert!(
            text.stdout.starts_with("gate check: FAIL ("),
            "{name}: {}",
            text.stdout
        );
        assert!(
            text.stdout.contains(&format!("error {code} {field}: ")),
            "{name}: {}",
            text.stdout
        );
    }
}

#[test]
fn every_hostile_fixture_is_exercised() {
    let mut listed: Vec<&str> = HOSTILE.iter().map(|h| h.0).collect();
    listed.extend_from_slice(PLAN_CONTEXT_FIXTURES);
    listed.extend(PASSING_VARIANTS.iter().map(|p| p.0));
    for e in std::fs::read_dir(Path::new(FIXTURES).join("hostile")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let stem = name.strip_suffix(".json").unwrap();
        assert!(listed.contains(&stem), "hostile/{name} has no test");
    }
}

#[test]
fn warnings_pass_and_are_reported() {
    let r = fixture_repo();
    for &(name, code) in PASSING_VARIANTS {
        let run = check(&r, &format!("hostile/{name}.json"), &[]);
        assert_eq!(run.code, 0, "{name}: {}", run.stdout);
        let v = run.json();
        assert_eq!(v["verdict"], "pass");
        let f = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["code"] == code)
            .unwrap_or_else(|| panic!("{name}: no {code} in {}", run.stdout));
        assert_eq!(f["severity"], "warning");
    }
    let text = r.run(
        "evidence-gate",
        &["gate", "check", "hostile/unknown-field.json"],
        None,
    );
    assert_eq!(text.code, 0);
    assert!(
        text.stdout
            .starts_with("gate check: PASS (lazycodex, scope none)\n"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("warning GATE_FIELD_UNKNOWN iteration.rerunCount: "),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("\nchecked .omo/evidence/ulw/demo/G001-rate-limit/a1/cli-transcript.txt ("),
        "{}",
        text.stdout
    );
}

#[test]
fn unknown_fields_reject_fails_and_ignore_is_silent() {
    let r = fixture_repo();
    r.write(
        "reject.json",
        r#"{"gates":{"common":{"unknownFields":"reject"}}}"#,
    );
    let run = check(
        &r,
        "hostile/unknown-field.json",
        &["--rules", "reject.json"],
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    let first = first_error(&run);
    assert_eq!(first["code"], "GATE_FIELD_UNKNOWN");
    assert_eq!(first["field"], "iteration.rerunCount");
    r.write(
        "ignore.json",
        r#"{"gates":{"common":{"unknownFields":"ignore"}}}"#,
    );
    let run = check(
        &r,
        "hostile/unknown-field.json",
        &["--rules", "ignore.json"],
    );
    assert_eq!(run.code, 0);
    assert_eq!(codes(&run), ["GATE_PLAN_CONTEXT_SKIPPED"]);
}

#[test]
fn one_pass_reports_every_finding_in_order() {
    let r = fixture_repo();
    let run = check(&r, "hostile/many-errors.json", &[]);
    assert_eq!(run.code, 1);
    let v = run.json();
    let got: Vec<(String, String)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap().into(),
                f["field"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want = [
        (
            "GATE_COVERAGE_NOT_INTEGER",
            "criteriaCoverage.totalCriteria",
        ),
        (
            "GATE_FIELD_PLACEHOLDER",
            "manualQa.surfaceEvidence[0].invocation",
        ),
        ("GATE_ROLE_NOT_ACCEPTED", "gateReview.by"),
        ("GATE_PLAN_CONTEXT_SKIPPED", "qualityGate"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(c, f)| ((*c).into(), (*f).into()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn report_verdict_lines_are_required_when_the_rule_is_on() {
    let r = fixture_repo();
    r.write(
        "verdict.json",
        r#"{"gates":{"lazycodex":{"requireReportVerdictLine":true}}}"#,
    );
    let run = check(&r, "lazycodex.json", &["--rules", "verdict.json"]);
    assert_eq!(
        run.code, 0,
        "the fixture reports carry their VERDICT lines: {}",
        run.stdout
    );
    r.write(
        &format!("{ATTEMPT}/gate-review.md"),
        "# Gate review\n\nLooks fine.\n",
    );
    let run = check(&r, "lazycodex.json", &["--rules", "verdict.json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let first = first_error(&run);
    assert_eq!(first["code"], "GATE_REPORT_VERDICT_MISSING");
    assert_eq!(first["field"], "gateReview.reportPath");
    assert_eq!(first["details"]["expected"], "VERDICT: APPROVE");
}

#[test]
fn the_artifact_limit_counts_distinct_paths() {
    let r = fixture_repo();
    r.write(
        "limit.json",
        r#"{"gates":{"common":{"limits":{"maxArtifacts":4}}}}"#,
    );
    let run = check(&r, "lazycodex.json", &["--rules", "limit.json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let first = first_error(&run);
    assert_eq!(first["code"], "GATE_ARTIFACT_LIMIT");
    assert_eq!(first["field"], "manualQa.reportPath");
    assert_eq!(run.json()["files"].as_array().unwrap().len(), 4);
    r.write(
        "limit.json",
        r#"{"gates":{"common":{"limits":{"maxArtifacts":5}}}}"#,
    );
    assert_eq!(
        check(&r, "lazycodex.json", &["--rules", "limit.json"]).code,
        0
    );
}

#[test]
fn oversized_artifacts_and_documents_fail() {
    let r = fixture_repo();
    r.write(
        "small.json",
        r#"{"gates":{"common":{"limits":{"maxArtifactBytes":200}}}}"#,
    );
    let run = check(&r, "lazycodex.json", &["--rules", "small.json"]);
    assert_eq!(run.code, 1);
    let first = first_error(&run);
    assert_eq!(first["code"], "FILE_TOO_LARGE");
    assert_eq!(first["field"], "manualQa.artifactRefs[0].path");
    r.write(
        "tiny.json",
        r#"{"gates":{"common":{"limits":{"maxGateBytes":100}}}}"#,
    );
    let run = check(&r, "lazycodex.json", &["--rules", "tiny.json"]);
    assert_eq!(
        run.code, 1,
        "a document that was read but is too large is known to be invalid"
    );
    assert_eq!(first_error(&run)["code"], "GATE_JSON_INVALID");
    let run = r.run(
        "evidence-gate",
        &["gate", "check", "-", "--json", "--rules", "tiny.json"],
        Some(&vec![b' '; 10_000]),
    );
    assert_eq!(run.code, 1);
    assert_eq!(first_error(&run)["code"], "GATE_JSON_INVALID");
}

#[cfg(unix)]
#[test]
fn hard_linked_artifacts_follow_the_sandbox_policy() {
    let r = fixture_repo();
    std::fs::hard_link(
        r.join(&format!("{ATTEMPT}/cli-transcript.txt")),
        r.join("outside-link.txt"),
    )
    .unwrap();
    let run = check(&r, "lazycodex.json", &[]);
    assert_eq!(run.code, 1);
    assert_eq!(first_error(&run)["code"], "FILE_HARDLINKED");
    r.write(
        ".evidence-gate/rules.json",
        r#"{"evidence":{"hardLinks":"allow"}}"#,
    );
    assert_eq!(check(&r, "lazycodex.json", &[]).code, 0);
}

#[cfg(unix)]
#[test]
fn a_fifo_artifact_never_hangs_the_check() {
    let r = fixture_repo();
    let fifo = r.join(&format!("{ATTEMPT}/pipe"));
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .map(|s| s.success());
    if !matches!(ok, Ok(true)) {
        return;
    }
    let gate = std::fs::read_to_string(r.join("lazycodex.json"))
        .unwrap()
        .replace(
            &format!("{ATTEMPT}/cli-transcript.txt"),
            &format!("{ATTEMPT}/pipe"),
        );
    r.write("fifo.json", gate);
    let run = check(&r, "fifo.json", &[]);
    assert_eq!(run.code, 1);
    assert_eq!(first_error(&run)["code"], "NOT_REGULAR_FILE");
}

#[cfg(unix)]
#[test]
fn permission_denied_is_unverifiable() {
    use std::os::unix::fs::PermissionsExt;
    let r = fixture_repo();
    let locked = r.join(&format!("{ATTEMPT}"));
    std::fs::set_permissions(r.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let is_root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n")
        .unwrap_or(false);
    let bin = crate::common::bin("evidence-gate");
    let mut cmd = if is_root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin);
        c
    } else {
        std::process::Command::new(&bin)
    };
    let out = cmd
        .args(["gate", "check", "lazycodex.json", "--json"])
        .current_dir(r.path())
        .output()
        .unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if is_root && stdout.is_empty() {
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["verdict"], "unverifiable");
    assert_eq!(v["ok"], false);
    let first = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["severity"] == "error")
        .unwrap();
    assert_eq!(first["code"], "IO_ERROR");
    assert_eq!(first["field"], "manualQa.artifactRefs[0].path");
}

#[cfg(unix)]
#[test]
fn documents_that_cannot_be_read_exit_2() {
    let r = fixture_repo();
    r.symlink("lazycodex.json", "linked-gate.json");
    r.mkdir("a-directory.json");
    for (file, code) in [
        ("missing.json", "FILE_MISSING"),
        ("linked-gate.json", "PATH_SYMLINK"),
        ("a-directory.json", "NOT_REGULAR_FILE"),
        ("/etc/hostname", "PATH_ABSOLUTE"),
        ("../outside.json", "PATH_TRAVERSAL"),
    ] {
        let run = check(&r, file, &[]);
        assert_eq!(run.code, 2, "{file}: {}", run.stdout);
        let v = run.json();
        assert_eq!(v["ok"], false);
        assert_eq!(v["verdict"], "unverifiable");
        assert_eq!(v["error"]["code"], code, "{file}");
        let text = r.run("evidence-gate", &["gate", "check", file], None);
        assert_eq!(text.code, 2);
        assert!(text.stdout.is_empty());
        assert!(
            text.stderr
                .starts_with(&format!("error: {code} cannot read the gate document")),
            "{}",
            text.stderr
        );
    }
    // `./x` and an absolute path inside the repository are accepted.
    assert_eq!(check(&r, "./lazycodex.json", &[]).code, 0);
    let abs = r.join("lazycodex.json");
    let run = crate::common::run_in(
        &std::fs::canonicalize(r.path()).unwrap(),
        "evidence-gate",
        &[
            "gate",
            "check",
            std::fs::canonicalize(&abs).unwrap().to_str().unwrap(),
        ],
        None,
        &[],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

#[test]
fn standard_input_is_read_with_dash() {
    let r = fixture_repo();
    let gate = std::fs::read(r.join("lazycodex.json")).unwrap();
    let run = r.run(
        "evidence-gate",
        &["gate", "check", "-", "--json"],
        Some(&gate),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let run = r.run(
        "evidence-gate",
        &["gate", "check", "-", "--json"],
        Some(b"{\"a\":1,\"a\":2}"),
    );
    assert_eq!(run.code, 1);
    assert_eq!(first_error(&run)["code"], "GATE_JSON_INVALID");
    assert!(
        first_error(&run)["message"]
            .as_str()
            .unwrap()
            .contains("duplicate key")
    );
}

#[test]
fn invalid_rules_and_usage_errors_exit_2() {
    let r = fixture_repo();
    r.write(
        "bad.json",
        r#"{"gates":{"lazycodex":{"acceptors":{"codeReview":[]}}}}"#,
    );
    let run = check(&r, "lazycodex.json", &["--rules", "bad.json"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.json()["error"]["code"], "RULES_INVALID");
    assert_eq!(
        run.json()["error"]["details"]["pointer"],
        "/gates/lazycodex/acceptors/codeReview"
    );
    r.write(
        ".evidence-gate/rules.json",
        r#"{"gate":{"surface":"nonesuch"}}"#,
    );
    let run = check(&r, "lazycodex.json", &[]);
    assert_eq!(run.code, 2);
    assert_eq!(run.json()["error"]["code"], "RULES_INVALID");
    std::fs::remove_file(r.join(".evidence-gate/rules.json")).unwrap();
    let run = check(&r, "lazycodex.json", &["--rules", "no-such-rules.json"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.json()["error"]["code"], "RULES_INVALID");
    let run = check(&r, "lazycodex.json", &["--surface", "nonesuch"]);
    assert_eq!(run.code, 2);
    assert!(
        run.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("known: lazycodex, omo-senpi, ultragoal")
    );
    let run = check(&r, "lazycodex.json", &["--surface", "common"]);
    assert_eq!(run.code, 2, "`common` is not a gate rule file");
    let run = r.run("evidence-gate", &["gate", "check"], None);
    assert_eq!(run.code, 2);
    let run = r.run(
        "evidence-gate",
        &["gate", "check", "lazycodex.json", "--profile", "omo"],
        None,
    );
    assert_eq!(run.code, 2);
}

#[test]
fn goal_id_needs_the_goal_engine() {
    let r = fixture_repo();
    let run = r.run(
        "evidence-gate",
        &[
            "gate",
            "check",
            "lazycodex.json",
            "--goal-id",
            "G001-rate-limit",
            "--session-id",
            "demo",
        ],
        None,
    );
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr
            .contains("--goal-id `G001-rate-limit` of session `demo` needs the goal engine"),
        "{}",
        run.stderr
    );
    let run = check(&r, "lazycodex.json", &["--goal-id", "G001-rate-limit"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.json()["verdict"], "unverifiable");
}

#[test]
fn surface_resolution_env_repository_and_default() {
    let r = fixture_repo();
    // Default: lazycodex, which requires codeReview.
    let run = check(&r, "omo-senpi.json", &[]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["rules"], "lazycodex");
    assert_eq!(first_error(&run)["code"], "GATE_SECTION_MISSING");
    let env = [("OMO_AGENT_TOOLKIT_SURFACE", "omo-senpi")];
    let run = r.run_env(
        "evidence-gate",
        &["gate", "check", "omo-senpi.json", "--json"],
        None,
        &env,
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.json()["rules"], "omo-senpi");
    // An unknown environment value falls through to the repository setting.
    r.write(
        ".evidence-gate/rules.json",
        r#"{"gate":{"surface":"omo-senpi"}}"#,
    );
    let env = [("OMO_AGENT_TOOLKIT_SURFACE", "laxest")];
    let run = r.run_env(
        "evidence-gate",
        &["gate", "check", "omo-senpi.json", "--json"],
        None,
        &env,
    );
    assert_eq!(run.json()["rules"], "omo-senpi");
    // The flag wins over everything.
    let env = [("OMO_AGENT_TOOLKIT_SURFACE", "omo-senpi")];
    let run = r.run_env(
        "evidence-gate",
        &[
            "gate",
            "check",
            "omo-senpi.json",
            "--json",
            "--surface",
            "lazycodex",
        ],
        None,
        &env,
    );
    assert_eq!(run.json()["rules"], "lazycodex");
    assert_eq!(run.code, 1);
}

#[test]
fn gate_check_is_read_only() {
    let r = fixture_repo();
    r.write(
        ".evidence-gate/rules.json",
        r#"{"gates":{"common":{"unknownFields":"warn"}}}"#,
    );
    let before = r.snapshot();
    for (file, flags) in [
        ("lazycodex.json", &[][..]),
        ("hostile/many-errors.json", &[][..]),
        ("ultragoal.json", &["--profile", "ultragoal"][..]),
        ("missing.json", &[][..]),
    ] {
        check(&r, file, flags);
        let mut args = vec!["gate", "check", file];
        args.extend_from_slice(flags);
        r.run("evidence-gate", &args, None);
    }
    assert_eq!(before, r.snapshot(), "gate check wrote to the repository");
}

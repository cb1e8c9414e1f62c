//! Snapshots of rendered output: people read these messages, so changes to
//! them are reviewed in the diff. Temporary paths never appear: subjects and
//! paths are repository-relative.

use serde_json::json;

use crate::common::Repo;
use crate::evidence_cli::payload;

fn failing_repo() -> Repo {
    let r = Repo::new();
    r.write("src/lib.rs", "pub fn f() {}\n");
    r.write(".omo/evidence/G1/a1/out.txt", "ok\n");
    let mut p = payload(json!([
        {"path": "src/lib.rs", "sha256": "0000000000000000000000000000000000000000000000000000000000000000"},
        {"path": "src/../etc/passwd"},
        {"glob": "tests/**/*.rs", "min": 2}
    ]));
    p["artifacts"] = json!([{"id": "unit", "kind": "video", "path": "out.txt"}]);
    p["verification"]["checks"] =
        json!([{"command": "cargo test", "exitCode": 3, "artifact": "unit"}]);
    r.write("p.json", serde_json::to_vec(&p).unwrap());
    r
}

#[test]
fn text_report_of_a_failing_payload() {
    let r = failing_repo();
    let run = r.run("verify-evidence", &["p.json"], None);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn json_report_of_a_failing_payload() {
    let r = failing_repo();
    let run = r.run("verify-evidence", &["--format", "json", "p.json"], None);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn github_report_of_a_failing_payload() {
    let r = failing_repo();
    let run = r.run("verify-evidence", &["--format", "github", "p.json"], None);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn text_report_of_a_failing_repository_audit() {
    let r = crate::ci_support::audited_repo();
    let run = r.run("verify-evidence", &[], None);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(policy_redacted(&run.stdout));
}

/// The policy digest changes with every edit of the embedded rules; the
/// snapshot shows where it is printed, `policy::` tests check its value.
fn policy_redacted(out: &str) -> String {
    let rules = evidence_gate::rules::RuleSet::embedded().unwrap();
    assert!(out.contains(rules.digest()), "{out}");
    out.replace(rules.digest(), "sha256:<embedded rules>")
}

#[test]
fn json_report_of_a_failing_repository_audit() {
    let r = crate::ci_support::audited_repo();
    let run = r.run("verify-evidence", &["--format", "json"], None);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(policy_redacted(&run.stdout));
}

#[test]
fn github_report_of_a_failing_repository_audit() {
    let r = crate::ci_support::audited_repo();
    let run = r.run("verify-evidence", &["--format", "github", "--strict"], None);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stdout);
}

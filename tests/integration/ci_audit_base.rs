//! `verify-evidence --base REF` (threat-model.md I8) on real git histories:
//! a base commit whose state was recorded through the tool, then the
//! agent's commit. Each tampering fails `--base <base> --strict` with exit 1
//! and the code that names it; honest work recorded through the tool passes.
//!
//! Git and the binaries run with `HOME`, `XDG_*` and the git configuration
//! pointed at a temporary directory, never the real home.

use std::path::Path;
use std::process::Command;

use serde_json::{Map, Value, json};

use crate::ci_support::findings;
use crate::common::{Repo, Run};

const SID: &str = "s1";
const SESSION: &str = ".omo/ulw-loop/s1";
const DELIVERABLE: &str = "src/feature.rs";

/// A temporary repository with its own home and git configuration.
struct History {
    repo: Repo,
    home: tempfile::TempDir,
}

impl History {
    fn new() -> History {
        let h = History {
            repo: Repo::new(),
            home: tempfile::tempdir().unwrap(),
        };
        std::fs::write(h.home.path().join("gitconfig"), "").unwrap();
        h.git(&["init", "-q", "-b", "main"]);
        h
    }

    fn env(&self) -> Vec<(String, String)> {
        let home = self.home.path();
        let mut env: Vec<(String, String)> = vec![
            ("HOME".into(), home.display().to_string()),
            (
                "XDG_STATE_HOME".into(),
                home.join("state").display().to_string(),
            ),
            (
                "XDG_CONFIG_HOME".into(),
                home.join("config").display().to_string(),
            ),
            ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
            (
                "GIT_CONFIG_GLOBAL".into(),
                home.join("gitconfig").display().to_string(),
            ),
            ("GIT_AUTHOR_NAME".into(), "Agent".into()),
            ("GIT_AUTHOR_EMAIL".into(), "agent@example.invalid".into()),
            ("GIT_COMMITTER_NAME".into(), "Agent".into()),
            ("GIT_COMMITTER_EMAIL".into(), "agent@example.invalid".into()),
        ];
        for (k, v) in crate::goals_support::clean_env() {
            env.push((k.into(), v.into()));
        }
        env
    }

    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(self.repo.path())
            .envs(self.env())
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Commits everything; returns the commit id.
    fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    fn run(&self, name: &str, args: &[&str]) -> Run {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        self.repo.run_env(name, args, None, &env)
    }

    /// `evidence-gate ulw-loop <args> --session-id s1 --json`, which must succeed.
    fn ulw(&self, args: &[&str]) -> Value {
        let mut all = vec!["ulw-loop"];
        all.extend_from_slice(args);
        all.extend(["--session-id", SID, "--json"]);
        let out = self.run("evidence-gate", &all);
        assert_eq!(out.code, 0, "{args:?}: {}{}", out.stdout, out.stderr);
        out.json()
    }

    fn plan(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.path(&format!("{SESSION}/goals.json"))).unwrap())
            .unwrap()
    }

    fn criteria(&self, goal: &str) -> Vec<String> {
        self.plan()["goals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["id"] == goal)
            .unwrap()["successCriteria"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Records `pass` for every criterion of `goal`, the first one with an
    /// evidence payload whose deliverable is `src/feature.rs`.
    fn prove(&self, goal: &str, payload: &str) {
        let path = format!("evidence/{payload}.json");
        self.repo.write(
            &path,
            json!({
                "evidence": 1,
                "summary": "Feature implemented and tested.",
                "goalId": goal,
                "criterionIds": [self.criteria(goal)[0]],
                "deliverables": [{"path": DELIVERABLE}],
                "verification": {"verdict": "passed", "by": "qa-executor", "checks": []}
            })
            .to_string(),
        );
        for (n, c) in self.criteria(goal).iter().enumerate() {
            let mut a = vec![
                "record-evidence",
                "--goal-id",
                goal,
                "--criterion-id",
                c,
                "--status",
                "pass",
                "--evidence",
                "proof",
                "--accept-seeded",
                "fixture",
            ];
            if n == 0 {
                a.extend(["--evidence-file", path.as_str()]);
            }
            self.ulw(&a);
        }
    }

    fn path(&self, rel: &str) -> std::path::PathBuf {
        self.repo.join(rel)
    }

    fn verify(&self, args: &[&str]) -> Run {
        let mut all = vec!["--format", "json"];
        all.extend_from_slice(args);
        self.run("verify-evidence", &all)
    }
}

/// The base: a session run recorded through the tool (G001-a proven with a
/// payload naming `src/feature.rs`), committed. Returns the base commit.
fn honest_base() -> (History, String) {
    let h = History::new();
    h.repo
        .write(DELIVERABLE, "pub fn feature() -> u32 { 42 }\n");
    h.ulw(&["create-goals", "--brief", "- a\n- b"]);
    h.ulw(&["complete-goals"]);
    h.prove("G001-a", "g1");
    let base = h.commit("base: G001-a proven through the tool");
    (h, base)
}

/// Asserts exit 1 under `--base <base> --strict` with `code` among the findings.
fn fails_with(h: &History, base: &str, code: &str) -> Vec<(String, String, Option<String>, Value)> {
    let out = h.verify(&["--base", base, "--strict"]);
    let f = findings(&out);
    assert_eq!(out.code, 1, "{code}: {}\n{}", out.stdout, out.stderr);
    assert!(
        f.iter().any(|(c, s, _, _)| c == code && s == "error"),
        "expected {code} (error) in {f:?}"
    );
    f
}

fn session_file(name: &str) -> String {
    format!("{SESSION}/{name}")
}

fn ledger_lines(h: &History) -> Vec<String> {
    std::fs::read_to_string(h.path(&session_file("ledger.jsonl")))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn honest_work_recorded_through_the_tool_in_a_second_commit_passes() {
    let (h, base) = honest_base();
    assert_eq!(h.verify(&["--base", &base, "--strict"]).code, 0);
    h.ulw(&[
        "checkpoint",
        "--goal-id",
        "G001-a",
        "--status",
        "complete",
        "--evidence",
        "done",
        "--codex-goal-json",
        &json!({"goal": {"objective": h.plan()["codexObjective"], "status": "active"}}).to_string(),
    ]);
    h.prove("G002-b", "g2");
    h.commit("more work through the tool");
    let out = h.verify(&["--base", &base, "--strict"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(findings(&out).is_empty(), "{}", out.stdout);
    assert!(
        out.stderr
            .contains("comparing recorded history with the base")
    );
    // A symbolic base resolves too.
    h.git(&["tag", "reviewed", &base]);
    assert_eq!(h.verify(&["--base", "reviewed", "--strict"]).code, 0);
}

#[test]
fn an_honest_create_goals_force_archives_the_base_run_and_passes() {
    let (h, base) = honest_base();
    h.ulw(&["create-goals", "--brief", "- c", "--force"]);
    h.commit("a new run; the old one archived by the engine");
    let out = h.verify(&["--base", &base, "--strict"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
}

/// Two `--force` runs in one change: the live ledger names the second
/// archive, whose first record names the one that holds the base's bytes.
#[test]
fn two_honest_force_runs_in_one_change_follow_the_archive_links_and_pass() {
    let (h, base) = honest_base();
    h.ulw(&["create-goals", "--brief", "- c", "--force"]);
    h.ulw(&["create-goals", "--brief", "- d", "--force"]);
    h.commit("two new runs");
    let out = h.verify(&["--base", &base, "--strict"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
}

/// An archived run that CI has seen may not go away, and a forged archive
/// link that holds other bytes does not excuse a replaced ledger.
#[test]
fn an_archived_run_at_the_base_may_not_vanish_and_a_forged_link_excuses_nothing() {
    let (h, _) = honest_base();
    h.ulw(&["create-goals", "--brief", "- c", "--force"]);
    let base = h.commit("a new run; the old one archived");
    let archive = std::fs::read_dir(h.path(&session_file(".archive")))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let stamp = archive.file_name().unwrap().to_str().unwrap().to_owned();
    // The live ledger replaced by one whose plan_created names the archive,
    // with a previousHead that does not match and bytes that do not extend.
    let lines = ledger_lines(&h);
    let mut first: Map<String, Value> = serde_json::from_str(&lines[0]).unwrap();
    first.shift_remove("seq");
    first.shift_remove("prev");
    first["replaced"]["previousHead"] = json!("0".repeat(64));
    let (bytes, _) = evidence_gate::internals::chain_records(0, None, &[first]);
    std::fs::write(h.path(&session_file("ledger.jsonl")), bytes).unwrap();
    std::fs::remove_dir_all(&archive).unwrap();
    h.commit("agent: drop the archive, forge the link");
    let f = fails_with(&h, &base, "STATE_VANISHED");
    assert!(
        f.iter().any(|(c, _, p, _)| c == "STATE_VANISHED"
            && p.as_deref() == Some(format!("{SESSION}/.archive/{stamp}/ledger.jsonl").as_str())),
        "{f:?}"
    );
    assert!(
        f.iter().any(|(c, _, p, _)| c == "LEDGER_REWRITTEN"
            && p.as_deref() == Some(session_file("ledger.jsonl").as_str())),
        "{f:?}"
    );
}

#[test]
fn a_ledger_cut_to_a_prefix_is_rewritten() {
    let (h, base) = honest_base();
    let lines = ledger_lines(&h);
    let cut = lines[..lines.len() - 2].join("\n") + "\n";
    std::fs::write(h.path(&session_file("ledger.jsonl")), cut).unwrap();
    let _ = std::fs::remove_file(h.path(&session_file(".ledger.idx")));
    h.commit("agent: ledger cut");
    let f = fails_with(&h, &base, "LEDGER_REWRITTEN");
    assert!(f.iter().any(|(c, _, p, _)| c == "LEDGER_REWRITTEN"
        && p.as_deref() == Some(session_file("ledger.jsonl").as_str())));
}

/// Nothing links to the last record, so an in-place edit keeps the chain;
/// with the engine's index deleted only the base can tell.
#[test]
fn the_last_record_edited_in_place_without_its_index_is_rewritten() {
    let (h, base) = honest_base();
    let mut lines = ledger_lines(&h);
    let last = lines.pop().unwrap();
    let mut e: Map<String, Value> = serde_json::from_str(&last).unwrap();
    e.insert("evidence".into(), json!("edited in place"));
    lines.push(serde_json::to_string(&e).unwrap());
    std::fs::write(
        h.path(&session_file("ledger.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
    std::fs::remove_file(h.path(&session_file(".ledger.idx"))).unwrap();
    h.commit("agent: edit the last record");
    fails_with(&h, &base, "LEDGER_REWRITTEN");
}

#[test]
fn a_ledger_re_chained_after_stubbing_a_deliverable_is_rewritten() {
    let (h, base) = honest_base();
    h.repo
        .write(DELIVERABLE, "pub fn feature() -> u32 { todo!() }\n");
    let stub = std::fs::read(h.path(DELIVERABLE)).unwrap();
    let sha = evidence_gate::internals::sha256_hex(&stub);
    let entries: Vec<Map<String, Value>> = ledger_lines(&h)
        .iter()
        .map(|l| {
            let mut e: Map<String, Value> = serde_json::from_str(l).unwrap();
            e.shift_remove("seq");
            e.shift_remove("prev");
            if let Some(Value::Array(files)) = e.get_mut("files") {
                for f in files {
                    if f["path"] == DELIVERABLE {
                        f["sha256"] = json!(sha);
                        f["size"] = json!(stub.len());
                    }
                }
            }
            e
        })
        .collect();
    let (bytes, _) = evidence_gate::internals::chain_records(0, None, &entries);
    std::fs::write(h.path(&session_file("ledger.jsonl")), bytes).unwrap();
    let _ = std::fs::remove_file(h.path(&session_file(".ledger.idx")));
    h.commit("agent: stub and re-chain");
    // Without the base the re-chained ledger is self-consistent.
    let plain = h.verify(&["--strict"]);
    assert!(
        !findings(&plain)
            .iter()
            .any(|(c, _, _, _)| c == "LEDGER_DIGEST_MISMATCH"),
        "{}",
        plain.stdout
    );
    fails_with(&h, &base, "LEDGER_REWRITTEN");
}

#[test]
fn a_session_renamed_to_a_dot_name_vanished_and_is_hidden() {
    let (h, base) = honest_base();
    std::fs::rename(h.path(SESSION), h.path(".omo/ulw-loop/.s1")).unwrap();
    h.commit("agent: hide the session");
    let f = fails_with(&h, &base, "STATE_VANISHED");
    assert!(
        f.iter().any(|(c, s, p, _)| c == "STATE_HIDDEN"
            && s == "error"
            && p.as_deref() == Some(".omo/ulw-loop/.s1")),
        "{f:?}"
    );
}

#[test]
fn deleted_state_with_a_decoy_payload_vanished() {
    let (h, base) = honest_base();
    std::fs::remove_dir_all(h.path(".omo/ulw-loop")).unwrap();
    h.repo.write(
        ".omo/evidence/decoy.evidence.json",
        json!({
            "evidence": 1,
            "summary": "Feature implemented and tested.",
            "deliverables": [{"path": DELIVERABLE}],
            "verification": {"verdict": "passed", "by": "qa-executor", "checks": []}
        })
        .to_string(),
    );
    h.commit("agent: state deleted, decoy left");
    // The decoy alone passes the audit without a base.
    let plain = h.verify(&["--strict"]);
    assert_eq!(plain.code, 0, "{}", plain.stdout);
    let f = fails_with(&h, &base, "STATE_VANISHED");
    for file in ["goals.json", "ledger.jsonl"] {
        assert!(
            f.iter().any(|(c, _, p, _)| c == "STATE_VANISHED"
                && p.as_deref() == Some(session_file(file).as_str())),
            "{file}: {f:?}"
        );
    }
}

#[test]
fn create_goals_force_over_a_reverted_deliverable_changed_archived_evidence() {
    let (h, base) = honest_base();
    h.repo.write(DELIVERABLE, "pub fn feature() -> u32 { 0 }\n");
    h.ulw(&["create-goals", "--brief", "- c", "--force"]);
    h.commit("agent: revert, then start over");
    // Without the base the archived run is not re-hashed.
    assert_eq!(h.verify(&["--strict"]).code, 0);
    let f = fails_with(&h, &base, "ARCHIVED_EVIDENCE_CHANGED");
    assert!(
        f.iter().any(|(c, _, p, d)| c == "ARCHIVED_EVIDENCE_CHANGED"
            && p.as_deref() == Some(DELIVERABLE)
            && d["cause"] == "LEDGER_DIGEST_MISMATCH"),
        "{f:?}"
    );
    // A warning without --strict.
    let out = h.verify(&["--base", &base]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        findings(&out)
            .iter()
            .any(|(c, s, _, _)| c == "ARCHIVED_EVIDENCE_CHANGED" && s == "warning")
    );
}

/// The new run proving the reverted file does not make the old run's proof hold.
#[test]
fn a_new_run_recording_the_reverted_deliverable_does_not_excuse_the_archived_run() {
    let (h, base) = honest_base();
    h.repo.write(DELIVERABLE, "pub fn feature() -> u32 { 0 }\n");
    h.ulw(&["create-goals", "--brief", "- c", "--force"]);
    h.ulw(&["complete-goals"]);
    h.prove("G001-c", "g3");
    h.commit("agent: revert, start over, prove the revert");
    fails_with(&h, &base, "ARCHIVED_EVIDENCE_CHANGED");
}

#[test]
fn a_rules_file_that_moves_the_state_directory_is_a_rules_change() {
    let (h, base) = honest_base();
    h.repo.write(DELIVERABLE, "pub fn feature() -> u32 { 0 }\n");
    h.repo.write(
        ".evidence-gate/rules.json",
        r#"{"profiles":{"ulw-loop":{"stateDir":".work/loop"}}}"#,
    );
    h.commit("agent: move the state directory");
    fails_with(&h, &base, "RULES_CHANGED");
    let out = h.verify(&["--base", &base]);
    assert!(
        findings(&out)
            .iter()
            .any(|(c, s, p, _)| c == "RULES_CHANGED"
                && s == "warning"
                && p.as_deref() == Some(".evidence-gate/rules.json"))
    );
}

#[test]
fn changed_hook_wiring_is_a_wiring_change() {
    let (h, _) = honest_base();
    h.repo.write(
        ".claude/settings.json",
        r#"{"hooks":{"SubagentStop":[{"hooks":[{"type":"command","command":"evidence-gate hook subagent-stop --host claude-code"}]}]}}"#,
    );
    let base = h.commit("wiring");
    assert_eq!(h.verify(&["--base", &base, "--strict"]).code, 0);
    h.repo.write(".claude/settings.json", r#"{"hooks":{}}"#);
    h.commit("agent: unwire the hook");
    fails_with(&h, &base, "WIRING_CHANGED");
    // Removing the file is a change too.
    std::fs::remove_file(h.path(".claude/settings.json")).unwrap();
    h.commit("agent: remove the wiring");
    fails_with(&h, &base, "WIRING_CHANGED");
}

#[test]
fn a_gate_ledger_cut_at_head_is_rewritten() {
    let (h, _) = honest_base();
    let records: Vec<Map<String, Value>> = (0..3)
        .map(|i| {
            serde_json::from_value(json!({"kind": "receipt_rejected", "ts": format!("2026-01-02T03:04:0{i}.000Z"), "agent_type": "worker"}))
                .unwrap()
        })
        .collect();
    let (bytes, _) = evidence_gate::internals::chain_records(0, None, &records);
    h.repo.write(".omo/evidence-gate/ledger.jsonl", &bytes);
    let base = h.commit("gate ledger");
    let text = String::from_utf8(bytes).unwrap();
    let first = text.lines().next().unwrap().to_owned() + "\n";
    h.repo.write(".omo/evidence-gate/ledger.jsonl", first);
    h.commit("agent: cut the gate ledger");
    let f = fails_with(&h, &base, "LEDGER_REWRITTEN");
    assert!(f.iter().any(|(c, _, p, _)| c == "LEDGER_REWRITTEN"
        && p.as_deref() == Some(".omo/evidence-gate/ledger.jsonl")));
}

#[test]
fn an_unresolvable_base_could_not_be_verified() {
    let (h, _) = honest_base();
    let out = h.verify(&["--base", "no-such-ref"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr.contains("--base no-such-ref: no such commit") && out.stderr.contains("fetch"),
        "{}",
        out.stderr
    );
    let out = h.verify(&["--base", "--strict"]);
    assert_eq!(out.code, 2);
    // Outside a git repository.
    let plain = Repo::new();
    let out = crate::common::run_in(
        plain.path(),
        "verify-evidence",
        &["--base", "HEAD", "--allow-empty"],
        None,
        &[
            (
                "GIT_CEILING_DIRECTORIES",
                plain.path().parent().unwrap().to_str().unwrap(),
            ),
            ("HOME", h.home.path().to_str().unwrap()),
            ("GIT_CONFIG_NOSYSTEM", "1"),
        ],
    );
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr.contains("not inside a git repository"),
        "{}",
        out.stderr
    );
    // Payload mode has no base.
    let out = h.run("verify-evidence", &["evidence/g1.json", "--base", "HEAD"]);
    assert_eq!(out.code, 2);
}

#[test]
fn a_root_below_the_repository_top_compares_its_own_subtree() {
    let h = History::new();
    let sub = h.path("app");
    std::fs::create_dir_all(&sub).unwrap();
    let records: Vec<Map<String, Value>> = vec![
        serde_json::from_value(
            json!({"kind": "receipt_rejected", "ts": "2026-01-02T03:04:00.000Z"})
        )
        .unwrap();
        2
    ];
    let (bytes, _) = evidence_gate::internals::chain_records(0, None, &records);
    h.repo.write("app/.omo/evidence-gate/ledger.jsonl", &bytes);
    let base = h.commit("base");
    let root = sub.to_str().unwrap();
    let ok = h.verify(&["--root", root, "--base", &base, "--strict"]);
    assert_eq!(ok.code, 0, "{}\n{}", ok.stdout, ok.stderr);
    h.repo.write(
        "app/.omo/evidence-gate/ledger.jsonl",
        &bytes[..bytes.len() / 2],
    );
    h.commit("cut");
    let out = h.verify(&["--root", root, "--base", &base, "--strict"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.codes().contains(&"LEDGER_REWRITTEN".to_owned()));
    let _ = Path::new(root);
}

#[test]
fn sarif_junit_and_github_output_carry_the_base_codes() {
    let (h, base) = honest_base();
    std::fs::rename(h.path(SESSION), h.path(".omo/ulw-loop/.s1")).unwrap();
    h.repo.write(".evidence-gate/rules.json", r#"{}"#);
    h.commit("agent: hide the session, add rules");
    for format in ["sarif", "junit", "github", "text"] {
        let out = h.run(
            "verify-evidence",
            &["--format", format, "--base", &base, "--strict"],
        );
        assert_eq!(out.code, 1, "{format}: {}", out.stdout);
        for code in ["STATE_VANISHED", "STATE_HIDDEN", "RULES_CHANGED"] {
            assert!(
                out.stdout.contains(code),
                "{format} lacks {code}: {}",
                out.stdout
            );
        }
    }
    let sarif: Value = serde_json::from_str(
        &h.run("verify-evidence", &["--format", "sarif", "--base", &base])
            .stdout,
    )
    .unwrap();
    let rules = sarif["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    for code in [
        "LEDGER_REWRITTEN",
        "STATE_VANISHED",
        "STATE_HIDDEN",
        "ARCHIVED_EVIDENCE_CHANGED",
        "RULES_CHANGED",
        "WIRING_CHANGED",
    ] {
        assert!(rules.iter().any(|r| r["id"] == code), "SARIF rule {code}");
    }
}

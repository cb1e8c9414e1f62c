//! The plan bound to its ledger (threat-model.md I7): every entry records
//! `planSha256`, the plan records `lastMutation.ledgerHead`. Each attack
//! below passed `status`, `repair --check` and `verify-evidence --strict`
//! before the binding; next to each, the honest use that must keep passing.
//! Every process runs with HOME and the XDG directories in a temporary
//! directory.

use serde_json::{Value, json};

use crate::ci_audit_engine::finished_run;
use crate::common::{Run, copy_tree};
use crate::goals_support::*;
use crate::hooks_support::{HookRepo, ULW, block_reason, tampered_reason};

/// A temporary HOME / XDG_STATE_HOME / XDG_CONFIG_HOME.
struct Home(tempfile::TempDir);

impl Home {
    fn new() -> Home {
        Home(tempfile::tempdir().unwrap())
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        let p = self.0.path();
        let mut env: Vec<(&'static str, String)> = clean_env()
            .into_iter()
            .map(|(k, v)| (k, v.to_owned()))
            .collect();
        env.push(("HOME", p.to_str().unwrap().to_owned()));
        env.push((
            "XDG_STATE_HOME",
            p.join("state").to_str().unwrap().to_owned(),
        ));
        env.push((
            "XDG_CONFIG_HOME",
            p.join("config").to_str().unwrap().to_owned(),
        ));
        env
    }

    fn run(&self, repo: &Repo, bin: &str, args: &[&str]) -> Run {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        repo.run_env(bin, args, None, &env)
    }

    fn ulw(&self, repo: &Repo, args: &[&str]) -> Run {
        let mut all = vec!["ulw-loop"];
        all.extend_from_slice(args);
        all.push("--json");
        self.run(repo, "evidence-gate", &all)
    }

    fn verify(&self, repo: &Repo, extra: &[&str]) -> Run {
        let mut args = vec!["--format", "json"];
        args.extend_from_slice(extra);
        self.run(repo, "verify-evidence", &args)
    }
}

fn codes_of(findings: &Value) -> Vec<String> {
    findings
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_owned())
        .collect()
}

/// `status`, `repair --check` and `verify-evidence --strict` all name
/// `code` (and verify exits 1).
fn all_report(home: &Home, repo: &Repo, code: &str) {
    let s = home.ulw(repo, &["status"]);
    assert_eq!(
        s.code, 1,
        "status of a tampered plan is not ok: {}",
        s.stdout
    );
    let v = s.json();
    assert_eq!(v["ok"], false);
    let b = &v["ledger"]["binding"];
    assert_eq!(b["state"], "tampered", "{b}");
    assert!(
        b["codes"].as_array().unwrap().iter().any(|c| c == code),
        "status: {b}"
    );
    assert!(
        v["nextActions"][0]["command"]
            .as_str()
            .unwrap()
            .contains("repair --accept-tampered"),
        "{v}"
    );
    let c = home.ulw(repo, &["repair", "--check"]);
    assert_eq!(c.code, 1, "{}", c.stdout);
    assert!(
        codes_of(&c.json()["findings"]).contains(&code.to_owned()),
        "repair --check: {}",
        c.stdout
    );
    let out = home.verify(repo, &["--strict"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.codes().contains(&code.to_owned()),
        "verify-evidence --strict: {:?}",
        out.codes()
    );
}

fn write_plan_value(repo: &Repo, p: &Value) {
    let mut text = serde_json::to_string_pretty(p).unwrap();
    text.push('\n');
    std::fs::write(state(repo, "goals.json"), text).unwrap();
}

fn ledger_len(repo: &Repo) -> usize {
    std::fs::read(state(repo, "ledger.jsonl")).unwrap().len()
}

/// A two-goal run whose hard goal G001-a is in progress (not proven).
fn run_in_progress(home: &Home) -> Repo {
    let repo = Repo::new();
    let ok = |r: Run| assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    ok(home.ulw(&repo, &["create-goals", "--brief", "- a\n- b"]));
    ok(home.ulw(&repo, &["complete-goals"]));
    repo
}

/// Tries to finish the run with a real final gate for G002-b (which the
/// tampered plan shows in progress): every mutation on the way is refused
/// with `code`, nothing reaches the ledger.
fn try_to_finish(home: &Home, repo: &Repo, code: &str) {
    let before = ledger_len(repo);
    let p = plan(repo);
    let g2 = p["goals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "G002-b")
        .unwrap()
        .clone();
    for c in g2["successCriteria"].as_array().unwrap() {
        let r = home.ulw(
            repo,
            &[
                "record-evidence",
                "--goal-id",
                "G002-b",
                "--criterion-id",
                c["id"].as_str().unwrap(),
                "--status",
                "pass",
                "--evidence",
                "proof",
                "--accept-seeded",
                "fixture",
            ],
        );
        let e = expect_error(&r, code);
        assert_eq!(e["details"]["goalsPath"], ".omo/ulw-loop/goals.json");
        assert!(
            e["details"]["remedy"]
                .as_str()
                .unwrap()
                .contains("repair --accept-tampered --rationale"),
            "{e}"
        );
    }
    let gate = filled_gate(repo, "ulw-loop", "G002-b", &[]);
    let done =
        json!({"goal": {"objective": p["codexObjective"], "status": "complete"}}).to_string();
    let r = home.ulw(
        repo,
        &[
            "checkpoint",
            "--goal-id",
            "G002-b",
            "--status",
            "complete",
            "--evidence",
            "all proven",
            "--codex-goal-json",
            &done,
            "--quality-gate-json",
            &gate,
        ],
    );
    let e = expect_error(&r, code);
    assert!(
        e["message"].as_str().unwrap().contains("_TAMPERED: "),
        "{e}"
    );
    assert_eq!(ledger_len(repo), before, "nothing was appended");
}

/// Attack (a): flip the hard goal to `complete` by hand, then finish.
#[test]
fn attack_a_a_goal_flipped_to_complete_by_hand_is_plan_tampered() {
    let home = Home::new();
    let repo = run_in_progress(&home);
    let mut p = plan(&repo);
    for g in p["goals"].as_array_mut().unwrap() {
        if g["id"] == "G001-a" {
            g["status"] = json!("complete");
            for c in g["successCriteria"].as_array_mut().unwrap() {
                c["status"] = json!("pass");
            }
        } else {
            g["status"] = json!("in_progress");
            g["attempt"] = json!(1);
        }
    }
    p["activeGoalId"] = json!("G002-b");
    write_plan_value(&repo, &p);
    try_to_finish(&home, &repo, "ULW_LOOP_PLAN_TAMPERED");
    all_report(&home, &repo, "PLAN_TAMPERED");
}

/// Attack (b): delete the hard goal from goals.json by hand, then finish.
#[test]
fn attack_b_the_hard_goal_deleted_by_hand_is_plan_tampered() {
    let home = Home::new();
    let repo = run_in_progress(&home);
    let mut p = plan(&repo);
    p["goals"]
        .as_array_mut()
        .unwrap()
        .retain(|g| g["id"] != "G001-a");
    p["goals"][0]["status"] = json!("in_progress");
    p["goals"][0]["attempt"] = json!(1);
    p["activeGoalId"] = json!("G002-b");
    write_plan_value(&repo, &p);
    try_to_finish(&home, &repo, "ULW_LOOP_PLAN_TAMPERED");
    all_report(&home, &repo, "PLAN_TAMPERED");
}

/// Attack (c): cut the ledger to a valid prefix before `goal_failed` and
/// patch the plan's revision to the prefix's.
#[test]
fn attack_c_a_ledger_cut_before_goal_failed_with_a_patched_revision() {
    let home = Home::new();
    let repo = run_in_progress(&home);
    expect_ok(&home.ulw(
        &repo,
        &[
            "checkpoint",
            "--goal-id",
            "G001-a",
            "--status",
            "failed",
            "--evidence",
            "tests red",
        ],
    ));
    let text = std::fs::read_to_string(state(&repo, "ledger.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let failed = lines
        .iter()
        .position(|l| l.contains("\"kind\":\"goal_failed\""))
        .expect("a goal_failed entry");
    let prefix = lines[..failed].join("\n") + "\n";
    std::fs::write(state(&repo, "ledger.jsonl"), &prefix).unwrap();
    let _ = std::fs::remove_file(state(&repo, ".ledger.idx"));
    let last: Value = serde_json::from_str(lines[failed - 1]).unwrap();
    let mut p = plan(&repo);
    p["revision"] = last["revision"].clone();
    write_plan_value(&repo, &p);
    // The chain itself still verifies: only the binding sees the cut.
    let c = home.ulw(&repo, &["repair", "--check"]);
    let codes = codes_of(&c.json()["findings"]);
    assert!(
        !codes.contains(&"LEDGER_CHAIN_BROKEN".to_owned()),
        "{codes:?}"
    );
    assert!(codes.contains(&"LEDGER_TAMPERED".to_owned()), "{codes:?}");
    all_report(&home, &repo, "PLAN_TAMPERED");
    all_report(&home, &repo, "LEDGER_TAMPERED");
    expect_error(
        &home.ulw(&repo, &["complete-goals", "--retry-failed"]),
        "ULW_LOOP_PLAN_TAMPERED",
    );
}

/// Attack (d): edit the last ledger record in place and delete the index
/// that would have caught it (`LEDGER_INDEX_MISMATCH`).
#[test]
fn attack_d_the_last_record_edited_in_place_without_its_index() {
    let home = Home::new();
    let repo = finished_run("ulw-loop", STATE);
    let path = state(&repo, "ledger.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let body = text.trim_end_matches('\n');
    let start = body.rfind('\n').map_or(0, |i| i + 1);
    let last = body[start..].replacen("\"at\":\"20", "\"at\":\"21", 1);
    assert_ne!(last, body[start..]);
    let edited = format!("{}{last}\n", &body[..start]);
    std::fs::write(&path, edited).unwrap();
    std::fs::remove_file(state(&repo, ".ledger.idx")).unwrap();
    let out = home.verify(&repo, &[]);
    assert!(
        !out.codes().contains(&"LEDGER_INDEX_MISMATCH".to_owned()),
        "the index is gone"
    );
    all_report(&home, &repo, "LEDGER_TAMPERED");
    // `repair` (recovery, index rebuild) does not adopt it silently.
    expect_error(&home.ulw(&repo, &["repair"]), "ULW_LOOP_LEDGER_TAMPERED");
    expect_error(
        &home.ulw(&repo, &["repair", "--rebuild-index"]),
        "ULW_LOOP_LEDGER_TAMPERED",
    );
}

/// Attack: strip the binding from the plan to make it look Node-written.
#[test]
fn a_plan_stripped_of_its_ledger_head_is_plan_tampered() {
    let home = Home::new();
    let repo = run_in_progress(&home);
    let mut p = plan(&repo);
    p.as_object_mut().unwrap().remove("lastMutation");
    p["goals"][0]["status"] = json!("complete");
    write_plan_value(&repo, &p);
    all_report(&home, &repo, "PLAN_TAMPERED");
}

/// Honest: a normal full run passes `--strict`, and every ledger entry the
/// engine wrote carries the digest of the plan body it wrote.
#[test]
fn honest_a_full_run_is_bound_and_passes_strict() {
    let home = Home::new();
    let repo = finished_run("ulw-loop", STATE);
    let out = home.verify(&repo, &["--strict"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(out.codes().is_empty(), "{:?}", out.codes());
    let s = expect_ok(&home.ulw(&repo, &["status"]));
    assert_eq!(s["ledger"]["binding"]["state"], "bound");
    let c = expect_ok(&home.ulw(&repo, &["repair", "--check"]));
    assert_eq!(c["findings"], json!([]));
    let p = plan(&repo);
    let head = &p["lastMutation"]["ledgerHead"];
    let l = ledger(&repo);
    let last = l.last().unwrap();
    assert_eq!(head["seq"], last["seq"]);
    let bytes = std::fs::read_to_string(state(&repo, "ledger.jsonl")).unwrap();
    let last_line = bytes.lines().last().unwrap();
    assert_eq!(
        head["sha256"],
        evidence_gate::internals::sha256_hex(last_line.as_bytes())
    );
    let mut body = p.clone();
    body.as_object_mut().unwrap().remove("lastMutation");
    let mut text = serde_json::to_string_pretty(&body).unwrap();
    text.push('\n');
    assert_eq!(
        last["planSha256"],
        evidence_gate::internals::sha256_hex(text.as_bytes()),
        "planSha256 is the digest of the plan body as written"
    );
    assert!(
        l.iter().all(|e| e["planSha256"].is_string()),
        "every entry is bound"
    );
}

/// Honest: annotations append without a plan write and stay bound; a crash
/// between the plan write and the append is recovered, not tampering.
#[test]
fn honest_annotations_and_a_recovered_crash_stay_bound() {
    let home = Home::new();
    let repo = run_in_progress(&home);
    expect_ok(&home.ulw(
        &repo,
        &[
            "steer",
            "--kind",
            "annotate_ledger",
            "--evidence",
            "a note for the audit",
            "--rationale",
            "context",
        ],
    ));
    let s = expect_ok(&home.ulw(&repo, &["status"]));
    assert_eq!(s["ledger"]["binding"]["state"], "bound", "{s}");
    // Crash after the plan write: drop the entries of the last mutation.
    expect_ok(&home.ulw(&repo, &["add-goal", "--title", "c", "--objective", "c"]));
    let path = state(&repo, "ledger.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.pop();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let _ = std::fs::remove_file(state(&repo, ".ledger.idx"));
    let s = expect_ok(&home.ulw(&repo, &["status"]));
    assert_eq!(s["ledger"]["binding"]["state"], "pending", "{s}");
    assert_eq!(s["ledger"]["consistency"], "recoverable");
    expect_ok(&home.ulw(&repo, &["repair"]));
    let s = expect_ok(&home.ulw(&repo, &["status"]));
    assert_eq!(s["ledger"]["binding"]["state"], "bound", "{s}");
    let out = home.verify(&repo, &["--strict"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
}

/// Honest: a Node-written plan and ledger (no binding) keep working, are
/// reported as legacy (never tampered), and the engine's next write binds them.
#[test]
fn honest_node_written_state_is_legacy_then_bound() {
    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/plans/node-legacy");
    let home = Home::new();
    let repo = Repo::new();
    copy_tree(std::path::Path::new(FIXTURE), repo.path());
    let s = expect_ok(&home.ulw(&repo, &["status"]));
    assert_eq!(s["ledger"]["binding"]["state"], "legacy");
    let c = home.ulw(&repo, &["repair", "--check"]);
    assert_eq!(c.code, 0, "{}", c.stdout);
    let codes = codes_of(&c.json()["findings"]);
    assert!(codes.contains(&"PLAN_NOT_BOUND".to_owned()), "{codes:?}");
    assert!(!codes.iter().any(|c| c.ends_with("_TAMPERED")), "{codes:?}");
    let out = home.verify(&repo, &[]);
    assert!(out.codes().contains(&"PLAN_NOT_BOUND".to_owned()));
    assert!(!out.codes().iter().any(|c| c.ends_with("_TAMPERED")));
    expect_ok(&home.ulw(&repo, &["complete-goals"]));
    let s = expect_ok(&home.ulw(&repo, &["status"]));
    assert_eq!(s["ledger"]["binding"]["state"], "bound", "{s}");
    let out = home.verify(&repo, &[]);
    assert!(!out.codes().contains(&"PLAN_NOT_BOUND".to_owned()));
    assert!(!out.codes().iter().any(|c| c.ends_with("_TAMPERED")));
}

/// `repair --accept-tampered` adopts the plan on the record: the engine
/// continues, and the audit reports the acknowledgement (warning; error with
/// `--strict`). `--accept-plan` never adopts a tampered plan.
#[test]
fn accept_tampered_lets_the_engine_continue_and_the_audit_reports_it() {
    let home = Home::new();
    let repo = run_in_progress(&home);
    let mut p = plan(&repo);
    p["goals"][1]["title"] = json!("b, reworded by the user in an editor");
    write_plan_value(&repo, &p);
    expect_error(
        &home.ulw(
            &repo,
            &["repair", "--accept-plan", "--rationale", "not this way"],
        ),
        "ULW_LOOP_PLAN_TAMPERED",
    );
    expect_error(
        &home.ulw(&repo, &["repair", "--accept-tampered"]),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    let v = expect_ok(&home.ulw(
        &repo,
        &[
            "repair",
            "--accept-tampered",
            "--rationale",
            "the user reworded goal b by hand",
        ],
    ));
    assert_eq!(v["actions"][0]["kind"], "tamper_acknowledged", "{v}");
    let l = ledger(&repo);
    let ack = l.last().unwrap();
    assert_eq!(ack["kind"], "tamper_acknowledged");
    assert_eq!(ack["rationale"], "the user reworded goal b by hand");
    assert_eq!(ack["tamper"]["codes"], json!(["PLAN_TAMPERED"]));
    let recorded = ack["tamper"]["planSha256"]["recorded"].as_str().unwrap();
    let actual = ack["tamper"]["planSha256"]["actual"].as_str().unwrap();
    assert_ne!(recorded, actual, "old and new digests");
    assert!(ack["seq"].is_u64() && ack["prev"].is_string(), "chained");
    // The engine continues.
    expect_ok(&home.ulw(&repo, &["add-goal", "--title", "c", "--objective", "c"]));
    let s = expect_ok(&home.ulw(&repo, &["status"]));
    assert_eq!(s["ledger"]["binding"]["state"], "bound");
    // A second acceptance has nothing to accept.
    let before = ledger(&repo).len();
    expect_ok(&home.ulw(
        &repo,
        &["repair", "--accept-tampered", "--rationale", "again"],
    ));
    assert_eq!(ledger(&repo).len(), before);
    // The audit reports the acknowledgement.
    let out = home.verify(&repo, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.codes(), ["TAMPER_ACKNOWLEDGED"]);
    let f = crate::ci_support::findings(&out);
    assert_eq!(f[0].1, "warning");
    let out = home.verify(&repo, &["--strict"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(crate::ci_support::findings(&out)[0].1, "error");
    let text = home.run(&repo, "verify-evidence", &["--strict"]);
    assert!(
        text.stdout.contains("TAMPER_ACKNOWLEDGED"),
        "{}",
        text.stdout
    );
}

/// A revision edited by hand on bound state is tampering, not a mismatch
/// `--accept-plan` could settle (that path is for unbound state).
#[test]
fn a_revision_edited_by_hand_is_plan_tampered_with_file_and_fix() {
    let home = Home::new();
    let repo = repo_with_plan("- a");
    let mut p = plan(&repo);
    p["revision"] = json!(7);
    write_plan_value(&repo, &p);
    let r = home.ulw(&repo, &["add-goal", "--title", "b", "--objective", "b"]);
    let e = expect_error(&r, "ULW_LOOP_PLAN_TAMPERED");
    assert_eq!(e["details"]["finding"], "PLAN_TAMPERED");
    assert_eq!(e["details"]["goalsPath"], ".omo/ulw-loop/goals.json");
    assert_eq!(e["details"]["ledgerPath"], ".omo/ulw-loop/ledger.jsonl");
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.starts_with("PLAN_TAMPERED: .omo/ulw-loop/goals.json:"),
        "{msg}"
    );
    assert!(
        msg.contains("repair --accept-tampered --rationale"),
        "{msg}"
    );
    let text = home.run(
        &repo,
        "evidence-gate",
        &["ulw-loop", "add-goal", "--title", "b", "--objective", "b"],
    );
    assert_eq!(text.code, 1);
    assert!(text.stderr.contains("PLAN_TAMPERED"), "{}", text.stderr);
}

/// The Stop hook never trusts a tampered plan as complete: it blocks with
/// the code and the fix. An honest engine plan resumes as before.
#[test]
fn the_stop_hook_fails_closed_on_a_plan_flipped_to_complete() {
    let sid = "s1";
    let h = started_hooks(sid);
    let stop = |h: &HookRepo| {
        h.hook(
            "stop",
            &["--host", "codex"],
            &h.codex_stop(sid),
            &clean_env(),
        )
    };
    // Honest: an in-progress engine plan resumes.
    let reason = block_reason(&stop(&h));
    assert!(!reason.contains("TAMPERED"), "{reason}");
    // Attack: everything flipped to complete, with a completion record.
    h.flip_plan_to_complete(&format!("{ULW}/{sid}/goals.json"), |_| {});
    let reason = tampered_reason(&stop(&h));
    assert!(reason.contains("PLAN_TAMPERED"), "{reason}");
    assert!(
        reason.contains(&format!("{ULW}/{sid}/goals.json")),
        "{reason}"
    );
    assert!(
        reason.contains("repair --session-id s1 --accept-tampered"),
        "{reason}"
    );
    // Held while the plan stays as it is, up to the resume budget; then let
    // through so the session is not wedged, with the fault named to the
    // user, never as a goal whose progress stalled.
    let mut held = 1;
    let last = loop {
        let run = stop(&h);
        let v: Value = serde_json::from_str(&run.stdout).unwrap();
        if v["decision"] != "block" {
            break v;
        }
        tampered_reason(&run);
        held += 1;
        assert!(held <= 10, "never let through");
    };
    let message = last["systemMessage"].as_str().unwrap();
    assert!(
        message.contains("PLAN_TAMPERED") && message.contains("the fault remains"),
        "{message}"
    );
    assert!(!message.contains("paused for goal"), "{message}");
}

/// The spawn guard decides nothing on a tampered plan: a spawn is denied
/// with the code and the fix; on the honest engine plan it is allowed.
#[test]
fn the_spawn_guard_denies_on_a_tampered_plan() {
    const SPAWN_SID: &str = "019a0000-0000-7000-8000-00000000a001";
    let h = HookRepo::new();
    let create = eg(
        &h.repo,
        "ulw-loop",
        &[
            "create-goals",
            "--session-id",
            SPAWN_SID,
            "--brief",
            "- a\n- b",
            "--json",
        ],
    );
    assert_eq!(create.code, 0, "{}", create.stdout);
    let payload =
        crate::hooks_support::fixture("codex/pre-tool-use-spawn/synth-spawn-agent.json", h.path());
    let spawn = |h: &HookRepo| {
        h.hook(
            "pre-tool-use-spawn",
            &["--host", "codex"],
            &payload,
            &clean_env(),
        )
    };
    crate::hooks_support::assert_allow(&spawn(&h));
    let path = format!("{ULW}/{SPAWN_SID}/goals.json");
    let mut p: Value = h.read_json(&path).unwrap();
    p["goals"].as_array_mut().unwrap().remove(0);
    let mut text = serde_json::to_string_pretty(&p).unwrap();
    text.push('\n');
    h.write(&path, text);
    let reason = crate::hooks_support::deny_reason(&spawn(&h));
    assert!(reason.contains("PLAN_TAMPERED"), "{reason}");
    assert!(reason.contains("--accept-tampered"), "{reason}");
}

/// `create-goals --force` archives a tampered run instead of adopting it,
/// and the new run's `plan_created.replaced` says what it archived.
#[test]
fn force_archives_a_tampered_run_and_records_its_binding() {
    let home = Home::new();
    let repo = run_in_progress(&home);
    let mut p = plan(&repo);
    p["goals"][0]["status"] = json!("complete");
    write_plan_value(&repo, &p);
    expect_ok(&home.ulw(&repo, &["create-goals", "--force", "--brief", "- c"]));
    let first = ledger(&repo).remove(0);
    assert_eq!(first["kind"], "plan_created");
    assert_eq!(
        first["replaced"]["previousBinding"],
        json!({"state": "tampered", "codes": ["PLAN_TAMPERED"]})
    );
    let s = expect_ok(&home.ulw(&repo, &["status"]));
    assert_eq!(s["ledger"]["binding"]["state"], "bound");
}

/// Attack: the agent writes a "crash" into the plan: everything complete,
/// the revision bumped, and a `lastMutation` whose entries (carrying the new
/// body's digest) the ledger lacks, as if the engine had been killed between
/// its plan write and its append. Such entries, chained onto the ledger's
/// last record, must make the head the plan names; these do not, so the
/// plan is `LEDGER_TAMPERED` for `status`, `repair` (which does not append
/// them) and the Stop hook, never a recovery to complete. The honest crash
/// next to it is `honest_annotations_and_a_recovered_crash_stay_bound`.
#[test]
fn attack_a_crash_written_into_the_plan_is_not_recovered() {
    let home = Home::new();
    let repo = run_in_progress(&home);
    let mut p = plan(&repo);
    flip_to_complete(&mut p);
    forge_pending_completion(&mut p);
    write_plan_value(&repo, &p);
    let before = ledger_len(&repo);
    all_report(&home, &repo, "LEDGER_TAMPERED");
    expect_error(&home.ulw(&repo, &["repair"]), "ULW_LOOP_LEDGER_TAMPERED");
    assert_eq!(ledger_len(&repo), before, "nothing was appended");
}

/// The Stop hook does not end a run on a crash written into the plan: the
/// plan flipped to complete with a `lastMutation` the ledger lacks, whose
/// entries carry the new body's digest, blocks as `LEDGER_TAMPERED`.
#[test]
fn the_stop_hook_does_not_trust_a_crash_written_into_the_plan() {
    let h = started_hooks("s1");
    h.flip_plan_to_complete(&format!("{ULW}/s1/goals.json"), forge_pending_completion);
    let run = h.hook(
        "stop",
        &["--host", "codex"],
        &h.codex_stop("s1"),
        &clean_env(),
    );
    let reason = tampered_reason(&run);
    assert!(reason.contains("LEDGER_TAMPERED"), "{reason}");
}

/// A hook repository with a two-goal run of session `sid` started.
fn started_hooks(sid: &str) -> HookRepo {
    let h = HookRepo::new();
    for args in [
        &[
            "create-goals",
            "--session-id",
            sid,
            "--brief",
            "- a\n- b",
            "--json",
        ][..],
        &["complete-goals", "--session-id", sid, "--json"][..],
    ] {
        let r = eg(&h.repo, "ulw-loop", args);
        assert_eq!(r.code, 0, "{}", r.stdout);
    }
    h
}

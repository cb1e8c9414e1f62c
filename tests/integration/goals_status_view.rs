//! `status` from the cut-down plan body (docs/state-formats.md#status-view):
//! each engine mutation writes `.goals.status` next to the plan, its digest
//! recorded in the view the ledger vouches for; `status` answers from it,
//! hashing and printing `goals.json` without decoding it, and reads the plan
//! whole on any doubt. Every attack sits next to the honest run whose
//! answers must not change. Every process runs with HOME and the XDG
//! directories in temporary directories.

use serde_json::Value;

use evidence_gate::goals::ops::status::{self, PlanRead};
use evidence_gate::goals::{Engine, EngineOptions};

use crate::ci_audit_engine::drive_run;
use crate::goals_support::*;

const SIDECAR: &str = ".goals.status";
const VIEW: &str = ".goals.summary";

/// How the library's `status` read the plan of `repo`, without and with an
/// active host-goal snapshot to reconcile (both read it the same way).
fn plan_read(repo: &Repo) -> PlanRead {
    let rules = evidence_gate::rules::RuleSet::embedded().unwrap();
    let root =
        cap_std::fs::Dir::open_ambient_dir(repo.path(), cap_std::ambient_authority()).unwrap();
    let engine = Engine::new(root, &rules, EngineOptions::new("ulw-loop")).unwrap();
    let text = active(repo);
    let snapshot = evidence_gate::goals::Loaded {
        value: serde_json::from_str(&text).unwrap(),
        text,
        file: None,
    };
    let without = status::run(&engine, None).unwrap().plan_read;
    let with = status::run(&engine, Some(&snapshot)).unwrap().plan_read;
    assert_eq!(without, with, "a host-goal snapshot reads the plan alike");
    without
}

/// `status` text and `status --json`, and `status --json` reconciling an
/// active and a complete host-goal snapshot and one of another objective
/// (exit codes included).
fn answers(repo: &Repo) -> Vec<(i32, String)> {
    let other = serde_json::json!({"goal": {"objective": "another", "status": "active"}});
    let snapshots = [active(repo), complete(repo), other.to_string()];
    let mut runs: Vec<Vec<&str>> = vec![vec!["status"], vec!["status", "--json"]];
    for s in &snapshots {
        runs.push(vec!["status", "--json", "--codex-goal-json", s]);
    }
    runs.iter()
        .map(|a| {
            let r = eg(repo, "ulw-loop", a);
            (r.code, r.stdout)
        })
        .collect()
}

/// The answers with the sidecar as it is, and with it removed (the whole
/// reading), which must be equal; the sidecar is put back.
fn both_ways(repo: &Repo, step: &str) -> Vec<(i32, String)> {
    let path = state(repo, SIDECAR);
    let kept = std::fs::read(&path).ok();
    let fast = answers(repo);
    let _ = std::fs::remove_file(&path);
    let whole = answers(repo);
    assert_eq!(plan_read(repo), PlanRead::Whole, "{step}");
    if let Some(k) = kept {
        std::fs::write(&path, k).unwrap();
    }
    assert_eq!(fast, whole, "{step}: the two readings answer alike");
    fast
}

/// At every step of a run (created, started, each criterion proven with a
/// seeded criterion's `--accept-seeded`, checkpoints, the final gate)
/// `status` reads the cut-down body, and answers exactly as the whole
/// reading does: the goal lines, the summary, the seeded criteria's
/// suggested commands, the ledger, the binding and the printed plan.
#[test]
fn honest_status_answers_alike_from_the_cut_down_body_at_every_step() {
    let repo = Repo::new();
    let mut steps = Vec::new();
    drive_run(&repo, "ulw-loop", STATE, &[], &mut |step| {
        assert_eq!(plan_read(&repo), PlanRead::StatusView, "{step}");
        let a = both_ways(&repo, step);
        let json: Value = serde_json::from_str(&a[1].1).unwrap();
        assert_eq!(json["ok"], true, "{step}");
        // The plan printed is the file, byte for byte (indented one level).
        let file = std::fs::read_to_string(state(&repo, "goals.json")).unwrap();
        assert_eq!(json["plan"], serde_json::from_str::<Value>(&file).unwrap());
        steps.push(step.to_owned());
    });
    assert_eq!(steps.last().map(String::as_str), Some("run complete"));
}

/// A seeded criterion's suggested command carries `--accept-seeded` from
/// the cut-down body as from the plan; the sidecar holds no criterion text.
#[test]
fn honest_the_sidecar_keeps_what_status_reads_and_no_criterion_text() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let a = both_ways(&repo, "started");
    assert!(a[1].1.contains("--accept-seeded"), "{}", a[1].1);
    let line = std::fs::read(state(&repo, SIDECAR)).unwrap();
    let v: Value = serde_json::from_slice(line.strip_suffix(b"\n").unwrap()).unwrap();
    assert_eq!(v["v"], 1);
    for g in v["plan"]["goals"].as_array().unwrap() {
        for c in g["successCriteria"].as_array().unwrap() {
            let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
            assert!(
                keys.iter()
                    .all(|k| ["id", "status", "userModel", "essential", "seeded"].contains(k)),
                "{c}"
            );
            assert_eq!(c["seeded"], true, "{c}");
        }
    }
    assert!(v["plan"].get("lastMutation").is_none());
    // The view records the sidecar's digest.
    let view = std::fs::read(state(&repo, VIEW)).unwrap();
    let first = view.split(|&b| b == b'\n').next().unwrap();
    let bound: Value = serde_json::from_slice(first).unwrap();
    assert_eq!(
        bound["statusSha256"],
        sha256_hex(line.strip_suffix(b"\n").unwrap())
    );
}

/// Runs `attack` on a started run and checks that `status` then reads the
/// plan whole and answers as it does with no sidecar at all.
fn read_whole_after(attack: impl FnOnce(&Repo)) -> Vec<(i32, String)> {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    assert_eq!(plan_read(&repo), PlanRead::StatusView);
    attack(&repo);
    let after = answers(&repo);
    assert_eq!(plan_read(&repo), PlanRead::Whole);
    let path = state(&repo, SIDECAR);
    let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir(&path));
    assert_eq!(after, answers(&repo), "as with no sidecar");
    after
}

/// A goal title rewritten in the sidecar.
fn forge_title(repo: &Repo) -> Vec<u8> {
    let path = state(repo, SIDECAR);
    let text = std::fs::read_to_string(&path).unwrap();
    let forged = text.replacen("\"title\":\"a\"", "\"title\":\"forged\"", 1);
    assert_ne!(forged, text);
    std::fs::write(&path, &forged).unwrap();
    forged.into_bytes()
}

#[test]
fn attack_a_sidecar_edited_by_hand_is_not_read() {
    let a = read_whole_after(|repo| {
        forge_title(repo);
    });
    assert!(!a[0].1.contains("forged"), "{}", a[0].1);
}

/// The view's recorded digest rewritten to the forged sidecar's: the view
/// is then not the one the ledger vouches for.
#[test]
fn attack_a_sidecar_and_view_edited_together_are_not_read() {
    let a = read_whole_after(|repo| {
        let forged = forge_title(repo);
        let view_path = state(repo, VIEW);
        let view = std::fs::read_to_string(&view_path).unwrap();
        let (first, hint) = view.split_once('\n').unwrap();
        let mut bound: Value = serde_json::from_str(first).unwrap();
        bound["statusSha256"] = Value::String(sha256_hex(forged.strip_suffix(b"\n").unwrap()));
        std::fs::write(&view_path, format!("{bound}\n{hint}")).unwrap();
    });
    assert!(!a[0].1.contains("forged"), "{}", a[0].1);
}

/// The sidecar of an earlier mutation put back after a later one.
#[test]
fn attack_a_sidecar_replayed_from_an_earlier_mutation_is_not_read() {
    let repo = repo_with_plan("- a\n- b");
    let early = std::fs::read(state(&repo, SIDECAR)).unwrap();
    start(&repo);
    assert_eq!(plan_read(&repo), PlanRead::StatusView);
    std::fs::write(state(&repo, SIDECAR), &early).unwrap();
    let replayed = answers(&repo);
    assert_eq!(plan_read(&repo), PlanRead::Whole);
    assert!(replayed[0].1.contains("[in_progress]"), "{}", replayed[0].1);
    std::fs::remove_file(state(&repo, SIDECAR)).unwrap();
    assert_eq!(replayed, answers(&repo));
}

/// The plan edited by hand (a criterion's evidence text, which the sidecar
/// does not hold, at the same length, its file identity restored): the
/// bytes no longer hash to the vouched body, so `status` reads the plan and
/// reports the edit as the whole reading does.
#[test]
fn attack_a_plan_edited_where_the_sidecar_holds_nothing_is_reported() {
    let a = read_whole_after(|repo| {
        use std::io::Write;
        let path = state(repo, "goals.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let at = text.find("\"expectedEvidence\": \"").unwrap() + 21;
        let mut edited = text.into_bytes();
        edited[at] = if edited[at] == b'X' { b'Y' } else { b'X' };
        let m = std::fs::metadata(&path).unwrap();
        let mtime = m.modified().unwrap();
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all(&edited).unwrap();
        f.set_modified(mtime).unwrap();
    });
    assert_ne!(a[1].0, 0, "a tampered plan is not a status to act on");
    assert!(a[1].1.contains("PLAN_TAMPERED"), "{}", a[1].1);
}

/// A sidecar that is a symlink to an honest copy, a FIFO or a directory is
/// passed over without blocking.
#[test]
fn a_sidecar_that_is_not_a_regular_file_is_passed_over() {
    read_whole_after(|repo| {
        let path = state(repo, SIDECAR);
        let copy = state(repo, "copy");
        std::fs::rename(&path, &copy).unwrap();
        std::os::unix::fs::symlink(&copy, &path).unwrap();
    });
    read_whole_after(|repo| {
        let path = state(repo, SIDECAR);
        std::fs::remove_file(&path).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
    });
    read_whole_after(|repo| {
        let path = state(repo, SIDECAR);
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
    });
}

/// A torn sidecar (cut mid-line, as a crash of an unsynced write leaves it).
#[test]
fn a_torn_sidecar_is_not_read() {
    read_whole_after(|repo| {
        let path = state(repo, SIDECAR);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    });
}

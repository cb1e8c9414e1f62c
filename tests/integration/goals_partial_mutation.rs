//! `record-evidence` and `checkpoint` read the plan from its cut-down body
//! (docs/state-formats.md#status-view): the goal they change is read whole
//! from its text in `goals.json`, every other goal as `.goals.status` holds
//! it, and the goals nothing changed are written back as the file's text.
//! Each step of a run is taken twice from the same state with the same
//! clock, once with the cut-down body and once without it (the whole
//! reading): every file of the state directory and every answer must be
//! byte for byte the same. Every attack sits next to the honest run whose
//! answers must not change. Every process runs with HOME and the XDG
//! directories in temporary directories.

use std::path::Path;
use std::time::{Duration, SystemTime};

use evidence_gate::goals::ops::checkpoint::{self, CheckpointRequest, CheckpointStatus};
use evidence_gate::goals::ops::record::{self, RecordRequest};
use evidence_gate::goals::ops::status::PlanRead;
use evidence_gate::goals::{Engine, EngineOptions, Loaded};

use crate::common::{Repo, copy_tree};
use crate::goals_support::*;

const SIDECAR: &str = ".goals.status";

/// Every file of the state directory under `root`, by name.
fn state_files(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(root.join(STATE))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// The engine of the repository at `root` whose clock reads `at`.
fn engine(root: &Path, at: SystemTime) -> Engine {
    let rules = evidence_gate::rules::RuleSet::embedded().unwrap();
    let dir = cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority()).unwrap();
    let mut opts = EngineOptions::new("ulw-loop");
    opts.clock = Some(at);
    Engine::new(dir, &rules, opts).unwrap()
}

/// What a library call answered, as a comparable text: `ok`'s for its
/// outcome, else the error's code and message (the plan then counted as
/// read whole).
fn answered<T>(
    result: Result<T, evidence_gate::goals::GoalError>,
    ok: impl FnOnce(T) -> (PlanRead, String),
) -> (PlanRead, String) {
    match result {
        Ok(o) => ok(o),
        Err(err) => (PlanRead::Whole, format!("{} {}", err.code(), err.message)),
    }
}

/// One library call and what it answered (a comparable text).
type Step<'a> = &'a dyn Fn(&Engine) -> (PlanRead, String);

/// Takes `step` on `repo` and on a copy of it without the cut-down body,
/// at the same time: the answers and every state file must be equal.
/// Returns how `repo`'s step read the plan. (The view's freshness hint
/// names the plan file's inode, so only `repo` itself, not a copy, has a
/// view its plan file matches.)
fn both_ways(repo: &Repo, n: u64, name: &str, step: Step<'_>) -> PlanRead {
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000 + 60 * n);
    let tmp = tempfile::tempdir().unwrap();
    let (fast, whole) = (repo.path().to_path_buf(), tmp.path().join("whole"));
    copy_tree(repo.path(), &whole);
    let before = std::fs::read(whole.join(STATE).join(SIDECAR)).ok();
    let _ = std::fs::remove_file(whole.join(STATE).join(SIDECAR));
    let (read, answer) = step(&engine(&fast, at));
    let (read_whole, answer_whole) = step(&engine(&whole, at));
    assert_eq!(read_whole, PlanRead::Whole, "{name}: no cut-down body");
    assert_eq!(answer, answer_whole, "{name}: the answers");
    let (mut a, mut b) = (state_files(&fast), state_files(&whole));
    // A step that wrote nothing left the cut-down body as it was.
    if !b.iter().any(|f| f.0 == SIDECAR) {
        let kept = a.iter().position(|f| f.0 == SIDECAR);
        assert_eq!(kept.map(|i| a.remove(i).1), before, "{name}: unchanged");
    }
    // The view's second line is the freshness hint of the plan file it was
    // written with (its inode and times), which differ between two copies.
    for (file, bytes) in a.iter_mut().chain(b.iter_mut()) {
        if file == ".goals.summary" {
            let first = bytes.iter().position(|b| *b == b'\n').unwrap();
            bytes.truncate(first);
        }
    }
    assert_eq!(
        a.iter().map(|f| &f.0).collect::<Vec<_>>(),
        b.iter().map(|f| &f.0).collect::<Vec<_>>(),
        "{name}: the state files"
    );
    for ((file, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y, "{name}: {file} differs");
    }
    read
}

fn recorded(
    goal: &str,
    criterion: &str,
    status: &str,
    extra: fn(&mut RecordRequest),
) -> impl Fn(&Engine) -> (PlanRead, String) + use<> {
    let mut req = RecordRequest {
        goal_id: goal.into(),
        criterion_id: criterion.into(),
        status: evidence_gate::goals::CriterionStatus::parse(status),
        evidence: Some(format!("{criterion}: 3 passed")),
        notes: None,
        evidence_files: Vec::new(),
        accept_seeded: None,
    };
    extra(&mut req);
    move |e: &Engine| {
        answered(record::run(e, req.clone()), |o| {
            (
                o.plan_read,
                format!(
                    "{:?}\n{:?}\n{:?}\n{:?}\n{}",
                    o.goal,
                    o.criterion,
                    o.files,
                    o.ledger_entry(),
                    String::from_utf8(o.plan.encode()).unwrap()
                ),
            )
        })
    }
}

fn checkpointed(req: CheckpointRequest) -> impl Fn(&Engine) -> (PlanRead, String) {
    move |e: &Engine| {
        answered(checkpoint::run(e, req.clone()), |o| {
            (
                o.plan_read,
                format!(
                    "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{}",
                    o.goal,
                    o.ledger_entries,
                    o.next,
                    o.warnings,
                    o.aggregate_completion,
                    o.status,
                    String::from_utf8(o.plan.encode()).unwrap()
                ),
            )
        })
    }
}

fn snapshot(repo: &Repo) -> Loaded {
    let text = active(repo);
    Loaded {
        value: serde_json::from_str(&text).unwrap(),
        text,
        file: None,
    }
}

fn criteria(repo: &Repo, id: &str) -> Vec<String> {
    goal(repo, id)["successCriteria"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect()
}

/// A run of three goals, each step taken both ways: criteria failed,
/// passed (a seeded one accepted), a goal checkpointed complete (the next
/// one started and handed over with its criteria in full), blocked and
/// failed, refusals included. Every step that writes reads the cut-down
/// body, and writes what the whole reading writes.
#[test]
fn honest_mutations_write_alike_from_the_cut_down_body() {
    let repo = Repo::new();
    expect_ok(&ulw(&repo, &["create-goals", "--brief", "- a\n- b\n- c"]));
    start(&repo);
    let g1 = goal_ids(&repo)[0].clone();
    let g2 = goal_ids(&repo)[1].clone();
    let mut n = 0;
    let mut step = |name: &str, s: Step<'_>| {
        n += 1;
        both_ways(&repo, n, name, s)
    };
    let c1 = criteria(&repo, &g1);
    let read = step(
        "failed",
        &recorded(&g1, &c1[0], "fail", |r| r.notes = Some("flaky".into())),
    );
    assert_eq!(read, PlanRead::StatusView);
    // A seeded criterion refused without --accept-seeded, then accepted.
    step("seeded refused", &recorded(&g1, &c1[0], "pass", |_| {}));
    for c in &c1 {
        let read = step(
            "passed",
            &recorded(&g1, c, "pass", |r| r.accept_seeded = Some("fixture".into())),
        );
        assert_eq!(read, PlanRead::StatusView, "{c}");
    }
    step("unknown criterion", &recorded(&g1, "C999", "pass", |_| {}));
    step("unknown goal", &recorded("G999-x", "C001", "pass", |_| {}));
    let mut done = CheckpointRequest::new(&g1, CheckpointStatus::Complete, "all pass");
    done.host_goal = Some(snapshot(&repo));
    let read = step("complete, next started", &checkpointed(done));
    assert_eq!(read, PlanRead::StatusView);
    assert_eq!(goal(&repo, &g2)["status"], "in_progress");
    let c2 = criteria(&repo, &g2);
    step("failed on the next", &recorded(&g2, &c2[0], "fail", |_| {}));
    let read = step(
        "blocked",
        &checkpointed(CheckpointRequest::new(
            &g2,
            CheckpointStatus::Blocked,
            "waiting on the vendor's API key",
        )),
    );
    assert_eq!(read, PlanRead::StatusView);
    step(
        "failed",
        &checkpointed(CheckpointRequest::new(
            &g2,
            CheckpointStatus::Failed,
            "the build broke",
        )),
    );
    step(
        "a finished goal refused",
        &checkpointed(CheckpointRequest::new(
            &g1,
            CheckpointStatus::Failed,
            "again",
        )),
    );
}

/// The cut-down body edited, replaced by a symlink or dropped: the
/// mutation reads the plan whole and writes what it writes without one.
#[test]
fn a_cut_down_body_in_doubt_is_passed_over_by_a_mutation() {
    let repo = Repo::new();
    expect_ok(&ulw(&repo, &["create-goals", "--brief", "- a\n- b"]));
    start(&repo);
    let g1 = goal_ids(&repo)[0].clone();
    let c1 = criteria(&repo, &g1);
    let path = state(&repo, SIDECAR);
    let honest = std::fs::read(&path).unwrap();
    let forged =
        String::from_utf8(honest.clone())
            .unwrap()
            .replacen("\"pending\"", "\"complete\"", 1);
    assert_ne!(forged.as_bytes(), honest.as_slice());
    std::fs::write(&path, forged).unwrap();
    let pass = |c: &str| recorded(&g1, c, "pass", |r| r.accept_seeded = Some("f".into()));
    assert_eq!(
        both_ways(&repo, 1, "edited", &pass(&c1[0])),
        PlanRead::Whole
    );
    // Written anew by that mutation: read again.
    assert_eq!(
        both_ways(&repo, 2, "anew", &pass(&c1[1])),
        PlanRead::StatusView
    );
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(state(&repo, "goals.json"), &path).unwrap();
    assert_eq!(
        both_ways(&repo, 3, "symlink", &pass(&c1[0])),
        PlanRead::Whole
    );
}

/// A plan edited by hand in a goal's criterion text, which the cut-down
/// body does not hold: the mutation refuses it as `PLAN_TAMPERED`, as it
/// does without the body; the goal it changes read whole or not.
#[test]
fn a_plan_edited_where_the_cut_down_body_does_not_look_is_refused() {
    let repo = Repo::new();
    expect_ok(&ulw(&repo, &["create-goals", "--brief", "- a\n- b"]));
    start(&repo);
    let ids = goal_ids(&repo);
    let c1 = criteria(&repo, &ids[0]);
    let text = String::from_utf8(plan_bytes(&repo)).unwrap();
    let key = "\"expectedEvidence\": \"";
    let last = text.rfind(key).unwrap() + key.len();
    let mut edited = text.clone();
    edited.insert_str(last, "nothing, ");
    std::fs::write(state(&repo, "goals.json"), edited).unwrap();
    for (n, id) in ids.iter().enumerate() {
        let c = criteria(&repo, id)[0].clone();
        let probe = recorded(id, &c, "fail", |_| {});
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000 + n as u64);
        let (_, answer) = probe(&engine(repo.path(), at));
        assert!(answer.starts_with("ULW_LOOP_PLAN_TAMPERED"), "{answer}");
        both_ways(&repo, n as u64, "tampered", &probe);
    }
    let _ = c1;
}

/// A goal checkpointed complete while another is in progress (a plan whose
/// second goal was set in progress by hand and acknowledged): the other goal
/// is resumed and handed over with its criteria in full, although the
/// command did not name it.
#[test]
fn the_goal_a_checkpoint_resumes_is_handed_over_in_full() {
    let repo = Repo::new();
    expect_ok(&ulw(&repo, &["create-goals", "--brief", "- a\n- b\n- c"]));
    start(&repo);
    let ids = goal_ids(&repo);
    edit_goal(&repo, &ids[1], |g| {
        g.insert("status".into(), "in_progress".into());
    });
    pass_all(&repo, &ids[0]);
    let mut done = CheckpointRequest::new(&ids[0], CheckpointStatus::Complete, "all pass");
    done.host_goal = Some(snapshot(&repo));
    let read = both_ways(&repo, 1, "complete, other resumed", &checkpointed(done));
    assert_eq!(read, PlanRead::StatusView);
    let ledger = ledger(&repo);
    assert_eq!(ledger.last().unwrap()["goalId"], ids[0].as_str());
    assert_eq!(goal(&repo, &ids[1])["status"], "in_progress");
}

fn steered(items: serde_json::Value) -> impl Fn(&Engine) -> (PlanRead, String) {
    use evidence_gate::goals::steer::{self, Defaults};
    let items: Vec<serde_json::Value> = items.as_array().unwrap().clone();
    move |e: &Engine| {
        answered(steer::apply_batch(e, &items, &Defaults::none()), |o| {
            (
                o.plan_read,
                format!(
                    "{}\n{:?}\n{:?}\n{:?}\n{}",
                    o.accepted,
                    o.results,
                    o.reasons,
                    o.entries,
                    String::from_utf8(o.plan.encode()).unwrap()
                ),
            )
        })
    }
}

fn proposal(kind: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut v = serde_json::json!({"kind": kind, "evidence": "observed", "rationale": "because"});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

/// Steering, each batch taken both ways: a criterion revised, a pending
/// goal reworded, a goal added, a note and its replay (a dedupe hit that
/// writes no plan), the pending goals reordered (every goal read whole
/// first), and a rejected batch.
#[test]
fn steering_writes_alike_from_the_cut_down_body() {
    use serde_json::json;
    let repo = Repo::new();
    expect_ok(&ulw(
        &repo,
        &["create-goals", "--brief", "- a\n- b\n- c\n- d"],
    ));
    start(&repo);
    let ids = goal_ids(&repo);
    let steps = [
        (
            "revised",
            json!([proposal(
                "revise_criterion",
                json!({"goalId": ids[1], "criterionId": "C001",
                "scenario": "login with a valid token returns 200"})
            )]),
        ),
        (
            "reworded",
            json!([proposal(
                "revise_pending_wording",
                json!({"goalId": ids[2], "revisedTitle": "c v2"})
            )]),
        ),
        (
            "added",
            json!([proposal(
                "add_subgoal",
                json!({"title": "Write docs", "objective": "Document the API"})
            )]),
        ),
        (
            "noted",
            json!([proposal(
                "annotate_ledger",
                json!({"goalId": ids[3], "idempotencyKey": "k1"})
            )]),
        ),
        (
            "replayed",
            json!([proposal(
                "annotate_ledger",
                json!({"goalId": ids[3], "idempotencyKey": "k1"})
            )]),
        ),
        (
            "reordered",
            json!([proposal(
                "reorder_pending",
                json!({"pendingOrder": [ids[3], ids[2], ids[1]]})
            )]),
        ),
        (
            "rejected",
            json!([
                proposal("annotate_ledger", json!({})),
                proposal("unblock", json!({"goalId": ids[0]})),
            ]),
        ),
    ];
    for (n, (name, items)) in steps.into_iter().enumerate() {
        let read = both_ways(&repo, n as u64, name, &steered(items));
        let expected = if name == "rejected" {
            PlanRead::Whole
        } else {
            PlanRead::StatusView
        };
        assert_eq!(read, expected, "{name}");
    }
    assert_eq!(goal(&repo, &ids[2])["title"], "c v2");
    // `add-goal` and `complete-goals` on the same plan.
    let added = both_ways(&repo, 20, "add-goal", &|e: &Engine| {
        let req = evidence_gate::goals::ops::add::AddRequest {
            title: "Ship it".into(),
            objective: "Release the build".into(),
            evidence: Some("asked for in review".into()),
            token_budget: None,
        };
        answered(evidence_gate::goals::ops::add::run(e, req), |o| {
            (
                o.plan_read,
                format!(
                    "{:?}\n{}",
                    o.goal,
                    String::from_utf8(o.plan.encode()).unwrap()
                ),
            )
        })
    });
    assert_eq!(added, PlanRead::StatusView);
    let resumed = both_ways(&repo, 21, "complete-goals", &|e: &Engine| {
        answered(evidence_gate::goals::ops::complete::run(e, false), |o| {
            (
                o.plan_read,
                format!(
                    "{:?}\n{:?}\n{}",
                    o.outcome,
                    o.report,
                    String::from_utf8(o.plan.encode()).unwrap()
                ),
            )
        })
    });
    assert_eq!(resumed, PlanRead::StatusView);
}

/// `record-review-blockers` on the final goal, both ways: the goal blocked
/// for review and the resolution goal added.
#[test]
fn review_blockers_write_alike_from_the_cut_down_body() {
    use evidence_gate::goals::ops::review::{self, ReviewRequest};
    let repo = Repo::new();
    expect_ok(&ulw(&repo, &["create-goals", "--brief", "- a\n- b"]));
    start(&repo);
    let ids = goal_ids(&repo);
    pass_all(&repo, &ids[0]);
    expect_ok(&checkpoint_complete(&repo, &ids[0], &[]));
    let host = snapshot(&repo);
    let read = both_ways(&repo, 1, "review blockers", &|e: &Engine| {
        let req = ReviewRequest {
            goal_id: ids[1].clone(),
            title: "Fix the review findings".into(),
            objective: "Address the reviewer's two findings".into(),
            evidence: "review found two issues".into(),
            host_goal: Some(host.clone()),
            evidence_files: Vec::new(),
        };
        answered(review::run(e, req), |o| {
            (
                o.plan_read,
                format!(
                    "{:?}\n{:?}\n{:?}\n{}",
                    o.blocked_goal,
                    o.goal,
                    o.ledger_entries(),
                    String::from_utf8(o.plan.encode()).unwrap()
                ),
            )
        })
    });
    assert_eq!(read, PlanRead::StatusView);
    assert_eq!(goal(&repo, &ids[1])["status"], "review_blocked");
}

/// The three files a forger rewrites to make a mutation trust a forged
/// cut-down body: the body, the view that records its digest, and the
/// ledger whose newest record vouches for the view.
const FORGED: [&str; 3] = [SIDECAR, ".goals.summary", "ledger.jsonl"];

/// Forges the cut-down body of `repo` so that the first criterion of the
/// goal at `index` reads `status`, and a correctly chained ledger record
/// vouching for it (the forgery of docs/threat-model.md#i7 that nothing in
/// the working tree can tell from an honest write).
fn forge_cut(repo: &Repo, index: usize, status: &str) {
    use serde_json::Value;
    let cut_path = state(repo, SIDECAR);
    let honest_cut = std::fs::read(&cut_path).unwrap();
    let view_path = state(repo, ".goals.summary");
    let view = String::from_utf8(std::fs::read(&view_path).unwrap()).unwrap();
    let (line, hint) = view.split_once('\n').unwrap();
    let mut bound: Value = serde_json::from_str(line).unwrap();
    // The view records the digest of the body's line (without its newline)
    // as the engine wrote it: the forger recomputes it the same way.
    let honest_line = honest_cut.strip_suffix(b"\n").unwrap();
    assert_eq!(bound["statusSha256"], sha256_hex(honest_line));
    let mut cut: Value = serde_json::from_slice(honest_line).unwrap();
    cut["plan"]["goals"][index]["successCriteria"][0]["status"] = status.into();
    let forged_cut = serde_json::to_vec(&cut).unwrap();
    std::fs::write(&cut_path, [forged_cut.as_slice(), b"\n"].concat()).unwrap();
    bound["statusSha256"] = sha256_hex(&forged_cut).into();
    let forged_line = serde_json::to_string(&bound).unwrap();
    std::fs::write(&view_path, format!("{forged_line}\n{hint}")).unwrap();
    // A copy of the newest record, chained after it, vouching for the
    // forged view.
    let ledger_path = state(repo, "ledger.jsonl");
    let text = std::fs::read_to_string(&ledger_path).unwrap();
    let last = text.lines().rfind(|l| !l.trim().is_empty()).unwrap();
    let mut record: Value = serde_json::from_str(last).unwrap();
    let seq = record["seq"].as_u64().unwrap();
    let map = record.as_object_mut().unwrap();
    map.shift_remove("seq");
    map.shift_remove("prev");
    map.insert(
        "summarySha256".into(),
        sha256_hex(forged_line.as_bytes()).into(),
    );
    map.insert("seq".into(), (seq + 1).into());
    map.insert("prev".into(), sha256_hex(last.as_bytes()).into());
    let mut ledger = text.into_bytes();
    ledger.extend(serde_json::to_vec(&record).unwrap());
    ledger.push(b'\n');
    std::fs::write(&ledger_path, ledger).unwrap();
}

/// A run of three goals whose first goal passed every criterion.
fn first_goal_passed() -> (Repo, Vec<String>) {
    let repo = Repo::new();
    expect_ok(&ulw(&repo, &["create-goals", "--brief", "- a\n- b\n- c"]));
    start(&repo);
    let ids = goal_ids(&repo);
    pass_all(&repo, &ids[0]);
    (repo, ids)
}

/// The goal a checkpoint hands over, as the cut-down body holds it, must be
/// the goal `goals.json` holds. A forged body with a forged, correctly
/// chained ledger record vouching for it is trusted for the goals nothing
/// reads whole (`status` shows the forgery, as it would show a forged
/// plan: CI re-validates); but when the checkpoint reaches the next goal to
/// hand it over and its text does not cut down to the forged one, the
/// command is refused with `PLAN_CORRUPT` before anything is written. A
/// mutation that names the forged goal reads the plan whole and writes an
/// honest body again. The same checkpoint without the forgery hands the
/// next goal over from the cut-down body. `complete-goals`, which resumes
/// the goal in progress without writing, is refused before it copies the
/// forged goal into its answer (it did before).
#[test]
fn a_forged_cut_of_a_goal_reached_later_is_refused_before_anything_is_written() {
    let at = |n: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000 + 60 * n);
    let complete_first = |repo: &Repo, ids: &[String]| {
        let mut done = CheckpointRequest::new(&ids[0], CheckpointStatus::Complete, "all pass");
        done.host_goal = Some(snapshot(repo));
        checkpointed(done)
    };
    let passed = goal(&first_goal_passed().0, &goal_ids(&first_goal_passed().0)[0])
        ["successCriteria"][0]["status"]
        .clone();
    let passed = passed.as_str().unwrap().to_owned();

    // Honest use: the next goal is handed over from the cut-down body.
    let (honest, ids) = first_goal_passed();
    let (read, answer) = complete_first(&honest, &ids)(&engine(honest.path(), at(1)));
    assert_eq!(read, PlanRead::StatusView, "{answer}");
    assert_eq!(goal(&honest, &ids[1])["status"], "in_progress");

    let (repo, ids) = first_goal_passed();
    forge_cut(&repo, 1, &passed);
    assert_ne!(
        goal(&repo, &ids[1])["successCriteria"][0]["status"],
        passed.as_str()
    );
    // The forgery passes the vouching: `status` reads the forged body.
    let status =
        evidence_gate::goals::ops::status::run(&engine(repo.path(), at(2)), None).expect("status");
    assert_eq!(status.plan_read, PlanRead::StatusView);
    let before = state_files(repo.path());
    let (read, answer) = complete_first(&repo, &ids)(&engine(repo.path(), at(3)));
    assert_eq!(read, PlanRead::Whole, "refused: {answer}");
    assert!(answer.starts_with("ULW_LOOP_PLAN_CORRUPT"), "{answer}");
    assert!(
        answer.contains(&format!("/goals/1: goal `{}`", ids[1])) && answer.contains(SIDECAR),
        "names the goal and the file to remove: {answer}"
    );
    // Nothing written: the ledger's index alone caught up with the record
    // the forger appended, as every command that reads the ledger under the
    // lock brings it up to date.
    let after = state_files(repo.path());
    let changed: Vec<&String> = after
        .iter()
        .filter(|f| !before.contains(f))
        .map(|f| &f.0)
        .collect();
    assert_eq!(after.len(), before.len());
    assert_eq!(changed, [".ledger.idx"], "nothing else written");

    // Naming the forged goal reads the plan whole; the write binds an
    // honest body again, which the next mutation reads.
    let reword = steered(serde_json::json!([proposal(
        "revise_pending_wording",
        serde_json::json!({"goalId": ids[1], "revisedTitle": "b v2"})
    )]));
    let (read, answer) = reword(&engine(repo.path(), at(4)));
    assert_eq!(read, PlanRead::Whole, "{answer}");
    assert!(answer.starts_with("true"), "{answer}");
    for f in FORGED {
        assert!(state_files(repo.path()).iter().any(|(n, _)| n == f), "{f}");
    }
    let (read, answer) = complete_first(&repo, &ids)(&engine(repo.path(), at(5)));
    assert_eq!(read, PlanRead::StatusView, "{answer}");
    assert_eq!(goal(&repo, &ids[1])["status"], "in_progress");

    // `complete-goals` resumes the goal in progress without writing, and
    // hands it over in full: forged, it is refused before it is read.
    let resume = |repo: &Repo, n: u64| {
        let e = engine(repo.path(), at(n));
        answered(evidence_gate::goals::ops::complete::run(&e, false), |o| {
            (o.plan_read, format!("{:?}", o.report))
        })
    };
    let (honest, _) = first_goal_passed();
    let (read, answer) = resume(&honest, 6);
    assert_eq!(read, PlanRead::StatusView, "{answer}");
    let (repo, ids) = first_goal_passed();
    forge_cut(&repo, 0, "fail");
    let before = state_files(repo.path());
    let (_, answer) = resume(&repo, 7);
    assert!(
        answer.starts_with("ULW_LOOP_PLAN_CORRUPT")
            && answer.contains(&format!("/goals/0: goal `{}`", ids[0])),
        "{answer}"
    );
    let after = state_files(repo.path());
    assert!(
        after
            .iter()
            .all(|f| before.contains(f) || f.0 == ".ledger.idx")
    );
}

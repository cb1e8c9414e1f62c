//! Library-level checks of codes the CLI cannot reach on its own: plan
//! context (the goal engine supplies it), the verification deadline (hooks
//! supply it), and the sandbox escape mapping.

use std::time::{Duration, Instant};

use cap_std::fs::Dir;
use evidence_gate::evidence::{
    Code, PlanContext, Root, Verdict, VerifyOptions, payload, verify_payload,
};
use evidence_gate::rules::RuleSet;
use evidence_gate::rules::evidence::EvidenceRules;
use serde_json::json;

use crate::common::Repo;

fn root(repo: &Repo) -> Root {
    let rules: EvidenceRules = RuleSet::embedded().unwrap().family().unwrap();
    Root::new(
        Dir::open_ambient_dir(repo.path(), cap_std::ambient_authority()).unwrap(),
        &rules,
    )
    .unwrap()
}

struct Plan;

impl PlanContext for Plan {
    fn goal_exists(&self, goal_id: &str) -> bool {
        goal_id == "G001"
    }
    fn criterion_exists(&self, goal_id: &str, criterion_id: &str) -> bool {
        goal_id == "G001" && criterion_id == "C001"
    }
    fn default_goal(&self) -> Option<&str> {
        Some("G001")
    }
}

fn codes(r: &evidence_gate::evidence::Report) -> Vec<Code> {
    r.findings().iter().map(|f| f.code).collect()
}

#[test]
fn plan_context_checks_goal_and_criteria() {
    let repo = Repo::new();
    repo.write("a.txt", "a\n");
    let root = root(&repo);
    let mut v = crate::evidence_cli::payload(json!([{"path": "a.txt"}]));
    v["goalId"] = json!("G404");
    let p = payload::from_value(v.clone()).unwrap();
    let opts = VerifyOptions {
        plan: Some(&Plan),
        deadline: None,
        payload_path: None,
    };
    let r = verify_payload(&root, &p, "p", opts);
    assert_eq!(
        (r.verdict(), codes(&r)),
        (Verdict::Fail, vec![Code::GoalUnknown])
    );
    v["goalId"] = json!("G001");
    v["criterionIds"] = json!(["C001", "C999"]);
    let r = verify_payload(&root, &payload::from_value(v.clone()).unwrap(), "p", opts);
    assert_eq!(
        (r.verdict(), codes(&r)),
        (Verdict::Fail, vec![Code::CriterionUnknown])
    );
    // Without goalId the command's goal is used.
    v.as_object_mut().unwrap().remove("goalId");
    let r = verify_payload(&root, &payload::from_value(v.clone()).unwrap(), "p", opts);
    assert_eq!(codes(&r), vec![Code::CriterionUnknown]);
    // Outside plan context the fields are not checked.
    let r = verify_payload(
        &root,
        &payload::from_value(v).unwrap(),
        "p",
        VerifyOptions::default(),
    );
    assert_eq!(r.verdict(), Verdict::Pass);
}

#[test]
fn an_expired_deadline_is_could_not_verify_never_a_pass() {
    let repo = Repo::new();
    repo.write("a.txt", "a\n");
    let root = root(&repo);
    let p = payload::from_value(crate::evidence_cli::payload(json!([{"path": "a.txt"}]))).unwrap();
    let past = Instant::now()
        .checked_sub(Duration::from_millis(1))
        .unwrap();
    let r = verify_payload(
        &root,
        &p,
        "p",
        VerifyOptions {
            plan: None,
            deadline: Some(past),
            payload_path: None,
        },
    );
    assert_eq!(
        (r.verdict(), codes(&r)),
        (Verdict::Error, vec![Code::VerifyTimeout])
    );
    assert!(r.files().is_empty());
}

#[test]
fn escape_errors_map_to_path_escapes_root() {
    let (code, _) = evidence_gate::evidence::verify::problem_finding(
        &evidence_gate::sandbox::FileProblem::EscapesRoot,
    );
    assert_eq!(code, Code::PathEscapesRoot);
}

#[test]
fn verify_files_of_nothing_is_never_a_pass() {
    let repo = Repo::new();
    let r = evidence_gate::evidence::verify_files(&root(&repo), &[], "none", None);
    assert_eq!(r.verdict(), Verdict::Error);
}

/// Long payload verifies report progress through a callback (the
/// command line draws the bar); the library itself prints nothing.
#[test]
fn payload_verification_reports_each_file_to_the_progress_callback() {
    use std::sync::atomic::{AtomicU64, Ordering};
    #[derive(Default)]
    struct Count {
        planned: AtomicU64,
        done: AtomicU64,
        bytes: AtomicU64,
    }
    impl evidence_gate::evidence::FileProgress for Count {
        fn start(&self, files: u64) {
            self.planned.fetch_add(files, Ordering::Relaxed);
        }
        fn done(&self, bytes: u64) {
            self.done.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }
    let repo = Repo::new();
    repo.write("a.txt", "a\n");
    repo.write("b.txt", "bbb\n");
    let root = root(&repo);
    let p = payload::from_value(crate::evidence_cli::payload(
        json!([{"path": "a.txt"}, {"path": "b.txt"}]),
    ))
    .unwrap();
    let count = Count::default();
    let r = evidence_gate::evidence::verify_payload_with_progress(
        &root,
        &p,
        "p",
        VerifyOptions::default(),
        Some(&count),
    );
    assert_eq!(r.verdict(), Verdict::Pass, "{:?}", codes(&r));
    assert_eq!(count.planned.load(Ordering::Relaxed), 2);
    assert_eq!(count.done.load(Ordering::Relaxed), 2);
    assert_eq!(count.bytes.load(Ordering::Relaxed), 6);
}

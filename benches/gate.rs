//! Gate validation hot paths: the five-section fixture gate (5 files) without
//! plan context, a large gate (100 criteria, 100 surface rows, 20 artifacts)
//! in plan context, and loading the gate rules.
//!
//! Run: `cargo bench --bench gate`.

#![allow(clippy::disallowed_methods)]

use std::hint::black_box;
use std::path::Path;

use cap_std::fs::Dir;
use criterion::Criterion;
use evidence_gate::evidence::Root;
use evidence_gate::gate::{self, GateContext, GateScope, GateVerdict, Scope, ScopeCriterion};
use evidence_gate::rules::RuleSet;
use evidence_gate::rules::evidence::EvidenceRules;
use evidence_gate::rules::gates::GateBook;
use evidence_gate::sandbox::{PathLimits, RelPath};
use serde_json::json;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/gates");
const ATTEMPT: &str = ".omo/evidence/ulw/bench/G001/a1";

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

fn root(dir: &Path) -> Root {
    let rules: EvidenceRules = RuleSet::embedded().unwrap().family().unwrap();
    Root::new(
        Dir::open_ambient_dir(dir, cap_std::ambient_authority()).unwrap(),
        &rules,
    )
    .unwrap()
}

fn large_gate(dir: &Path, criteria: usize, artifacts: usize) -> Vec<u8> {
    std::fs::create_dir_all(dir.join(ATTEMPT)).unwrap();
    for name in ["code-review.md", "gate-review.md", "manual-qa.md"] {
        std::fs::write(
            dir.join(ATTEMPT).join(name),
            "# report\n\nVERDICT: APPROVE\n",
        )
        .unwrap();
    }
    let refs: Vec<_> = (0..artifacts)
        .map(|i| {
            let path = format!("{ATTEMPT}/t{i:02}.txt");
            std::fs::write(dir.join(&path), "$ cargo test\nok\n".repeat(64)).unwrap();
            json!({"id": format!("t{i}"), "kind": "cli-transcript", "description": "transcript", "path": path})
        })
        .collect();
    let rows: Vec<_> = (0..criteria)
        .map(|i| {
            json!({"id": format!("s{i}"), "criterionRef": format!("G001:C{i:03}"), "surface": "cli",
                   "invocation": "cargo test", "verdict": "passed",
                   "artifactRefs": [format!("t{}", i % artifacts)]})
        })
        .collect();
    serde_json::to_vec_pretty(&json!({
        "codeReview": {"by": "lazycodex-code-reviewer", "recommendation": "APPROVE", "codeQualityStatus": "CLEAR",
                       "reportPath": format!("{ATTEMPT}/code-review.md"), "evidence": "reviewed", "blockers": []},
        "manualQa": {"by": "lazycodex-qa-executor", "status": "passed", "evidence": "exercised",
                     "artifactRefs": refs, "surfaceEvidence": rows,
                     "adversarialCases": [{"id": "a1", "criterionRef": "G001:C000", "scenario": "hostile input",
                                           "expectedBehavior": "rejected", "verdict": "passed"}]},
        "gateReview": {"by": "lazycodex-gate-reviewer", "recommendation": "APPROVE",
                       "reportPath": format!("{ATTEMPT}/gate-review.md"), "evidence": "audited", "blockers": [], "notes": []},
        "iteration": {"fullRerun": true, "status": "passed", "rerunCommands": ["cargo test"], "evidence": "rerun"},
        "criteriaCoverage": {"totalCriteria": criteria, "passCount": criteria, "originalIntent": "intent",
                             "desiredOutcome": "outcome", "userOutcomeReview": "review",
                             "adversarialClassesCovered": ["hostile input"]}
    }))
    .unwrap()
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let book = GateBook::from_rules(&RuleSet::embedded().unwrap()).unwrap();
    let limits = PathLimits::default();

    let fixtures = tempfile::tempdir().unwrap();
    copy_tree(Path::new(FIXTURES), fixtures.path());
    let fixture_root = root(fixtures.path());
    let doc = std::fs::read(fixtures.path().join("lazycodex.json")).unwrap();
    let standalone = GateScope::Standalone {
        dir: RelPath::parse(".omo/evidence", limits).unwrap(),
    };
    let lazycodex = book.get("lazycodex").unwrap();
    assert_eq!(
        gate::validate(&fixture_root, lazycodex, &doc, &standalone).verdict(),
        GateVerdict::Pass
    );
    c.bench_function("gate/validate fixture (5 files, no plan)", |b| {
        b.iter(|| {
            black_box(gate::validate(
                &fixture_root,
                lazycodex,
                black_box(&doc),
                &standalone,
            ))
        })
    });

    let large = tempfile::tempdir().unwrap();
    let big = large_gate(large.path(), 100, 20);
    let large_root = root(large.path());
    let plan = GateScope::Plan(GateContext {
        scope: Scope::Run,
        goal_id: "G001".into(),
        scope_dir: RelPath::parse(ATTEMPT, limits).unwrap(),
        criteria: (0..100)
            .map(|i| ScopeCriterion::new("G001", format!("C{i:03}"), "pass"))
            .collect(),
        batch_alternative: None,
        checkpoint: true,
        plan_gate_rules: Some("lazycodex".into()),
    });
    let outcome = gate::validate(&large_root, lazycodex, &big, &plan);
    assert_eq!(
        outcome.verdict(),
        GateVerdict::Pass,
        "{:?}",
        outcome.findings()
    );
    c.bench_function("gate/validate large (100 criteria, 22 files, plan)", |b| {
        b.iter(|| {
            black_box(gate::validate(
                &large_root,
                lazycodex,
                black_box(&big),
                &plan,
            ))
        })
    });

    c.bench_function("gate/load gate rules (embedded)", |b| {
        b.iter(|| black_box(GateBook::from_rules(&RuleSet::embedded().unwrap()).unwrap()))
    });
    c.final_summary();
}

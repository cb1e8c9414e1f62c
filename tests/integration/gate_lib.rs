//! Gate validation through the library with a hand-built plan context (the
//! goal engine supplies it in `checkpoint` and `gate check --goal-id`), the template
//! builder, the checkpoint error mapping, and "arbitrary input never panics".

use cap_std::fs::Dir;
use evidence_gate::evidence::{Code, Root, Severity};
use evidence_gate::gate::{
    self, BatchAlternative, FileRole, GateContext, GateOutcome, GateScope, GateVerdict, Scope,
    ScopeCriterion,
};
use evidence_gate::rules::RuleSet;
use evidence_gate::rules::evidence::EvidenceRules;
use evidence_gate::rules::gates::GateBook;
use evidence_gate::sandbox::{PathLimits, RelPath};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::common::Repo;
use crate::gate_check::{ATTEMPT, fixture_repo};

pub const GOAL: &str = "G001-rate-limit";

fn root(repo: &Repo) -> Root {
    let rules: EvidenceRules = RuleSet::embedded().unwrap().family().unwrap();
    Root::new(
        Dir::open_ambient_dir(repo.path(), cap_std::ambient_authority()).unwrap(),
        &rules,
    )
    .unwrap()
}

pub fn book() -> GateBook {
    GateBook::from_rules(&RuleSet::embedded().unwrap()).unwrap()
}

pub fn rel(s: &str) -> RelPath {
    RelPath::parse(s, PathLimits::default()).unwrap()
}

fn criteria(goal: &str, ids: &[(&str, &str)]) -> Vec<ScopeCriterion> {
    ids.iter()
        .map(|(c, s)| ScopeCriterion::new(goal, *c, *s))
        .collect()
}

pub fn g001() -> Vec<ScopeCriterion> {
    criteria(
        GOAL,
        &[("C001", "pass"), ("C002", "pass"), ("C003", "pass")],
    )
}

pub fn ctx(scope: Scope, criteria: Vec<ScopeCriterion>) -> GateContext {
    GateContext {
        scope,
        goal_id: GOAL.into(),
        scope_dir: rel(ATTEMPT),
        criteria,
        batch_alternative: None,
        checkpoint: true,
        plan_gate_rules: Some("lazycodex".into()),
    }
}

pub fn validate(repo: &Repo, rules: &str, doc: &[u8], scope: GateScope) -> GateOutcome {
    let book = book();
    gate::validate(&root(repo), book.get(rules).unwrap(), doc, &scope)
}

fn fixture(repo: &Repo, name: &str) -> Vec<u8> {
    std::fs::read(repo.join(name)).unwrap()
}

fn codes(o: &GateOutcome) -> Vec<Code> {
    o.findings().iter().map(|f| f.code).collect()
}

fn first_error(o: &GateOutcome) -> &gate::GateFinding {
    o.findings()
        .iter()
        .find(|f| f.severity == Severity::Error)
        .unwrap_or_else(|| panic!("no error in {:?}", o.findings()))
}

#[test]
fn valid_gate_passes_in_plan_context_with_roles_digest_and_normalised_copy() {
    let r = fixture_repo();
    let doc = fixture(&r, "lazycodex.json");
    let o = validate(
        &r,
        "lazycodex",
        &doc,
        GateScope::Plan(ctx(Scope::Goal, g001())),
    );
    assert_eq!(o.verdict(), GateVerdict::Pass, "{:?}", o.findings());
    assert!(o.findings().is_empty(), "{:?}", o.findings());
    assert!(o.rejection().is_none());
    assert_eq!(o.sha256(), evidence_gate::internals::sha256_hex(&doc));
    assert_eq!(
        o.scope(),
        &json!({"kind": "goal", "goalId": GOAL, "dir": ATTEMPT})
    );
    let roles: Vec<(String, FileRole)> = o
        .files()
        .iter()
        .map(|f| (f.path.rsplit('/').next().unwrap().to_owned(), f.role))
        .collect();
    assert_eq!(
        roles,
        [
            ("cli-transcript.txt".to_owned(), FileRole::GateArtifact),
            ("http-429.txt".to_owned(), FileRole::GateArtifact),
            ("code-review.md".to_owned(), FileRole::Report),
            ("gate-review.md".to_owned(), FileRole::Report),
            ("manual-qa.md".to_owned(), FileRole::Report),
        ]
    );
    let original: Value = serde_json::from_slice(&doc).unwrap();
    assert_eq!(o.normalized(), &original, "known keys, already trimmed");
}

#[test]
fn normalisation_trims_and_drops_unknown_keys() {
    let r = fixture_repo();
    let text = String::from_utf8(fixture(&r, "lazycodex.json"))
        .unwrap()
        .replace(
            "\"by\": \"lazycodex-code-reviewer\"",
            "\"by\": \"  lazycodex-code-reviewer \"",
        )
        .replace(
            "\"blockers\": [],\n    \"notes\"",
            "\"blockers\": [],\n    \"extra\": 1,\n    \"notes\"",
        );
    let o = validate(
        &r,
        "lazycodex",
        text.as_bytes(),
        GateScope::Plan(ctx(Scope::Goal, g001())),
    );
    assert_eq!(o.verdict(), GateVerdict::Pass, "{:?}", o.findings());
    assert_eq!(codes(&o), [Code::GateFieldUnknown]);
    assert_eq!(o.warnings().count(), 1);
    assert_eq!(
        o.normalized()["codeReview"]["by"],
        "lazycodex-code-reviewer"
    );
    assert!(o.normalized()["gateReview"].get("extra").is_none());
}

#[test]
fn scope_directory_is_the_attempt_directory_in_plan_context() {
    let r = fixture_repo();
    let plan = || GateScope::Plan(ctx(Scope::Goal, g001()));
    for name in ["earlier-attempt", "attempt-dir-itself", "sibling-prefix"] {
        let o = validate(
            &r,
            "lazycodex",
            &fixture(&r, &format!("hostile/{name}.json")),
            plan(),
        );
        assert_eq!(o.verdict(), GateVerdict::Fail, "{name}");
        let f = first_error(&o);
        assert_eq!(f.code, Code::GateArtifactOutsideScope, "{name}");
        assert_eq!(f.field, "manualQa.artifactRefs[0].path");
        assert!(
            f.message.ends_with(&format!(
                "must point to an artifact from the current attempt ({ATTEMPT})."
            )),
            "{}",
            f.message
        );
        assert_eq!(f.details.as_ref().unwrap()["scopeDir"], ATTEMPT);
    }
    // Without plan context the earlier attempt lies inside the evidence root,
    // and the attempt directory itself is a directory, not a file.
    let standalone = || GateScope::Standalone {
        dir: rel(".omo/evidence"),
    };
    let o = validate(
        &r,
        "lazycodex",
        &fixture(&r, "hostile/earlier-attempt.json"),
        standalone(),
    );
    assert_eq!(o.verdict(), GateVerdict::Pass);
    let o = validate(
        &r,
        "lazycodex",
        &fixture(&r, "hostile/attempt-dir-itself.json"),
        standalone(),
    );
    assert_eq!(first_error(&o).code, Code::NotRegularFile);
}

#[test]
fn criterion_references_resolve_in_scope() {
    let r = fixture_repo();
    let o = validate(
        &r,
        "lazycodex",
        &fixture(&r, "hostile/unknown-criterion-ref.json"),
        GateScope::Plan(ctx(Scope::Goal, g001())),
    );
    assert_eq!(o.verdict(), GateVerdict::Fail);
    let f = first_error(&o);
    assert_eq!(f.code, Code::GateCriterionRefUnknown);
    assert_eq!(f.field, "manualQa.surfaceEvidence[2].criterionRef");
    assert!(codes(&o).contains(&Code::GateCriterionUncovered));

    // A bare id is fine when one scope goal has it ...
    let ambiguous = fixture(&r, "hostile/ambiguous-criterion-ref.json");
    let o = validate(
        &r,
        "lazycodex",
        &ambiguous,
        GateScope::Plan(ctx(Scope::Goal, g001())),
    );
    assert_eq!(o.verdict(), GateVerdict::Pass, "{:?}", o.findings());
    // ... and ambiguous when several have it.
    let mut run = g001();
    run.extend(criteria("G002-audit-log", &[("C003", "pass")]));
    let run_ctx = ctx(Scope::Run, run);
    let o = validate(&r, "lazycodex", &ambiguous, GateScope::Plan(run_ctx));
    let f = first_error(&o);
    assert_eq!(f.code, Code::GateCriterionRefAmbiguous);
    assert!(
        f.message
            .contains("G001-rate-limit:C003, G002-audit-log:C003"),
        "{}",
        f.message
    );
    // The run has four criteria, the gate states three.
    assert!(codes(&o).contains(&Code::GateCoverageMismatch));

    // A superseded goal's criteria are left out by the caller: unknown.
    let o = validate(
        &r,
        "lazycodex",
        &fixture(&r, "lazycodex.json"),
        GateScope::Plan(ctx(
            Scope::Goal,
            criteria(GOAL, &[("C001", "pass"), ("C002", "pass")]),
        )),
    );
    assert_eq!(first_error(&o).code, Code::GateCriterionRefUnknown);
}

#[test]
fn every_scope_criterion_needs_a_passed_surface_row() {
    let r = fixture_repo();
    let o = validate(
        &r,
        "lazycodex",
        &fixture(&r, "hostile/uncovered-criterion.json"),
        GateScope::Plan(ctx(Scope::Goal, g001())),
    );
    assert_eq!(o.verdict(), GateVerdict::Fail);
    let f = first_error(&o);
    assert_eq!(f.code, Code::GateCriterionUncovered);
    assert_eq!(f.field, "manualQa.surfaceEvidence");
    assert_eq!(
        f.details.as_ref().unwrap()["uncovered"],
        json!(["G001-rate-limit:C003"])
    );
    // Adversarial cases do not count: C002 is only covered by an adversarial
    // case once its surface row points elsewhere.
    let text = String::from_utf8(fixture(&r, "lazycodex.json"))
        .unwrap()
        .replace(
            "\"criterionRef\": \"G001-rate-limit:C002\",\n        \"surface\"",
            "\"criterionRef\": \"G001-rate-limit:C001\",\n        \"surface\"",
        );
    let o = validate(
        &r,
        "lazycodex",
        text.as_bytes(),
        GateScope::Plan(ctx(Scope::Goal, g001())),
    );
    assert_eq!(
        first_error(&o).details.as_ref().unwrap()["uncovered"],
        json!(["G001-rate-limit:C002"])
    );
}

#[test]
fn coverage_is_recomputed_except_for_batches_at_a_checkpoint() {
    let r = fixture_repo();
    let doc = fixture(&r, "lazycodex.json");
    let mut four = g001();
    four.push(ScopeCriterion::new(GOAL, "C004", "pending"));
    let o = validate(
        &r,
        "lazycodex",
        &doc,
        GateScope::Plan(ctx(Scope::Goal, four.clone())),
    );
    let f = o
        .findings()
        .iter()
        .find(|f| f.code == Code::GateCoverageMismatch)
        .unwrap();
    assert_eq!(
        f.details.as_ref().unwrap()["expected"],
        json!({"totalCriteria": 4, "passCount": 3})
    );
    assert_eq!(
        f.details.as_ref().unwrap()["actual"],
        json!({"totalCriteria": 3, "passCount": 3})
    );
    assert_eq!(f.details.as_ref().unwrap()["scope"], "goal");
    let batch = Scope::Batch { id: "VB001".into() };
    let o = validate(
        &r,
        "lazycodex",
        &doc,
        GateScope::Plan(ctx(batch.clone(), four.clone())),
    );
    assert!(
        !codes(&o).contains(&Code::GateCoverageMismatch),
        "the batch cross-check owns it"
    );
    assert!(codes(&o).contains(&Code::GateCriterionUncovered));
    let mut off_checkpoint = ctx(batch, four);
    off_checkpoint.checkpoint = false;
    let o = validate(&r, "lazycodex", &doc, GateScope::Plan(off_checkpoint));
    assert!(
        codes(&o).contains(&Code::GateCoverageMismatch),
        "gate check reports it"
    );
    assert_eq!(o.scope()["batchId"], "VB001");
}

#[test]
fn a_run_final_goal_closing_a_batch_may_state_the_batch_counts() {
    let r = fixture_repo();
    let doc = fixture(&r, "lazycodex.json");
    let mut run = g001();
    run.extend(criteria(
        "G002-audit-log",
        &[("C001", "pass"), ("C002", "pass")],
    ));
    let mut c = ctx(Scope::Run, run);
    c.batch_alternative = Some(BatchAlternative {
        batch_id: "VB001".into(),
        criteria: g001(),
    });
    let o = validate(&r, "lazycodex", &doc, GateScope::Plan(c.clone()));
    assert_eq!(o.verdict(), GateVerdict::Pass, "{:?}", o.findings());
    // Counts matching neither the run (5/5) nor the batch (3/3).
    let text = String::from_utf8(doc)
        .unwrap()
        .replace("\"totalCriteria\": 3", "\"totalCriteria\": 4")
        .replace("\"passCount\": 3", "\"passCount\": 4");
    let o = validate(&r, "lazycodex", text.as_bytes(), GateScope::Plan(c));
    let f = o
        .findings()
        .iter()
        .find(|f| f.code == Code::GateCoverageMismatch)
        .unwrap();
    let d = f.details.as_ref().unwrap();
    assert_eq!(d["expected"], json!({"totalCriteria": 5, "passCount": 5}));
    assert_eq!(
        d["alternative"]["expected"],
        json!({"totalCriteria": 3, "passCount": 3})
    );
    assert!(
        f.message.contains("or 3/3 for batch VB001"),
        "{}",
        f.message
    );
}

#[test]
fn rules_other_than_the_plans_are_a_warning() {
    let r = fixture_repo();
    let mut c = ctx(Scope::Goal, g001());
    c.plan_gate_rules = Some("omo-senpi".into());
    let o = validate(
        &r,
        "lazycodex",
        &fixture(&r, "lazycodex.json"),
        GateScope::Plan(c),
    );
    assert_eq!(o.verdict(), GateVerdict::Pass);
    assert_eq!(codes(&o), [Code::GateRulesNotPlan]);
    assert_eq!(o.findings()[0].severity, Severity::Warning);
}

#[test]
fn the_checkpoint_mapping_keeps_the_first_error_and_every_finding() {
    let r = fixture_repo();
    let o = validate(
        &r,
        "lazycodex",
        &fixture(&r, "hostile/many-errors.json"),
        GateScope::Plan(ctx(Scope::Goal, g001())),
    );
    let rej = o.rejection().unwrap();
    let first = first_error(&o);
    assert_eq!(rej.message, first.message);
    assert_eq!(rej.field, "criteriaCoverage.totalCriteria");
    assert_eq!(rej.code, Code::GateCoverageNotInteger);
    assert_eq!(rej.details["field"], "criteriaCoverage.totalCriteria");
    assert_eq!(rej.details["code"], "GATE_COVERAGE_NOT_INTEGER");
    assert_eq!(
        rej.details["findings"].as_array().unwrap().len(),
        o.findings().len()
    );
    assert!(o.findings().len() >= 3);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let r = Repo::new();
        let o = validate(&r, "lazycodex", &bytes, GateScope::Standalone { dir: rel(".omo/evidence") });
        prop_assert_ne!(o.verdict(), GateVerdict::Pass);
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_values_in_known_places_never_panic(
        pointer in prop::sample::select(vec![
            "/codeReview", "/codeReview/by", "/codeReview/blockers", "/manualQa/artifactRefs",
            "/manualQa/artifactRefs/0", "/manualQa/artifactRefs/0/path", "/manualQa/surfaceEvidence/0",
            "/manualQa/surfaceEvidence/1/artifactRefs", "/manualQa/adversarialCases/0/verdict",
            "/iteration/fullRerun", "/criteriaCoverage/totalCriteria", "/criteriaCoverage",
            "/gateReview/notes", "/manualQa/reportPath",
        ]),
        value in arbitrary_json(),
        family in prop::sample::select(vec!["lazycodex", "omo-senpi"]),
    ) {
        let r = fixture_repo();
        let mut doc: Value = serde_json::from_slice(&fixture(&r, "lazycodex.json")).unwrap();
        if let Some(slot) = doc.pointer_mut(pointer) {
            *slot = value;
        }
        let bytes = serde_json::to_vec(&doc).unwrap();
        let o = validate(&r, family, &bytes, GateScope::Plan(ctx(Scope::Goal, g001())));
        if o.verdict() == GateVerdict::Pass {
            prop_assert!(o.findings().iter().all(|f| f.severity != Severity::Error));
        } else {
            prop_assert!(o.rejection().is_some());
        }
    }
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[ -~]{0,12}".prop_map(Value::String),
        Just(json!("<replace:x>")),
        Just(json!(
            ".omo/evidence/ulw/demo/G001-rate-limit/a1/code-review.md"
        )),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

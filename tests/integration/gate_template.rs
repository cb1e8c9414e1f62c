//! The `checkpoint --print-template` builder (§9): shape per rule file and
//! plan, and the regression that an unfilled template always fails while a
//! filled one passes.

use evidence_gate::evidence::Code;
use evidence_gate::gate::template::{GateTemplate, HostGoalInput, TemplateInput, build_template};
use evidence_gate::gate::{GateScope, GateVerdict, Scope, ScopeCriterion};
use serde_json::{Value, json};

use crate::gate_check::{ATTEMPT, fixture_repo};
use crate::gate_lib::{GOAL, book, ctx, g001, rel, validate};

fn fill(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                match child {
                    Value::String(s) if s.starts_with("<replace:") && k == "status" => {
                        *s = "passed".into();
                    }
                    _ => fill(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(fill),
        Value::String(s) if s.starts_with("<replace:") => *s = "Filled in by the test.".into(),
        _ => {}
    }
}

fn template(rules: &str, scope: &Scope, crit: &[ScopeCriterion], base: &str) -> GateTemplate {
    let book = book();
    let base = rel(base);
    build_template(&TemplateInput {
        rules: book.get(rules).unwrap(),
        base_dir: &base,
        scope,
        goal_id: Some(GOAL),
        criteria: crit,
        host_goal: HostGoalInput {
            objective: Some("Ship G001"),
            status: "complete",
        },
    })
}

#[test]
fn an_unfilled_template_always_fails_and_a_filled_one_passes() {
    let r = fixture_repo();
    r.write(&format!("{ATTEMPT}/cli-transcript.txt"), "$ demo\nok\n");
    for rules in ["lazycodex", "omo-senpi"] {
        let t = template(rules, &Scope::Goal, &g001(), ATTEMPT);
        let mut c = ctx(Scope::Goal, g001());
        c.plan_gate_rules = Some(rules.into());
        let doc = serde_json::to_vec_pretty(&t.quality_gate).unwrap();
        let o = validate(&r, rules, &doc, GateScope::Plan(c.clone()));
        assert_eq!(o.verdict(), GateVerdict::Fail, "{rules}");
        assert!(
            o.findings()
                .iter()
                .all(|f| f.code == Code::GateFieldPlaceholder),
            "{rules}: only placeholders fail: {:?}",
            o.findings()
        );
        let mut filled = t.quality_gate.clone();
        fill(&mut filled);
        let o = validate(
            &r,
            rules,
            &serde_json::to_vec(&filled).unwrap(),
            GateScope::Plan(c),
        );
        assert_eq!(
            o.verdict(),
            GateVerdict::Pass,
            "{rules}: {:?}",
            o.findings()
        );
    }
    let u = ".omagy/evidence/ultragoal/demo/G001-rate-limit/a1";
    let t = template("ultragoal", &Scope::Goal, &g001(), u);
    let mut c = ctx(Scope::Goal, g001());
    c.scope_dir = rel(u);
    c.plan_gate_rules = Some("ultragoal".into());
    let o = validate(
        &r,
        "ultragoal",
        &serde_json::to_vec(&t.quality_gate).unwrap(),
        GateScope::Plan(c.clone()),
    );
    assert_eq!(o.verdict(), GateVerdict::Fail);
    let mut filled = t.quality_gate.clone();
    fill(&mut filled);
    let o = validate(
        &r,
        "ultragoal",
        &serde_json::to_vec(&filled).unwrap(),
        GateScope::Plan(c),
    );
    assert_eq!(o.verdict(), GateVerdict::Pass, "{:?}", o.findings());
}

#[test]
fn template_shape_follows_the_rules_and_the_plan() {
    let mut crit = g001();
    crit[2].status = "pending".into();
    let t = template(
        "lazycodex",
        &Scope::Batch { id: "VB001".into() },
        &crit,
        ATTEMPT,
    );
    let q = &t.quality_gate;
    let keys: Vec<&String> = q.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "codeReview",
            "manualQa",
            "gateReview",
            "iteration",
            "criteriaCoverage"
        ]
    );
    assert_eq!(q["codeReview"]["by"], "lazycodex-code-reviewer");
    assert_eq!(
        q["codeReview"]["reportPath"],
        format!("{ATTEMPT}/code-review.md")
    );
    assert_eq!(
        q["gateReview"]["reportPath"],
        format!("{ATTEMPT}/gate-review.md")
    );
    assert_eq!(
        q["manualQa"]["reportPath"],
        format!("{ATTEMPT}/manual-qa.md")
    );
    assert_eq!(
        q["manualQa"]["artifactRefs"][0]["path"],
        format!("{ATTEMPT}/cli-transcript.txt")
    );
    let refs: Vec<&str> = q["manualQa"]["surfaceEvidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["criterionRef"].as_str().unwrap())
        .collect();
    assert_eq!(
        refs,
        [
            "G001-rate-limit:C001",
            "G001-rate-limit:C002",
            "G001-rate-limit:C003"
        ]
    );
    assert_eq!(q["criteriaCoverage"]["totalCriteria"], 3);
    assert_eq!(
        q["criteriaCoverage"]["passCount"], 2,
        "printed early: pass < total"
    );
    assert_eq!(
        t.scope,
        json!({"kind": "batch", "goalId": GOAL, "batchId": "VB001"})
    );
    assert_eq!(
        t.criteria[2],
        json!({"ref": "G001-rate-limit:C003", "status": "pending"})
    );
    assert_eq!(t.rules, "lazycodex");
    assert_eq!(
        t.host_goal,
        json!({"goal": {"objective": "Ship G001", "status": "complete"}})
    );

    let t = template("omo-senpi", &Scope::Goal, &g001(), ATTEMPT);
    let keys: Vec<&String> = t.quality_gate.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["manualQa", "gateReview", "iteration", "criteriaCoverage"]
    );
    assert_eq!(t.quality_gate["manualQa"]["by"], "main-session");
    assert_eq!(t.quality_gate["gateReview"]["by"], "category:deep");

    let t = template("ultragoal", &Scope::Run, &[], ".omagy/evidence");
    let keys: Vec<&String> = t.quality_gate.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["cleanup", "verification", "codeReview"]);
    assert_eq!(
        t.quality_gate["cleanup"]["status"],
        "<replace:passed or noop>"
    );
    assert_eq!(t.quality_gate["codeReview"]["architectStatus"], "CLEAR");
    assert_eq!(
        t.quality_gate["codeReview"]["reportPath"],
        ".omagy/evidence/code-review.md"
    );

    let book = book();
    let base = rel(".omo/evidence");
    let t = build_template(&TemplateInput {
        rules: book.get("lazycodex").unwrap(),
        base_dir: &base,
        scope: &Scope::Goal,
        goal_id: None,
        criteria: &[],
        host_goal: HostGoalInput {
            objective: None,
            status: "active",
        },
    });
    assert_eq!(
        t.host_goal["goal"]["objective"],
        "<replace:host goal objective>"
    );
    assert_eq!(t.host_goal["goal"]["status"], "active");
    assert_eq!(t.scope, json!({"kind": "goal"}));
    assert_eq!(
        t.quality_gate["manualQa"]["surfaceEvidence"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn one_naming_convention_for_template_preflight_and_roles() {
    let book = book();
    let common = book.common();
    assert_eq!(common.report_files.code_review, "code-review.md");
    assert_eq!(common.report_files.manual_qa, "manual-qa.md");
    assert_eq!(common.report_files.gate_review, "gate-review.md");
    assert_eq!(
        common.legacy_report_files.code_review_for(GOAL),
        "G001-rate-limit-code-review.md"
    );
    assert_eq!(
        common.legacy_report_files.manual_qa_for(GOAL),
        "G001-rate-limit-manual-qa.md"
    );
    assert_eq!(
        book.gate_reviewer_names(),
        ["lazycodex-gate-reviewer", "omo-senpi-gate-reviewer"]
    );
}

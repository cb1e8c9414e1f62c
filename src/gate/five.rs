//! The five-section gate (lazycodex / omo-senpi, docs/gates.md#qg-3), validated in the order
//! of docs/gates.md#qg-7: steps 2–12 keep the anchor's order (docs/differences.md#r-6), so the first error
//! of an anchor-era document is the one the anchor reported.

use serde_json::{Map, Value, json};

use super::artifacts::{ArtifactIndex, artifact_refs, row_refs};
use super::check::{Checker, at};
use super::context::GateScope;
use super::number::{self, CountToken};
use super::outcome::{FileRole, GateFinding};
use super::plan::{self, RefRow, Rows};
use super::shape::Shape;
use crate::evidence::Code;
use crate::rules::gates::{CommonRules, FiveSectionRules, Section};

/// The one accepted review recommendation (docs/differences.md#r-6).
const APPROVE: &str = "APPROVE";
/// The one accepted QA / iteration status.
const PASSED: &str = "passed";

/// Runs steps 2–16 on a document that is a JSON object (step 1 passed).
pub(super) fn validate(
    ck: &mut Checker<'_>,
    rules: &FiveSectionRules,
    common: &CommonRules,
    doc: &Map<String, Value>,
    text: &str,
    scope: &GateScope,
) {
    let approve = [APPROVE.to_owned()];
    let passed = [PASSED.to_owned()];
    // Step 2: sections.
    for s in Section::ALL {
        let required = rules.required_sections.contains(&s);
        match doc.get(s.key()) {
            Some(Value::Object(_)) => {}
            None | Some(Value::Null) if !required => {}
            Some(v) if !required => ck.not_an_object(s.key(), v),
            _ => ck.section_missing(s.key()),
        }
    }
    let section = |s: Section| doc.get(s.key()).and_then(Value::as_object);

    // Step 3: counts.
    let counts = section(Section::CriteriaCoverage).and_then(|cov| coverage_counts(ck, cov, text));

    // Steps 4-6: manual QA lists.
    let mut rows = Rows::default();
    if let Some(mqa) = section(Section::ManualQa) {
        let artifacts = artifact_refs(ck, common, mqa);
        surface_rows(ck, common, mqa, &artifacts, &mut rows.surface);
        adversarial_rows(ck, mqa, &artifacts, &mut rows.adversarial);
    }

    // Step 7: report paths, texts first, then scope and file checks.
    let mut report_texts: Vec<(String, &str)> = Vec::new();
    for s in [Section::CodeReview, Section::GateReview] {
        if let Some(obj) = section(s)
            && let Some(p) = ck.text(obj, s.key(), "reportPath")
        {
            report_texts.push((at(s.key(), "reportPath"), p));
        }
    }
    if let Some(mqa) = section(Section::ManualQa)
        && let Some(Some(p)) = ck.optional_text(mqa, "manualQa", "reportPath")
    {
        report_texts.push(("manualQa.reportPath".to_owned(), p));
    }
    let mut reports = Vec::new();
    for (field, p) in &report_texts {
        if let Some(job) = ck.path(p, field, FileRole::Report) {
            reports.push((job, field.clone()));
        }
    }

    // Step 8: code review.
    if let Some(cr) = section(Section::CodeReview) {
        ck.role(cr, "codeReview", &rules.acceptors.code_review);
        ck.literal(cr, "codeReview", "recommendation", &approve);
        let statuses = &rules.code_quality_statuses;
        if let Some(status) = ck.literal(cr, "codeReview", "codeQualityStatus", statuses)
            && statuses.first().is_some_and(|clean| clean != status)
        {
            ck.push(
                GateFinding::new(
                    Code::GateCodeQualityWatch,
                    "codeReview.codeQualityStatus",
                    format!(
                        "codeReview.codeQualityStatus is {status}: the gate passes, and the code review's evidence must be surfaced to the user."
                    ),
                )
                .with_details(json!({"field": "codeReview.codeQualityStatus", "actual": status})),
            );
        }
        ck.text(cr, "codeReview", "evidence");
        ck.blockers(cr, "codeReview", true);
    }
    // Step 9: manual QA.
    if let Some(mqa) = section(Section::ManualQa) {
        ck.role(mqa, "manualQa", &rules.acceptors.manual_qa);
        ck.literal(mqa, "manualQa", "status", &passed);
        ck.text(mqa, "manualQa", "evidence");
    }
    // Step 10: gate review.
    if let Some(gr) = section(Section::GateReview) {
        ck.role(gr, "gateReview", &rules.acceptors.gate_review);
        ck.literal(gr, "gateReview", "recommendation", &approve);
        ck.text(gr, "gateReview", "evidence");
        ck.blockers(gr, "gateReview", true);
        ck.text_array(gr, "gateReview", "notes", false);
    }
    // Step 11: iteration.
    if let Some(it) = section(Section::Iteration) {
        full_rerun(ck, it);
        ck.literal(it, "iteration", "status", &passed);
        ck.text_array(it, "iteration", "rerunCommands", true);
        ck.text(it, "iteration", "evidence");
    }
    // Step 12: coverage texts.
    if let Some(cov) = section(Section::CriteriaCoverage) {
        for key in ["originalIntent", "desiredOutcome", "userOutcomeReview"] {
            ck.text(cov, "criteriaCoverage", key);
        }
        ck.text_array(cov, "criteriaCoverage", "adversarialClassesCovered", true);
    }

    // Steps 13-15: plan context.
    match scope.plan() {
        Some(ctx) => plan::check(ck, ctx, rules.coverage, &rows, counts),
        None => ck.push(plan::skipped(scope)),
    }

    // Step 16: report verdict lines.
    if rules.require_report_verdict_line {
        for (job, field) in reports {
            let expected = match field.split('.').next() {
                Some("manualQa") => Some(PASSED.to_owned()),
                Some(key) => doc
                    .get(key)
                    .and_then(|s| s.get("recommendation"))
                    .and_then(Value::as_str)
                    .map(|r| r.trim().to_owned()),
                None => None,
            };
            if let Some(expected) = expected {
                ck.verdict_line(job, &field, expected);
            }
        }
    }
}

/// Step 3. Returns `(totalCriteria, passCount)` when both are valid
/// integers.
fn coverage_counts(
    ck: &mut Checker<'_>,
    cov: &Map<String, Value>,
    text: &str,
) -> Option<(u64, u64)> {
    let keys = ["totalCriteria", "passCount"];
    let mut numeric = [false; 2];
    for (i, key) in keys.iter().enumerate() {
        let field = at("criteriaCoverage", key);
        if matches!(cov.get(*key), Some(Value::Number(_))) {
            numeric[i] = true;
        } else {
            ck.push(
                GateFinding::new(
                    Code::GateFieldType,
                    &field,
                    format!("Final quality gate requires numeric {field}."),
                )
                .with_details(json!({"field": field})),
            );
        }
    }
    let mut values = [None; 2];
    for (i, key) in keys.iter().enumerate() {
        if !numeric[i] {
            continue;
        }
        let field = at("criteriaCoverage", key);
        let raw = number::raw_number(text, &["criteriaCoverage", key]).unwrap_or("?");
        let why = match number::classify(raw) {
            CountToken::Integer(n) => {
                values[i] = Some(n);
                continue;
            }
            CountToken::NotInteger => "written without fraction or exponent",
            CountToken::Negative => "at least 0",
            CountToken::TooLarge => "within range",
        };
        ck.push(
            GateFinding::new(
                Code::GateCoverageNotInteger,
                &field,
                format!("{field} must be a non-negative integer ({why}), not {raw}."),
            )
            .with_details(json!({"field": field, "actual": raw})),
        );
    }
    if values[0] == Some(0) {
        ck.push(
            GateFinding::new(
                Code::GateCoverageEmpty,
                "criteriaCoverage.totalCriteria",
                "criteriaCoverage.totalCriteria must be at least 1, not 0: a gate that covers no criteria proves nothing.",
            )
            .with_details(json!({"field": "criteriaCoverage.totalCriteria", "actual": 0})),
        );
    }
    let (Some(total), Some(pass)) = (values[0], values[1]) else {
        return None;
    };
    let details =
        json!({"field": "criteriaCoverage.passCount", "totalCriteria": total, "passCount": pass});
    if pass < total {
        ck.push(
            GateFinding::new(
                Code::GateCoverageIncomplete,
                "criteriaCoverage.passCount",
                "criteriaCoverage.passCount must cover totalCriteria.",
            )
            .with_details(details),
        );
    } else if pass > total {
        ck.push(
            GateFinding::new(
                Code::GateCoverageInconsistent,
                "criteriaCoverage.passCount",
                format!(
                    "criteriaCoverage.passCount must equal criteriaCoverage.totalCriteria ({total}), not exceed it ({pass})."
                ),
            )
            .with_details(details),
        );
    }
    Some((total, pass))
}

fn surface_rows(
    ck: &mut Checker<'_>,
    common: &CommonRules,
    mqa: &Map<String, Value>,
    artifacts: &ArtifactIndex,
    out: &mut Vec<RefRow>,
) {
    let Some(items) = ck.array(mqa, "manualQa", "surfaceEvidence") else {
        return;
    };
    for (i, v) in items.iter().enumerate() {
        let field = format!("manualQa.surfaceEvidence[{i}]");
        let Some(obj) = ck.element(v, &field) else {
            continue;
        };
        let mut surface = ck.text(obj, &field, "surface");
        if let Some(s) = surface
            && !common.qa_surfaces.iter().any(|q| q == s)
        {
            let sf = at(&field, "surface");
            ck.push(
                GateFinding::new(
                    Code::GateSurfaceUnsupported,
                    &sf,
                    format!("{sf} must be a supported manual QA surface."),
                )
                .with_details(json!({"field": sf, "actual": s, "expected": common.qa_surfaces})),
            );
            surface = None;
        }
        for (j, kind) in row_refs(ck, obj, &field, artifacts, true) {
            let (Some(s), Some(kind)) = (surface, kind) else {
                continue;
            };
            let allowed = common
                .surface_artifact_kinds
                .get(s)
                .cloned()
                .unwrap_or_default();
            if !allowed.contains(&kind) {
                ck.push(
                    GateFinding::new(
                        Code::GateSurfaceArtifactIncompatible,
                        "manualQa.surfaceEvidence",
                        format!("manualQa.surfaceEvidence {s} artifact {kind} is incompatible."),
                    )
                    .with_details(json!({
                        "field": "manualQa.surfaceEvidence",
                        "at": format!("{field}.artifactRefs[{j}]"),
                        "surface": s,
                        "kind": kind,
                        "allowed": allowed,
                    })),
                );
            }
        }
        ck.text(obj, &field, "id");
        let reference = ck.text(obj, &field, "criterionRef");
        ck.text(obj, &field, "invocation");
        let vf = at(&field, "verdict");
        let passed = match obj.get("verdict") {
            Some(Value::String(s)) if s.trim() == PASSED => true,
            Some(Value::String(s)) => {
                let message = if s.trim() == "not_applicable" {
                    format!("{vf} must not be not_applicable.")
                } else {
                    format!("{vf} must be passed.")
                };
                ck.push(
                    GateFinding::new(Code::GateVerdictInvalid, &vf, message)
                        .with_details(json!({"field": vf, "actual": s})),
                );
                false
            }
            None | Some(Value::Null) => {
                ck.push(
                    GateFinding::new(
                        Code::GateFieldRequired,
                        &vf,
                        format!("{vf} must be passed."),
                    )
                    .with_details(json!({"field": vf})),
                );
                false
            }
            Some(_) => {
                ck.push(
                    GateFinding::new(Code::GateFieldType, &vf, format!("{vf} must be passed."))
                        .with_details(json!({"field": vf})),
                );
                false
            }
        };
        if let Some(r) = reference {
            out.push(RefRow {
                field: at(&field, "criterionRef"),
                reference: r.to_owned(),
                passed,
            });
        }
    }
}

fn adversarial_rows(
    ck: &mut Checker<'_>,
    mqa: &Map<String, Value>,
    artifacts: &ArtifactIndex,
    out: &mut Vec<RefRow>,
) {
    let Some(items) = ck.array(mqa, "manualQa", "adversarialCases") else {
        return;
    };
    for (i, v) in items.iter().enumerate() {
        let field = format!("manualQa.adversarialCases[{i}]");
        let Some(obj) = ck.element(v, &field) else {
            continue;
        };
        row_refs(ck, obj, &field, artifacts, false);
        let vf = at(&field, "verdict");
        let invalid = format!("{vf} must be passed or not_applicable with a reason.");
        match obj.get("verdict").and_then(Value::as_str).map(str::trim) {
            Some(PASSED) => {
                ck.optional_text(obj, &field, "reason");
            }
            Some("not_applicable") => match obj.get("reason") {
                Some(Value::String(s)) if !crate::text::is_blank(s) => {
                    ck.text(obj, &field, "reason");
                }
                _ => ck.push(
                    GateFinding::new(Code::GateVerdictInvalid, &vf, invalid)
                        .with_details(json!({"field": vf, "actual": "not_applicable"})),
                ),
            },
            _ => ck.push(
                GateFinding::new(Code::GateVerdictInvalid, &vf, invalid)
                    .with_details(json!({"field": vf, "actual": obj.get("verdict")})),
            ),
        }
        ck.text(obj, &field, "id");
        let reference = ck.text(obj, &field, "criterionRef");
        ck.text(obj, &field, "scenario");
        ck.text(obj, &field, "expectedBehavior");
        if let Some(r) = reference {
            out.push(RefRow {
                field: at(&field, "criterionRef"),
                reference: r.to_owned(),
                passed: false,
            });
        }
    }
}

fn full_rerun(ck: &mut Checker<'_>, it: &Map<String, Value>) {
    let field = "iteration.fullRerun";
    let message = "iteration.fullRerun must be true.";
    let code = match it.get("fullRerun") {
        Some(Value::Bool(true)) => return,
        Some(Value::Bool(false)) => Code::GateValueMismatch,
        None | Some(Value::Null) => Code::GateFieldRequired,
        Some(_) => Code::GateFieldType,
    };
    ck.push(GateFinding::new(code, field, message).with_details(json!({"field": field})));
}

/// Every key the five-section family defines.
pub(super) fn shape() -> Shape {
    Shape::object([
        (
            "codeReview",
            Shape::leaves([
                "by",
                "recommendation",
                "codeQualityStatus",
                "reportPath",
                "evidence",
                "blockers",
            ]),
        ),
        (
            "manualQa",
            Shape::object([
                ("by", Shape::Leaf),
                ("status", Shape::Leaf),
                ("evidence", Shape::Leaf),
                ("reportPath", Shape::Leaf),
                (
                    "artifactRefs",
                    Shape::items_of(["id", "kind", "description", "path"]),
                ),
                (
                    "surfaceEvidence",
                    Shape::items_of([
                        "id",
                        "criterionRef",
                        "surface",
                        "invocation",
                        "verdict",
                        "artifactRefs",
                    ]),
                ),
                (
                    "adversarialCases",
                    Shape::items_of([
                        "id",
                        "criterionRef",
                        "scenario",
                        "expectedBehavior",
                        "verdict",
                        "reason",
                        "artifactRefs",
                    ]),
                ),
            ]),
        ),
        (
            "gateReview",
            Shape::leaves([
                "by",
                "recommendation",
                "reportPath",
                "evidence",
                "blockers",
                "notes",
            ]),
        ),
        (
            "iteration",
            Shape::leaves(["fullRerun", "status", "rerunCommands", "evidence"]),
        ),
        (
            "criteriaCoverage",
            Shape::leaves([
                "totalCriteria",
                "passCount",
                "originalIntent",
                "desiredOutcome",
                "userOutcomeReview",
                "adversarialClassesCovered",
            ]),
        ),
    ])
}

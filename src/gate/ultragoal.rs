//! The Ultragoal final gate (docs/gates.md#qg-4): cleanup, verification and code review, in
//! the order of docs/gates.md#qg-7.

use serde_json::{Map, Value, json};

use super::artifacts::artifact_list;
use super::check::{Checker, at};
use super::context::GateScope;
use super::outcome::{FileRole, GateFinding};
use super::plan;
use super::shape::Shape;
use crate::evidence::Code;
use crate::rules::gates::{CommonRules, UltragoalRules};

/// Runs steps 2–6 on a document that is a JSON object.
pub(super) fn validate(
    ck: &mut Checker<'_>,
    rules: &UltragoalRules,
    common: &CommonRules,
    doc: &Map<String, Value>,
    scope: &GateScope,
) {
    // Step 2: cleanup sections.
    let mut present: Vec<(&str, &Map<String, Value>)> = Vec::new();
    for name in &rules.cleanup.section_names {
        match doc.get(name) {
            Some(Value::Object(obj)) => present.push((name, obj)),
            None | Some(Value::Null) => {}
            Some(v) => ck.not_an_object(name, v),
        }
    }
    if present.is_empty() {
        let first = rules.cleanup.section_names[0].as_str();
        ck.section_missing(first);
    }
    for (name, obj) in &present {
        ck.literal(obj, name, "status", &rules.cleanup.status_values);
        ck.text(obj, name, "evidence");
    }
    // Step 3: verification.
    let verification = section(ck, doc, "verification");
    if let Some(v) = verification {
        ck.literal(
            v,
            "verification",
            "status",
            &rules.verification.status_values,
        );
        ck.text_array(
            v,
            "verification",
            "commands",
            rules.verification.require_commands,
        );
        ck.text(v, "verification", "evidence");
    }
    // Step 4: code review.
    let review = section(ck, doc, "codeReview");
    if let Some(cr) = review {
        let r = &rules.code_review;
        ck.literal(cr, "codeReview", "recommendation", &r.recommendations);
        let fields: Vec<&String> = r
            .status_fields
            .iter()
            .filter(|f| !matches!(cr.get(f.as_str()), None | Some(Value::Null)))
            .collect();
        if fields.is_empty() {
            let names: Vec<String> = r
                .status_fields
                .iter()
                .map(|f| at("codeReview", f))
                .collect();
            let field = names[0].clone();
            ck.push(
                GateFinding::new(
                    Code::GateFieldRequired,
                    &field,
                    format!(
                        "Final quality gate requires {}.",
                        super::check::one_of(&names)
                    ),
                )
                .with_details(json!({"field": field, "expected": names})),
            );
        }
        for f in fields {
            ck.literal(cr, "codeReview", f, &r.status_values);
        }
        ck.text(cr, "codeReview", "evidence");
        ck.blockers(cr, "codeReview", false);
    }
    // Step 5: signers, where the rules name acceptors.
    let mut sections: Vec<(&str, &Map<String, Value>)> = present.clone();
    if let Some(v) = verification {
        sections.push(("verification", v));
    }
    if let Some(cr) = review {
        sections.push(("codeReview", cr));
    }
    for (name, obj) in &sections {
        if let Some(acceptors) = rules.acceptors.get(*name) {
            ck.role(obj, name, acceptors);
        }
    }
    // Step 6: report paths, then artifacts.
    for (name, obj) in &sections {
        let report = if rules.require_report_paths {
            ck.text(obj, name, "reportPath")
        } else {
            ck.optional_text(obj, name, "reportPath").flatten()
        };
        if let Some(p) = report {
            ck.path(p, &at(name, "reportPath"), FileRole::Report);
        }
    }
    match doc.get("artifactRefs") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            artifact_list(ck, common, items, "artifactRefs");
        }
        Some(other) => ck.push(
            GateFinding::new(
                Code::GateFieldType,
                "artifactRefs",
                format!(
                    "artifactRefs must be an array, not {}.",
                    super::check::type_name(other)
                ),
            )
            .with_details(json!({"field": "artifactRefs"})),
        ),
    }
    if scope.plan().is_none() {
        ck.push(plan::skipped(scope));
    }
}

fn section<'v>(
    ck: &mut Checker<'_>,
    doc: &'v Map<String, Value>,
    name: &str,
) -> Option<&'v Map<String, Value>> {
    match doc.get(name) {
        Some(Value::Object(obj)) => Some(obj),
        _ => {
            ck.section_missing(name);
            None
        }
    }
}

/// Every key the ultragoal family defines under these rules.
pub(super) fn shape(rules: &UltragoalRules) -> Shape {
    let mut top: Vec<(&str, Shape)> = rules
        .cleanup
        .section_names
        .iter()
        .map(|n| {
            (
                n.as_str(),
                Shape::leaves(["status", "evidence", "by", "reportPath"]),
            )
        })
        .collect();
    top.push((
        "verification",
        Shape::leaves(["status", "commands", "evidence", "by", "reportPath"]),
    ));
    let mut review = vec!["recommendation", "evidence", "blockers", "by", "reportPath"];
    review.extend(rules.code_review.status_fields.iter().map(String::as_str));
    top.push(("codeReview", Shape::leaves(review)));
    top.push((
        "artifactRefs",
        Shape::items_of(["id", "kind", "description", "path"]),
    ));
    Shape::object(top)
}

//! The Ultragoal final gate (docs/gates.md#qg-4): cleanup, verification and code review, in
//! the order of docs/gates.md#qg-7.

use serde_json::{Map, Value, json};

use super::artifacts::artifact_list;
use super::check::{Checker, at};
use super::context::GateScope;
use super::outcome::{FileRole, GateFinding};
use super::plan;
use super::shape::Shape;
use crate::finding::Code;
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
        independent_review(ck, rules, cr);
    }
    if rules.architecture_invariant_gate {
        invariant_gate(ck, doc);
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

/// `codeReview.independentReview`: one object per configured member, each
/// with the member's `agentRole` and non-empty `evidence`.
fn independent_review(ck: &mut Checker<'_>, rules: &UltragoalRules, cr: &Map<String, Value>) {
    if rules.independent_review.is_empty() {
        return;
    }
    let prefix = "codeReview.independentReview";
    let ir = match cr.get("independentReview") {
        Some(Value::Object(o)) => o,
        None | Some(Value::Null) => {
            ck.section_missing(prefix);
            return;
        }
        Some(v) => {
            ck.not_an_object(prefix, v);
            return;
        }
    };
    for (member, role) in &rules.independent_review {
        let field = at(prefix, member);
        match ir.get(member.as_str()) {
            Some(Value::Object(o)) => {
                ck.literal(o, &field, "agentRole", std::slice::from_ref(role));
                ck.text(o, &field, "evidence");
            }
            None | Some(Value::Null) => ck.section_missing(&field),
            Some(v) => ck.not_an_object(&field, v),
        }
    }
}

/// `architectureInvariantGate`: status `passed`, non-empty `sourceArtifacts`
/// and `evidence`, and `invariants` whose every element is proved, has no
/// blockers, carries implementation, test and review evidence, and names a
/// source that references one of the source artifacts.
fn invariant_gate(ck: &mut Checker<'_>, doc: &Map<String, Value>) {
    let name = crate::rules::gates::ARCHITECTURE_INVARIANT_GATE;
    let Some(g) = section(ck, doc, name) else {
        return;
    };
    ck.literal(g, name, "status", &["passed".to_owned()]);
    let sources: Vec<String> = ck
        .text_array(g, name, "sourceArtifacts", true)
        .unwrap_or_default()
        .into_iter()
        .map(|(_, s)| s.to_owned())
        .collect();
    ck.text(g, name, "evidence");
    let field = at(name, "invariants");
    let Some(items) = ck.array(g, name, "invariants") else {
        return;
    };
    for (i, item) in items.iter().enumerate() {
        let at_i = format!("{field}[{i}]");
        let Some(inv) = ck.element(item, &at_i) else {
            continue;
        };
        ck.text(inv, &at_i, "invariant");
        if let Some(source) = ck.text(inv, &at_i, "source")
            && !sources.is_empty()
            && !sources.iter().any(|a| source.contains(a.as_str()))
        {
            let f = at(&at_i, "source");
            ck.push(
                GateFinding::new(
                    Code::GateValueMismatch,
                    &f,
                    format!("{f} must reference one of {name}.sourceArtifacts."),
                )
                .with_details(json!({"field": f, "expected": sources, "actual": source})),
            );
        }
        ck.literal(inv, &at_i, "status", &["proved".to_owned()]);
        if !matches!(inv.get("blockers"), None | Some(Value::Null)) {
            let f = at(&at_i, "blockers");
            ck.push(
                GateFinding::new(
                    Code::GateBlockersNotEmpty,
                    &f,
                    format!("{f} must be absent: an invariant with blockers is not proved."),
                )
                .with_details(json!({"field": f})),
            );
        }
        for k in ["implementationEvidence", "testEvidence", "reviewEvidence"] {
            ck.text(inv, &at_i, k);
        }
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
    let mut review: Vec<(&str, Shape)> =
        ["recommendation", "evidence", "blockers", "by", "reportPath"]
            .into_iter()
            .chain(rules.code_review.status_fields.iter().map(String::as_str))
            .map(|k| (k, Shape::Leaf))
            .collect();
    if !rules.independent_review.is_empty() {
        review.push((
            "independentReview",
            Shape::object(
                rules
                    .independent_review
                    .keys()
                    .map(|m| (m.as_str(), Shape::leaves(["agentRole", "evidence"]))),
            ),
        ));
    }
    top.push(("codeReview", Shape::object(review)));
    if rules.architecture_invariant_gate {
        top.push((
            crate::rules::gates::ARCHITECTURE_INVARIANT_GATE,
            Shape::object([
                ("status", Shape::Leaf),
                ("sourceArtifacts", Shape::Leaf),
                ("evidence", Shape::Leaf),
                (
                    "invariants",
                    Shape::items_of([
                        "invariant",
                        "source",
                        "status",
                        "blockers",
                        "implementationEvidence",
                        "testEvidence",
                        "reviewEvidence",
                    ]),
                ),
            ]),
        ));
    }
    top.push((
        "artifactRefs",
        Shape::items_of(["id", "kind", "description", "path"]),
    ));
    Shape::object(top)
}

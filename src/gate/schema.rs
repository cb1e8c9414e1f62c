//! JSON Schema of a gate document (`evidence-gate schema gate`): the final
//! quality gate `gate check`, `checkpoint --quality-gate-json` and the goal
//! engine's final gate read (docs/gates.md).
//!
//! The schema is generated from the embedded gate rule files, one `anyOf`
//! branch per rule file, so it names the sections, fields, signers and
//! status words the validator enforces and cannot drift from them. It is
//! never stricter than [`super::validate`]: status words and signers are
//! matched after trimming, as the validator matches them, and unknown fields
//! are refused only when `gates.common.unknownFields` is `reject`. What
//! depends on files on disk, digests, placeholders, cross-field counts or the
//! plan context is the validator's alone; a test runs the validator on every
//! fixture of `tests/schemas/cases.json` for this schema.

use serde_json::{Map, Value, json};

use crate::rules::RuleSet;
use crate::rules::gates::{
    ARCHITECTURE_INVARIANT_GATE, CommonRules, FiveSectionRules, GateBook, GateRuleFile, Section,
    UltragoalRules, UnknownFields,
};

/// A non-blank string.
fn text() -> Value {
    json!({"type": "string", "pattern": "\\S"})
}

/// `schema`, or `null` (the validator treats `null` as absent).
fn or_null(schema: Value) -> Value {
    json!({"anyOf": [schema, {"type": "null"}]})
}

/// Escapes regular-expression syntax in a rule word.
fn escape(word: &str) -> String {
    let mut out = String::new();
    for c in word.chars() {
        if "\\^$.|?*+()[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A string that is one of `words` once trimmed.
fn word(words: &[String]) -> Value {
    let alternatives: Vec<String> = words.iter().map(|w| escape(w)).collect();
    json!({
        "type": "string",
        "pattern": format!("^\\s*(?:{})\\s*$", alternatives.join("|")),
        "description": format!("One of: {} (surrounding white space is ignored).", words.join(", ")),
    })
}

/// An array of non-blank strings; non-empty when `required`.
fn texts(required: bool) -> Value {
    if required {
        json!({"type": "array", "minItems": 1, "items": text()})
    } else {
        or_null(json!({"type": "array", "items": text()}))
    }
}

/// An empty array (`blockers`).
fn no_blockers(required: bool) -> Value {
    let empty = json!({"type": "array", "maxItems": 0});
    if required { empty } else { or_null(empty) }
}

/// Builds object schemas; `closed` when the rules reject unknown fields.
struct Objects {
    closed: bool,
}

impl Objects {
    fn object(&self, props: Vec<(&str, Value)>, required: &[&str]) -> Value {
        let mut map = Map::new();
        for (k, v) in props {
            map.insert(k.to_owned(), v);
        }
        let mut o = json!({"type": "object", "properties": map});
        if !required.is_empty() {
            o["required"] = json!(required);
        }
        if self.closed {
            o["additionalProperties"] = json!(false);
        }
        o
    }

    fn artifact(&self, common: &CommonRules) -> Value {
        self.object(
            vec![
                ("id", text()),
                ("kind", word(&common.artifact_kinds)),
                ("description", text()),
                ("path", text()),
            ],
            &["id", "kind", "description", "path"],
        )
    }

    fn five(&self, common: &CommonRules, r: &FiveSectionRules) -> Value {
        let approve = ["APPROVE".to_owned()];
        let passed = ["passed".to_owned()];
        let code_review = self.object(
            vec![
                ("by", word(&r.acceptors.code_review)),
                ("recommendation", word(&approve)),
                ("codeQualityStatus", word(&r.code_quality_statuses)),
                ("reportPath", text()),
                ("evidence", text()),
                ("blockers", no_blockers(true)),
            ],
            &[
                "by",
                "recommendation",
                "codeQualityStatus",
                "reportPath",
                "evidence",
                "blockers",
            ],
        );
        let surface_row = self.object(
            vec![
                ("id", text()),
                ("criterionRef", text()),
                ("surface", word(&common.qa_surfaces)),
                ("invocation", text()),
                ("verdict", word(&passed)),
                ("artifactRefs", texts(true)),
            ],
            &[
                "id",
                "criterionRef",
                "surface",
                "invocation",
                "verdict",
                "artifactRefs",
            ],
        );
        let mut adversarial_row = self.object(
            vec![
                ("id", text()),
                ("criterionRef", text()),
                ("scenario", text()),
                ("expectedBehavior", text()),
                (
                    "verdict",
                    word(&["passed".to_owned(), "not_applicable".to_owned()]),
                ),
                ("reason", or_null(text())),
                ("artifactRefs", texts(false)),
            ],
            &[
                "id",
                "criterionRef",
                "scenario",
                "expectedBehavior",
                "verdict",
            ],
        );
        adversarial_row["if"] = json!({
            "type": "object",
            "properties": {"verdict": {"type": "string", "pattern": "^\\s*not_applicable\\s*$"}},
            "required": ["verdict"],
        });
        adversarial_row["then"] = json!({
            "type": "object",
            "properties": {"reason": text()},
            "required": ["reason"],
        });
        let manual_qa = self.object(
            vec![
                ("by", word(&r.acceptors.manual_qa)),
                ("status", word(&passed)),
                ("evidence", text()),
                ("reportPath", or_null(text())),
                (
                    "artifactRefs",
                    json!({"type": "array", "minItems": 1, "items": self.artifact(common)}),
                ),
                (
                    "surfaceEvidence",
                    json!({"type": "array", "minItems": 1, "items": surface_row}),
                ),
                (
                    "adversarialCases",
                    json!({"type": "array", "minItems": 1, "items": adversarial_row}),
                ),
            ],
            &[
                "by",
                "status",
                "evidence",
                "artifactRefs",
                "surfaceEvidence",
                "adversarialCases",
            ],
        );
        let gate_review = self.object(
            vec![
                ("by", word(&r.acceptors.gate_review)),
                ("recommendation", word(&approve)),
                ("reportPath", text()),
                ("evidence", text()),
                ("blockers", no_blockers(true)),
                ("notes", texts(false)),
            ],
            &["by", "recommendation", "reportPath", "evidence", "blockers"],
        );
        let iteration = self.object(
            vec![
                ("fullRerun", json!({"const": true})),
                ("status", word(&passed)),
                ("rerunCommands", texts(true)),
                ("evidence", text()),
            ],
            &["fullRerun", "status", "rerunCommands", "evidence"],
        );
        let count = json!({
            "type": "integer",
            "minimum": 1,
            "description": "A plain JSON integer (no fraction, no exponent); passCount must equal totalCriteria.",
        });
        let coverage = self.object(
            vec![
                ("totalCriteria", count.clone()),
                ("passCount", count),
                ("originalIntent", text()),
                ("desiredOutcome", text()),
                ("userOutcomeReview", text()),
                ("adversarialClassesCovered", texts(true)),
            ],
            &[
                "totalCriteria",
                "passCount",
                "originalIntent",
                "desiredOutcome",
                "userOutcomeReview",
                "adversarialClassesCovered",
            ],
        );
        let mut props = Vec::new();
        let mut required = Vec::new();
        for (s, schema) in
            Section::ALL
                .into_iter()
                .zip([code_review, manual_qa, gate_review, iteration, coverage])
        {
            if r.required_sections.contains(&s) {
                required.push(s.key());
                props.push((s.key(), schema));
            } else {
                props.push((s.key(), or_null(schema)));
            }
        }
        self.object(props, &required)
    }

    fn ultragoal(&self, common: &CommonRules, r: &UltragoalRules) -> Value {
        let by = |section: &str| match r.acceptors.get(section) {
            Some(acceptors) => word(acceptors),
            None => json!({}),
        };
        let report = || {
            if r.require_report_paths {
                text()
            } else {
                or_null(text())
            }
        };
        let with_report = |required: &[&'static str]| {
            let mut v = required.to_vec();
            if r.require_report_paths {
                v.push("reportPath");
            }
            v
        };
        let mut props = Vec::new();
        let mut one_cleanup = Vec::new();
        for name in &r.cleanup.section_names {
            let section = self.object(
                vec![
                    ("status", word(&r.cleanup.status_values)),
                    ("evidence", text()),
                    ("by", by(name)),
                    ("reportPath", report()),
                ],
                &with_report(&["status", "evidence"]),
            );
            props.push((name.as_str(), or_null(section)));
            one_cleanup.push(json!({
                "type": "object",
                "properties": {name.as_str(): {"type": "object"}},
                "required": [name],
            }));
        }
        let verification = self.object(
            vec![
                ("status", word(&r.verification.status_values)),
                ("commands", texts(r.verification.require_commands)),
                ("evidence", text()),
                ("by", by("verification")),
                ("reportPath", report()),
            ],
            &with_report(if r.verification.require_commands {
                &["status", "commands", "evidence"]
            } else {
                &["status", "evidence"]
            }),
        );
        props.push(("verification", verification));
        let mut review = vec![
            ("recommendation", word(&r.code_review.recommendations)),
            ("evidence", text()),
            ("blockers", no_blockers(false)),
            ("by", by("codeReview")),
            ("reportPath", report()),
        ];
        for f in &r.code_review.status_fields {
            review.push((f.as_str(), or_null(word(&r.code_review.status_values))));
        }
        let mut review_required = with_report(&["recommendation", "evidence"]);
        if !r.independent_review.is_empty() {
            let members: Vec<(&str, Value)> = r
                .independent_review
                .iter()
                .map(|(member, role)| {
                    (
                        member.as_str(),
                        self.object(
                            vec![
                                ("agentRole", word(std::slice::from_ref(role))),
                                ("evidence", text()),
                            ],
                            &["agentRole", "evidence"],
                        ),
                    )
                })
                .collect();
            let names: Vec<&str> = members.iter().map(|(m, _)| *m).collect();
            review.push(("independentReview", self.object(members, &names)));
            review_required.push("independentReview");
        }
        let mut code_review = self.object(review, &review_required);
        code_review["anyOf"] = r
            .code_review
            .status_fields
            .iter()
            .map(|f| {
                json!({
                    "type": "object",
                    "properties": {f.as_str(): {"type": "string"}},
                    "required": [f],
                })
            })
            .collect();
        props.push(("codeReview", code_review));
        let mut required = vec!["verification", "codeReview"];
        if r.architecture_invariant_gate {
            let passed = ["passed".to_owned()];
            let invariant = self.object(
                vec![
                    ("invariant", text()),
                    ("source", text()),
                    ("status", word(&["proved".to_owned()])),
                    ("blockers", json!({"type": "null"})),
                    ("implementationEvidence", text()),
                    ("testEvidence", text()),
                    ("reviewEvidence", text()),
                ],
                &[
                    "invariant",
                    "source",
                    "status",
                    "implementationEvidence",
                    "testEvidence",
                    "reviewEvidence",
                ],
            );
            props.push((
                ARCHITECTURE_INVARIANT_GATE,
                self.object(
                    vec![
                        ("status", word(&passed)),
                        ("sourceArtifacts", texts(true)),
                        ("evidence", text()),
                        (
                            "invariants",
                            json!({"type": "array", "minItems": 1, "items": invariant}),
                        ),
                    ],
                    &["status", "sourceArtifacts", "evidence", "invariants"],
                ),
            ));
            required.push(ARCHITECTURE_INVARIANT_GATE);
        }
        props.push((
            "artifactRefs",
            or_null(json!({"type": "array", "items": self.artifact(common)})),
        ));
        let mut doc = self.object(props, &required);
        doc["anyOf"] = Value::Array(one_cleanup);
        doc
    }
}

/// The schema of one rule file's documents.
fn branch(common: &CommonRules, name: &str, file: &GateRuleFile) -> Value {
    let objects = Objects {
        closed: common.unknown_fields == UnknownFields::Reject,
    };
    let mut schema = match file {
        GateRuleFile::FiveSection(r) => objects.five(common, r),
        GateRuleFile::Ultragoal(r) => objects.ultragoal(common, r),
    };
    schema["title"] = json!(format!("{name} ({} family)", file.family().name()));
    schema
}

/// The schema document.
pub(crate) fn schema() -> Value {
    let rules = RuleSet::embedded().expect("the embedded rules load");
    let book = GateBook::from_rules(&rules).expect("the embedded gate rules load");
    let branches: Vec<Value> = book
        .names()
        .map(|name| {
            let r = book.get(name).expect("listed rule file");
            branch(r.common, name, r.file)
        })
        .collect();
    let unknown = match book.common().unknown_fields {
        UnknownFields::Reject => "Unknown fields are refused, as the embedded rules refuse them.",
        UnknownFields::Warn => "Unknown fields are allowed (the embedded rules warn about them).",
        UnknownFields::Ignore => "Unknown fields are allowed (the embedded rules ignore them).",
    };
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "final quality gate (gate check, checkpoint --quality-gate-json)",
        "description": format!("The shape of a gate document under the embedded gate rules (docs/gates.md): one branch per rule file, with its sections, required fields, signers and status words (matched after trimming). A document the schema refuses is refused by the validator; the reverse does not hold: placeholders, duplicate keys, the size cap, counts written with a fraction or exponent, passCount against totalCriteria, artifact ids and references, surface and artifact kind pairs, every file on disk (report paths, artifacts, digests) and, with plan context, criterion references and coverage are checked by the validator alone. {unknown}"),
        "type": "object",
        "anyOf": branches,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use cap_std::fs::Dir;
    use serde_json::Value;

    use crate::evidence::Root;
    use crate::finding::Severity;
    use crate::gate::{GateScope, GateVerdict};
    use crate::rules::RuleSet;
    use crate::rules::evidence::EvidenceRules;
    use crate::rules::gates::GateBook;
    use crate::sandbox::{PathLimits, RelPath};

    #[test]
    fn one_branch_per_embedded_rule_file() {
        let rules = RuleSet::embedded().unwrap();
        let book = GateBook::from_rules(&rules).unwrap();
        let doc = super::schema();
        let titles: Vec<&str> = doc["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["title"].as_str().unwrap())
            .collect();
        assert_eq!(titles.len(), book.names().count());
        for (name, title) in book.names().zip(&titles) {
            assert!(title.starts_with(&format!("{name} (")), "{title}");
        }
    }

    /// The template as a reviewer fills it in: every `<replace:…>` marker
    /// replaced by the text it names (the first of `a or b`).
    fn fill_in(v: Value) -> Value {
        match v {
            Value::String(s) => Value::String(
                s.strip_prefix("<replace:")
                    .and_then(|t| t.strip_suffix('>'))
                    .map_or(s.clone(), |t| {
                        t.split(" or ").next().unwrap_or(t).to_owned()
                    }),
            ),
            Value::Array(items) => Value::Array(items.into_iter().map(fill_in).collect()),
            Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (k, fill_in(v))).collect())
            }
            other => other,
        }
    }

    #[test]
    fn the_schema_accepts_every_filled_in_print_template_document() {
        use crate::gate::context::{Scope, ScopeCriterion};
        use crate::gate::template::{HostGoalInput, TemplateInput, build_template};
        let rules = RuleSet::embedded().unwrap();
        let book = GateBook::from_rules(&rules).unwrap();
        let validator = jsonschema::validator_for(&super::schema()).unwrap();
        let base = RelPath::parse(".omo/evidence/ulw/s/G001/a1", PathLimits::default()).unwrap();
        let criteria = [
            ScopeCriterion::new("G001", "C001", "pass"),
            ScopeCriterion::new("G001", "C002", "pass"),
        ];
        for name in book.names() {
            for scope in [Scope::Goal, Scope::Run] {
                let t = build_template(&TemplateInput {
                    rules: book.get(name).unwrap(),
                    base_dir: &base,
                    scope: &scope,
                    goal_id: Some("G001"),
                    criteria: &criteria,
                    host_goal: HostGoalInput {
                        objective: None,
                        status: "complete",
                    },
                });
                let filled = fill_in(t.quality_gate);
                let errors: Vec<String> = validator
                    .iter_errors(&filled)
                    .map(|e| e.to_string())
                    .collect();
                assert!(errors.is_empty(), "{name}: {errors:?}");
            }
        }
    }

    #[test]
    // Test fixtures in the source tree, read by the test alone.
    #[allow(clippy::disallowed_methods)]
    fn the_schema_refuses_only_what_the_validator_refuses_on_every_fixture() {
        let root_dir = crate::test_support::repo_root();
        let cases = crate::test_support::schema_cases("gate");
        let rules = RuleSet::embedded().unwrap();
        let evidence: EvidenceRules = rules.family().unwrap();
        let book = GateBook::from_rules(&rules).unwrap();
        let validator = jsonschema::validator_for(&super::schema()).unwrap();
        let verdict = |file: &Path, root: &Path, rules: &str, scope_dir: &str| {
            let dir = Dir::open_ambient_dir(root, cap_std::ambient_authority()).unwrap();
            let bytes = std::fs::read(file).unwrap();
            let root = Root::new(dir, &evidence).unwrap();
            let scope = GateScope::Standalone {
                dir: RelPath::parse(scope_dir, PathLimits::default()).unwrap(),
            };
            let outcome = super::super::validate(&root, book.get(rules).unwrap(), &bytes, &scope);
            (outcome.verdict(), outcome.findings().to_vec())
        };
        for sc in &cases {
            let (file, path, valid, c) = (sc.file.as_str(), &sc.path, sc.valid, &sc.case);
            let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            let root = match c["root"].as_str() {
                Some(r) => root_dir.join(r),
                None => path.parent().unwrap().to_owned(),
            };
            assert_eq!(validator.is_valid(&doc), valid, "schema, {file}");
            if valid {
                let (v, findings) = verdict(
                    path,
                    &root,
                    c["rules"].as_str().unwrap(),
                    c["scopeDir"].as_str().unwrap(),
                );
                assert_eq!(v, GateVerdict::Pass, "validator, {file}: {findings:?}");
            } else {
                for name in book.names() {
                    for scope_dir in [".omo/evidence", ".omagy/evidence"] {
                        let (v, findings) = verdict(path, &root, name, scope_dir);
                        assert_eq!(v, GateVerdict::Fail, "validator, {name}, {file}");
                        // Refused for the document itself, not only for its files.
                        assert!(
                            findings.iter().any(|f| f.severity == Severity::Error
                                && f.code.name().starts_with("GATE_")),
                            "validator, {name}, {file}: {findings:?}"
                        );
                    }
                }
            }
        }
        let checked = crate::test_support::tally(&cases);
        assert!(checked.0 >= 5 && checked.1 >= 20, "{checked:?}");
    }
}

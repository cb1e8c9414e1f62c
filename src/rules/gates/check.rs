//! Semantic checks of the gate rule files beyond their types: non-empty
//! acceptor and vocabulary lists, known kinds and surfaces, limits in range.

use super::{COMMON, CommonRules, FiveSectionRules, Section, UltragoalRules};
use crate::json::pointer_token;
use crate::rules::Problem;
use crate::sandbox::{PathLimits, RelPath};

fn non_empty_texts(list: &[String], at: &str) -> Result<(), Problem> {
    if list.is_empty() {
        return Err(Problem::at(at, "must not be empty"));
    }
    for (i, s) in list.iter().enumerate() {
        if s.trim().is_empty() {
            return Err(Problem::at(format!("{at}/{i}"), "must not be blank"));
        }
    }
    Ok(())
}

fn single_component(name: &str, at: &str) -> Result<(), Problem> {
    match RelPath::parse(name, PathLimits::default()) {
        Ok(p) if p.components().count() == 1 => Ok(()),
        _ => Err(Problem::at(
            at,
            "must be one clean file name (no `/`, `..` or control characters)",
        )),
    }
}

pub(super) fn check_common(c: &CommonRules) -> Result<(), Problem> {
    let at = format!("/{COMMON}");
    if c.schema != 1 {
        return Err(Problem::at(format!("{at}/schema"), "must be 1"));
    }
    let sr = &c.surface_resolution;
    if sr.env.trim().is_empty() {
        return Err(Problem::at(
            format!("{at}/surfaceResolution/env"),
            "must not be blank",
        ));
    }
    single_component(&sr.marker, &format!("{at}/surfaceResolution/marker"))?;
    non_empty_texts(&sr.known, &format!("{at}/surfaceResolution/known"))?;
    if !sr.known.contains(&sr.default) {
        return Err(Problem::at(
            format!("{at}/surfaceResolution/default"),
            "must be one of `known`",
        ));
    }
    for (key, list) in [
        ("exact", &c.placeholders.exact),
        ("contains", &c.placeholders.contains),
    ] {
        if let Some(i) = list.iter().position(|s| s.trim().is_empty()) {
            return Err(Problem::at(
                format!("{at}/placeholders/{key}/{i}"),
                "must not be blank (a blank entry would match every text)",
            ));
        }
    }
    non_empty_texts(&c.artifact_kinds, &format!("{at}/artifactKinds"))?;
    non_empty_texts(&c.qa_surfaces, &format!("{at}/qaSurfaces"))?;
    for (surface, kinds) in &c.surface_artifact_kinds {
        let sat = format!("{at}/surfaceArtifactKinds/{}", pointer_token(surface));
        if !c.qa_surfaces.contains(surface) {
            return Err(Problem::at(
                sat,
                "names a surface that is not in `qaSurfaces`",
            ));
        }
        non_empty_texts(kinds, &sat)?;
        if let Some(i) = kinds.iter().position(|k| !c.artifact_kinds.contains(k)) {
            return Err(Problem::at(
                format!("{sat}/{i}"),
                "names an artifact kind that is not in `artifactKinds`",
            ));
        }
    }
    if let Some(s) = c
        .qa_surfaces
        .iter()
        .find(|s| !c.surface_artifact_kinds.contains_key(*s))
    {
        return Err(Problem::at(
            format!("{at}/surfaceArtifactKinds"),
            format!("has no entry for surface `{s}` (no row on it could ever pass)"),
        ));
    }
    let rf = &c.report_files;
    for (key, name) in [
        ("codeReview", &rf.code_review),
        ("manualQa", &rf.manual_qa),
        ("gateReview", &rf.gate_review),
    ] {
        single_component(name, &format!("{at}/reportFiles/{key}"))?;
    }
    let lf = &c.legacy_report_files;
    for (key, name) in [
        ("codeReview", lf.code_review_for("G001")),
        ("manualQa", lf.manual_qa_for("G001")),
    ] {
        single_component(&name, &format!("{at}/legacyReportFiles/{key}"))?;
    }
    let l = &c.limits;
    if !(2..=64 * 1024 * 1024).contains(&l.max_gate_bytes) {
        return Err(Problem::at(
            format!("{at}/limits/maxGateBytes"),
            "must be between 2 and 67108864",
        ));
    }
    if !(1..=100_000).contains(&l.max_artifacts) {
        return Err(Problem::at(
            format!("{at}/limits/maxArtifacts"),
            "must be between 1 and 100000",
        ));
    }
    if l.max_artifact_bytes == 0 {
        return Err(Problem::at(
            format!("{at}/limits/maxArtifactBytes"),
            "must be positive",
        ));
    }
    Ok(())
}

pub(super) fn check_five(r: &FiveSectionRules, at: &str) -> Result<(), Problem> {
    if r.schema != 1 {
        return Err(Problem::at(format!("{at}/schema"), "must be 1"));
    }
    if r.required_sections.is_empty() {
        return Err(Problem::at(
            format!("{at}/requiredSections"),
            "must not be empty",
        ));
    }
    for (i, s) in r.required_sections.iter().enumerate() {
        if r.required_sections[..i].contains(s) {
            return Err(Problem::at(
                format!("{at}/requiredSections/{i}"),
                format!("`{}` is listed twice", s.key()),
            ));
        }
    }
    for (key, role) in [
        ("codeReview", &r.reviewer_roles.code_review),
        ("manualQa", &r.reviewer_roles.manual_qa),
        ("gateReview", &r.reviewer_roles.gate_review),
    ] {
        if role.trim().is_empty() {
            return Err(Problem::at(
                format!("{at}/reviewerRoles/{key}"),
                "must not be blank",
            ));
        }
    }
    for s in [Section::CodeReview, Section::ManualQa, Section::GateReview] {
        let list = r.acceptors.for_section(s).unwrap_or_default();
        non_empty_texts(list, &format!("{at}/acceptors/{}", s.key()))?;
        if let Some(by) = r.template.for_section(s).and_then(|t| t.by.as_ref())
            && !list.contains(by)
        {
            return Err(Problem::at(
                format!("{at}/template/{}/by", s.key()),
                "must be one of the section's acceptors (else the template could never pass)",
            ));
        }
    }
    non_empty_texts(
        &r.code_quality_statuses,
        &format!("{at}/codeQualityStatuses"),
    )?;
    Ok(())
}

pub(super) fn check_ultragoal(r: &UltragoalRules, at: &str) -> Result<(), Problem> {
    if r.schema != 1 {
        return Err(Problem::at(format!("{at}/schema"), "must be 1"));
    }
    non_empty_texts(
        &r.cleanup.section_names,
        &format!("{at}/cleanup/sectionNames"),
    )?;
    non_empty_texts(
        &r.cleanup.status_values,
        &format!("{at}/cleanup/statusValues"),
    )?;
    non_empty_texts(
        &r.verification.status_values,
        &format!("{at}/verification/statusValues"),
    )?;
    non_empty_texts(
        &r.code_review.recommendations,
        &format!("{at}/codeReview/recommendations"),
    )?;
    non_empty_texts(
        &r.code_review.status_fields,
        &format!("{at}/codeReview/statusFields"),
    )?;
    non_empty_texts(
        &r.code_review.status_values,
        &format!("{at}/codeReview/statusValues"),
    )?;
    for (member, role) in &r.independent_review {
        if member.trim().is_empty() || role.trim().is_empty() {
            return Err(Problem::at(
                format!("{at}/independentReview/{}", pointer_token(member)),
                "members and their agent roles are non-blank",
            ));
        }
    }
    let reserved = [
        "verification",
        "codeReview",
        "artifactRefs",
        "status",
        "evidence",
        crate::rules::gates::ARCHITECTURE_INVARIANT_GATE,
    ];
    for (i, n) in r.cleanup.section_names.iter().enumerate() {
        if reserved.contains(&n.as_str()) || r.cleanup.section_names[..i].contains(n) {
            return Err(Problem::at(
                format!("{at}/cleanup/sectionNames/{i}"),
                "must be a distinct name that no other section uses",
            ));
        }
    }
    let sections = r.section_keys();
    for (section, list) in &r.acceptors {
        let sat = format!("{at}/acceptors/{}", pointer_token(section));
        if !sections.contains(&section.as_str()) {
            return Err(Problem::at(sat, "names no section of the ultragoal gate"));
        }
        non_empty_texts(list, &sat)?;
    }
    for (section, t) in &r.template {
        let tat = format!("{at}/template/{}", pointer_token(section));
        if !sections.contains(&section.as_str()) {
            return Err(Problem::at(tat, "names no section of the ultragoal gate"));
        }
        if let Some(by) = &t.by
            && !r.acceptors.get(section).is_some_and(|a| a.contains(by))
        {
            return Err(Problem::at(
                format!("{tat}/by"),
                "must be one of the section's acceptors",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::rules::{Layer, RuleSet, RulesError};

    fn load(overlay: &str) -> Result<GateBook, RulesError> {
        let rules = RuleSet::load(&[Layer {
            name: "o.json",
            bytes: overlay.as_bytes(),
        }])?;
        GateBook::from_rules(&rules)
    }

    #[test]
    fn shipped_gate_rules_load() {
        let book = GateBook::from_rules(&RuleSet::embedded().unwrap()).unwrap();
        let names: Vec<&str> = book.names().collect();
        assert_eq!(names, ["lazycodex", "omo-senpi", "omx-strict", "ultragoal"]);
        let GateRuleFile::Ultragoal(strict) = &book.get("omx-strict").unwrap().file else {
            panic!("omx-strict is an ultragoal-family file");
        };
        assert_eq!(strict.independent_review["codeReviewer"], "code-reviewer");
        assert_eq!(strict.independent_review["architect"], "architect");
        assert!(strict.architecture_invariant_gate);
        assert!(
            strict
                .section_keys()
                .contains(&crate::rules::gates::ARCHITECTURE_INVARIANT_GATE)
        );
        let GateRuleFile::FiveSection(lc) = book.get("lazycodex").unwrap().file else {
            panic!("lazycodex is five-section");
        };
        assert_eq!(lc.required_sections.len(), 5);
        assert_eq!(
            lc.template_by(Section::CodeReview),
            Some("lazycodex-code-reviewer")
        );
        let GateRuleFile::FiveSection(os) = book.get("omo-senpi").unwrap().file else {
            panic!("omo-senpi is five-section");
        };
        assert_eq!(os.template_by(Section::GateReview), Some("category:deep"));
        assert_eq!(
            os.template_by(Section::CodeReview),
            Some("omo-senpi-code-reviewer")
        );
        assert_eq!(
            book.gate_reviewer_names(),
            ["lazycodex-gate-reviewer", "omo-senpi-gate-reviewer"]
        );
        assert_eq!(book.common().limits.max_artifacts, 512);
        assert!(book.repo_surface().is_none());
        assert!(book.get("common").is_none());
    }

    #[test]
    fn overrides_merge_and_add_rule_files() {
        let book = load(r#"{"gates":{"lazycodex":{"requireReportVerdictLine":true}},"gate":{"surface":"omo-senpi"}}"#).unwrap();
        let GateRuleFile::FiveSection(lc) = book.get("lazycodex").unwrap().file else {
            panic!()
        };
        assert!(lc.require_report_verdict_line);
        assert_eq!(book.repo_surface(), Some("omo-senpi"));
        let strict = r#"{"gates":{"strict":{"schema":1,"name":"strict","family":"ultragoal",
            "cleanup":{"sectionNames":["cleanup"],"statusValues":["passed"]},
            "verification":{"statusValues":["passed"],"requireCommands":true},
            "codeReview":{"recommendations":["APPROVE"],"statusFields":["architectStatus"],"statusValues":["CLEAR"]},
            "acceptors":{"codeReview":["architect"]},"requireReportPaths":true,"template":{}}}}"#;
        assert!(load(strict).unwrap().get("strict").is_some());
    }

    #[test]
    fn invalid_gate_rules_are_rejected_with_pointers() {
        let cases = [
            (
                r#"{"gates":{"lazycodex":{"acceptor":{}}}}"#,
                "/gates/lazycodex/acceptor",
            ),
            (
                r#"{"gates":{"lazycodex":{"acceptors":{"manualQa":[]}}}}"#,
                "/gates/lazycodex/acceptors/manualQa",
            ),
            (
                r#"{"gates":{"common":{"surfaceArtifactKinds":{"cli":["video"]}}}}"#,
                "/gates/common/surfaceArtifactKinds/cli/0",
            ),
            (
                r#"{"gates":{"common":{"surfaceArtifactKinds":{"radio":["log"]}}}}"#,
                "/gates/common/surfaceArtifactKinds/radio",
            ),
            (
                r#"{"gates":{"common":{"limits":{"maxArtifacts":0}}}}"#,
                "/gates/common/limits/maxArtifacts",
            ),
            (
                r#"{"gates":{"common":{"limits":{"maxGateBytes":1}}}}"#,
                "/gates/common/limits/maxGateBytes",
            ),
            (
                r#"{"gates":{"x":{"family":"six-section"}}}"#,
                "/gates/x/family",
            ),
            (r#"{"gates":{"x":{"name":"x"}}}"#, "/gates/x/family"),
            (
                r#"{"gates":{"lazycodex":{"requiredSections":["manualQa","manualQa"]}}}"#,
                "/gates/lazycodex/requiredSections/1",
            ),
            (
                r#"{"gates":{"lazycodex":{"requiredSections":["qa"]}}}"#,
                "/gates/lazycodex/requiredSections/0",
            ),
            (
                r#"{"gates":{"lazycodex":{"template":{"manualQa":{"by":"someone"}}}}}"#,
                "/gates/lazycodex/template/manualQa/by",
            ),
            (
                r#"{"gates":{"ultragoal":{"acceptors":{"review":["x"]}}}}"#,
                "/gates/ultragoal/acceptors/review",
            ),
            (
                r#"{"gates":{"common":{"reportFiles":{"codeReview":"../x.md"}}}}"#,
                "/gates/common/reportFiles/codeReview",
            ),
            (
                r#"{"gates":{"common":{"placeholders":{"contains":[""]}}}}"#,
                "/gates/common/placeholders/contains/0",
            ),
            (
                r#"{"gates":{"common":{"unknownFields":"shout"}}}"#,
                "/gates/common/unknownFields",
            ),
            (r#"{"gate":{"surface":"ultragoal"}}"#, "/gate/surface"),
            (r#"{"gate":{"surfaces":"x"}}"#, "/gate/surfaces"),
        ];
        for (overlay, pointer) in cases {
            let err = load(overlay).unwrap_err();
            assert_eq!(err.pointer, pointer, "{overlay}: {err}");
        }
    }
}

//! The report files a gate-review spawn needs before it starts
//! (docs/hook-contracts.md#h-6 step 5, docs/gates.md#qg-2 `reportFiles`): the same
//! names the template of [`super::template`] writes into a gate, plus the
//! legacy names of `legacyReportFiles` that the Node preflight required.

use super::template::TEMPLATE_ARTIFACT_FILE;
use crate::rules::gates::{GateRuleFile, GateRules, Section};

/// The template's data artifact (docs/differences.md#r-6 `artifact-data`), the second
/// manual-QA file a reviewer may deliver instead of the CLI transcript.
pub(crate) const DATA_ARTIFACT_FILE: &str = "data-diff.txt";

/// One report the reviewer audits: any of `names` (relative to the gate's
/// base directory) satisfies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Requirement {
    /// The gate section the report belongs to (`codeReview`, `manualQa`).
    pub section: &'static str,
    /// Accepted file names, the canonical one first.
    pub names: Vec<String>,
}

/// The reports a gate reviewer audits under `rules` for goal `goal_id`:
/// five-section files need the code review when `codeReview` is a required
/// section and a manual-QA file when `manualQa` is; the ultragoal family
/// needs its code review report only when report paths are required.
pub(crate) fn requirements(rules: GateRules<'_>, goal_id: &str) -> Vec<Requirement> {
    let reports = &rules.common.report_files;
    let legacy = &rules.common.legacy_report_files;
    let code_review = || Requirement {
        section: Section::CodeReview.key(),
        names: vec![reports.code_review.clone(), legacy.code_review_for(goal_id)],
    };
    match rules.file {
        GateRuleFile::FiveSection(r) => {
            let mut out = Vec::new();
            if r.required_sections.contains(&Section::CodeReview) {
                out.push(code_review());
            }
            if r.required_sections.contains(&Section::ManualQa) {
                out.push(Requirement {
                    section: Section::ManualQa.key(),
                    names: vec![
                        reports.manual_qa.clone(),
                        TEMPLATE_ARTIFACT_FILE.to_owned(),
                        DATA_ARTIFACT_FILE.to_owned(),
                        legacy.manual_qa_for(goal_id),
                    ],
                });
            }
            out
        }
        GateRuleFile::Ultragoal(r) if r.require_report_paths => vec![code_review()],
        GateRuleFile::Ultragoal(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::RuleSet;
    use crate::rules::gates::GateBook;

    #[test]
    fn names_come_from_the_shared_rules() {
        let book = GateBook::from_rules(&RuleSet::embedded().unwrap()).unwrap();
        let lazy = requirements(book.get("lazycodex").unwrap(), "G4");
        assert_eq!(lazy.len(), 2);
        assert_eq!(lazy[0].names, ["code-review.md", "G4-code-review.md"]);
        assert_eq!(
            lazy[1].names,
            [
                "manual-qa.md",
                "cli-transcript.txt",
                "data-diff.txt",
                "G4-manual-qa.md"
            ]
        );
        let senpi = requirements(book.get("omo-senpi").unwrap(), "G4");
        assert_eq!(senpi.len(), 1, "omo-senpi has no codeReview section");
        assert_eq!(senpi[0].section, "manualQa");
        assert!(requirements(book.get("ultragoal").unwrap(), "G4").is_empty());
    }
}

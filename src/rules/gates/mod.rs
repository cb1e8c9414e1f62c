//! The `gates` rule family (`rules/gates/*.json`, docs/gates.md#qg-2) and
//! the `gate` family (`gate.surface`, docs/state-formats.md#ge-2).
//!
//! `gates` is a map from rule-file name to rule file. `common` holds the
//! vocabularies shared by every gate; every other entry is a gate rule file
//! whose `family` (`five-section` or `ultragoal`) selects its shape. A
//! repository may override any key (`{"gates": {"lazycodex": {...}}}`) or add
//! its own rule file under a new name, which `gate check --surface <name>`
//! then selects. Every shape rejects unknown keys, so a typo cannot weaken a
//! gate silently.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod book;
mod check;

pub use book::{GateBook, GateRules};

use super::{Problem, RuleFamily};

/// The raw `gates` family: rule-file name → rule file. Typed access goes
/// through [`GateBook`]; validation at load time builds one.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct GatesFamily(Map<String, Value>);

impl RuleFamily for GatesFamily {
    const KEY: &'static str = "gates";

    fn check(&self) -> Result<(), Problem> {
        GateBook::from_family(self).map(|_| ())
    }
}

/// The `gate` family: repository-level gate settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateSettings {
    /// Surface chosen by the repository (`gate.surface`), step 3 of surface
    /// resolution (docs/state-formats.md#ge-2). `null` = not chosen.
    pub surface: Option<String>,
}

impl RuleFamily for GateSettings {
    const KEY: &'static str = "gate";

    fn check(&self) -> Result<(), Problem> {
        match &self.surface {
            Some(s) if s.trim().is_empty() => Err(Problem::at(
                "/surface",
                "must be a surface name or null, not blank",
            )),
            _ => Ok(()),
        }
    }
}

/// Name of the shared entry of the `gates` family.
pub const COMMON: &str = "common";

/// `common.json`: vocabularies and limits shared by every gate rule file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CommonRules {
    /// Format version; must be 1.
    pub schema: u32,
    /// How the five-section surface is resolved (docs/state-formats.md#ge-2).
    pub surface_resolution: SurfaceResolution,
    /// Placeholder texts (docs/state-formats.md#ge-2).
    pub placeholders: GatePlaceholders,
    /// Allowed artifact `kind` values.
    pub artifact_kinds: Vec<String>,
    /// Allowed manual-QA `surface` values.
    pub qa_surfaces: Vec<String>,
    /// Surface → artifact kinds a row on that surface may reference.
    pub surface_artifact_kinds: BTreeMap<String, Vec<String>>,
    /// The one report-file naming convention (template, spawn preflight, docs).
    pub report_files: ReportFiles,
    /// Report names the spawn preflight also accepts (`{goalId}` is replaced).
    pub legacy_report_files: LegacyReportFiles,
    /// Treatment of keys the family does not define.
    pub unknown_fields: UnknownFields,
    /// Size and count caps.
    pub limits: GateLimits,
}

/// Surface resolution inputs (docs/state-formats.md#ge-2).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SurfaceResolution {
    /// Environment variable consulted when `--surface` is absent.
    pub env: String,
    /// Marker file name in the directory of the running executable.
    pub marker: String,
    /// Surface used when nothing else decides.
    pub default: String,
    /// Surfaces the environment, repository setting and marker may name.
    pub known: Vec<String>,
}

/// Placeholder lists of the gate (docs/state-formats.md#ge-2), compared case-insensitively.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GatePlaceholders {
    /// A text whose whole trimmed value equals one of these is a placeholder.
    pub exact: Vec<String>,
    /// A text containing one of these anywhere is a placeholder.
    pub contains: Vec<String>,
}

/// Report file names, relative to the gate's base directory.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReportFiles {
    /// Code review report.
    pub code_review: String,
    /// Manual QA report.
    pub manual_qa: String,
    /// Gate review report.
    pub gate_review: String,
}

/// Legacy report names (docs/differences.md#r-8); `{goalId}` is replaced by the goal id.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LegacyReportFiles {
    /// Legacy code review report name.
    pub code_review: String,
    /// Legacy manual QA report name.
    pub manual_qa: String,
}

impl LegacyReportFiles {
    /// The code review name for `goal_id`.
    pub fn code_review_for(&self, goal_id: &str) -> String {
        self.code_review.replace("{goalId}", goal_id)
    }
    /// The manual QA name for `goal_id`.
    pub fn manual_qa_for(&self, goal_id: &str) -> String {
        self.manual_qa.replace("{goalId}", goal_id)
    }
}

/// What happens to keys a gate family does not define.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UnknownFields {
    /// Dropped silently.
    Ignore,
    /// Warning `GATE_FIELD_UNKNOWN`; the gate may still pass.
    Warn,
    /// Error `GATE_FIELD_UNKNOWN`; the gate fails.
    Reject,
}

/// Caps applied while validating one gate.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GateLimits {
    /// Maximum size of the gate document in bytes.
    pub max_gate_bytes: u64,
    /// Maximum number of distinct artifact and report paths.
    pub max_artifacts: usize,
    /// Maximum size of one artifact or report file.
    pub max_artifact_bytes: u64,
}

/// A five-section section name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Section {
    /// `codeReview`.
    CodeReview,
    /// `manualQa`.
    ManualQa,
    /// `gateReview`.
    GateReview,
    /// `iteration`.
    Iteration,
    /// `criteriaCoverage`.
    CriteriaCoverage,
}

impl Section {
    /// Every section in the canonical document order.
    pub const ALL: [Section; 5] = [
        Section::CodeReview,
        Section::ManualQa,
        Section::GateReview,
        Section::Iteration,
        Section::CriteriaCoverage,
    ];

    /// The JSON key.
    pub fn key(self) -> &'static str {
        match self {
            Section::CodeReview => "codeReview",
            Section::ManualQa => "manualQa",
            Section::GateReview => "gateReview",
            Section::Iteration => "iteration",
            Section::CriteriaCoverage => "criteriaCoverage",
        }
    }
}

/// A five-section gate rule file (`lazycodex.json`, `omo-senpi.json`, docs/state-formats.md#ge-2).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FiveSectionRules {
    /// Format version; must be 1.
    pub schema: u32,
    /// Rule-file name; equals its key in the `gates` family.
    pub name: String,
    /// Always `five-section`.
    pub family: String,
    /// Sections that must be present; a present optional section is validated too.
    pub required_sections: Vec<Section>,
    /// Role names used in handoffs and spawn-preflight recognition.
    pub reviewer_roles: ReviewerRoles,
    /// Accepted `by` values per signed section: what validation enforces.
    pub acceptors: FiveSectionAcceptors,
    /// Accepted `codeReview.codeQualityStatus` values (`WATCH` warns).
    pub code_quality_statuses: Vec<String>,
    /// Coverage recomputation switches (docs/engine.md#ge-5).
    pub coverage: CoverageRules,
    /// Require a `VERDICT: <recommendation>` line in each report file.
    pub require_report_verdict_line: bool,
    /// Template overrides (docs/engine.md#ge-9).
    pub template: FiveSectionTemplate,
}

/// Reviewer role names per signed section.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReviewerRoles {
    /// Code reviewer role.
    pub code_review: String,
    /// QA executor role.
    pub manual_qa: String,
    /// Gate reviewer role.
    pub gate_review: String,
}

/// Accepted `by` values per signed section.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FiveSectionAcceptors {
    /// `codeReview.by`.
    pub code_review: Vec<String>,
    /// `manualQa.by`.
    pub manual_qa: Vec<String>,
    /// `gateReview.by`.
    pub gate_review: Vec<String>,
}

impl FiveSectionAcceptors {
    /// The list for a signed section (`None` for `iteration`, `criteriaCoverage`).
    pub fn for_section(&self, s: Section) -> Option<&[String]> {
        match s {
            Section::CodeReview => Some(&self.code_review),
            Section::ManualQa => Some(&self.manual_qa),
            Section::GateReview => Some(&self.gate_review),
            Section::Iteration | Section::CriteriaCoverage => None,
        }
    }
}

/// Coverage switches (docs/engine.md#ge-5).
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CoverageRules {
    /// Compare the gate's counts with the plan's recomputed counts.
    pub recompute: bool,
    /// Every scope criterion needs a passed surface row.
    pub require_every_criterion_referenced: bool,
}

/// Five-section template overrides: the `by` per signed section.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FiveSectionTemplate {
    /// `codeReview` template values.
    #[serde(default)]
    pub code_review: Option<TemplateBy>,
    /// `manualQa` template values.
    #[serde(default)]
    pub manual_qa: Option<TemplateBy>,
    /// `gateReview` template values.
    #[serde(default)]
    pub gate_review: Option<TemplateBy>,
}

impl FiveSectionTemplate {
    fn for_section(&self, s: Section) -> Option<&TemplateBy> {
        match s {
            Section::CodeReview => self.code_review.as_ref(),
            Section::ManualQa => self.manual_qa.as_ref(),
            Section::GateReview => self.gate_review.as_ref(),
            Section::Iteration | Section::CriteriaCoverage => None,
        }
    }
}

/// A template `by` value.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateBy {
    /// The signer the template proposes.
    #[serde(default)]
    pub by: Option<String>,
}

impl FiveSectionRules {
    /// The `by` the template proposes for a signed section: the rule's
    /// `template` value, else the first acceptor.
    pub fn template_by(&self, s: Section) -> Option<&str> {
        self.template
            .for_section(s)
            .and_then(|t| t.by.as_deref())
            .or_else(|| {
                self.acceptors
                    .for_section(s)
                    .and_then(|a| a.first())
                    .map(String::as_str)
            })
    }
}

/// The Ultragoal gate rule file (`ultragoal.json`, docs/state-formats.md#ge-2).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UltragoalRules {
    /// Format version; must be 1.
    pub schema: u32,
    /// Rule-file name; equals its key in the `gates` family.
    pub name: String,
    /// Always `ultragoal`.
    pub family: String,
    /// Cleanup section rules.
    pub cleanup: CleanupRules,
    /// Verification section rules.
    pub verification: VerificationRules,
    /// Code review section rules.
    pub code_review: UltragoalReviewRules,
    /// Section name → accepted `by` values; a section not named has an
    /// optional, unchecked `by`.
    pub acceptors: BTreeMap<String, Vec<String>>,
    /// Every section needs a `reportPath`.
    pub require_report_paths: bool,
    /// Template overrides (docs/engine.md#ge-9): section name → `{by}`.
    pub template: BTreeMap<String, TemplateBy>,
}

/// Cleanup section rules.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CleanupRules {
    /// Names that may carry the cleanup section; at least one must be present.
    pub section_names: Vec<String>,
    /// Accepted `status` values.
    pub status_values: Vec<String>,
}

/// Verification section rules.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerificationRules {
    /// Accepted `status` values.
    pub status_values: Vec<String>,
    /// `commands` must be a non-empty array of texts.
    pub require_commands: bool,
}

/// Ultragoal code review rules.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UltragoalReviewRules {
    /// Accepted `recommendation` values.
    pub recommendations: Vec<String>,
    /// Status fields; at least one must be present.
    pub status_fields: Vec<String>,
    /// Values every present status field must have.
    pub status_values: Vec<String>,
}

impl UltragoalRules {
    /// Every section key of the family, in validation order.
    pub fn section_keys(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .cleanup
            .section_names
            .iter()
            .map(String::as_str)
            .collect();
        out.push("verification");
        out.push("codeReview");
        out
    }

    /// The `by` the template proposes for a section whose `by` is checked.
    pub fn template_by(&self, section: &str) -> Option<&str> {
        let acceptors = self.acceptors.get(section)?;
        self.template
            .get(section)
            .and_then(|t| t.by.as_deref())
            .or_else(|| acceptors.first().map(String::as_str))
    }
}

/// One gate rule file, by family.
#[derive(Debug, Clone)]
pub enum GateRuleFile {
    /// `five-section` (lazycodex, omo-senpi and repository additions).
    FiveSection(FiveSectionRules),
    /// `ultragoal`.
    Ultragoal(UltragoalRules),
}

impl GateRuleFile {
    /// The rule-file name.
    pub fn name(&self) -> &str {
        match self {
            GateRuleFile::FiveSection(r) => &r.name,
            GateRuleFile::Ultragoal(r) => &r.name,
        }
    }

    /// The family name (`five-section` or `ultragoal`).
    pub fn family(&self) -> GateFamily {
        match self {
            GateRuleFile::FiveSection(_) => GateFamily::FiveSection,
            GateRuleFile::Ultragoal(_) => GateFamily::Ultragoal,
        }
    }
}

/// The two gate document families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GateFamily {
    /// The lazycodex / omo-senpi gate of docs/differences.md#r-6.
    FiveSection,
    /// The Omagy contract's final gate.
    Ultragoal,
}

impl GateFamily {
    /// `five-section` or `ultragoal`.
    pub fn name(self) -> &'static str {
        match self {
            GateFamily::FiveSection => "five-section",
            GateFamily::Ultragoal => "ultragoal",
        }
    }
}

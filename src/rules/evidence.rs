//! The `evidence` rule family (`rules/evidence.json`, docs/verify.md#ev-9).

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use super::{Problem, RuleFamily};
use crate::sandbox::{PathLimits, RelPath};

/// Verifier policy.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EvidenceRules {
    /// Repo-relative directory artifacts must lie under.
    pub evidence_root: String,
    /// Deliverable allow/deny globs.
    pub deliverables: DeliverableRules,
    /// First path components no claim may name (case-insensitive).
    pub forbidden_first_components: Vec<String>,
    /// Path prefixes no claim may name (case-insensitive).
    pub forbidden_prefixes: Vec<String>,
    /// Allowed artifact kinds.
    pub artifact_kinds: Vec<String>,
    /// Placeholder words and patterns.
    pub placeholders: PlaceholderRules,
    /// Hard-link policy.
    pub hard_links: HardLinks,
    /// Size and length caps.
    pub limits: Limits,
}

/// Deliverable globs.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliverableRules {
    /// A deliverable must match one of these.
    pub allow: Vec<String>,
    /// A deliverable must match none of these.
    pub deny: Vec<String>,
}

/// Placeholder lists.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaceholderRules {
    /// Whole-text placeholder words.
    pub words: Vec<String>,
    /// Substrings that mark a placeholder.
    pub patterns: Vec<String>,
}

/// Whether files with several hard links are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HardLinks {
    /// Link count above 1 is `FILE_HARDLINKED`.
    Reject,
    /// Hard links are accepted.
    Allow,
}

/// Caps.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Limits {
    /// Maximum payload size in bytes.
    pub max_payload_bytes: u64,
    /// Maximum size of one verified file.
    pub max_file_bytes: u64,
    /// Maximum bytes of a path.
    pub max_path_bytes: usize,
    /// Maximum bytes of a path component.
    pub max_component_bytes: usize,
    /// Maximum glob deliverables in one payload (each walks the tree).
    #[serde(default = "default_max_glob_deliverables")]
    pub max_glob_deliverables: usize,
}

fn default_max_glob_deliverables() -> usize {
    64
}

impl Limits {
    /// The lexical limits.
    pub fn path_limits(&self) -> PathLimits {
        PathLimits {
            max_path_bytes: self.max_path_bytes,
            max_component_bytes: self.max_component_bytes,
        }
    }
}

/// Builds a glob set the way every deliverable pattern is built:
/// `literal_separator(true)` so `*` never crosses `/`, backslash escapes on
/// every platform.
pub fn build_globset(patterns: &[String]) -> Result<GlobSet, (usize, String)> {
    let mut b = GlobSetBuilder::new();
    for (i, p) in patterns.iter().enumerate() {
        let g = GlobBuilder::new(p)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| (i, e.kind().to_string()))?;
        b.add(g);
    }
    b.build().map_err(|e| (0, e.to_string()))
}

impl RuleFamily for EvidenceRules {
    const KEY: &'static str = "evidence";

    fn check(&self) -> Result<(), Problem> {
        let limits = &self.limits;
        if !(1024..=64 * 1024 * 1024).contains(&limits.max_payload_bytes) {
            return Err(Problem::at(
                "/limits/maxPayloadBytes",
                "must be between 1024 and 67108864",
            ));
        }
        if limits.max_file_bytes == 0 {
            return Err(Problem::at("/limits/maxFileBytes", "must be positive"));
        }
        if !(16..=65_536).contains(&limits.max_path_bytes) {
            return Err(Problem::at(
                "/limits/maxPathBytes",
                "must be between 16 and 65536",
            ));
        }
        if !(1..=4096).contains(&limits.max_component_bytes) {
            return Err(Problem::at(
                "/limits/maxComponentBytes",
                "must be between 1 and 4096",
            ));
        }
        if !(1..=4096).contains(&limits.max_glob_deliverables) {
            return Err(Problem::at(
                "/limits/maxGlobDeliverables",
                "must be between 1 and 4096",
            ));
        }
        RelPath::parse(&self.evidence_root, limits.path_limits()).map_err(|p| {
            Problem::at(
                "/evidenceRoot",
                format!("is not a clean relative path: {}", p.describe()),
            )
        })?;
        for (key, list) in [
            ("allow", &self.deliverables.allow),
            ("deny", &self.deliverables.deny),
        ] {
            build_globset(list).map_err(|(i, e)| {
                Problem::at(
                    format!("/deliverables/{key}/{i}"),
                    format!("invalid glob: {e}"),
                )
            })?;
        }
        for (i, c) in self.forbidden_first_components.iter().enumerate() {
            if c.is_empty() || c.contains('/') {
                return Err(Problem::at(
                    format!("/forbiddenFirstComponents/{i}"),
                    "must be one non-empty path component",
                ));
            }
        }
        for (i, p) in self.forbidden_prefixes.iter().enumerate() {
            if RelPath::parse(p.trim_end_matches('/'), limits.path_limits()).is_err() {
                return Err(Problem::at(
                    format!("/forbiddenPrefixes/{i}"),
                    "must be a clean relative path (a trailing `/` is allowed)",
                ));
            }
        }
        if self.artifact_kinds.iter().any(|k| k.trim().is_empty()) {
            return Err(Problem::at("/artifactKinds", "kinds must be non-empty"));
        }
        Ok(())
    }
}

//! Where each goal-engine profile keeps its state and evidence, as the audit
//! needs it (goal-engine.md §1.1: `stateDir`, `evidenceRoot`,
//! `completionKeys`, `ledger/foreignRecords`, `limits/maxPlanBytes`).

use serde_json::Value;

use crate::ledger::ForeignSeverity;
use crate::rules::{RuleSet, RulesError};
use crate::sandbox::{PathLimits, RelPath};

/// The profile keys repository mode reads.
#[derive(Debug, Clone)]
pub struct ProfileLayout {
    /// Profile name (`ulw-loop`, `ultragoal`).
    pub name: String,
    /// Base state directory, repo-relative.
    pub state_dir: RelPath,
    /// Sandbox evidence root of the profile.
    pub evidence_root: RelPath,
    /// Plan keys that receive the aggregate completion record.
    pub completion_keys: Vec<String>,
    /// Severity of unchained records after the chain start.
    pub foreign_records: ForeignSeverity,
    /// Size cap of `goals.json`.
    pub max_plan_bytes: u64,
}

/// The shipped profiles of goal-engine.md §1.1, used while the rules carry
/// no `profiles` family (the goal engine adds it).
const SHIPPED: &[(&str, &str, &str, &[&str])] = &[
    (
        "ulw-loop",
        ".omo/ulw-loop",
        ".omo/evidence",
        &["aggregateCompletion"],
    ),
    (
        "ultragoal",
        ".omagy/ultragoal",
        ".omagy/evidence",
        &["aggregate_completion", "aggregateCompletion"],
    ),
];

const DEFAULT_MAX_PLAN_BYTES: u64 = 64 * 1024 * 1024;

/// The layouts of every profile in the rules (`/profiles/<name>`), in name
/// order; the shipped profiles when the rules define none.
pub fn from_rules(rules: &RuleSet) -> Result<Vec<ProfileLayout>, RulesError> {
    let Some(Value::Object(profiles)) = rules.pointer("/profiles") else {
        return Ok(SHIPPED
            .iter()
            .map(|(name, state, evidence, keys)| ProfileLayout {
                name: (*name).to_owned(),
                state_dir: RelPath::parse(state, PathLimits::default()).expect("constant"),
                evidence_root: RelPath::parse(evidence, PathLimits::default()).expect("constant"),
                completion_keys: keys.iter().map(|k| (*k).to_owned()).collect(),
                foreign_records: ForeignSeverity::Error,
                max_plan_bytes: DEFAULT_MAX_PLAN_BYTES,
            })
            .collect());
    };
    let mut out = Vec::new();
    for (name, p) in profiles {
        let invalid = |key: &str, problem: &str| RulesError {
            file: format!("rules/profiles/{name}.json"),
            pointer: format!("/profiles/{}{key}", crate::json::pointer_token(name)),
            problem: problem.to_owned(),
        };
        let path = |key: &str| {
            p.pointer(key)
                .and_then(Value::as_str)
                .and_then(|s| RelPath::parse(s, PathLimits::default()).ok())
                .ok_or_else(|| invalid(key, "must be a clean repo-relative path"))
        };
        let completion_keys = p
            .pointer("/completionKeys")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter(|k| !k.is_empty())
            .ok_or_else(|| invalid("/completionKeys", "must name at least one key"))?;
        let foreign_records = match p.pointer("/ledger/foreignRecords").and_then(Value::as_str) {
            Some("warning") => ForeignSeverity::Warning,
            _ => ForeignSeverity::Error,
        };
        out.push(ProfileLayout {
            name: name.clone(),
            state_dir: path("/stateDir")?,
            evidence_root: path("/evidenceRoot")?,
            completion_keys,
            foreign_records,
            max_plan_bytes: p
                .pointer("/limits/maxPlanBytes")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_MAX_PLAN_BYTES),
        });
    }
    Ok(out)
}

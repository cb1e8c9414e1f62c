//! Where each goal-engine profile keeps its state and evidence: the
//! `profiles` rule family (docs/engine.md#ge-1), read once per audit.

use crate::goals::Profile;
use crate::ledger::ForeignSeverity;
use crate::rules::profiles::{ForeignRecords, Profiles};
use crate::rules::{RuleSet, RulesError};
use crate::sandbox::{PathLimits, RelPath};

/// A profile with its validated state directory and evidence root.
#[derive(Debug, Clone)]
pub struct ProfileLayout {
    /// The profile (`rules/profiles/<name>.json` after overrides).
    pub profile: Profile,
    /// `stateDir`, repo-relative.
    pub state_dir: RelPath,
    /// `evidenceRoot`, repo-relative.
    pub evidence_root: RelPath,
}

impl ProfileLayout {
    /// The profile's name.
    pub fn name(&self) -> &str {
        &self.profile.name
    }

    /// Severity of unchained records after the chain start (`ledger/foreignRecords`).
    pub fn foreign_records(&self) -> ForeignSeverity {
        match self.profile.ledger.foreign_records {
            ForeignRecords::Error => ForeignSeverity::Error,
            ForeignRecords::Warning => ForeignSeverity::Warning,
        }
    }
}

/// Every profile of the rules, in name order.
pub fn from_rules(rules: &RuleSet) -> Result<Vec<ProfileLayout>, RulesError> {
    let profiles: Profiles = rules.family()?;
    profiles
        .0
        .into_values()
        .map(|profile| {
            let path = |key: &str, value: &str| {
                RelPath::parse(value, PathLimits::default()).map_err(|p| RulesError {
                    file: format!("rules/profiles/{}.json", profile.name),
                    pointer: format!(
                        "/profiles/{}{key}",
                        crate::json::pointer_token(&profile.name)
                    ),
                    problem: p.describe().into(),
                })
            };
            Ok(ProfileLayout {
                state_dir: path("/stateDir", &profile.state_dir)?,
                evidence_root: path("/evidenceRoot", &profile.evidence_root)?,
                profile,
            })
        })
        .collect()
}

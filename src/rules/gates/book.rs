//! [`GateBook`]: every gate rule file typed and validated, and the
//! selection of one ([`GateRules`]).

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::check::{check_common, check_five, check_ultragoal};
use super::{
    COMMON, CommonRules, FiveSectionRules, GateRuleFile, GateSettings, GatesFamily, ReviewerRoles,
    SurfaceResolution, UltragoalRules,
};
use crate::json::pointer_token;
use crate::rules::{Problem, RuleFamily, RuleSet, RulesError};

/// Every gate rule file, typed and validated, plus the repository's surface
/// setting.
#[derive(Debug, Clone)]
pub struct GateBook {
    common: CommonRules,
    files: BTreeMap<String, GateRuleFile>,
    repo_surface: Option<String>,
}

/// One selected gate rule file with the common rules: what the validator
/// and the template builder take.
#[derive(Debug, Clone, Copy)]
pub struct GateRules<'a> {
    /// Shared vocabularies and limits.
    pub common: &'a CommonRules,
    /// The selected rule file.
    pub file: &'a GateRuleFile,
}

impl GateRules<'_> {
    /// The rule-file name (`lazycodex`, …).
    pub fn name(&self) -> &str {
        self.file.name()
    }
}

impl GateBook {
    /// The surface-resolution inputs alone (docs/gates.md#qg-2), read from the
    /// `common` gate rule file without typing every other one: what a command
    /// needs at start-up to read the surface environment variable and marker.
    pub fn surface_resolution(rules: &RuleSet) -> Result<SurfaceResolution, RulesError> {
        let at = format!("/{}/{COMMON}", GatesFamily::KEY);
        match rules.part::<CommonRules>(&at)? {
            Some(common) => Ok(common.surface_resolution),
            None => Ok(GateBook::from_rules(rules)?.common.surface_resolution),
        }
    }

    /// The reviewer roles of the five-section gate rule file `name`, read
    /// from that file alone (what a handoff names); `None` for a file of
    /// another family or no such file. The embedded files are validated by
    /// the test suite, which also checks that this agrees with
    /// [`GateBook::get`] on every one of them.
    pub fn reviewer_roles(
        rules: &RuleSet,
        name: &str,
    ) -> Result<Option<ReviewerRoles>, RulesError> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Roles {
            family: String,
            reviewer_roles: Option<ReviewerRoles>,
        }
        if name == COMMON {
            return Ok(None);
        }
        let at = format!("/{}/{}", GatesFamily::KEY, pointer_token(name));
        Ok(rules
            .part::<Roles>(&at)?
            .filter(|r| r.family == "five-section")
            .and_then(|r| r.reviewer_roles))
    }

    /// Builds the book from loaded rules: the `gates` family, typed, plus the
    /// cross-family check of `gate.surface`.
    pub fn from_rules(rules: &RuleSet) -> Result<GateBook, RulesError> {
        let fail = |p: Problem, key: &str| RulesError {
            file: "rules".into(),
            pointer: format!("/{key}{}", p.pointer),
            problem: p.problem,
        };
        let family: GatesFamily = rules.family()?;
        let mut book = GateBook::from_family(&family).map_err(|p| fail(p, GatesFamily::KEY))?;
        let settings: GateSettings = rules.family()?;
        if let Some(s) = settings.surface {
            let s = s.trim().to_owned();
            if !book.common.surface_resolution.known.contains(&s) {
                return Err(fail(
                    Problem::at(
                        "/surface",
                        format!(
                            "`{s}` is not a known surface ({})",
                            book.common.surface_resolution.known.join(", ")
                        ),
                    ),
                    GateSettings::KEY,
                ));
            }
            book.repo_surface = Some(s);
        }
        Ok(book)
    }

    pub(super) fn from_family(family: &GatesFamily) -> Result<GateBook, Problem> {
        let common_value = family
            .0
            .get(COMMON)
            .ok_or_else(|| Problem::at("", "the `common` gate rule file is missing"))?;
        let common: CommonRules = typed(common_value, &format!("/{COMMON}"))?;
        check_common(&common)?;
        let mut files = BTreeMap::new();
        for (name, value) in &family.0 {
            if name == COMMON {
                continue;
            }
            let at = format!("/{}", pointer_token(name));
            let family_name = value.get("family").and_then(Value::as_str).ok_or_else(|| {
                Problem::at(
                    format!("{at}/family"),
                    "a gate rule file needs `family`: `five-section` or `ultragoal`",
                )
            })?;
            let file = match family_name {
                "five-section" => {
                    let r: FiveSectionRules = typed(value, &at)?;
                    check_five(&r, &at)?;
                    GateRuleFile::FiveSection(r)
                }
                "ultragoal" => {
                    let r: UltragoalRules = typed(value, &at)?;
                    check_ultragoal(&r, &at)?;
                    GateRuleFile::Ultragoal(r)
                }
                other => {
                    return Err(Problem::at(
                        format!("{at}/family"),
                        format!("unknown gate family `{other}`; known: five-section, ultragoal"),
                    ));
                }
            };
            if file.name() != name {
                return Err(Problem::at(
                    format!("{at}/name"),
                    format!("must equal the rule-file key `{name}`"),
                ));
            }
            files.insert(name.clone(), file);
        }
        for known in &common.surface_resolution.known {
            match files.get(known) {
                Some(GateRuleFile::FiveSection(_)) => {}
                _ => {
                    return Err(Problem::at(
                        "/common/surfaceResolution/known",
                        format!("`{known}` must name a five-section gate rule file"),
                    ));
                }
            }
        }
        Ok(GateBook {
            common,
            files,
            repo_surface: None,
        })
    }

    /// The shared rules.
    pub fn common(&self) -> &CommonRules {
        &self.common
    }

    /// The repository's `gate.surface`, when set.
    pub fn repo_surface(&self) -> Option<&str> {
        self.repo_surface.as_deref()
    }

    /// Rule-file names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// Selects one rule file by name.
    pub fn get(&self, name: &str) -> Option<GateRules<'_>> {
        self.files.get(name).map(|file| GateRules {
            common: &self.common,
            file,
        })
    }

    /// Every gate-reviewer role name the spawn preflight recognises: the
    /// union of `reviewerRoles.gateReview` over the five-section files.
    pub fn gate_reviewer_names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .files
            .values()
            .filter_map(|f| match f {
                GateRuleFile::FiveSection(r) => Some(r.reviewer_roles.gate_review.as_str()),
                GateRuleFile::Ultragoal(_) => None,
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

fn typed<T: DeserializeOwned>(value: &Value, at: &str) -> Result<T, Problem> {
    // The plain decoder first; the path-tracking one only to locate an error.
    if let Ok(parsed) = T::deserialize(value) {
        return Ok(parsed);
    }
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let mut pointer = at.to_owned();
        for seg in e.path().iter() {
            use serde_path_to_error::Segment;
            match seg {
                Segment::Seq { index } => pointer.push_str(&format!("/{index}")),
                Segment::Map { key } => {
                    pointer.push('/');
                    pointer.push_str(&pointer_token(key));
                }
                Segment::Enum { variant } => {
                    pointer.push('/');
                    pointer.push_str(&pointer_token(variant));
                }
                Segment::Unknown => {}
            }
        }
        Problem::at(pointer, e.into_inner().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The roles read from one file are the book's, for every embedded
    /// file, the `common` file, a missing one and a name that is a path.
    #[test]
    fn reviewer_roles_read_alone_agree_with_the_book() {
        let rules = RuleSet::embedded().unwrap();
        let book = GateBook::from_rules(&rules).unwrap();
        let mut names: Vec<String> = book.files.keys().cloned().collect();
        assert!(names.len() >= 4, "{names:?}");
        names.extend(["common", "nope", "lazycodex/reviewerRoles", "~1", ""].map(String::from));
        let mut five = 0;
        for name in &names {
            let alone = GateBook::reviewer_roles(&rules, name).ok().flatten();
            let booked = match book.get(name).map(|r| r.file) {
                Some(GateRuleFile::FiveSection(r)) => Some(&r.reviewer_roles),
                _ => None,
            };
            five += usize::from(booked.is_some());
            assert_eq!(
                alone
                    .as_ref()
                    .map(|r| (&r.code_review, &r.manual_qa, &r.gate_review)),
                booked.map(|r| (&r.code_review, &r.manual_qa, &r.gate_review)),
                "{name}"
            );
        }
        assert!(five >= 2, "five-section files: {five}");
    }
}

//! `rules/workflows.json` (docs/engine.md#ge-9): the workflows that can
//! own a session, their roles, the relations between them and the
//! defaults for pairs no relation names.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::rules::{Problem, RuleFamily};
use crate::sandbox::{PathLimits, RelPath};

/// What a workflow is to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Owns durable state and the "are we done" decision.
    PersistenceOwner,
    /// Executes work for an owner.
    ExecutionEngine,
    /// Produces plans handed to an owner.
    Planner,
    /// A working discipline without state of its own.
    Discipline,
}

impl Role {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::PersistenceOwner => "persistence_owner",
            Role::ExecutionEngine => "execution_engine",
            Role::Planner => "planner",
            Role::Discipline => "discipline",
        }
    }

    /// Parses the wire name.
    pub fn parse(s: &str) -> Option<Role> {
        [
            Role::PersistenceOwner,
            Role::ExecutionEngine,
            Role::Planner,
            Role::Discipline,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }
}

/// A relation rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Rule {
    /// An approved handoff from one workflow to another (`from`/`to`).
    Handoff,
    /// Both may be active together (`pair`).
    Allow,
    /// They may not be active together (`pair`).
    Deny,
}

/// One workflow's definition.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowDef {
    /// Its role.
    pub role: Role,
}

/// One relation: `{from, to, rule: "handoff"}` or `{pair: [a, b], rule: "allow"|"deny"}`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Relation {
    /// Handoff source.
    #[serde(default)]
    pub from: Option<String>,
    /// Handoff target.
    #[serde(default)]
    pub to: Option<String>,
    /// The two workflows of an allow/deny rule.
    #[serde(default)]
    pub pair: Option<Vec<String>>,
    /// The rule.
    pub rule: Rule,
}

/// Rules for pairs no relation names.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Defaults {
    /// Two persistence owners.
    pub two_persistence_owners: Rule,
    /// Anything else.
    pub other: Rule,
}

/// The `workflows` rule family.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "workflow rules (rules/workflows.json)")]
pub struct WorkflowRules {
    /// File format version (1).
    pub schema: u32,
    /// Registry directory (repo-relative); `<dir>/<sid>.json` per session,
    /// `<dir>.json` unscoped.
    pub registry_dir: String,
    /// Known workflows by name.
    pub workflows: BTreeMap<String, WorkflowDef>,
    /// Relations, first match wins.
    pub relations: Vec<Relation>,
    /// Fallbacks.
    pub defaults: Defaults,
}

impl RuleFamily for WorkflowRules {
    const KEY: &'static str = "workflows";
    fn check(&self) -> Result<(), Problem> {
        if self.schema != 1 {
            return Err(Problem::at("/schema", "unsupported workflow rules schema"));
        }
        if RelPath::parse(&self.registry_dir, PathLimits::default()).is_err() {
            return Err(Problem::at(
                "/registryDir",
                "must be a clean repo-relative path",
            ));
        }
        for rule in [self.defaults.two_persistence_owners, self.defaults.other] {
            if rule == Rule::Handoff {
                return Err(Problem::at("/defaults", "a default is allow or deny"));
            }
        }
        for (i, r) in self.relations.iter().enumerate() {
            let at = format!("/relations/{i}");
            let blank = |s: &Option<String>| s.as_deref().is_none_or(|s| s.trim().is_empty());
            match r.rule {
                Rule::Handoff => {
                    if blank(&r.from) || blank(&r.to) || r.pair.is_some() {
                        return Err(Problem::at(at, "a handoff names `from` and `to` only"));
                    }
                }
                Rule::Allow | Rule::Deny => {
                    let ok = r.from.is_none()
                        && r.to.is_none()
                        && r.pair.as_ref().is_some_and(|p| {
                            p.len() == 2 && p[0] != p[1] && p.iter().all(|w| !w.trim().is_empty())
                        });
                    if !ok {
                        return Err(Problem::at(
                            at,
                            "an allow/deny rule names a `pair` of two different workflows only",
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// How a starting workflow relates to an active one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The rule that applies.
    pub rule: Rule,
    /// Which relation or default decided, for messages and details.
    pub because: String,
}

impl WorkflowRules {
    /// The role of a workflow (`None`: not listed).
    pub fn role(&self, name: &str) -> Option<Role> {
        self.workflows.get(name).map(|d| d.role)
    }

    /// The relation between an `active` workflow and a `starting` one.
    pub fn relation(&self, active: &str, starting: &str) -> Verdict {
        for r in &self.relations {
            match r.rule {
                Rule::Handoff => {
                    if r.from.as_deref() == Some(active) && r.to.as_deref() == Some(starting) {
                        return Verdict {
                            rule: Rule::Handoff,
                            because: format!("{active} -> {starting}: handoff"),
                        };
                    }
                }
                rule => {
                    let pair = r.pair.as_deref().unwrap_or_default();
                    if (pair[0] == active && pair[1] == starting)
                        || (pair[0] == starting && pair[1] == active)
                    {
                        return Verdict {
                            rule,
                            because: format!(
                                "{} + {}: {}",
                                pair[0],
                                pair[1],
                                if rule == Rule::Allow { "allow" } else { "deny" }
                            ),
                        };
                    }
                }
            }
        }
        let owners = self.role(active) == Some(Role::PersistenceOwner)
            && self.role(starting) == Some(Role::PersistenceOwner);
        let (rule, key) = if owners {
            (self.defaults.two_persistence_owners, "twoPersistenceOwners")
        } else {
            (self.defaults.other, "other")
        };
        Verdict {
            rule,
            because: format!(
                "defaults.{key}: {}",
                if rule == Rule::Allow { "allow" } else { "deny" }
            ),
        }
    }

    /// Whether `from` → `to` is an approved handoff.
    pub fn is_handoff(&self, from: &str, to: &str) -> bool {
        self.relations.iter().any(|r| {
            r.rule == Rule::Handoff
                && r.from.as_deref() == Some(from)
                && r.to.as_deref() == Some(to)
        })
    }
}

/// JSON Schema of `rules/workflows.json`.
pub fn schema() -> Value {
    serde_json::to_value(schemars::schema_for!(WorkflowRules)).expect("schemas serialise")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_relations() {
        let rules = crate::rules::RuleSet::embedded().unwrap();
        let w: WorkflowRules = rules.family().unwrap();
        let rule = |a: &str, b: &str| w.relation(a, b).rule;
        assert_eq!(rule("plan", "ultragoal"), Rule::Handoff);
        assert_eq!(
            rule("ultragoal", "plan"),
            Rule::Allow,
            "a handoff is directed"
        );
        assert_eq!(rule("team", "ulw-loop"), Rule::Allow);
        assert_eq!(rule("ultragoal", "ralph"), Rule::Deny);
        assert_eq!(rule("ultrawork", "ultragoal"), Rule::Deny);
        assert_eq!(rule("ultrawork", "ulw-loop"), Rule::Allow);
        assert_eq!(
            rule("ulw-loop", "ulw-loop"),
            Rule::Deny,
            "two owners by default"
        );
        assert_eq!(rule("unknown-tool", "ulw-loop"), Rule::Allow);
        assert!(
            w.relation("ulw-loop", "ulw-loop")
                .because
                .starts_with("defaults.")
        );
    }
}

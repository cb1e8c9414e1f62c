//! Which way each rules key tightens (docs/threat-model.md#i9): the table
//! `rules/directions.json`, embedded next to the defaults, and the
//! tighten-only merge of a repository override.
//!
//! The repository (`.evidence-gate/rules.json`) is written by the agent the
//! rules gate, so it may make policy stricter and never weaker. Every leaf of
//! the repository document is compared with the effective value (embedded
//! defaults, the user's configuration, the wiring's `--rules`): a value that
//! tightens is applied; anything else is ignored and reported as a
//! [`Relaxation`] (`RULES_RELAXATION_IGNORED`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::json::pointer_token;

/// How a key tightens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Direction {
    /// Any change relaxes (state directories, evidence roots, templates).
    Fixed,
    /// A larger number tightens (`max_attempts`).
    Higher,
    /// A smaller number tightens (size and time limits on what the agent submits).
    Lower,
    /// Only `true` tightens (reuse and freshness checks).
    True,
    /// Only `false` tightens.
    False,
    /// The repository's items are added to the effective list.
    Union,
    /// Only a subset of the effective list tightens (context-pressure markers).
    Subset,
    /// The repository's regex is OR-ed with the effective one (`gated_agents`).
    RegexOr,
}

impl Direction {
    /// The name used in `rules/directions.json`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Direction::Fixed => "fixed",
            Direction::Higher => "higher",
            Direction::Lower => "lower",
            Direction::True => "true",
            Direction::False => "false",
            Direction::Union => "union",
            Direction::Subset => "subset",
            Direction::RegexOr => "regex_or",
        }
    }
}

const TEXT: &str = include_str!("../../rules/directions.json");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[allow(dead_code)]
    schema: u32,
    #[allow(dead_code)]
    about: String,
    directions: BTreeMap<String, Direction>,
}

/// The direction patterns, as `(segments, direction)`.
pub(crate) fn table() -> Vec<(Vec<String>, Direction)> {
    let t: Table = serde_json::from_str(TEXT).expect("rules/directions.json is valid");
    t.directions
        .into_iter()
        .map(|(p, d)| (segments(&p), d))
        .collect()
}

fn segments(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// The direction of the key at `path` (JSON pointer segments): the longest
/// pattern that matches a prefix of it.
pub(crate) fn lookup(table: &[(Vec<String>, Direction)], path: &[String]) -> Option<Direction> {
    table
        .iter()
        .filter(|(p, _)| {
            p.len() <= path.len() && p.iter().zip(path).all(|(a, b)| a == "*" || a == b)
        })
        .max_by_key(|(p, _)| p.len())
        .map(|(_, d)| *d)
}

/// A repository value that was not applied because it does not tighten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relaxation {
    /// JSON pointer of the key.
    pub pointer: String,
    /// The key's direction (`fixed`, `higher`, …).
    pub direction: &'static str,
    /// Why it was ignored.
    pub why: String,
}

/// Applies the repository document `repo` to `effective`, key by key,
/// keeping only values that tighten; returns what was ignored. Keys with no
/// direction (typos, unknown keys) are merged so that validation reports
/// them as it always did.
pub(crate) fn apply_tightening(effective: &mut Value, repo: &Value) -> Vec<Relaxation> {
    let table = table();
    let mut out = Vec::new();
    let mut path = Vec::new();
    walk(effective, repo, &table, &mut path, &mut out);
    out
}

fn pointer_of(path: &[String]) -> String {
    path.iter()
        .map(|t| format!("/{}", pointer_token(t)))
        .collect()
}

fn walk(
    effective: &mut Value,
    repo: &Value,
    table: &[(Vec<String>, Direction)],
    path: &mut Vec<String>,
    out: &mut Vec<Relaxation>,
) {
    if let Value::Object(map) = repo {
        for (k, v) in map {
            path.push(k.clone());
            let dir = lookup(table, path);
            let exists = effective.get(k).is_some();
            if v.is_object() && (exists || dir.is_none()) {
                if !effective.is_object() {
                    *effective = Value::Object(Default::default());
                }
                let slot = effective
                    .as_object_mut()
                    .expect("an object")
                    .entry(k.clone())
                    .or_insert_with(|| Value::Object(Default::default()));
                if slot.is_object() {
                    walk(slot, v, table, path, out);
                } else {
                    leaf(slot, v, dir, path, out);
                }
            } else if let Some(obj) = effective.as_object_mut() {
                match obj.get_mut(k) {
                    Some(slot) => leaf(slot, v, dir, path, out),
                    None if dir.is_none() => {
                        obj.insert(k.clone(), v.clone());
                    }
                    None => out.push(Relaxation {
                        pointer: pointer_of(path),
                        direction: dir.map_or("fixed", Direction::name),
                        why:
                            "the key has no effective value to tighten; a repository may not add it"
                                .into(),
                    }),
                }
            }
            path.pop();
        }
    }
}

fn leaf(
    slot: &mut Value,
    repo: &Value,
    dir: Option<Direction>,
    path: &[String],
    out: &mut Vec<Relaxation>,
) {
    if slot == repo {
        return;
    }
    let Some(dir) = dir else {
        // No direction: an unknown key inside a known one. Merged, so that
        // validation names it (a typo stays RULES_INVALID).
        *slot = repo.clone();
        return;
    };
    let ignored = |why: String| Relaxation {
        pointer: pointer_of(path),
        direction: dir.name(),
        why,
    };
    let verdict: Result<Value, String> = match dir {
        Direction::Fixed => Err("the key is fixed for repositories (any change relaxes)".into()),
        Direction::Higher | Direction::Lower => match (slot.as_f64(), repo.as_f64()) {
            (Some(cur), Some(new)) => {
                let tighter = if dir == Direction::Higher {
                    new >= cur
                } else {
                    new <= cur
                };
                if tighter {
                    Ok(repo.clone())
                } else {
                    Err(format!(
                        "{repo} is {} than the effective {slot}; only a {} value tightens",
                        if dir == Direction::Higher {
                            "lower"
                        } else {
                            "higher"
                        },
                        if dir == Direction::Higher {
                            "higher"
                        } else {
                            "lower"
                        }
                    ))
                }
            }
            _ => Ok(repo.clone()),
        },
        Direction::True | Direction::False => {
            let want = dir == Direction::True;
            match repo.as_bool() {
                Some(b) if b == want => Ok(repo.clone()),
                Some(_) => Err(format!("only `{want}` tightens this switch")),
                None => Ok(repo.clone()),
            }
        }
        Direction::Union => match (slot.as_array(), repo.as_array()) {
            (Some(cur), Some(new)) => {
                let mut merged = cur.clone();
                for item in new {
                    if !merged.contains(item) {
                        merged.push(item.clone());
                    }
                }
                let dropped = cur.iter().any(|c| !new.contains(c));
                if dropped {
                    // The additions apply; the removals are reported.
                    out.push(ignored(
                        "items of the effective list may not be removed by a repository; they were kept"
                            .into(),
                    ));
                }
                Ok(Value::Array(merged))
            }
            _ => Ok(repo.clone()),
        },
        Direction::Subset => match (slot.as_array(), repo.as_array()) {
            (Some(cur), Some(new)) => {
                if new.iter().all(|i| cur.contains(i)) {
                    Ok(repo.clone())
                } else {
                    Err("the list adds items the effective list does not have; only removing items tightens".into())
                }
            }
            _ => Ok(repo.clone()),
        },
        Direction::RegexOr => match (slot.as_str(), repo.as_str()) {
            (Some(cur), Some(new)) => Ok(Value::String(format!("^(?:(?:{cur})|(?:{new}))$"))),
            _ => Ok(repo.clone()),
        },
    };
    match verdict {
        Ok(v) => *slot = v,
        Err(why) => out.push(ignored(why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{EMBEDDED, RuleSet};
    use serde_json::json;

    fn leaves(v: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, x) in m {
                    path.push(k.clone());
                    leaves(x, path, out);
                    path.pop();
                }
            }
            _ => out.push((path.clone(), v.clone())),
        }
    }

    #[test]
    fn every_embedded_key_has_a_direction_of_its_type() {
        let rules = RuleSet::embedded().unwrap();
        let table = table();
        let mut all = Vec::new();
        leaves(&rules.merged(), &mut Vec::new(), &mut all);
        assert!(all.len() > 100, "{}", all.len());
        for (path, value) in &all {
            let p = pointer_of(path);
            let d = lookup(&table, path).unwrap_or_else(|| panic!("{p} has no direction"));
            let fits = match d {
                Direction::Fixed => true,
                Direction::Higher | Direction::Lower => value.is_number(),
                Direction::True | Direction::False => value.is_boolean(),
                Direction::Union | Direction::Subset => value.is_array(),
                Direction::RegexOr => value.is_string(),
            };
            assert!(fits, "{p}: direction `{}` does not fit {value}", d.name());
        }
        // No stale pattern: each one names at least one embedded key.
        for (pattern, _) in &table {
            assert!(
                all.iter().any(|(path, _)| path.len() >= pattern.len()
                    && pattern.iter().zip(path).all(|(a, b)| a == "*" || a == b)),
                "{} names no embedded key",
                pointer_of(pattern)
            );
        }
        // The table itself is not mounted into the rules document.
        assert!(EMBEDDED.iter().all(|e| e.file != "rules/directions.json"));
    }

    #[test]
    fn tightening_applies_and_relaxing_is_ignored() {
        let mut eff = json!({
            "subagent_stop": {"max_attempts": 3, "reuse_protection": true, "gated_agents": "^w$",
                              "max_receipt_bytes": 100},
            "hooks": {"context_pressure_markers": ["a", "b"]},
            "profiles": {"ulw-loop": {"stateDir": ".omo/ulw-loop"}},
        });
        let repo = json!({
            "subagent_stop": {"max_attempts": 5, "reuse_protection": false, "gated_agents": "^x$",
                              "max_receipt_bytes": 200},
            "hooks": {"context_pressure_markers": ["a", "c"]},
            "profiles": {"ulw-loop": {"stateDir": ".elsewhere"}},
        });
        let ignored = apply_tightening(&mut eff, &repo);
        assert_eq!(eff["subagent_stop"]["max_attempts"], 5);
        assert_eq!(eff["subagent_stop"]["reuse_protection"], true);
        assert_eq!(
            eff["subagent_stop"]["gated_agents"],
            "^(?:(?:^w$)|(?:^x$))$"
        );
        assert_eq!(eff["subagent_stop"]["max_receipt_bytes"], 100);
        assert_eq!(eff["hooks"]["context_pressure_markers"], json!(["a", "b"]));
        assert_eq!(eff["profiles"]["ulw-loop"]["stateDir"], ".omo/ulw-loop");
        let mut ptrs: Vec<&str> = ignored.iter().map(|r| r.pointer.as_str()).collect();
        ptrs.sort();
        assert_eq!(
            ptrs,
            vec![
                "/hooks/context_pressure_markers",
                "/profiles/ulw-loop/stateDir",
                "/subagent_stop/max_receipt_bytes",
                "/subagent_stop/reuse_protection",
            ]
        );
        let mut eff = json!({"subagent_stop": {"max_attempts": 3}, "hooks": {"context_pressure_markers": ["a", "b"]}});
        let ignored = apply_tightening(
            &mut eff,
            &json!({"subagent_stop": {"max_attempts": 2}, "hooks": {"context_pressure_markers": ["b"]}}),
        );
        assert_eq!(eff["subagent_stop"]["max_attempts"], 3);
        assert_eq!(eff["hooks"]["context_pressure_markers"], json!(["b"]));
        assert_eq!(ignored.len(), 1);
        assert_eq!(ignored[0].direction, "higher");
    }

    #[test]
    fn a_repository_cannot_add_a_profile_or_directive() {
        let mut eff =
            json!({"profiles": {"ulw-loop": {"stateDir": "a"}}, "directives": {"x": "t"}});
        let ignored = apply_tightening(
            &mut eff,
            &json!({"profiles": {"evil": {"stateDir": "b"}}, "directives": {"y": "u"}}),
        );
        assert!(eff["profiles"].get("evil").is_none());
        assert!(eff["directives"].get("y").is_none());
        assert_eq!(ignored.len(), 2);
    }
}

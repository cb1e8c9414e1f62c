//! Reading `goals.json` for the audit: the plan fields repository mode needs
//! (`revision`, `lastMutation`, the completion record, goal statuses) with
//! the reader's rules of goal-engine.md §2.4 that concern them.

use cap_std::fs::Dir;
use serde_json::{Map, Value, json};

use super::layout::ProfileLayout;
use super::scan::{Opened, open_state_file};
use crate::evidence::{Code, Finding};
use crate::sandbox::open::{self, FileChecks};

/// A plan as read from a state directory.
#[derive(Debug)]
pub(crate) struct PlanDoc {
    doc: Map<String, Value>,
    completion: Option<Map<String, Value>>,
}

/// `lastMutation`: the revision it produced, the first seq of its entries and
/// how many entries it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LastMutation {
    pub(crate) revision: u64,
    pub(crate) from_seq: u64,
    pub(crate) entries: u64,
}

impl PlanDoc {
    /// `revision` (absent ⇒ 0).
    pub(crate) fn revision(&self) -> u64 {
        self.doc
            .get("revision")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// `lastMutation`, when present.
    pub(crate) fn last_mutation(&self) -> Option<LastMutation> {
        let lm = self.doc.get("lastMutation")?;
        Some(LastMutation {
            revision: lm.get("revision")?.as_u64()?,
            from_seq: lm.get("fromSeq")?.as_u64()?,
            entries: lm.get("entries")?.as_array()?.len() as u64,
        })
    }

    /// The aggregate completion record (any of the profile's keys; they are
    /// checked equal on read).
    pub(crate) fn completion(&self) -> Option<&Map<String, Value>> {
        self.completion.as_ref()
    }

    /// The goal objects.
    pub(crate) fn goals(&self) -> impl Iterator<Item = &Map<String, Value>> {
        self.doc
            .get("goals")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
    }

    /// The goal with this id.
    pub(crate) fn goal(&self, id: &str) -> Option<&Map<String, Value>> {
        self.goals()
            .find(|g| g.get("id").and_then(Value::as_str) == Some(id))
    }
}

/// Reads and checks `goals.json` in `dir`; `Ok(None)` when there is none.
/// `completion_keys` are every profile's completion keys: readers accept
/// either spelling, and two present records must be equal (goal-engine.md §7.4).
pub(crate) fn read(
    dir: &Dir,
    display: &str,
    layout: &ProfileLayout,
    completion_keys: &[String],
) -> Result<Option<PlanDoc>, Box<Finding>> {
    let (mut file, size) = match open_state_file(dir, "goals.json", display) {
        Opened::Absent => return Ok(None),
        Opened::Problem(f) => return Err(Box::new(f)),
        Opened::File(f, size) => (f, size),
    };
    let corrupt = |pointer: &str, problem: String| {
        Box::new(
            Finding::new(
                Code::PlanCorrupt,
                Some(display),
                if pointer.is_empty() {
                    problem.clone()
                } else {
                    format!("{pointer}: {problem}")
                },
            )
            .with_detail(json!({"pointer": pointer, "problem": problem})),
        )
    };
    let max = layout.max_plan_bytes;
    if size > max {
        return Err(corrupt(
            "",
            format!("the plan is {size} bytes; the limit is {max}"),
        ));
    }
    let checks = FileChecks {
        reject_hard_links: false,
        max_bytes: max,
        reject_empty: false,
    };
    let meta = file.metadata().map_err(|e| {
        Box::new(Finding::new(
            Code::IoError,
            Some(display),
            format!("cannot read `{display}`: {e}"),
        ))
    })?;
    let mut bytes = Vec::new();
    open::hash_handle(&mut file, &meta, &checks, None, max as usize, &mut bytes).map_err(|p| {
        let (code, why) = crate::evidence::verify::problem_finding(&p);
        Box::new(Finding::new(
            code,
            Some(display),
            format!("`{display}`: {why}"),
        ))
    })?;
    let value = crate::json::parse_strict(&bytes)
        .map_err(|e| corrupt("", format!("not valid JSON: {e}")))?;
    let Value::Object(doc) = value else {
        return Err(corrupt("", "the plan is not a JSON object".into()));
    };
    if doc.get("version").and_then(Value::as_u64) != Some(1) {
        return Err(corrupt("/version", "must be 1".into()));
    }
    if !doc.get("goals").is_some_and(Value::is_array) {
        return Err(corrupt("/goals", "must be an array".into()));
    }
    if let Some(p) = doc.get("profile")
        && p.as_str() != Some(layout.name.as_str())
    {
        return Err(corrupt(
            "/profile",
            format!(
                "is {p}, but the plan lies in the `{}` state directory",
                layout.name
            ),
        ));
    }
    if doc.get("revision").is_some_and(|r| r.as_u64().is_none()) {
        return Err(corrupt(
            "/revision",
            "must be a non-negative integer".into(),
        ));
    }
    if let Some(lm) = doc.get("lastMutation") {
        let ok = lm.get("revision").and_then(Value::as_u64).is_some()
            && lm.get("fromSeq").and_then(Value::as_u64).is_some()
            && lm.get("entries").is_some_and(Value::is_array);
        if !ok {
            return Err(corrupt(
                "/lastMutation",
                "must be {revision, fromSeq, entries[]}".into(),
            ));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for (i, g) in doc["goals"].as_array().into_iter().flatten().enumerate() {
        let Some(id) = g.get("id").and_then(Value::as_str) else {
            return Err(corrupt(
                &format!("/goals/{i}/id"),
                "every goal needs a string id".into(),
            ));
        };
        if !seen.insert(id) {
            return Err(corrupt(
                &format!("/goals/{i}/id"),
                format!("goal id `{id}` is used twice"),
            ));
        }
    }
    let mut completion: Option<(&str, &Value)> = None;
    for key in completion_keys {
        let Some(rec) = doc.get(key) else { continue };
        if !rec.is_object() {
            return Err(corrupt(
                &format!("/{key}"),
                "the completion record must be an object".into(),
            ));
        }
        match completion {
            Some((first, other)) if other != rec => {
                return Err(corrupt(
                    &format!("/{key}"),
                    format!("`{first}` and `{key}` hold different completion records"),
                ));
            }
            Some(_) => {}
            None => completion = Some((key, rec)),
        }
    }
    let completion = completion.and_then(|(_, v)| v.as_object().cloned());
    Ok(Some(PlanDoc { doc, completion }))
}

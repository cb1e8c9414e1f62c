//! Goal derivation from the brief (docs/differences.md#r-1 with the docs/engine.md#ge-4
//! changes), identifier generation (docs/differences.md#r-1) and seeded criteria (docs/differences.md#r-1).

use serde_json::{Map, Value, json};

pub(crate) use super::candidate::{Candidate, MAX_BULLET_CHARS};
use super::candidate::{too_long, too_many};
use super::error::{ErrorKind, GoalError};
use super::plan::GoalStatus;
use super::profile::{BriefRules, Derivation};

/// The goals `create-goals` derives from `brief` under the profile's
/// `brief` rules: every bullet (`bullets`, docs/differences.md#r-1) or the stories of its
/// Stories/Goals sections (`stories`, [`super::stories`]); paragraphs when
/// the brief has no list item; one default goal when it has nothing else.
pub(crate) fn derive(brief: &str, rules: &BriefRules) -> Result<Vec<Candidate>, GoalError> {
    if rules.derivation == Derivation::Stories
        && let Some(goals) = super::stories::derive(brief, rules.max_implicit_goals)?
    {
        return Ok(goals);
    }
    let list = objectives(brief)?;
    if let Some(max) = rules.max_implicit_goals
        && list.len() > max as usize
    {
        return Err(too_many(list.len(), max));
    }
    Ok(list
        .into_iter()
        .enumerate()
        .map(|(i, o)| Candidate {
            title: match rules.derivation {
                Derivation::Bullets => title_for(&o),
                Derivation::Stories => super::stories::title(&o, &format!("Goal {}", i + 1)),
            },
            objective: o,
        })
        .collect())
}

/// One `--goal "Title::Objective"` value: the title before the first `::`
/// and the objective after it, both trimmed; without `::` the whole value is
/// the objective and the title is its first line. An empty objective is
/// `ULW_LOOP_ARGUMENT_MISSING`.
pub(crate) fn goal_arg(raw: &str, index: usize) -> Result<Candidate, GoalError> {
    let (title, objective) = match raw.split_once("::") {
        Some((t, o)) => (t.trim(), o.trim()),
        None => ("", raw.trim()),
    };
    if crate::text::is_blank(objective) {
        return Err(GoalError::new(
            ErrorKind::ArgumentMissing {
                flag: Some("--goal".into()),
            },
            format!("Missing objective in --goal {raw:?}; pass --goal \"Title::Objective\"."),
        ));
    }
    let title = if crate::text::is_blank(title) {
        super::stories::title(objective, &format!("Goal {}", index + 1))
    } else {
        title.to_owned()
    };
    Ok(Candidate {
        title,
        objective: objective.to_owned(),
    })
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn bullet_body(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let mut chars = t.char_indices();
    let (_, first) = chars.next()?;
    let rest_at = if matches!(first, '-' | '*' | '+') {
        first.len_utf8()
    } else if first.is_ascii_digit() {
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        match t.as_bytes().get(digits) {
            Some(b'.') | Some(b')') => digits + 1,
            _ => return None,
        }
    } else {
        return None;
    };
    let rest = &t[rest_at..];
    rest.starts_with(char::is_whitespace).then_some(rest)
}

/// The goal objectives of a brief, in order. Bullets win; otherwise
/// paragraphs (heading lines removed); otherwise one default objective.
pub(crate) fn objectives(brief: &str) -> Result<Vec<String>, GoalError> {
    let mut bullets: Vec<String> = Vec::new();
    for (i, line) in brief.lines().enumerate() {
        let Some(body) = bullet_body(line) else {
            continue;
        };
        let text = collapse(body);
        let len = text.chars().count();
        if len == 0 {
            continue;
        }
        if len > MAX_BULLET_CHARS {
            return Err(too_long(i + 1, len));
        }
        if !bullets.contains(&text) {
            bullets.push(text);
        }
    }
    if !bullets.is_empty() {
        return Ok(bullets);
    }
    let mut paragraphs = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let flush = |current: &mut Vec<&str>, out: &mut Vec<String>| {
        let text = collapse(&current.join("\n"));
        if !text.is_empty() {
            out.push(text);
        }
        current.clear();
    };
    for line in brief.lines() {
        if line.trim().is_empty() {
            flush(&mut current, &mut paragraphs);
        } else if !line.trim_start().starts_with('#') {
            current.push(line);
        }
    }
    flush(&mut current, &mut paragraphs);
    if paragraphs.is_empty() {
        paragraphs.push("Complete the requested project objective.".to_owned());
    }
    Ok(paragraphs)
}

/// `objective` cut to 69 characters plus `...` when longer than 72.
pub(crate) fn title_for(objective: &str) -> String {
    if objective.chars().count() > 72 {
        let mut t: String = objective.chars().take(69).collect();
        t.push_str("...");
        t
    } else {
        objective.to_owned()
    }
}

/// The slug of a title: lower-case, runs of non `[a-z0-9]` → `-`, trimmed,
/// cut to 36 characters.
pub(crate) fn slug(title: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in title.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
            dash = false;
        } else if !dash {
            out.push('-');
            dash = true;
        }
    }
    let t: String = out.trim_matches('-').chars().take(36).collect();
    t.trim_end_matches('-').to_owned()
}

/// `G<nnn>[-<slug>]` for the goal at 0-based `index`.
pub(crate) fn slugged_id(index: usize, title: &str) -> String {
    let s = slug(title);
    if s.is_empty() {
        format!("G{:03}", index + 1)
    } else {
        format!("G{:03}-{s}", index + 1)
    }
}

/// The largest `N` among goal ids of the form `G<digits>…` (docs/differences.md#r-1).
pub(crate) fn max_ordinal<'a>(ids: impl Iterator<Item = &'a str>) -> usize {
    ids.filter_map(|id| {
        let digits: String = id
            .strip_prefix('G')?
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse::<usize>().ok()
    })
    .max()
    .unwrap_or(0)
}

/// The next free slugged id at or after ordinal `from` (1-based): hand-edited
/// plans can hold an id the ordinal scheme would produce, so taken ids are
/// skipped. Returns the id and its ordinal.
pub(crate) fn next_free_id(
    from: usize,
    title: &str,
    taken: &dyn Fn(&str) -> bool,
) -> (String, usize) {
    let mut n = from.max(1);
    loop {
        let id = slugged_id(n - 1, title);
        if !taken(&id) {
            return (id, n);
        }
        n += 1;
    }
}

/// The three seeded criteria of goal `index` (docs/differences.md#r-1), marked `seeded: true`.
pub(crate) fn seeded_criteria(index: usize, objective: &str) -> Vec<Value> {
    let mut subject = collapse(objective);
    if subject.is_empty() {
        subject = format!("Goal {}", index + 1);
    }
    if subject.chars().count() > 80 {
        subject = subject.chars().take(77).collect::<String>() + "...";
    }
    let n = index + 1;
    let make = |id: &str, model: &str, essential: bool, scenario: String, expected: String| {
        json!({
            "id": id,
            "scenario": scenario,
            "userModel": model,
            "expectedEvidence": expected,
            "essential": essential,
            "capturedEvidence": null,
            "status": GoalStatus::Pending.as_str(),
            "seeded": true,
        })
    };
    vec![
        make(
            "C001",
            "happy",
            true,
            format!("happy path for: {subject}"),
            format!("Replace via revise_criterion with observable happy-path proof for goal {n}."),
        ),
        make(
            "C002",
            "edge",
            true,
            "edge case (boundary/empty/malformed)".into(),
            format!(
                "Replace via revise_criterion with boundary or malformed-input proof for: {subject}."
            ),
        ),
        make(
            "C003",
            "regression",
            false,
            "regression: adjacent surface still works".into(),
            format!(
                "Replace via revise_criterion with regression proof for neighboring behavior after: {subject}."
            ),
        ),
    ]
}

/// A new pending goal (`create-goals`, `add-goal`).
pub(crate) fn new_goal(
    index: usize,
    title: &str,
    objective: &str,
    seed: bool,
    now: &str,
) -> Result<Map<String, Value>, GoalError> {
    let title = title.trim();
    let objective = objective.trim();
    if crate::text::is_blank(title) {
        return Err(GoalError::new(
            ErrorKind::ArgumentMissing { flag: None },
            "Missing title.",
        ));
    }
    if crate::text::is_blank(objective) {
        return Err(GoalError::new(
            ErrorKind::ArgumentMissing { flag: None },
            "Missing objective.",
        ));
    }
    let criteria = if seed {
        seeded_criteria(index, objective)
    } else {
        Vec::new()
    };
    let v = json!({
        "id": slugged_id(index, title),
        "title": title,
        "objective": objective,
        "status": GoalStatus::Pending.as_str(),
        "successCriteria": criteria,
        "attempt": 0,
        "createdAt": now,
        "updatedAt": now,
    });
    Ok(v.as_object().cloned().expect("object"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_titles() {
        assert_eq!(slugged_id(0, "Goal A"), "G001-goal-a");
        assert_eq!(
            slugged_id(0, "Build the JWT auth endpoint"),
            "G001-build-the-jwt-auth-endpoint"
        );
        assert_eq!(slugged_id(1, "Add rate limit"), "G002-add-rate-limit");
        assert_eq!(slugged_id(2, "!!!"), "G003");
        let long = "x".repeat(80);
        assert_eq!(title_for(&long).chars().count(), 72);
        assert!(title_for(&long).ends_with("..."));
    }

    #[test]
    fn bullets_paragraphs_and_headings() {
        let b =
            objectives("# Plan\n- one\n* two\n1. three\n2) four\n- one\n-notabullet\n").unwrap();
        assert_eq!(b, vec!["one", "two", "three", "four"]);
        let p = objectives("# Heading\nText right under it\n\nSecond  para\n").unwrap();
        assert_eq!(p, vec!["Text right under it", "Second para"]);
        assert_eq!(
            objectives("# only\n").unwrap(),
            vec!["Complete the requested project objective."]
        );
        let err = objectives(&format!("- {}\n", "y".repeat(1201))).unwrap_err();
        assert_eq!(err.code(), "ULW_LOOP_BRIEF_ITEM_TOO_LONG");
    }
}

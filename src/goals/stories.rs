//! Story-aware goal derivation (profile `brief/derivation: "stories"`):
//! the goals of a brief written as a plan — its Stories/Goals sections —
//! rather than every bullet at any depth.
//!
//! * A section starts at a heading (`#`–`######`) or at a line that is only
//!   a label and a colon (`Acceptance criteria:`); its name is compared
//!   without emphasis marks, trailing colon or case.
//! * List items under acceptance-criteria, verification, checklist,
//!   evidence, constraint, risk, next-action, follow-up, note and review
//!   sections are never goals. A blank line ends such a section for the
//!   next unindented list item.
//! * When any item lies in a Stories/Goals/Milestones/`P<n>` section, only
//!   those items are candidates; the goals are the candidates at the
//!   shallowest indentation, and the lines nested under a goal fold into its
//!   objective (one per line) instead of becoming goals of their own.
//! * More than `brief/maxImplicitGoals` goals from a brief without an
//!   explicit Stories/Goals section is refused: such a brief is a plan or a
//!   review handoff, not a list of stories.
//! * A brief whose list items all lie in dropped sections is one goal (the
//!   whole brief); a brief without list items falls back to paragraphs.

use std::sync::LazyLock;

use regex::Regex;

use super::candidate::{Candidate, MAX_BULLET_CHARS, too_long, too_many};
use super::error::GoalError;

static ATX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^#{1,6}\s+(.+?)\s*#*\s*$").expect("static pattern"));
static INDENTED_ATX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s{1,3}#{1,6}\s+(.+?)\s*#*\s*$").expect("static pattern"));
static LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\S.{1,100}):\s*$").expect("static pattern"));
static MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(?:[-*+]\s+|\d+[.)]\s+)").expect("static pattern"));
static ITEM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\s*)(?:[-*+]|\d+[.)])\s+.+$").expect("static pattern"));
static REVIEW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:review(?:\s+artifact)?|review\s+findings?|findings?|verdict|status|consensus(?:\s+status)?|decision\s+log|approval(?:\s+status)?|implementation\s+notes?|handoff|context|background|summary|scope)$",
    )
    .expect("static pattern")
});
static NON_STORY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:acceptance\s+criteria|verification(?:\s+checklist)?|validation(?:\s+checklist)?|checklist|evidence|constraints?|risks?|(?:immediate\s+)?next\s+actions?|follow-?ups?|notes?)$",
    )
    .expect("static pattern")
});
static STORY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:story|stories|goals?|milestones?|p\d+)$").expect("static pattern")
});

fn normalize(label: &str) -> String {
    label
        .chars()
        .filter(|c| !matches!(c, '`' | '*' | '_' | '~'))
        .collect::<String>()
        .trim_end()
        .trim_end_matches(':')
        .trim()
        .to_lowercase()
}

/// The section a line opens, if it is a heading or a `Label:` line.
fn section_label(line: &str) -> Option<String> {
    if MARKER.is_match(line) {
        return None;
    }
    let raw = ATX
        .captures(line)
        .or_else(|| LABEL.captures(line))?
        .get(1)?
        .as_str();
    Some(normalize(raw))
}

/// A heading indented by one to three spaces after a blank line opens a
/// section only when it names stories.
fn indented_story_label(line: &str) -> Option<String> {
    let label = normalize(INDENTED_ATX.captures(line)?.get(1)?.as_str());
    is_story(Some(&label)).then_some(label)
}

fn is_review(section: Option<&str>) -> bool {
    section.is_some_and(|s| REVIEW.is_match(s))
}

fn is_non_story(section: Option<&str>) -> bool {
    section.is_some_and(|s| NON_STORY.is_match(s)) || is_review(section)
}

fn is_story(section: Option<&str>) -> bool {
    section.is_some_and(|s| STORY.is_match(s))
}

/// Leading whitespace width, a tab counting two.
fn indent(line: &str) -> usize {
    line.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 2 } else { 1 })
        .sum()
}

/// The line without its list marker, trimmed.
fn clean(line: &str) -> &str {
    let at = MARKER.find(line).map_or(0, |m| m.end());
    line[at..].trim()
}

struct Item {
    line: usize,
    indent: usize,
    text: String,
    section: Option<String>,
}

fn items(lines: &[&str]) -> Vec<Item> {
    let mut out = Vec::new();
    let mut section: Option<String> = None;
    let mut leave_section = false;
    let mut after_blank = false;
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            leave_section |= is_non_story(section.as_deref());
            after_blank = true;
            continue;
        }
        let opened = section_label(line)
            .or_else(|| after_blank.then(|| indented_story_label(line)).flatten());
        if opened.is_some() {
            section = opened;
            leave_section = false;
        }
        after_blank = false;
        if !ITEM.is_match(line) {
            continue;
        }
        let depth = indent(line);
        if leave_section && depth == 0 {
            section = None;
        }
        leave_section = false;
        let text = clean(line);
        if text.is_empty() {
            continue;
        }
        out.push(Item {
            line: i,
            indent: depth,
            text: text.to_owned(),
            section: section.clone(),
        });
    }
    out
}

fn checked_len(line: usize, text: &str) -> Result<(), GoalError> {
    let len = text.chars().count();
    if len > MAX_BULLET_CHARS {
        return Err(too_long(line + 1, len));
    }
    Ok(())
}

/// The parent item's text and the lines nested under it, up to `end` (the
/// next goal's line), one per line.
fn objective(parent: &Item, lines: &[&str], end: usize) -> Result<String, GoalError> {
    let mut parts = vec![parent.text.clone()];
    for (i, line) in lines.iter().enumerate().take(end).skip(parent.line + 1) {
        let depth = indent(line);
        if depth <= parent.indent && is_non_story(section_label(line).as_deref()) {
            break;
        }
        if depth <= parent.indent && MARKER.is_match(line) {
            break;
        }
        if depth <= parent.indent || line.trim().is_empty() {
            continue;
        }
        let nested = clean(line);
        if !nested.is_empty() {
            checked_len(i, nested)?;
            parts.push(nested.to_owned());
        }
    }
    Ok(parts.join("\n"))
}

/// The first non-blank line of `objective`, cut to 69 characters plus
/// `...` when longer than 72; `fallback` when there is none.
pub(crate) fn title(objective: &str, fallback: &str) -> String {
    let first = objective
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or(fallback);
    if first.chars().count() > 72 {
        let cut: String = first.chars().take(69).collect();
        format!("{}...", cut.trim_end())
    } else {
        first.to_owned()
    }
}

/// The goals of `brief`; `None` when it has no list item at all (the caller
/// falls back to paragraphs).
pub(crate) fn derive(
    brief: &str,
    max_implicit: Option<u32>,
) -> Result<Option<Vec<Candidate>>, GoalError> {
    let lines: Vec<&str> = brief
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let all = items(&lines);
    if all.is_empty() {
        return Ok(None);
    }
    let kept: Vec<&Item> = all
        .iter()
        .filter(|i| !is_non_story(i.section.as_deref()))
        .collect();
    let explicit: Vec<&Item> = kept
        .iter()
        .copied()
        .filter(|i| is_story(i.section.as_deref()))
        .collect();
    let candidates = if explicit.is_empty() {
        kept
    } else {
        explicit.clone()
    };
    let Some(min) = candidates.iter().map(|i| i.indent).min() else {
        // Every item lies in a dropped section: the brief is one goal.
        let whole = brief.trim();
        let objective = if whole.is_empty() {
            "Complete the requested project objective."
        } else {
            whole
        };
        return Ok(Some(vec![Candidate {
            title: title(objective, "Goal 1"),
            objective: objective.to_owned(),
        }]));
    };
    let parents: Vec<&Item> = candidates.into_iter().filter(|i| i.indent == min).collect();
    if explicit.is_empty()
        && let Some(max) = max_implicit
        && parents.len() > max as usize
    {
        return Err(too_many(parents.len(), max));
    }
    let mut objectives: Vec<String> = Vec::with_capacity(parents.len());
    for (n, parent) in parents.iter().enumerate() {
        checked_len(parent.line, &parent.text)?;
        let end = parents.get(n + 1).map_or(lines.len(), |p| p.line);
        let o = objective(parent, &lines, end)?;
        if !objectives.contains(&o) {
            objectives.push(o);
        }
    }
    Ok(Some(
        objectives
            .into_iter()
            .enumerate()
            .map(|(i, objective)| Candidate {
                title: title(&objective, &format!("Goal {}", i + 1)),
                objective,
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objectives(brief: &str) -> Vec<String> {
        derive(brief, Some(20))
            .unwrap()
            .unwrap()
            .into_iter()
            .map(|c| c.objective)
            .collect()
    }

    #[test]
    fn sections_and_labels() {
        assert_eq!(section_label("### Stories").as_deref(), Some("stories"));
        assert_eq!(
            section_label("**Acceptance criteria**:").as_deref(),
            Some("acceptance criteria")
        );
        assert_eq!(
            section_label("Acceptance Criteria:").as_deref(),
            Some("acceptance criteria")
        );
        assert_eq!(section_label("- Note:"), None);
        assert_eq!(section_label("plain text"), None);
        assert!(is_non_story(Some("verification checklist")));
        assert!(is_non_story(Some("review findings")));
        assert!(is_story(Some("p1")));
        assert!(!is_story(Some("stories and more")));
    }

    #[test]
    fn nested_lines_fold_and_dropped_sections_stay_out() {
        let brief = "# Plan\n\n### Stories\n- Build the parser\n  - handle comments\n  - reject tabs\n- Ship the CLI\n\n### Acceptance criteria\n- parser tests pass\n\n### Checklist\n- [ ] docs\n";
        assert_eq!(
            objectives(brief),
            vec![
                "Build the parser\nhandle comments\nreject tabs",
                "Ship the CLI"
            ]
        );
    }

    #[test]
    fn only_dropped_sections_is_one_goal_and_no_items_is_none() {
        let brief = "Acceptance criteria:\n- a\n- b\n";
        assert_eq!(objectives(brief), vec![brief.trim()]);
        assert!(derive("just text\n\nmore", Some(20)).unwrap().is_none());
    }

    #[test]
    fn implicit_goals_are_capped_and_explicit_sections_are_not() {
        let many: String = (1..=21).map(|i| format!("- item {i}\n")).collect();
        let err = derive(&many, Some(20)).err().unwrap();
        assert_eq!(err.code(), "ULW_LOOP_BRIEF_TOO_MANY_GOALS");
        assert_eq!(derive(&many, None).unwrap().unwrap().len(), 21);
        let explicit = format!("## Goals\n{many}");
        assert_eq!(derive(&explicit, Some(20)).unwrap().unwrap().len(), 21);
    }

    #[test]
    fn titles_take_the_first_line() {
        assert_eq!(title("First\nsecond", "G"), "First");
        let long = format!("{} tail", "x".repeat(70));
        assert_eq!(title(&long, "G"), format!("{}...", "x".repeat(69)));
        assert_eq!(title("", "Goal 3"), "Goal 3");
    }
}

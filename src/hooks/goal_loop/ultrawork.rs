//! Ultrawork injection (docs/hook-contracts.md#h-5): a whole-word trigger, skipped under
//! context pressure and when the transcript tail already holds our recorded
//! injection, rendered from our own template within the host's cap.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Ctx;
use crate::hooks::event::Decision;
use crate::hooks::host::Host;
use crate::hooks::transcript::{self, Markers};

const SHORTENED: &str = "[ultrawork directive shortened to fit this host's context limit]";

/// True when `prompt` holds a trigger as a whole word (ASCII
/// case-insensitive; a boundary is a text edge or any character other than
/// an ASCII letter, digit or `_`).
pub(crate) fn triggered(prompt: &str, triggers: &[String]) -> bool {
    let hay = prompt.as_bytes().to_ascii_lowercase();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    triggers.iter().any(|t| {
        let t = t.as_bytes().to_ascii_lowercase();
        !t.is_empty()
            && crate::scan::Finder::new(&t).find_iter(&hay).any(|i| {
                (i == 0 || !word(hay[i - 1])) && hay.get(i + t.len()).is_none_or(|b| !word(*b))
            })
    })
}

/// True when a line of `tail` holding `tag` is recorded hook output of a
/// prompt event rather than, say, a user quoting it. Three recorded shapes
/// count: `hookSpecificOutput` of `UserPromptSubmit`/`BeforeAgent` with
/// `additionalContext` containing the tag; Codex's rollout line
/// `{"type":"response_item","payload":{"type":"message","role":"developer",…}}`
/// (0.171: injected context becomes a developer message, which no user can
/// write); Claude Code's transcript `attachment` of type
/// `hook_additional_context` (2.1.332).
pub(crate) fn already_injected(tail: &[u8], tag: &str) -> bool {
    let tag_b = tag.as_bytes();
    let mut from = 0;
    while let Some(off) = find(&tail[from..], tag_b) {
        let at = from + off;
        let start = crate::scan::rfind_byte(b'\n', &tail[..at]).map_or(0, |i| i + 1);
        let end = crate::scan::find_byte(b'\n', &tail[at..]).map_or(tail.len(), |i| at + i);
        if let Ok(v) = serde_json::from_slice::<Value>(&tail[start..end])
            && recorded_output(&v, tag, 0)
        {
            return true;
        }
        from = end.max(at + tag_b.len());
        if from >= tail.len() {
            break;
        }
    }
    false
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    crate::scan::find(hay, needle)
}

fn recorded_output(v: &Value, tag: &str, depth: usize) -> bool {
    if depth > 6 {
        return false;
    }
    match v {
        Value::Object(m) => {
            let ty = m.get("type").and_then(Value::as_str);
            if ty == Some("response_item")
                && let Some(Value::Object(p)) = m.get("payload")
                && p.get("type").and_then(Value::as_str) == Some("message")
                && p.get("role").and_then(Value::as_str) == Some("developer")
                && p.get("content").is_some_and(|c| holds_text(c, tag, 0))
            {
                return true;
            }
            if ty == Some("hook_additional_context")
                && m.get("content").is_some_and(|c| holds_text(c, tag, 0))
            {
                return true;
            }
            if let Some(Value::Object(h)) = m.get("hookSpecificOutput") {
                let event = h.get("hookEventName").and_then(Value::as_str);
                let context = h.get("additionalContext").and_then(Value::as_str);
                if matches!(event, Some("UserPromptSubmit" | "BeforeAgent"))
                    && context.is_some_and(|t| t.contains(tag))
                {
                    return true;
                }
            }
            m.values().any(|x| recorded_output(x, tag, depth + 1))
        }
        Value::Array(a) => a.iter().any(|x| recorded_output(x, tag, depth + 1)),
        _ => false,
    }
}

/// True when a string inside `v` (a content string, a list of strings or
/// of `{text}` parts) contains `tag`.
fn holds_text(v: &Value, tag: &str, depth: usize) -> bool {
    if depth > 4 {
        return false;
    }
    match v {
        Value::String(s) => s.contains(tag),
        Value::Array(a) => a.iter().any(|x| holds_text(x, tag, depth + 1)),
        Value::Object(m) => m.get("text").is_some_and(|t| holds_text(t, tag, depth + 1)),
        _ => false,
    }
}

fn cap_for(c: &Ctx<'_>) -> usize {
    let caps = &c.policy.prompt().rules.max_context_bytes;
    match c.env.host {
        Host::ClaudeCode => caps.claude_code,
        Host::Gemini => caps.gemini,
        Host::Codex | Host::Agy | Host::Common => caps.codex,
    }
}

fn normalise(text: &str) -> String {
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .trim()
        .to_owned()
}

/// Cut at a line boundary so that the text plus a final "shortened" line
/// fits `cap`.
fn shorten(text: &str, cap: usize) -> String {
    let budget = cap.saturating_sub(SHORTENED.len() + 1);
    let mut out = String::new();
    for line in text.lines() {
        if out.len() + line.len() + 1 > budget {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(SHORTENED);
    out
}

fn skill_path(c: &Ctx<'_>) -> Option<PathBuf> {
    let p = c.policy.prompt().rules.ultrawork_skill_path.as_deref()?;
    let p = Path::new(p);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        c.env.cwd.join(p)
    };
    transcript::open_transcript(c.amb, &abs).map(|_| abs)
}

/// Whether the profile in effect allows injection: the session's plan's
/// profile when there is one, else any candidate profile.
fn profile_allows(c: &Ctx<'_>) -> bool {
    let candidates = c.policy.candidates(c.profile_flag);
    if !candidates
        .iter()
        .any(|p| p.profile().hooks.ultrawork_injection)
    {
        return false;
    }
    // The prompt hook gates nothing: an unreadable plan is passed over.
    // Which plan wins is decided as the Stop hook decides it, from a plan's
    // bound view where its ledger vouches for one (whether it is complete,
    // when it was updated), so a large plan is not read here.
    let resolved = c.resolve_view(&candidates);
    for u in &resolved.unreadable {
        c.plan_unreadable(
            u,
            "allow",
            "the session's plan could not be read; it was passed over (the prompt hook gates nothing)",
        );
    }
    match resolved.found {
        Some(f) => f.profile.profile().hooks.ultrawork_injection,
        None => true,
    }
}

/// The ultrawork goal step: only Codex has `create_goal`/`update_goal`;
/// telling Claude Code or Gemini to call them sends the agent after tools it
/// does not have.
pub(crate) fn goal_step(host: Host) -> &'static str {
    match host {
        Host::Codex | Host::Common => {
            "Call create_goal with `objective` only, one sentence naming the outcome the user asked for. Never pass a token budget or a status; lifecycle changes go to update_goal."
        }
        Host::ClaudeCode | Host::Gemini | Host::Agy => {
            "State the outcome the user asked for in one sentence before you start, and hold every later step to it."
        }
    }
}

/// True when the prompt is one of our own block reasons replayed by the host:
/// Gemini CLI 0.61 runs BeforeAgent again with an AfterAgent deny reason as
/// the prompt, and every reason of ours starts with `evidence-gate:`.
pub(crate) fn own_reason(prompt: &str) -> bool {
    prompt.trim_start().starts_with("evidence-gate:")
}

/// The ultrawork decision for a prompt without a steering marker.
pub(super) fn decide(c: &Ctx<'_>, prompt: &str) -> Decision {
    let rules = &c.policy.prompt().rules;
    if !c.with_ultrawork || !triggered(prompt, &rules.ultrawork_triggers) || own_reason(prompt) {
        return Decision::Allow;
    }
    let markers = Markers::new(&c.hooks.context_pressure_markers);
    if markers.found_in(prompt.as_bytes()) || !profile_allows(c) {
        return Decision::Allow;
    }
    if let Some(tail) = c
        .env
        .transcript
        .as_deref()
        .and_then(|p| transcript::read_tail(c.amb, p, rules.ultrawork_tail_bytes))
        && (already_injected(&tail, &rules.ultrawork_tag) || markers.found_in(&tail))
    {
        return Decision::Allow;
    }
    let cap = cap_for(c);
    let skill = skill_path(c);
    let step = goal_step(c.env.host);
    let pointer = |p: &Path| {
        normalise(
            &c.policy
                .ultrawork()
                .ultrawork_pointer
                .render(&|slot| match slot {
                    "SKILL_PATH" => p.display().to_string(),
                    "GOAL_STEP" => step.to_owned(),
                    _ => String::new(),
                }),
        )
    };
    let mut text = match &skill {
        Some(p) => pointer(p),
        None => normalise(&c.policy.ultrawork().ultrawork.render(&|slot| match slot {
            "GOAL_STEP" => step.to_owned(),
            _ => String::new(),
        })),
    };
    if text.len() > cap {
        text = shorten(&text, cap);
    }
    if text.is_empty() {
        return Decision::Allow;
    }
    Decision::Context { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_words_only() {
        let t = vec!["ultrawork".to_owned(), "ulw".to_owned()];
        for yes in [
            "ulw",
            "ULW: go",
            "/ulw now",
            "run ulw-loop",
            "(ultrawork)",
            "x ulw\n",
        ] {
            assert!(triggered(yes, &t), "{yes}");
        }
        for no in ["bulwark", "ulwx", "ultraworks", "_ulw", "ulw_x", "2ulw"] {
            assert!(!triggered(no, &t), "{no}");
        }
        assert!(
            triggered("é ulw", &t),
            "a non-ASCII neighbour is a boundary"
        );
    }

    #[test]
    fn only_recorded_output_counts_as_injected() {
        let tag = "<ultrawork-mode>";
        let recorded = br#"{"type":"hook_output","hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"<ultrawork-mode>\nX"}}"#;
        assert!(already_injected(recorded, tag));
        let nested = br#"{"payload":{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"<ultrawork-mode>"}}}"#;
        assert!(already_injected(nested, tag));
        let quoted = br#"{"type":"user","content":"please paste <ultrawork-mode> here"}"#;
        assert!(!already_injected(quoted, tag));
        let quoted_shape = br#"{"type":"user","content":"{\"hookSpecificOutput\":{\"hookEventName\":\"UserPromptSubmit\",\"additionalContext\":\"<ultrawork-mode>\"}}"}"#;
        assert!(!already_injected(quoted_shape, tag));
        let mut two = quoted.to_vec();
        two.push(b'\n');
        two.extend_from_slice(recorded);
        assert!(already_injected(&two, tag));
        assert!(!already_injected(b"<ultrawork-mode> partial line", tag));
    }

    #[test]
    fn real_host_transcripts_count_as_injected() {
        let tag = "<ultrawork-mode>";
        let codex = include_bytes!(
            "../../../fixtures/hosts/codex/transcripts/recorded-codex-0.171.0-ultrawork-injected.jsonl"
        );
        assert!(
            already_injected(codex, tag),
            "Codex rollout developer message"
        );
        let claude = include_bytes!(
            "../../../fixtures/hosts/claude-code/transcripts/recorded-claude-code-2.1.332-ultrawork-injected.jsonl"
        );
        assert!(already_injected(claude, tag), "Claude attachment");
        // A user's own message in either transcript does not count.
        let codex_user = br#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<ultrawork-mode> please"}]}}"#;
        assert!(!already_injected(codex_user, tag));
        let claude_user = br#"{"type":"user","message":{"role":"user","content":"<ultrawork-mode> {\"type\":\"hook_additional_context\"}"}}"#;
        assert!(!already_injected(claude_user, tag));
    }

    #[test]
    fn shortening_keeps_whole_lines() {
        let text = "line one\nline two\nline three";
        let s = shorten(text, SHORTENED.len() + 12);
        assert_eq!(s, format!("line one\n{SHORTENED}"));
        assert!(s.len() <= SHORTENED.len() + 12);
    }
}

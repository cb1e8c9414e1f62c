//! `user-prompt-submit` (docs/hook-contracts.md#h-5): a steering directive after a profile
//! marker is applied through the engine; a prompt without one may get the
//! ultrawork injection. A marker never falls through to ultrawork.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Ctx, LoopProfile, prompts, ultrawork};
use crate::goals::steer::{self, Channel, Defaults, Verdict};
use crate::goals::{ErrorKind, StatePaths};
use crate::hooks::code::HookCode;
use crate::hooks::event::{Decision, PromptEvent};

/// A steering marker found in a prompt.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Marker<'a> {
    /// The profile whose marker it is.
    pub profile: &'a LoopProfile,
    /// The marker text.
    pub marker: &'a str,
    /// The trimmed rest of the prompt after `<marker>:`.
    pub rest: &'a str,
}

/// The first steering marker of `prompt` (docs/hook-contracts.md#h-5): case-sensitive, at
/// the start or after whitespace, followed by `:`; the earliest wins, and
/// the longer marker at the same position.
pub(crate) fn find_marker<'a>(
    prompt: &'a str,
    candidates: &[&'a LoopProfile],
) -> Option<Marker<'a>> {
    let mut best: Option<(usize, Marker<'a>)> = None;
    for p in candidates {
        for m in p.directive_markers() {
            let Some(at) = prompt.match_indices(m.as_str()).map(|(i, _)| i).find(|&i| {
                let before_ok = prompt[..i]
                    .chars()
                    .next_back()
                    .is_none_or(char::is_whitespace);
                before_ok && prompt[i + m.len()..].starts_with(':')
            }) else {
                continue;
            };
            let better = match &best {
                None => true,
                Some((b, bm)) => at < *b || (at == *b && m.len() > bm.marker.len()),
            };
            if better {
                let rest = prompt[at + m.len() + 1..].trim();
                best = Some((
                    at,
                    Marker {
                        profile: p,
                        marker: m,
                        rest,
                    },
                ));
            }
        }
    }
    best.map(|(_, m)| m)
}

fn note(text: String) -> Decision {
    Decision::Context { text }
}

/// Decides a prompt.
pub(super) fn decide(c: &Ctx<'_>, e: &PromptEvent) -> Decision {
    let witness = prompts::witness(c, &e.prompt);
    let candidates = c.policy.candidates(c.profile_flag);
    let d = match find_marker(&e.prompt, &candidates) {
        Some(m) => steer(c, m, &witness),
        None => ultrawork::decide(c, &e.prompt),
    };
    witness.settle(c);
    d
}

fn steer(c: &Ctx<'_>, m: Marker<'_>, witness: &prompts::Pending) -> Decision {
    let p = &m.profile.profile();
    c.diag.set_profile(Some(&p.name));
    let max = c.policy.prompt().rules.max_directive_bytes;
    if m.rest.len() as u64 > max {
        return note(format!(
            "evidence-gate steering: rejected: the directive after {}: is {} bytes, over the {max}-byte limit; plan unchanged",
            m.marker,
            m.rest.len()
        ));
    }
    let directive = match crate::json::parse_strict_str(m.rest) {
        Ok(Value::Object(o)) => o,
        Ok(_) => {
            return note(format!(
                "evidence-gate steering: rejected: the text after {}: must be one JSON object; plan unchanged",
                m.marker
            ));
        }
        Err(err) => {
            return note(format!(
                "evidence-gate steering: rejected: the text after {}: is not valid JSON ({err}); plan unchanged",
                m.marker
            ));
        }
    };
    if let Some(worker) = c.steering_worker(p) {
        c.diag.write(
            HookCode::SteerWorkerIgnored,
            "context",
            "a steering directive from a team worker was ignored",
            Some(json!({"worker": worker, "profile": p.name})),
        );
        return note(format!(
            "evidence-gate steering: ignored: the prompt comes from a team worker ({worker}); only the leader steers the {} plan; plan unchanged",
            p.display_name
        ));
    }
    let Some((paths, _)) = c.resolve_scope(m.profile) else {
        return note(format!(
            "evidence-gate steering: no {} plan exists for this session; nothing was applied",
            p.display_name
        ));
    };
    apply(c, m.profile, &paths, m.rest, directive, witness)
}

/// Applies the directive through the engine's single-proposal steering on
/// the hook channel (docs/engine.md#ge-5): the canonical parser (with
/// `source` defaulting to `user_prompt_submit`, `directiveText` the raw
/// JSON and a `promptSignature` derived from it, so a resubmitted directive
/// dedupes), then lock, dedupe, judge, apply and audit.
fn apply(
    c: &Ctx<'_>,
    profile: &LoopProfile,
    paths: &StatePaths,
    raw: &str,
    directive: serde_json::Map<String, Value>,
    witness: &prompts::Pending,
) -> Decision {
    let p = &profile.profile();
    let wait = Duration::from_millis(c.hooks.steering_lock_wait_ms);
    let mut engine = match c.engine_for(profile, paths.sid.clone(), false) {
        Ok(e) => e,
        Err(problem) => {
            return note(format!(
                "evidence-gate steering: not applied: the {} engine could not start ({problem}); plan unchanged",
                p.display_name
            ));
        }
    };
    // The witness reaches the disk before any entry that may cite the
    // prompt (docs/threat-model.md#i12); its sync overlaps the engine's
    // lock, reads and judgement.
    let w = witness.clone();
    engine.before_next_write(move || w.wait());
    let defaults = Defaults {
        directive_text: Some(raw.to_owned()),
        lock_timeout: Some(wait),
        ..Defaults::none()
    };
    match steer::apply_one(&engine, &Value::Object(directive), Channel::Hook, &defaults) {
        Ok(out) => {
            let item = &out.item;
            let mut text = format!(
                "evidence-gate steering: {} {} (source {})",
                item.verdict.as_str(),
                item.kind.as_str(),
                item.source.as_str()
            );
            if item.verdict == Verdict::Rejected && !item.reasons.is_empty() {
                text.push_str(&format!("; reasons: {}", item.reasons.join("; ")));
            }
            note(text)
        }
        Err(e) if matches!(*e.kind, ErrorKind::LockTimeout { .. }) => {
            let lock = paths.file(crate::goals::state::LOCK);
            c.diag.write(
                HookCode::HookLockTimeout,
                "context",
                "the goal state lock was not taken in time; the directive was not applied",
                Some(json!({"lock": lock, "waited_ms": wait.as_millis() as u64})),
            );
            note("evidence-gate steering: state busy, resend; plan unchanged".to_owned())
        }
        Err(e) => note(format!(
            "evidence-gate steering: rejected: {} ({}); plan unchanged",
            crate::hooks::host::encode::cap_bytes(&e.message, 1500),
            e.code()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::goal_loop::Policy;
    use crate::rules::RuleSet;

    #[test]
    fn markers_at_word_starts_with_a_colon() {
        let policy = Policy::compile_eager(&RuleSet::embedded().unwrap()).unwrap();
        let all = policy.candidates("auto");
        let m = find_marker("OMO_ULW_LOOP_STEER: {\"a\":1}", &all).unwrap();
        assert_eq!((m.marker, m.rest), ("OMO_ULW_LOOP_STEER", "{\"a\":1}"));
        assert_eq!(m.profile.name(), "ulw-loop");
        let m = find_marker("please\nomagy ultragoal steer:{}", &all).unwrap();
        assert_eq!(m.profile.name(), "ultragoal");
        assert!(find_marker("xOMO_ULW_LOOP_STEER: {}", &all).is_none());
        assert!(find_marker("OMO_ULW_LOOP_STEER {}", &all).is_none());
        assert!(
            find_marker("omo_ulw_loop_steer: {}", &all).is_none(),
            "case-sensitive"
        );
        let first = find_marker("OMAGY_ULTRAGOAL_STEER: {} OMO_ULW_LOOP_STEER: {}", &all).unwrap();
        assert_eq!(first.profile.name(), "ultragoal");
        let only = policy.candidates("ulw-loop");
        assert!(find_marker("OMAGY_ULTRAGOAL_STEER: {}", &only).is_none());
    }
}

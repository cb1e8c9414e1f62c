//! `stop`: goal-loop resume (docs/hook-contracts.md#h-4). When the main agent ends a turn
//! while this session's plan has work left, block once with a resume
//! directive — at most `stop.max_resumes_without_progress` times while goal
//! and criteria state stay unchanged, then pause with a stuck marker that
//! holds until real progress.

use std::time::SystemTime;

use serde_json::{Value, json};

use super::SideState;
use super::{Ctx, Found, LoopProfile, UnreadablePlan, boulder, prompts};
use crate::goals::StatePaths;
use crate::goals::loop_state;
use crate::goals::stop_view::ResumeGoal;
use crate::hooks::code::HookCode;
use crate::hooks::event::{Decision, StopEvent};
use crate::hooks::transcript::{self, Markers};
use crate::hooks::witness::goal_key;

/// Evaluates a stop in the order of docs/hook-contracts.md#h-4; every step before the
/// budget only allows, cheapest first.
pub(super) fn decide(c: &Ctx<'_>, s: &StopEvent) -> Decision {
    if c.env.agent.is_some() || s.stop_hook_active == Some(true) {
        return Decision::Allow;
    }
    let candidates = c.policy.candidates(c.profile_flag);
    // Each plan is decided from its bound view (docs/state-formats.md#stop-view)
    // when its ledger vouches for one, else from the plan read in full.
    let resolved = c.resolve_view(&candidates);
    // docs/threat-model.md#i2: a plan that exists but cannot be read is not "nothing left" —
    // the agent can corrupt it to escape the resume.
    if let Some(u) = resolved.unreadable.first() {
        return unreadable(c, u);
    }
    let Some(found) = resolved.found else {
        return Decision::Allow;
    };
    let l = &found.located;
    c.observe_head(&l.dir, &l.paths);
    // docs/threat-model.md#i7 / docs/threat-model.md#i2: a plan its ledger does not vouch for is never "complete" and
    // never "nothing left": block with the code, the file and the fix. A
    // bound view is vouched for by the ledger already.
    if let Some(plan) = &l.plan {
        match c.tampered_binding(&l.dir, &l.paths, plan) {
            Ok(Some(b)) => return tampered(c, &found, &b),
            Ok(None) => {}
            Err(d) => return d,
        }
    }
    let view = &l.view;
    // docs/threat-model.md#i12: a user decision the user never made keeps its goal unfinished,
    // even when it would make the run complete (or waived).
    if let Some(d) = prompts::check(c, found.profile.profile(), &view.decisions) {
        return d;
    }
    if view.run_complete || main_context_pressure(c) {
        return Decision::Allow;
    }
    let Some(goal) = &view.resume else {
        return Decision::Allow;
    };
    // `.omo/boulder.json` and its plan are workspace files the agent can
    // write: a claim there does not silence the resume (docs/threat-model.md#i5).
    // When start-work really continues the session, its block and ours fall
    // on the same stop; the host runs one continuation, whose next stop
    // carries `stop_hook_active` (step 2), and docs/hook-contracts.md#h-4 bounds the repeats.
    if let Some(owner) = boulder::claimant(c) {
        c.diag.write(
            HookCode::StopDeferUnverified,
            "resume",
            "a continuation owner's file claims this session; a file the agent can write does not silence the resume",
            Some(json!({"file": owner, "goal": goal.id})),
        );
    }
    resume(c, &found, goal)
}

/// The hold on a plan that exists but cannot be read (docs/threat-model.md#i2):
/// a halt telling the user to act, within the resume budget (keyed by the
/// file's fingerprint, so it holds until the file changes), then a pause.
fn unreadable(c: &Ctx<'_>, u: &UnreadablePlan<'_>) -> Decision {
    let file = u.what.paths.goals();
    let fix = u.fix();
    let reason = format!(
        "evidence-gate: HOOK_PLAN_UNREADABLE: {file} exists but cannot be read ({}: {}). The run's state is unknown, so it is not finished: do not delete, rewrite or work around this file; the user must fix it: {fix}.",
        u.what.error.code(),
        u.what.error.message
    );
    let reason = crate::hooks::host::encode::cap_bytes(&reason, c.hooks.max_reason_bytes);
    let max = c.policy.stop().max_resumes_without_progress;
    let subject = Subject {
        profile: u.profile,
        paths: &u.what.paths,
        scope_sid: u.what.paths.sid.as_deref(),
        halt: Some(format!(
            "evidence-gate: HOOK_PLAN_UNREADABLE at {file} — the user must act: {fix}. The stop is held at most {max} times while the file stays as it is."
        )),
    };
    let render = |_: u64, _: u64| reason.clone();
    let digest = c.unreadable_digest(u);
    let d = budgeted(
        c,
        &subject,
        "plan-unreadable",
        &digest,
        "HOOK_PLAN_UNREADABLE",
        &render,
    );
    if matches!(d, Decision::Halt { .. }) {
        c.plan_unreadable(
            u,
            d.outcome(),
            "the session's plan exists but cannot be read; the stop was held until the user acts",
        );
    }
    d
}

/// Whose resume budget a block spends.
struct Subject<'s> {
    profile: &'s LoopProfile,
    /// The plan scope (names the per-user side-file directory).
    paths: &'s StatePaths,
    /// The session id rendered commands name.
    scope_sid: Option<&'s str>,
    /// `Some(message)`: a fault the user must act on, held as a
    /// [`Decision::Halt`] with this `systemMessage`.
    halt: Option<String>,
}

impl<'s> Subject<'s> {
    fn of(found: &'s Found<'_>) -> Subject<'s> {
        Subject {
            profile: found.profile,
            paths: &found.located.paths,
            scope_sid: found.located.scope_sid(),
            halt: None,
        }
    }
}

/// The block of a tampered plan, within the resume budget (the counter is
/// keyed by the tampered body's digest, so it holds until the plan changes).
fn tampered(c: &Ctx<'_>, found: &Found<'_>, b: &crate::goals::binding::Binding) -> Decision {
    let p = found.profile;
    let scope = found
        .located
        .scope_sid()
        .map(|s| format!(" {} {s}", p.profile().session.flag))
        .unwrap_or_default();
    let (code, file, why) = match (&b.plan_tampered, &b.ledger_tampered) {
        (Some(r), _) => ("PLAN_TAMPERED", found.located.paths.goals(), r),
        (None, Some(r)) => ("LEDGER_TAMPERED", found.located.paths.ledger(), r),
        (None, None) => return Decision::Allow,
    };
    let reason = format!(
        "evidence-gate: {code}: {file}: {why}. The run is not complete while its plan and ledger disagree. Restore {} and {} from version control, or, if this plan is right, ask the user and run `{} repair{scope} --accept-tampered --rationale \"<why>\"` (recorded and reported by CI).",
        found.located.paths.goals(),
        found.located.paths.ledger(),
        p.profile().command_prefix
    );
    let reason = crate::hooks::host::encode::cap_bytes(&reason, c.hooks.max_reason_bytes);
    let render = |_: u64, _: u64| reason.clone();
    // A fault the user must act on: held as a halt that tells the user, and
    // past the budget let through with the fault named, never as a goal
    // whose progress stalled.
    let max = c.policy.stop().max_resumes_without_progress;
    let subject = Subject {
        halt: Some(format!(
            "evidence-gate: {code} at {file} — the user must act: restore the plan and ledger from version control, or adopt this plan with `{} repair{scope} --accept-tampered --rationale \"<why>\"`. The stop is held at most {max} times while the plan stays as it is.",
            p.profile().command_prefix
        )),
        ..Subject::of(found)
    };
    budgeted(c, &subject, "plan-tampered", &b.body_sha256, code, &render)
}

/// A context-pressure marker inside a compaction record the host wrote in
/// the main transcript's tail: resuming would only feed an exhausted
/// context. A sentence the agent wrote ("context compacted" in its text or a
/// tool's output) never counts (docs/threat-model.md#i5).
fn main_context_pressure(c: &Ctx<'_>) -> bool {
    // Without a pinned shape there is no escape: the markers are not even
    // compiled.
    if !crate::hooks::host_records::escape_enabled(c.env.host) {
        return false;
    }
    transcript::host_pressure(
        c.amb,
        c.env.host,
        c.env.transcript.as_deref(),
        c.hooks.transcript_tail_bytes,
        &Markers::new(&c.hooks.context_pressure_markers),
    )
}

/// A side file's JSON: `Ok(None)` when missing, `Value::Null` when it is not
/// JSON (a Node-format marker).
fn read_json(c: &Ctx<'_>, side: &SideState, name: &str) -> Result<Option<Value>, Decision> {
    let display = side.display(name);
    match loop_state::read_side_file(&side.dir, name, &display, 64 * 1024) {
        Ok(b) => Ok(b.map(|b| serde_json::from_slice(&b).unwrap_or(Value::Null))),
        Err(e) => Err(c.state_io("a resume side file could not be read", &display, &e.message)),
    }
}

fn digest_of(v: &Value) -> Option<&str> {
    v.get("progressDigest").and_then(Value::as_str)
}

fn resume(c: &Ctx<'_>, found: &Found<'_>, goal: &ResumeGoal) -> Decision {
    let digest = &found.located.view.progress_digest;
    let key = goal_key(&goal.id);
    let p = found.profile;
    let render = |count: u64, max: u64| {
        c.policy.render_stop(
            p,
            (&goal.id, &goal.title),
            found.located.scope_sid(),
            count,
            max,
            c.hooks.max_reason_bytes,
        )
    };
    budgeted(c, &Subject::of(found), &key, digest, &goal.id, &render)
}

/// Blocks with `render(count, max)` at most `stop.max_resumes_without_progress`
/// times while `digest` stays the same, then pauses with a stuck marker
/// keyed by `key` (`label` names the goal or condition in diagnostics).
fn budgeted(
    c: &Ctx<'_>,
    found: &Subject<'_>,
    key: &str,
    digest: &str,
    label: &str,
    render: &dyn Fn(u64, u64) -> String,
) -> Decision {
    // The counters, stuck markers and their lock live in the per-user state
    // (docs/threat-model.md#tm-3): nothing planted in the tree silences the resume.
    let side = match c.side_state(found.paths, false) {
        Ok(s) => s,
        Err(d) => return d,
    };
    let decision = resume_locked(c, found, &side, label, key, digest, render);
    side.release();
    decision
}

fn resume_locked(
    c: &Ctx<'_>,
    found: &Subject<'_>,
    side: &SideState,
    label: &str,
    key: &str,
    digest: &str,
    render: &dyn Fn(u64, u64) -> String,
) -> Decision {
    let dir = &side.dir;
    let counter = format!("auto-resume-{key}.json");
    let stuck = format!("auto-resume-{key}.stuck");
    let marker = match read_json(c, side, &stuck) {
        Ok(m) => m,
        Err(d) => return d,
    };
    if let Some(m) = &marker {
        if digest_of(m) == Some(digest) {
            return Decision::Allow;
        }
        if let Err(e) = loop_state::remove_side_file(dir, &stuck) {
            return c.state_io(
                "a stale stuck marker could not be deleted",
                &side.display(&stuck),
                &e,
            );
        }
    }
    let stored = match read_json(c, side, &counter) {
        Ok(v) => v,
        Err(d) => return d,
    };
    let count = match (&marker, &stored) {
        (None, Some(v)) if digest_of(v) == Some(digest) => {
            v.get("count").and_then(Value::as_u64).unwrap_or(0)
        }
        _ => 0,
    };
    let max = c.policy.stop().max_resumes_without_progress;
    let now = crate::time::rfc3339_ms(SystemTime::now());
    let p = found.profile;
    if count < max {
        let v = json!({"count": count + 1, "progressDigest": digest, "updatedAt": now});
        if let Err(e) = loop_state::write_side_file(dir, &counter, v.to_string().as_bytes()) {
            return c.state_io(
                "the resume counter could not be written",
                &side.display(&counter),
                &e,
            );
        }
        let reason = render(count + 1, max);
        return match &found.halt {
            Some(message) => Decision::Halt {
                reason,
                message: message.clone(),
            },
            None => Decision::Block { reason },
        };
    }
    let v = json!({
        "reason": format!("goal and criteria state unchanged after {count} resumes"),
        "count": count,
        "progressDigest": digest,
        "at": now,
    });
    if let Err(e) = loop_state::write_side_file(dir, &stuck, v.to_string().as_bytes()) {
        return c.state_io(
            "the stuck marker could not be written",
            &side.display(&stuck),
            &e,
        );
    }
    // A fault the user must act on is always told, paused or not.
    let notify = c.policy.stop().notify_when_stuck || found.halt.is_some();
    c.diag.write(
        HookCode::StopStuck,
        if notify { "notify" } else { "allow" },
        "auto-resume paused: goal and criteria state did not change over the allowed resumes",
        Some(json!({"goal": label, "count": count, "marker": side.display(&stuck)})),
    );
    if !notify {
        return Decision::Allow;
    }
    if let Some(message) = &found.halt {
        return Decision::Notify {
            message: format!(
                "evidence-gate: {label}: the stop was held {count} times and is let through now, so the session is not wedged; the fault remains. {message}"
            ),
        };
    }
    let scope = found
        .scope_sid
        .map(|s| format!(" {} {s}", p.profile().session.flag))
        .unwrap_or_default();
    Decision::Notify {
        message: format!(
            "evidence-gate: auto-resume is paused for goal {} because its goal and criteria state did not change over the last {count} resumes; check the plan with `{} status{scope} --json`.",
            label,
            p.profile().command_prefix
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crafted_ids_never_name_a_path() {
        assert_eq!(goal_key("G001"), "G001");
        assert_eq!(goal_key("G2-add-tests_v1.2"), "G2-add-tests_v1.2");
        for bad in ["../../x", "a/b", "", "ü", &"x".repeat(81)] {
            let k = goal_key(bad);
            assert!(k.starts_with('h') && k.len() == 13, "{bad:?} → {k}");
        }
        assert_ne!(goal_key("a/b"), goal_key("a\\b"));
    }
}

//! `pre-tool-use-spawn` (docs/hook-contracts.md#h-6): the fan-out cap and the gate
//! preflight. Everything after the plan is found runs under the state
//! directory's mutation lock, so parallel spawns serialise and only allowed
//! spawns are counted.

use serde_json::{Value, json};

use super::SideState;
use super::{Ctx, Found};
use crate::ambient;
use crate::gate::preflight;
use crate::goals::gate;
use crate::goals::loop_state;
use crate::hooks::code::HookCode;
use crate::hooks::event::{Decision, ToolEvent};
use crate::rules::gates::GateBook;
use crate::rules::goal_loop::SpawnReset;
use crate::sandbox::{RelPath, open};

/// File name of the counter in `<state>`.
pub(crate) const COUNTER: &str = "spawn-count.json";

/// Evaluates a spawn in the order of docs/hook-contracts.md#h-6. The plan is
/// read through the hooks' bound view when its ledger vouches for one
/// (docs/state-formats.md#stop-view), else in full.
pub(super) fn decide(c: &Ctx<'_>, t: &ToolEvent) -> Decision {
    if !c.policy.spawn().rules.tool_names.contains(&t.tool_name) {
        return Decision::Allow;
    }
    let candidates = c.policy.candidates(c.profile_flag);
    let resolved = c.resolve_view(&candidates);
    // docs/threat-model.md#i2: a plan that exists but cannot be read decides nothing; refusing
    // keeps a corrupted plan from switching the cap and the preflight off.
    if let Some(u) = resolved.unreadable.first() {
        c.plan_unreadable(
            u,
            "deny",
            "the session's plan exists but cannot be read; the spawn was denied until the user acts",
        );
        return Decision::Deny {
            reason: format!(
                "evidence-gate: HOOK_PLAN_UNREADABLE: {} exists but cannot be read ({}); no spawn is gated on it. The user must fix it: {}.",
                u.what.paths.goals(),
                u.what.error.code(),
                u.fix()
            ),
        };
    }
    let Some(found) = resolved.found else {
        return Decision::Allow;
    };
    let l = &found.located;
    // docs/threat-model.md#i7 / docs/threat-model.md#i2: the preflight and the fan-out reset read the plan; a plan its
    // ledger does not vouch for decides nothing. A bound view is vouched
    // for by the ledger already.
    if let Some(plan) = &l.plan {
        match c.tampered_binding(&l.dir, &l.paths, plan) {
            Ok(Some(b)) => return tampered(&found, &b),
            Ok(None) => {}
            Err(d) => return d,
        }
    }
    c.observe_head(&l.dir, &l.paths);
    // The counter and its lock live in the per-user state (docs/threat-model.md
    // docs/hook-contracts.md#h-3): nothing planted in the tree resets or jams the cap.
    let side = match c.side_state(&l.paths, true) {
        Ok(s) => s,
        Err(d) => return d,
    };
    let decision = decide_locked(c, &found, &side, &t.tool_input);
    side.release();
    decision
}

/// The denial of a spawn while the session's plan is tampered with.
fn tampered(found: &Found<'_>, b: &crate::goals::binding::Binding) -> Decision {
    let p = &found.profile.profile();
    let scope = found
        .located
        .scope_sid()
        .map(|s| format!(" {} {s}", p.session.flag))
        .unwrap_or_default();
    let (code, file) = if b.plan_tampered.is_some() {
        ("PLAN_TAMPERED", found.located.paths.goals())
    } else {
        ("LEDGER_TAMPERED", found.located.paths.ledger())
    };
    Decision::Deny {
        reason: format!(
            "evidence-gate: {code}: {file} does not match the plan its ledger recorded; no spawn is gated on it. Restore the goal state from version control, or, if the plan is right, run `{} repair{scope} --accept-tampered --rationale \"<why>\"`.",
            p.command_prefix
        ),
    }
}

fn decide_locked(c: &Ctx<'_>, found: &Found<'_>, side: &SideState, input: &Value) -> Decision {
    if is_gate_review(c, input) {
        let missing = match preflight_missing(c, found) {
            Ok(m) => m,
            Err(d) => return d,
        };
        if !missing.is_empty() {
            return Decision::Deny {
                reason: format!(
                    "evidence-gate: spawn the code review and manual QA first; the gate reviewer audits their reports, and these are missing: {}.",
                    missing.join("; ")
                ),
            };
        }
    }
    fanout(c, found, side)
}

/// Either signal marks a gate-review spawn: the spawned agent type (a
/// `plugin:` prefix ignored) is a gate-reviewer role of any surface
/// (docs/gates.md#qg-2), or a message contains, ignoring case, one of
/// `spawn.gate_message_patterns` or a role name.
pub(super) fn is_gate_review(c: &Ctx<'_>, input: &Value) -> bool {
    let Value::Object(m) = input else {
        return false;
    };
    let reviewers: Vec<String> = match GateBook::from_rules(c.rules) {
        Ok(book) => book
            .gate_reviewer_names()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        Err(_) => Vec::new(),
    };
    let rules = &c.policy.spawn().rules;
    let agent_type = rules
        .agent_type_keys
        .iter()
        .find_map(|k| m.get(k).and_then(Value::as_str));
    if let Some(t) = agent_type {
        let bare = t.rsplit(':').next().unwrap_or(t);
        if reviewers.iter().any(|r| r == bare) {
            return true;
        }
    }
    let needles: Vec<String> = c
        .policy
        .spawn()
        .gate_messages
        .iter()
        .cloned()
        .chain(reviewers.iter().map(|r| r.to_lowercase()))
        .collect();
    rules
        .message_keys
        .iter()
        .filter_map(|k| m.get(k).and_then(Value::as_str))
        .any(|msg| {
            let head =
                crate::hooks::host::encode::cap_bytes(msg, rules.message_scan_bytes).to_lowercase();
            needles.iter().any(|n| head.contains(n.as_str()))
        })
}

/// The missing reports of the final candidate's gate (docs/hook-contracts.md#h-6 step
/// 5), as repo-relative paths; empty when the preflight does not apply (no
/// final candidate, or its criteria are not all `pass`: the gate judges
/// later) or every report is there. A plan whose gate rules or attempt
/// directory cannot be resolved denies the spawn (docs/threat-model.md#i2).
fn preflight_missing(c: &Ctx<'_>, found: &Found<'_>) -> Result<Vec<String>, Decision> {
    let view = &found.located.view.spawn;
    let Some(goal) = &view.preflight else {
        return Ok(Vec::new());
    };
    let engine = match c.engine_for(found.profile, found.located.paths.sid.clone(), true) {
        Ok(e) => e,
        Err(problem) => {
            c.diag.write(
                HookCode::HookRulesInvalid,
                "allow",
                "the gate preflight could not build the goal engine; it was skipped",
                Some(json!({"problem": crate::hooks::host::encode::cap_bytes(&problem, 800)})),
            );
            return Ok(Vec::new());
        }
    };
    let resolved = gate::rules_named(&engine, view.gate_rules.as_deref()).and_then(|name| {
        let base = gate::view_scope_dir(&engine, view, goal)?;
        Ok((name, base))
    });
    let (name, base) = match resolved {
        Ok(x) => x,
        Err(e) => {
            let file = found.located.paths.goals();
            let fix = format!(
                "restore {file} from version control (`git checkout -- {file}`); `{} repair --check` says what is wrong",
                found.profile.profile().command_prefix
            );
            c.diag.write(
                HookCode::HookPlanUnreadable,
                "deny",
                "the final goal's gate rules or attempt directory could not be resolved; the gate-review spawn was denied",
                Some(json!({"error": e.code(), "goal": goal.id, "file": file, "fix": fix})),
            );
            return Err(Decision::Deny {
                reason: format!(
                    "evidence-gate: HOOK_PLAN_UNREADABLE: {file}: the gate rules or attempt directory of goal {} cannot be resolved ({}: {}); no gate review is preflighted on it. The user must fix it: {fix}.",
                    goal.id,
                    e.code(),
                    crate::hooks::host::encode::cap_bytes(&e.message, 400)
                ),
            });
        }
    };
    // The gate book is built on first use; a failure is the same rules fault
    // as an engine that could not be built above.
    let book = match engine.gates() {
        Ok(book) => book,
        Err(e) => {
            c.diag.write(
                HookCode::HookRulesInvalid,
                "allow",
                "the gate preflight could not build the goal engine; it was skipped",
                Some(json!({"problem": crate::hooks::host::encode::cap_bytes(&e.message, 800)})),
            );
            return Ok(Vec::new());
        }
    };
    let Some(rules) = book.get(&name) else {
        return Ok(Vec::new());
    };
    let limits = engine.evidence_rules().limits.path_limits();
    let present = |n: &str| {
        RelPath::parse(n, limits).is_ok_and(|leaf| {
            open::open_leaf(c.root, &base.join(&leaf))
                .is_ok_and(|(_, meta)| meta.is_file() && meta.len() > 0)
        })
    };
    Ok(preflight::requirements(rules, &goal.id)
        .into_iter()
        .filter(|r| !r.names.iter().any(|n| present(n)))
        .map(|r| {
            let alternatives: Vec<String> = r.names[1..]
                .iter()
                .map(|n| format!("{}/{n}", base.as_str()))
                .collect();
            format!(
                "{}/{} (or {})",
                base.as_str(),
                r.names[0],
                alternatives.join(", ")
            )
        })
        .collect())
}

/// The limit: `spawn.fanout_env` when it is a positive integer, else
/// `spawn.fanout_limit` (an invalid value writes `HOOK_ENV_INVALID`).
fn limit(c: &Ctx<'_>) -> u64 {
    let rules = &c.policy.spawn().rules;
    match ambient::var(c.amb, &rules.fanout_env) {
        None => rules.fanout_limit,
        Some(v) => match v.trim().parse::<u64>() {
            Ok(n) if n > 0 => n,
            _ => {
                c.diag.write(
                    HookCode::HookEnvInvalid,
                    "allow",
                    &format!(
                        "{} is not a positive integer; spawn.fanout_limit is used",
                        rules.fanout_env
                    ),
                    Some(json!({"variable": rules.fanout_env, "bytes": v.len(), "limit": rules.fanout_limit})),
                );
                rules.fanout_limit
            }
        },
    }
}

fn reset_key(c: &Ctx<'_>, found: &Found<'_>) -> String {
    match c.policy.spawn().rules.reset {
        SpawnReset::GoalAttempt => found
            .located
            .view
            .spawn
            .active
            .as_ref()
            .map_or_else(|| "-".to_owned(), |g| format!("{}#a{}", g.id, g.attempt)),
        SpawnReset::Turn => c.env.turn_id.clone().unwrap_or_else(|| "-".to_owned()),
        SpawnReset::Never => "never".to_owned(),
    }
}

fn fanout(c: &Ctx<'_>, found: &Found<'_>, side: &SideState) -> Decision {
    let limit = limit(c);
    let key = reset_key(c, found);
    let dir = &side.dir;
    let display = side.display(COUNTER);
    let stored = match loop_state::read_side_file(dir, COUNTER, &display, 64 * 1024) {
        Ok(b) => b.and_then(|b| serde_json::from_slice::<Value>(&b).ok()),
        Err(e) => {
            return c.state_io_tool("the spawn counter could not be read", &display, &e.message);
        }
    };
    // Migration: before the per-user counter exists, an earlier version's
    // in-tree counter still counts (it can only tighten the cap).
    let stored = stored.or_else(|| {
        let legacy = found.located.paths.file(COUNTER);
        loop_state::read_side_file(&found.located.dir, COUNTER, &legacy, 64 * 1024)
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
    });
    let count = stored
        .filter(|v| v.get("resetKey").and_then(Value::as_str) == Some(key.as_str()))
        .and_then(|v| v.get("count").and_then(Value::as_u64))
        .unwrap_or(0);
    // The denial names the spawn it refuses, `count+1/limit`, as the Node
    // hook does (docs/differences.md#r-8: `4/3` for the fourth spawn under a limit of 3).
    let attempt = count + 1;
    if attempt > limit {
        return Decision::Deny {
            reason: format!(
                "evidence-gate: the spawn fan-out cap is reached ({attempt}/{limit}). Consolidate the work into the agents already running, or raise {} if this many agents is intentional.",
                c.policy.spawn().rules.fanout_env
            ),
        };
    }
    let v = json!({"count": count + 1, "resetKey": key});
    if let Err(e) = loop_state::write_side_file(dir, COUNTER, v.to_string().as_bytes()) {
        return c.state_io_tool("the spawn counter could not be written", &display, &e);
    }
    Decision::Allow
}

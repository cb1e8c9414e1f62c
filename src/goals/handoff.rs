//! Agent-facing texts rendered from the profile's texts file: the goal
//! instruction (docs/differences.md#r-7), the blocked-decision handoff (docs/differences.md#r-7), the stalled
//! line and the usage block. Structure lives here; the words are data.

use std::collections::BTreeMap;

use serde_json::json;

use super::Engine;
use super::lifecycle;
use super::plan::{CriterionStatus, Goal, Mode, Plan};

/// Replaces `{name}` for every known name; other braces are kept.
pub(crate) fn render(template: &str, vars: &BTreeMap<&str, String>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let name_len = after
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(after.len());
        let name = &after[..name_len];
        match (vars.get(name), after[name_len..].starts_with('}')) {
            (Some(v), true) if !name.is_empty() => {
                out.push_str(v);
                rest = &after[name_len + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The placeholders every text of a plan can use.
pub(crate) fn vars<'a>(engine: &'a Engine, plan: &Plan) -> BTreeMap<&'a str, String> {
    let p = &engine.profile;
    let mut v = BTreeMap::new();
    v.insert("displayName", p.display_name.clone());
    v.insert("handoffTitle", p.handoff_title.clone());
    v.insert("commandPrefix", p.command_prefix.clone());
    v.insert("stateDir", p.state_dir.clone());
    v.insert("hostFlag", p.host_goal.flag.clone());
    v.insert("hostAliases", p.host_goal.aliases.join(", "));
    v.insert("modeFlag", p.host_goal.mode_flag.clone());
    v.insert("modeAliases", p.host_goal.mode_aliases.join(", "));
    v.insert("sessionOpt", engine.session_opt(plan));
    // The aggregate handoff names the files from the git worktree root, as
    // its objective does (`statePathPrefix`, written only in aggregate mode).
    let prefix = match plan.mode() {
        Mode::Aggregate => plan.str("statePathPrefix").unwrap_or_default(),
        Mode::PerStory => "",
    };
    let named = |key: &str, fallback: String| {
        super::state::prefixed(prefix, plan.str(key).unwrap_or(&fallback))
    };
    v.insert("goalsPath", named("goalsPath", engine.paths.goals()));
    v.insert("ledgerPath", named("ledgerPath", engine.paths.ledger()));
    if let Ok(name) = super::gate::rules_of(engine, plan)
        && let Ok(Some(r)) = engine.reviewer_roles(&name)
    {
        v.insert("codeReviewer", r.code_review);
        v.insert("qaExecutor", r.manual_qa);
        v.insert("gateReviewer", r.gate_review);
    }
    v
}

/// The usage block.
pub(crate) fn help(engine: &Engine) -> String {
    let p = &engine.profile;
    let mut v: BTreeMap<&str, String> = BTreeMap::new();
    v.insert("commandPrefix", p.command_prefix.clone());
    v.insert("stateDir", p.state_dir.clone());
    v.insert("hostFlag", p.host_goal.flag.clone());
    v.insert("hostAliases", p.host_goal.aliases.join(", "));
    v.insert("modeFlag", p.host_goal.mode_flag.clone());
    v.insert("modeAliases", p.host_goal.mode_aliases.join(", "));
    let mut out: Vec<String> = engine.texts.help.iter().map(|l| render(l, &v)).collect();
    out.push(String::new());
    out.join("\n")
}

/// The kind help of `steer` errors (docs/differences.md#r-4).
pub(crate) fn steer_usage(engine: &Engine) -> String {
    let p = &engine.profile;
    let mut v: BTreeMap<&str, String> = BTreeMap::new();
    v.insert("commandPrefix", p.command_prefix.clone());
    v.insert("kinds", p.steering.kinds.join(", "));
    engine
        .texts
        .steer_usage
        .iter()
        .map(|l| render(l, &v))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The host objective a goal is reconciled against: the plan's aggregate
/// objective, or the goal's own in `per_story` mode.
pub(crate) fn expected_objective(engine: &Engine, plan: &Plan, g: Goal<'_>) -> String {
    match plan.mode() {
        Mode::Aggregate => plan.aggregate_objective(&engine.profile),
        Mode::PerStory => g.objective().to_owned(),
    }
}

/// The goal instruction: `{text, json: {objective}}`.
pub(crate) fn instruction(engine: &Engine, plan: &Plan, g: Goal<'_>) -> Instruction {
    let t = &engine.texts.instruction;
    let is_final = lifecycle::final_candidate(plan, g);
    let aggregate = plan.mode() == Mode::Aggregate;
    let mut v = vars(engine, plan);
    v.insert("mode", plan.mode().as_str().to_owned());
    v.insert("goalId", g.id().to_owned());
    v.insert("goalTitle", g.title().to_owned());
    v.insert("goalObjective", g.objective().to_owned());
    v.insert("attemptDir", engine.attempt_dir(plan, g));
    let mut lines: Vec<String> = Vec::new();
    let push = |lines: &mut Vec<String>, list: &[String], v: &BTreeMap<&str, String>| {
        lines.extend(list.iter().map(|l| render(l, v)));
    };
    lines.push(render(
        if aggregate {
            &t.header_aggregate
        } else {
            &t.header_per_story
        },
        &v,
    ));
    push(&mut lines, &t.meta, &v);
    lines.push(String::new());
    push(&mut lines, &t.active_goal, &v);
    lines.push(String::new());
    lines.push(render(&t.criteria_header, &v));
    if g.criteria_len() == 0 {
        lines.push(render(&t.no_criteria, &v));
    }
    for c in g.criteria() {
        let mut cv = v.clone();
        cv.insert(
            "remaining",
            if c.status() == CriterionStatus::Pending {
                t.remaining_tag.clone()
            } else {
                String::new()
            },
        );
        cv.insert("criterionId", c.id().to_owned());
        cv.insert(
            "essential",
            if c.essential() {
                "essential"
            } else {
                "non-essential"
            }
            .to_owned(),
        );
        cv.insert("userModel", c.user_model().to_owned());
        cv.insert("scenario", c.str("scenario").unwrap_or_default().to_owned());
        cv.insert(
            "expectedEvidence",
            c.str("expectedEvidence").unwrap_or_default().to_owned(),
        );
        cv.insert("status", c.status().as_str().to_owned());
        lines.push(render(&t.criterion_line, &cv));
    }
    lines.push(String::new());
    lines.push(render(&t.constraints_header, &v));
    push(&mut lines, &t.common, &v);
    if aggregate {
        push(&mut lines, &t.aggregate, &v);
        push(
            &mut lines,
            if is_final {
                &t.aggregate_final
            } else {
                &t.aggregate_non_final
            },
            &v,
        );
    } else {
        push(&mut lines, &t.per_story, &v);
    }
    if plan.layout_v2() {
        push(&mut lines, &t.evidence_layout, &v);
    }
    if is_final {
        push(&mut lines, &t.final_block, &v);
    } else {
        push(&mut lines, &t.non_final, &v);
    }
    if aggregate {
        push(&mut lines, &t.aggregate_checkpoint, &v);
    }
    push(&mut lines, &t.failed, &v);
    let objective = expected_objective(engine, plan, g);
    let payload = json!({ "objective": objective });
    lines.push(String::new());
    lines.push(render(&t.payload_header, &v));
    lines.push(serde_json::to_string_pretty(&payload).expect("json"));
    Instruction {
        text: lines.join("\n"),
        objective,
    }
}

/// The instruction for a started or resumed goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// The handoff text (ending with the host-goal payload).
    pub text: String,
    /// The objective of the host-goal payload (`{"objective": …}`).
    pub objective: String,
}

/// The blocked-decision handoff for a `needs_user_decision` goal (docs/differences.md#r-7).
pub(crate) fn blocked(engine: &Engine, plan: &Plan, g: Goal<'_>) -> String {
    let mut v = vars(engine, plan);
    v.insert("goalId", g.id().to_owned());
    v.insert("goalTitle", g.title().to_owned());
    v.insert(
        "decision",
        g.str("requiredExternalDecision").map_or_else(
            || engine.texts.blocked_decision_fallback.clone(),
            str::to_owned,
        ),
    );
    engine
        .texts
        .blocked_handoff
        .iter()
        .map(|l| render(l, &v))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `<displayName>: no schedulable goals; stalled: <ids>`.
pub(crate) fn stalled(engine: &Engine, plan: &Plan, ids: &[String]) -> String {
    let mut v = vars(engine, plan);
    v.insert("goalIds", ids.join(", "));
    render(&engine.texts.stalled, &v)
}

/// `<displayName>: all goals complete`.
pub(crate) fn all_complete(engine: &Engine, plan: &Plan) -> String {
    render(&engine.texts.all_complete, &vars(engine, plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_keeps_unknown_braces() {
        let mut v = BTreeMap::new();
        v.insert("a", "X".to_owned());
        assert_eq!(
            render("{a} update_goal({status: \"complete\"}) {b} {", &v),
            "X update_goal({status: \"complete\"}) {b} {"
        );
    }
}

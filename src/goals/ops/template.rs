//! `checkpoint --print-template [--goal-id <g>]` (read-only,
//! docs/gates.md#qg-9): the fill-in gate for the target goal, built by
//! [`crate::gate::template`], plus the host-goal template and guidance.

use super::unknown_goal_id;
use crate::gate::context::counts;
use crate::gate::template::{GateTemplate, HostGoalInput, TemplateInput, build_template};
use crate::goals::error::{ErrorKind, GoalError};
use crate::goals::plan::{self, Mode};
use crate::goals::{Engine, batches, gate, handoff, lifecycle};

/// The result of `checkpoint --print-template`.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateOutcome {
    /// The fill-in gate, the host-goal snapshot example, the rule name, the
    /// scope and its criteria.
    pub template: GateTemplate,
    /// How to fill it in (the profile's texts, one paragraph).
    pub guidance: String,
    /// The attempt directory the gate's files belong in (evidence layout 2,
    /// with a target goal).
    pub attempt_dir: Option<String>,
}

/// Builds the template. Writes nothing.
pub fn run(
    engine: &Engine,
    goal_id: Option<&str>,
    strict: bool,
) -> Result<TemplateOutcome, GoalError> {
    let dir = engine.state_dir()?;
    let plan = plan::read(
        dir.as_ref(),
        &engine.paths,
        &engine.profile,
        &engine.now().1,
    )?;
    let target = match goal_id {
        Some(id) => Some(plan.goal(id).ok_or_else(|| unknown_goal_id(engine, id))?),
        None => plan.active_goal_id().and_then(|id| plan.goal(id)),
    };
    let is_final = target.is_some_and(|g| lifecycle::final_candidate(&plan, g));
    let closes = target.and_then(|g| batches::closes(&plan, g.id()));
    let scope = gate::scope_of(is_final, closes);
    let criteria = match target {
        Some(g) => gate::scope_criteria(&plan, g.id(), &scope, closes),
        None => Vec::new(),
    };
    // A pending goal can only be completed through `checkpoint
    // --start-pending`, which starts a new attempt before the gate is
    // checked: the template names that attempt's directory.
    let next_attempt = target.and_then(|g| gate::next_attempt_scope(engine, &plan, g));
    let base_dir = match &next_attempt {
        Some(dir) => gate::scope_path(engine, dir.clone())?,
        None => gate::scope_dir(engine, &plan, target.map(|g| g.id()))?,
    };
    // `--strict` (`compat/strictGate`): the template of the strict rules.
    let rules_name = match (strict, &engine.profile.compat.strict_gate) {
        (true, Some(name)) => name.clone(),
        _ => gate::rules_of(engine, &plan)?,
    };
    let rules = engine.gates()?.get(&rules_name).ok_or_else(|| {
        GoalError::new(
            ErrorKind::RulesInvalid {
                file: "rules".into(),
                pointer: "/gates".into(),
                problem: format!("the plan's gateRules `{rules_name}` names no gate rule file"),
            },
            format!("The plan's gateRules `{rules_name}` names no gate rule file."),
        )
    })?;
    let objective = target.map(|g| handoff::expected_objective(engine, &plan, g));
    let status = if plan.mode() == Mode::Aggregate && !is_final {
        "active"
    } else {
        "complete"
    };
    let t = build_template(&TemplateInput {
        rules,
        base_dir: &base_dir,
        scope: &scope,
        goal_id: target.map(|g| g.id()),
        criteria: &criteria,
        host_goal: HostGoalInput {
            objective: objective.as_deref(),
            status,
        },
    });
    let (total, pass) = counts(&criteria);
    let mut vars = handoff::vars(engine, &plan);
    vars.insert("hostNoun", engine.profile.host_goal.noun.clone());
    vars.insert(
        "objective",
        objective.unwrap_or_else(|| "<replace:host goal objective>".into()),
    );
    vars.insert("status", status.to_owned());
    vars.insert("snapshotExample", t.host_goal.to_string());
    vars.insert("baseDir", base_dir.as_str().to_owned());
    vars.insert("total", total.to_string());
    vars.insert("pass", pass.to_string());
    vars.insert("evidenceRoot", engine.profile.evidence_root.clone());
    let mut guidance: Vec<String> = engine
        .texts
        .template_guidance
        .iter()
        .map(|l| handoff::render(l, &vars))
        .collect();
    if !plan.layout_v2() {
        guidance.push(handoff::render(&engine.texts.template_guidance_v1, &vars));
    }
    let attempt_dir = match target {
        Some(g) if plan.layout_v2() => Some(
            next_attempt
                .clone()
                .unwrap_or_else(|| engine.attempt_dir(&plan, g)),
        ),
        _ => None,
    };
    Ok(TemplateOutcome {
        template: t,
        guidance: guidance.join(" "),
        attempt_dir,
    })
}

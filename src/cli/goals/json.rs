//! The JSON shapes of the goal-engine outcomes that are not a plain
//! serialisation of their typed values (docs/differences.md#r-3 key orders):
//! the `status` ledger, which joins the head with the consistency and the
//! binding, the scheduler report, whose `instruction` depends on the
//! profile, the `repair` actions and the gate template.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::goals::Engine;
use crate::goals::ops::complete::Report;
use crate::goals::ops::repair::RepairAction;
use crate::goals::ops::status::StatusOutcome;
use crate::goals::ops::template::TemplateOutcome;

/// The serialised shape of a typed outcome value.
pub(super) fn to_value<T: Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).expect("outcome values serialise")
}

/// `status`'s `ledger`: `{records, lastSeq, head, consistency,
/// mutationInProgress, binding, forceSwitchPending?}`.
pub(super) fn status_ledger(out: &StatusOutcome) -> Value {
    let l = &out.ledger;
    let mut m = Map::new();
    m.insert("records".into(), json!(l.records));
    m.insert("lastSeq".into(), json!(l.last_seq));
    m.insert("head".into(), json!(l.head));
    m.insert("consistency".into(), json!(out.consistency.as_str()));
    m.insert("mutationInProgress".into(), json!(l.mutation_in_progress));
    m.insert("binding".into(), out.binding.to_json());
    if let Some(p) = &l.force_switch_pending {
        m.insert("forceSwitchPending".into(), to_value(p));
    }
    Value::Object(m)
}

/// A scheduler report (`complete-goals`, checkpoint `next`):
/// `{resumed, goal, instruction: {text, json}, state}` for a scheduled goal
/// (with `compat/instructionString`, `instruction` is the text and the
/// payload moves to `instructionPayload`), else `{done, blocked, handoff,
/// state, runComplete, stalledGoalIds?}`.
pub(super) fn report(engine: &Engine, report: &Report) -> Map<String, Value> {
    let mut m = Map::new();
    if let (Some(goal), Some(i)) = (report.goal(), report.instruction()) {
        let payload = json!({ "objective": i.objective });
        m.insert(
            "resumed".into(),
            json!(matches!(report, Report::Resumed { .. })),
        );
        m.insert("goal".into(), to_value(goal));
        if engine.profile.compat.instruction_string {
            m.insert("instruction".into(), json!(i.text));
            m.insert("state".into(), json!(report.state()));
            m.insert("instructionPayload".into(), payload);
        } else {
            m.insert(
                "instruction".into(),
                json!({"text": i.text, "json": payload}),
            );
            m.insert("state".into(), json!(report.state()));
        }
        return m;
    }
    let handoff = match report {
        Report::BlockedOnUser { handoff, .. } => handoff.as_str(),
        _ => "",
    };
    m.insert("done".into(), json!(true));
    m.insert(
        "blocked".into(),
        json!(matches!(report, Report::BlockedOnUser { .. })),
    );
    m.insert("handoff".into(), json!(handoff));
    m.insert("state".into(), json!(report.state()));
    m.insert(
        "runComplete".into(),
        json!(matches!(report, Report::Complete)),
    );
    if let Report::Stalled { goal_ids } = report {
        m.insert("stalledGoalIds".into(), json!(goal_ids));
    }
    m
}

/// A `repair` action: `{kind, records}` for a rebuilt index, `{kind,
/// archive}` for a finished or undone `create-goals --force`, and `{kind,
/// seq, repair, recovered}` of an appended entry.
pub(super) fn repair_action(action: &RepairAction) -> Value {
    match action {
        RepairAction::IndexRebuilt { records } => {
            json!({"kind": "index_rebuilt", "records": records})
        }
        RepairAction::ForceSwitch { kind, archive } => json!({"kind": kind, "archive": archive}),
        RepairAction::Appended(e) => json!({
            "kind": e.get("kind"),
            "seq": e.get("seq"),
            "repair": e.get("repair"),
            "recovered": e.get("recovered"),
        }),
    }
}

/// `checkpoint --print-template`: `{qualityGateTemplate, codexGoalTemplate,
/// hostGoalTemplate, guidance, rules, scope, criteria, attemptDir?}`.
pub(super) fn template(out: &TemplateOutcome) -> Map<String, Value> {
    let t = &out.template;
    let mut m = Map::new();
    m.insert("qualityGateTemplate".into(), t.quality_gate.clone());
    m.insert("codexGoalTemplate".into(), t.host_goal.clone());
    m.insert("hostGoalTemplate".into(), t.host_goal.clone());
    m.insert("guidance".into(), json!(out.guidance));
    m.insert("rules".into(), json!(t.rules));
    m.insert("scope".into(), t.scope.clone());
    m.insert("criteria".into(), t.criteria.clone());
    if let Some(d) = &out.attempt_dir {
        m.insert("attemptDir".into(), json!(d));
    }
    m
}

//! Text output of the goal-engine subcommands (docs/differences.md#r-3 formats).

use crate::goals::Engine;
use crate::goals::handoff;
use crate::goals::ops::checkpoint::CheckpointOutcome;
use crate::goals::ops::complete::Report;
use crate::goals::ops::criteria::CriteriaOutcome;
use crate::goals::ops::repair::RepairOutcome;
use crate::goals::ops::status::StatusOutcome;
use crate::goals::plan::{CriterionStatus, Plan};

/// `create-goals` text.
pub(super) fn created(engine: &Engine, plan: &Plan, archived: Option<&str>) -> String {
    let mut out = format!(
        "{} plan created: {} goal(s)\nbrief: {}\ngoals: {}\nledger: {}",
        engine.profile.display_name,
        plan.goal_count(),
        plan.str("briefPath").unwrap_or_default(),
        plan.str("goalsPath").unwrap_or_default(),
        plan.str("ledgerPath").unwrap_or_default(),
    );
    if let Some(a) = archived {
        out.push_str(&format!("\narchived: {a}"));
    }
    out
}

/// The goals list and summary lines shared by `status` and `add-goal`.
pub(super) fn status_block(engine: &Engine, plan: &Plan) -> String {
    let mut lines = vec![
        format!("{} status", engine.profile.display_name),
        String::new(),
        "goals:".into(),
    ];
    let active = plan.active_goal_id();
    let (mut pass_total, mut crit_total) = (0usize, 0usize);
    for g in plan.goals() {
        let pass = g
            .criteria()
            .filter(|c| c.status() == CriterionStatus::Pass)
            .count();
        let total = g.criteria_len();
        pass_total += pass;
        crit_total += total;
        lines.push(format!(
            "{} {} [{}] {} (criteria: {pass}/{total})",
            if active == Some(g.id()) { "*" } else { "-" },
            g.id(),
            g.status().as_str(),
            g.title()
        ));
    }
    lines.push(String::new());
    lines.push("summary:".into());
    lines.push(format!("total goals: {}", plan.goal_count()));
    lines.push(format!("criteria: {pass_total}/{crit_total} pass"));
    lines.join("\n")
}

/// `status` text.
pub(super) fn status(engine: &Engine, out: &StatusOutcome) -> String {
    let mut text = status_block(engine, &out.plan);
    text.push_str(&format!(
        "\nledger: {} records, last seq {}, {}{}",
        out.ledger.records,
        out.ledger.last_seq,
        out.consistency.as_str(),
        if out.ledger.mutation_in_progress {
            ", mutation in progress"
        } else {
            ""
        }
    ));
    if out.binding.tampered() {
        let e = crate::goals::txn::tampered_error(engine, &out.binding);
        text.push_str(&format!("\nbinding: {}", e.message));
    } else {
        text.push_str(&format!("\nbinding: {}", out.binding.state.as_str()));
    }
    if let Some(ad) = &out.adapter {
        match (ad.get("agy_goal_adapter"), ad.get("native_goal_parity")) {
            (Some(a), Some(n)) => text.push_str(&format!(
                "\nadapter: {} (native goal parity: {n})",
                a.as_str().unwrap_or_default()
            )),
            _ => {
                let parts: Vec<String> = ad.iter().map(|(k, v)| format!("{k}={v}")).collect();
                text.push_str(&format!("\nadapter: {}", parts.join(", ")));
            }
        }
    }
    if let Some(ids) = &out.stalled {
        text.push_str(&format!("\nstalled: {}", ids.join(", ")));
    }
    if let Some(d) = &out.current_attempt_dir {
        text.push_str(&format!("\ncurrentAttemptDir: {d}"));
    }
    text
}

/// The text of a scheduler report (`complete-goals`, checkpoint `next`).
pub(super) fn schedule(engine: &Engine, plan: &Plan, report: &Report) -> String {
    match report {
        Report::Resumed { instruction, .. } | Report::Started { instruction, .. } => {
            instruction.text.clone()
        }
        Report::BlockedOnUser { handoff, .. } => handoff.clone(),
        Report::Stalled { goal_ids } => {
            let mut text = handoff::stalled(engine, plan, goal_ids);
            let sid = engine.session_opt(plan);
            text.push_str(&format!(
                "\nnext: `{} status{sid} --json` lists the next actions (retry failed goals with `complete-goals --retry-failed`, lift user-decision blockers with `steer --kind unblock`).",
                engine.profile.command_prefix
            ));
            text
        }
        Report::Complete => handoff::all_complete(engine, plan),
    }
}

/// `criteria` text.
pub(super) fn criteria(engine: &Engine, out: &CriteriaOutcome) -> String {
    let markers = &engine.profile.criteria.seeded_markers;
    let mut lines = vec![format!("criteria for {}:", out.goal_id)];
    if let Some(g) = out.plan.goal(&out.goal_id) {
        for c in g.criteria() {
            lines.push(format!(
                "- {} [{}] [{}] ({}) {} evidence: {}{}",
                c.id(),
                c.status().as_str(),
                if c.essential() {
                    "essential"
                } else {
                    "non-essential"
                },
                c.user_model(),
                c.str("scenario").unwrap_or_default(),
                c.str("capturedEvidence").unwrap_or("pending"),
                if c.seeded(markers) { " [seeded]" } else { "" }
            ));
        }
    }
    lines.join("\n")
}

/// `checkpoint` text.
pub(super) fn checkpoint(engine: &Engine, out: &CheckpointOutcome) -> String {
    let mut text = format!(
        "{} checkpoint: {} -> {}",
        engine.profile.display_name,
        out.goal.id(),
        out.status.as_str()
    );
    if let Some(n) = &out.next {
        text.push('\n');
        text.push_str(&schedule(engine, &out.plan, n));
    }
    text
}

/// `repair` text.
pub(super) fn repair(engine: &Engine, out: &RepairOutcome, check: bool) -> String {
    let mut lines = Vec::new();
    if check {
        for f in &out.findings {
            let at = f.line.map(|l| format!(" line {l}")).unwrap_or_default();
            lines.push(format!(
                "{} {}{at}: {}",
                f.code.name(),
                super::json::to_value(&f.severity)
                    .as_str()
                    .unwrap_or_default(),
                f.message
            ));
        }
    } else {
        for a in &out.actions {
            lines.push(format!(
                "{} {}",
                a.kind(),
                a.repair().unwrap_or(&serde_json::Value::Null)
            ));
        }
    }
    lines.push(format!(
        "{} repair: consistency {}",
        engine.profile.display_name,
        out.consistency.as_str()
    ));
    lines.join("\n")
}

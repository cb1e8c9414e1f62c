//! `workflow list | check | register | release` (docs/engine.md#ge-4, docs/engine.md#ge-9):
//! read-only inspection and registration of the session's workflows.

use serde_json::{Value, json};

use super::args::{Args, Flag};
use super::{Body, Reply};
use crate::goals::error::{ErrorKind, GoalError};
use crate::goals::workflow::{self, Entry, Role, Start};
use crate::goals::{Engine, team};

/// Flags of `workflow`.
pub(super) fn flags() -> Vec<Flag> {
    vec![
        Flag::value("--workflow"),
        Flag::value("--role"),
        Flag::value("--note"),
        Flag::value("--rationale"),
        Flag::value("--allow-workflow-overlap"),
        Flag::value("--handoff-from"),
    ]
}

fn entries(list: &[Entry]) -> Value {
    json!(list)
}

fn name(a: &Args) -> Result<String, GoalError> {
    a.text("--workflow")?
        .ok_or_else(|| GoalError::missing_flag("--workflow"))
}

fn start_of<'a>(engine: &'a Engine, workflow: &'a str, role: &'a str) -> Start<'a> {
    let own = workflow == engine.profile.workflow.name;
    Start {
        workflow,
        role,
        state_dir: own.then_some(engine.paths.dir.as_str()),
        registered_by: workflow::BY_EXTERNAL,
        handoff_from: None,
        allow_overlap: None,
        note: None,
        own_reason: "released",
    }
}

/// Runs `workflow`.
pub(super) fn run(engine: &Engine, a: &Args, worker: Option<&str>) -> Result<Reply, GoalError> {
    let action = a.positionals.first().map_or("list", String::as_str);
    if let Some(marker) = worker
        && matches!(action, "register" | "release")
    {
        return Err(team::forbidden(
            &engine.profile,
            &format!("workflow {action}"),
            marker,
        ));
    }
    let loc = workflow::location(engine);
    let path = loc.display();
    let mut body = Body::default();
    body.insert("registry", json!(path));
    let (ok, text) = match action {
        "list" => {
            let reg = loc.load(engine.root(), engine.profile.limits.max_input_bytes)?;
            let mut lines = vec![format!("workflows ({path}):")];
            for e in &reg.active {
                lines.push(format!(
                    "- {} [{}] since {}{}",
                    e.workflow,
                    e.role,
                    e.registered_at,
                    e.state_dir
                        .as_ref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default()
                ));
            }
            if reg.active.is_empty() {
                lines.push("- none active".into());
            }
            body.insert("sessionId", json!(reg.session_id));
            body.insert("active", entries(&reg.active));
            body.insert("history", entries(&reg.history));
            (true, lines.join("\n"))
        }
        "check" => {
            let w = name(a)?;
            let role = engine
                .workflows()
                .role(&w)
                .map_or("external", Role::as_str)
                .to_owned();
            let reg = loc.load(engine.root(), engine.profile.limits.max_input_bytes)?;
            let s = start_of(engine, &w, &role);
            let verdict = workflow::assess(engine, &reg, &s);
            body.insert("workflow", json!(w));
            body.insert("allowed", json!(verdict.allowed()));
            body.insert("denied", entries(&verdict.denied));
            body.insert("handoffs", entries(&verdict.handoffs));
            body.insert("stale", entries(&verdict.stale));
            let text = if verdict.allowed() {
                format!("workflow {w} can start now")
            } else {
                let e = workflow::denied_error(engine, &s, &verdict);
                let t = format!("workflow {w} cannot start now: {}", e.message);
                body.insert("error", error_json(&e));
                t
            };
            (verdict.allowed(), text)
        }
        "register" => {
            let w = name(a)?;
            let role = match a.text("--role")? {
                Some(r) => Role::parse(&r).ok_or_else(|| {
                    GoalError::new(
                        ErrorKind::ArgumentMissing {
                            flag: Some("--role".into()),
                        },
                        format!(
                            "Invalid --role {r:?}; expected persistence_owner, execution_engine, planner or discipline."
                        ),
                    )
                })?,
                None => engine
                    .workflows()
                    .role(&w)
                    .ok_or_else(|| GoalError::missing_flag("--role"))?,
            };
            let note = a.text("--note")?;
            let overlap = a.text("--allow-workflow-overlap")?;
            let from = a.text("--handoff-from")?;
            let mut s = start_of(engine, &w, role.as_str());
            s.note = note.as_deref();
            s.allow_overlap = overlap.as_deref();
            s.handoff_from = from.as_deref();
            let (_, now) = engine.now();
            let r = workflow::register(engine, &s, &now)?;
            let text = format!("workflow {w} registered ({path})");
            body.insert("workflow", r.to_json());
            body.insert("released", entries(&r.released));
            (true, text)
        }
        "release" => {
            let w = name(a)?;
            let rationale = a.text("--rationale")?;
            let (_, now) = engine.now();
            let released = workflow::release(
                engine,
                &|e: &Entry| e.workflow == w,
                "released",
                rationale.as_deref(),
                &now,
            )?;
            let text = format!("workflow {w}: {} registration(s) released", released.len());
            body.insert("released", entries(&released));
            (true, text)
        }
        other => {
            return Err(GoalError::new(
                ErrorKind::SubcommandUnknown {
                    command: format!("workflow {other}"),
                },
                format!(
                    "Unknown workflow action: {other}; expected list, check, register or release."
                ),
            ));
        }
    };
    let mut r = Reply::new(body, text);
    r.ok = ok;
    Ok(r)
}

fn error_json(e: &GoalError) -> Value {
    json!({"code": e.code(), "message": e.message, "details": e.details()})
}

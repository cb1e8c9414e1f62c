//! Per-subcommand argument handling (docs/differences.md#r-3 parse orders, docs/engine.md
//! docs/engine.md#ge-4 additions) and the JSON bodies of their replies.

use std::io::Read;

use serde_json::{Value, json};

use super::Io;
use super::args::{self, Args, Flag};
use super::render;
use super::{Body, Reply};
use crate::goals::error::{ErrorKind, GoalError};
use crate::goals::input::{self, InputKind, Loaded};
use crate::goals::ops::checkpoint::{CheckpointRequest, CheckpointStatus};
use crate::goals::ops::{
    add, checkpoint, complete, create, criteria, record, repair, review, status, template,
};
use crate::goals::plan::{CriterionStatus, Mode};
use crate::goals::{Engine, summary};

fn common(engine: &Engine) -> Vec<Flag> {
    let mut f = super::global_flags();
    // The session flag is global; the profile may name it differently.
    if engine.profile.session.flag != "--session-id" {
        f.push(Flag::value(&engine.profile.session.flag));
    }
    f
}

fn host_flag(engine: &Engine) -> Flag {
    Flag::value(&engine.profile.host_goal.flag).aliases(&engine.profile.host_goal.aliases)
}

fn unknown_flag_warnings(a: &Args) -> Vec<Value> {
    a.unknown
        .iter()
        .map(|f| json!({"code": "ARGUMENT_UNKNOWN", "message": format!("Ignored unknown flag {f}.")}))
        .collect()
}

fn unknown_warnings(a: &Args) -> Vec<Value> {
    let mut w = unknown_flag_warnings(a);
    if !a.positionals.is_empty() {
        w.push(json!({
            "code": "ARGUMENT_UNKNOWN",
            "message": format!("Ignored extra words: {}.", a.positionals.join(" ")),
        }));
    }
    w
}

/// Runs one subcommand.
pub(super) fn run(
    engine: &Engine,
    head: &str,
    rest: &[String],
    io: &mut Io<'_>,
    worker: Option<&str>,
) -> Result<Reply, GoalError> {
    match head {
        "create-goals" => create_goals(engine, rest, io),
        "status" => status_cmd(engine, rest),
        "complete-goals" => complete_goals(engine, rest),
        "criteria" => criteria_cmd(engine, rest),
        "record-evidence" => record_evidence(engine, rest),
        "checkpoint" => checkpoint_cmd(engine, rest),
        "add-goal" => add_goal(engine, rest),
        "record-review-blockers" => review_blockers(engine, rest),
        "repair" => repair_cmd(engine, rest),
        "steer" => {
            let a = with_flags(engine, super::steer::flags(), rest);
            let mut r = super::steer::run(engine, &a)?;
            r.warnings.extend(unknown_warnings(&a));
            Ok(r)
        }
        "workflow" => {
            let a = with_flags(engine, super::workflow::flags(), rest);
            let mut r = super::workflow::run(engine, &a, worker)?;
            r.warnings.extend(unknown_flag_warnings(&a));
            Ok(r)
        }
        other => Err(GoalError::new(
            ErrorKind::SubcommandUnknown {
                command: other.to_owned(),
            },
            format!(
                "Unknown {} subcommand: {other}.",
                engine.profile.display_name
            ),
        )),
    }
}

fn with_flags(engine: &Engine, extra: Vec<Flag>, rest: &[String]) -> Args {
    let mut flags = common(engine);
    flags.extend(extra);
    args::parse(rest, &flags)
}

fn create_goals(engine: &Engine, rest: &[String], io: &mut Io<'_>) -> Result<Reply, GoalError> {
    let p = &engine.profile;
    let mode_flag = Flag::value(&p.host_goal.mode_flag).aliases(&p.host_goal.mode_aliases);
    let a = with_flags(
        engine,
        vec![
            Flag::value("--brief"),
            Flag::value("--brief-file"),
            Flag::switch("--from-stdin"),
            mode_flag,
            Flag::value("--validation-batch-json"),
            Flag::switch("--force"),
            Flag::value("--allow-workflow-overlap"),
            Flag::value("--handoff-from"),
            // Consumed in every profile, so its value never joins a
            // positional brief (the Node tool skips it too); only a profile
            // with `brief/goalFlag` uses it.
            Flag::repeated("--goal"),
        ],
        rest,
    );
    let mut warnings = unknown_flag_warnings(&a);
    let mut goals = Vec::new();
    if a.has("--goal") {
        let values = a.all("--goal");
        if p.brief.goal_flag {
            if values.is_empty() {
                return Err(GoalError::missing_flag("--goal"));
            }
            for (i, v) in values.iter().enumerate() {
                goals.push(crate::goals::brief::goal_arg(v, i)?);
            }
        } else {
            warnings.push(json!({
                "code": "ARGUMENT_UNKNOWN",
                "message": format!(
                    "Ignored --goal: {} derives its goals from the brief.",
                    p.display_name
                ),
            }));
        }
    }
    let brief = if let Some(b) = a.text("--brief")? {
        b
    } else if let Some(path) = a.text("--brief-file")? {
        let (bytes, _) = input::read_repo_file(
            engine,
            "--brief-file",
            &path,
            p.limits.max_brief_bytes,
            &|d| GoalError::io(&path, "read", &std::io::Error::other(d)),
        )?;
        String::from_utf8(bytes).map_err(|_| {
            GoalError::io(
                &path,
                "read",
                &std::io::Error::other("the brief is not UTF-8"),
            )
        })?
    } else if a.has("--from-stdin") {
        let mut buf = Vec::new();
        io.stdin
            .take(p.limits.max_brief_bytes + 1)
            .read_to_end(&mut buf)
            .map_err(|e| GoalError::io("<stdin>", "read", &e))?;
        if buf.len() as u64 > p.limits.max_brief_bytes {
            return Err(input::too_large(
                "--from-stdin",
                buf.len() as u64,
                p.limits.max_brief_bytes,
            ));
        }
        String::from_utf8(buf)
            .map_err(|_| GoalError::io("<stdin>", "read", &std::io::Error::other("not UTF-8")))?
    } else {
        a.positionals.join(" ")
    };
    if crate::text::is_blank(&brief) {
        return Err(GoalError::new(
            ErrorKind::BriefRequired,
            "Missing brief text. Pass --brief, --brief-file, --from-stdin, or positional text.",
        ));
    }
    let mode = match a.one(&p.host_goal.mode_flag)? {
        None => Mode::Aggregate,
        Some(v) => {
            let raw = v.unwrap_or_default().trim();
            match raw {
                "aggregate" => Mode::Aggregate,
                "per_story" | "per-story" => Mode::PerStory,
                _ => {
                    return Err(GoalError::new(
                        ErrorKind::CodexGoalModeInvalid {
                            value: raw.to_owned(),
                        },
                        format!(
                            "Invalid {} {raw:?}; expected aggregate or per_story.",
                            p.host_goal.mode_flag
                        ),
                    ));
                }
            }
        }
    };
    let batches = match a.raw("--validation-batch-json")? {
        Some(v) => Some(input::load(engine, "--validation-batch-json", &v, InputKind::Json)?.value),
        None => None,
    };
    let out = create::run(
        engine,
        create::CreateRequest {
            brief,
            goals,
            mode,
            batches,
            force: a.has("--force"),
            allow_overlap: required_text(&a, "--allow-workflow-overlap")?,
            handoff_from: required_text(&a, "--handoff-from")?,
        },
    )?;
    let text = render::created(engine, &out.plan, out.archived.as_deref());
    let mut body = Body::default();
    body.put("summary", &summary::for_engine(engine, &out.plan));
    body.insert("revision", json!(out.committed.revision));
    body.put("ledger", &out.ledger());
    if let Some(a) = &out.archived {
        body.insert("archived", json!(a));
    }
    body.insert("workflow", out.workflow.to_json());
    body.plan_first(out.plan);
    let mut r = Reply::new(body, text);
    r.warnings = warnings;
    Ok(r)
}

/// A flag that, when given, needs a non-blank value.
fn required_text(a: &Args, flag: &str) -> Result<Option<String>, GoalError> {
    match a.one(flag)? {
        None => Ok(None),
        Some(_) => a
            .text(flag)?
            .map(Some)
            .ok_or_else(|| GoalError::missing_flag(flag)),
    }
}

fn load_host(engine: &Engine, a: &Args) -> Result<Option<Loaded>, GoalError> {
    let flag = &engine.profile.host_goal.flag;
    match a.raw(flag)? {
        Some(v) if !v.trim().is_empty() => {
            Ok(Some(input::load(engine, flag, &v, InputKind::HostGoal)?))
        }
        _ => Ok(None),
    }
}

fn status_cmd(engine: &Engine, rest: &[String]) -> Result<Reply, GoalError> {
    let a = with_flags(engine, vec![host_flag(engine)], rest);
    let host = load_host(engine, &a)?;
    let out = status::run(engine, host.as_ref())?;
    let text = render::status(engine, &out);
    let mut body = Body::default();
    body.put("summary", &out.summary);
    if let Some(d) = &out.current_attempt_dir {
        body.insert("currentAttemptDir", json!(d));
    }
    body.insert("profile", json!(engine.profile.name));
    body.insert("revision", json!(out.plan.revision()));
    if let Some(g) = out.plan.str("gateRules") {
        body.insert("gateRules", json!(g));
    }
    body.insert("ledger", super::json::status_ledger(&out));
    body.put("nextActions", &out.next_actions);
    if let Some(h) = &out.host_goal {
        body.put("hostGoal", h);
    }
    if let Some(ad) = &out.adapter {
        body.put("adapter", ad);
    }
    let tampered = out.binding.tampered();
    body.plan_first(out.plan);
    let mut r = Reply::new(body, text);
    // A plan its ledger does not vouch for is not a status to act on.
    r.ok = !tampered;
    r.warnings = unknown_warnings(&a);
    Ok(r)
}

fn complete_goals(engine: &Engine, rest: &[String]) -> Result<Reply, GoalError> {
    let a = with_flags(engine, vec![Flag::switch("--retry-failed")], rest);
    let out = complete::run(engine, a.has("--retry-failed"))?;
    let text = render::schedule(engine, &out.plan, &out.report);
    let mut body = Body::default();
    body.extend(super::json::report(engine, &out.report));
    if out.report.done() {
        body.put("summary", &summary::for_engine(engine, &out.plan));
    }
    let ledger = out.ledger();
    body.plan(out.plan);
    body.insert("revision", json!(out.revision));
    body.put("ledger", &ledger);
    let mut r = Reply::new(body, text);
    r.warnings = unknown_warnings(&a);
    Ok(r)
}

fn criteria_cmd(engine: &Engine, rest: &[String]) -> Result<Reply, GoalError> {
    let a = with_flags(engine, vec![Flag::value("--goal-id")], rest);
    let goal_id = a
        .text("--goal-id")?
        .ok_or_else(|| GoalError::missing_flag("--goal-id"))?;
    let out = criteria::run(engine, &goal_id)?;
    let mut body = Body::default();
    body.insert("goalId", json!(out.goal_id));
    body.put("criteria", &out.criteria);
    let text = render::criteria(engine, &out);
    let mut r = Reply::new(body, text);
    r.warnings = unknown_warnings(&a);
    Ok(r)
}

fn record_evidence(engine: &Engine, rest: &[String]) -> Result<Reply, GoalError> {
    let a = with_flags(
        engine,
        vec![
            Flag::value("--goal-id"),
            Flag::value("--criterion-id"),
            Flag::value("--status"),
            Flag::value("--evidence"),
            Flag::value("--notes"),
            Flag::repeated("--evidence-file"),
            Flag::value("--accept-seeded"),
        ],
        rest,
    );
    let required = |flag: &str, kind: ErrorKind| -> Result<String, GoalError> {
        a.text(flag)?
            .ok_or_else(|| GoalError::new(kind, format!("Missing {flag}.")))
    };
    let goal_id = required(
        "--goal-id",
        ErrorKind::GoalIdRequired {
            flag: "--goal-id".into(),
        },
    )?;
    let criterion_id = required(
        "--criterion-id",
        ErrorKind::CriterionIdRequired {
            flag: "--criterion-id".into(),
        },
    )?;
    let files = a.all("--evidence-file");
    let status = match a.text("--status")? {
        Some(s) => Some(
            CriterionStatus::parse(&s)
                .filter(|s| *s != CriterionStatus::Pending)
                .ok_or_else(|| {
                    GoalError::new(
                        ErrorKind::EvidenceStatusInvalid { status: s.clone() },
                        "Invalid --status; expected pass, fail, or blocked.",
                    )
                })?,
        ),
        None if files.is_empty() => {
            return Err(GoalError::new(
                ErrorKind::EvidenceStatusRequired {
                    flag: "--status".into(),
                },
                "Missing --status.",
            ));
        }
        None => None,
    };
    let evidence = a.text("--evidence")?;
    if evidence.is_none() && files.is_empty() {
        return Err(GoalError::new(
            ErrorKind::EvidenceRequired {
                flag: Some("--evidence".into()),
                legacy: false,
            },
            "Missing --evidence.",
        ));
    }
    let out = record::run(
        engine,
        record::RecordRequest {
            goal_id,
            criterion_id,
            status,
            evidence,
            notes: a.text("--notes")?,
            evidence_files: files,
            accept_seeded: a.text("--accept-seeded")?,
        },
    )?;
    let mut body = Body::default();
    body.put("goal", &out.goal);
    body.put("criterion", &out.criterion);
    body.put("ledgerEntry", &out.ledger_entry());
    body.put("summary", &summary::for_engine(engine, &out.plan));
    body.put("files", &out.files);
    body.insert("revision", json!(out.committed.revision));
    body.put("ledger", &out.ledger());
    let text = format!(
        "{} evidence recorded: {}/{} -> {}",
        engine.profile.display_name,
        out.goal.id(),
        out.criterion.id(),
        out.criterion.status().as_str()
    );
    body.plan_first(out.plan);
    let mut r = Reply::new(body, text);
    r.warnings = unknown_warnings(&a);
    Ok(r)
}

fn checkpoint_cmd(engine: &Engine, rest: &[String]) -> Result<Reply, GoalError> {
    let a = with_flags(
        engine,
        vec![
            Flag::value("--goal-id"),
            Flag::value("--status"),
            Flag::value("--evidence"),
            host_flag(engine),
            Flag::value("--quality-gate-json"),
            Flag::switch("--no-advance"),
            Flag::repeated("--evidence-file"),
            Flag::value("--accept-task-scoped-snapshot"),
            Flag::switch("--start-pending"),
            Flag::switch("--print-template"),
        ]
        .into_iter()
        .chain(
            engine
                .profile
                .compat
                .strict_gate
                .as_ref()
                .map(|_| Flag::switch("--strict")),
        )
        .collect(),
        rest,
    );
    if a.has("--print-template") {
        return print_template(engine, &a);
    }
    let goal_id = a
        .text("--goal-id")?
        .ok_or_else(|| GoalError::missing_flag("--goal-id"))?;
    let status = match a.text("--status")? {
        None => return Err(GoalError::missing_flag("--status")),
        Some(s) => match s.as_str() {
            "complete" => CheckpointStatus::Complete,
            "failed" => CheckpointStatus::Failed,
            "blocked" => CheckpointStatus::Blocked,
            _ => {
                return Err(GoalError::new(
                    ErrorKind::StatusInvalid { status: Some(s) },
                    "Missing or invalid --status; expected complete, failed, or blocked.",
                ));
            }
        },
    };
    let files = a.all("--evidence-file");
    // A present but blank `--evidence` reaches the pipeline, whose evidence
    // step answers ULW_LOOP_EVIDENCE_REQUIRED (docs/engine.md#ge-3 step 4,
    // docs/engine.md#ge-4); only an absent one is a missing argument.
    let evidence = a.raw("--evidence")?;
    if evidence.is_none() && files.is_empty() {
        return Err(GoalError::missing_flag("--evidence"));
    }
    let host_goal = load_host(engine, &a)?;
    if status == CheckpointStatus::Complete
        && engine.profile.host_goal.required
        && host_goal.is_none()
    {
        return Err(GoalError::missing_flag(&engine.profile.host_goal.flag));
    }
    let gate_raw = a
        .raw("--quality-gate-json")?
        .filter(|v| !v.trim().is_empty());
    if gate_raw.is_some() && status != CheckpointStatus::Complete {
        return Err(GoalError::conflict(
            vec!["--quality-gate-json".into(), "--status".into()],
            "a quality gate is accepted only with --status complete",
        ));
    }
    let quality_gate = match gate_raw {
        Some(v) => Some(input::load(
            engine,
            "--quality-gate-json",
            &v,
            InputKind::Gate,
        )?),
        None => None,
    };
    let out = checkpoint::run(
        engine,
        CheckpointRequest {
            goal_id,
            status,
            evidence,
            evidence_files: files,
            host_goal,
            quality_gate,
            accept_task_scoped: a.text("--accept-task-scoped-snapshot")?,
            start_pending: a.has("--start-pending"),
            no_advance: a.has("--no-advance") || engine.profile.compat.no_checkpoint_advance,
            strict: a.has("--strict"),
        },
    )?;
    let text = render::checkpoint(engine, &out);
    let mut body = Body::default();
    body.put("goal", &out.goal);
    body.put("ledgerEntry", &out.ledger_entry);
    body.put("ledgerEntries", &out.ledger_entries);
    if let Some(c) = &out.aggregate_completion {
        body.put("aggregateCompletion", c);
    }
    if let Some(n) = &out.next {
        body.insert("next", Value::Object(super::json::report(engine, n)));
    }
    body.put("summary", &summary::for_engine(engine, &out.plan));
    body.put("files", &out.files);
    body.insert("revision", json!(out.revision));
    body.put("ledger", &out.ledger());
    let warnings = out.warnings.iter().map(super::json::to_value).collect();
    body.plan_first(out.plan);
    let mut r = Reply::new(body, text);
    r.warnings = warnings;
    r.warnings.extend(unknown_warnings(&a));
    Ok(r)
}

fn print_template(engine: &Engine, a: &Args) -> Result<Reply, GoalError> {
    let goal_id = a.text("--goal-id")?;
    let out = template::run(engine, goal_id.as_deref(), a.has("--strict"))?;
    let out = super::json::template(&out);
    let mut body = Body::default();
    body.extend(out.clone());
    let text = serde_json::to_string_pretty(&out).expect("json");
    let mut r = Reply::new(body, text);
    let ignored: Vec<Value> = [
        "--status",
        "--evidence",
        &engine.profile.host_goal.flag,
        "--quality-gate-json",
        "--no-advance",
        "--evidence-file",
        "--accept-task-scoped-snapshot",
        "--start-pending",
    ]
    .iter()
    .filter(|f| a.has(f))
    .map(|f| json!({"code": "ARGUMENT_IGNORED", "message": format!("{f} is ignored with --print-template.")}))
    .collect();
    r.warnings = ignored;
    r.warnings.extend(unknown_warnings(a));
    Ok(r)
}

fn add_goal(engine: &Engine, rest: &[String]) -> Result<Reply, GoalError> {
    let a = with_flags(
        engine,
        vec![
            Flag::value("--title"),
            Flag::value("--objective"),
            Flag::value("--evidence"),
            Flag::value("--token-budget"),
        ],
        rest,
    );
    let title = a
        .text("--title")?
        .ok_or_else(|| GoalError::missing_flag("--title"))?;
    let objective = a
        .text("--objective")?
        .ok_or_else(|| GoalError::missing_flag("--objective"))?;
    let token_budget = match a.one("--token-budget")? {
        None => None,
        Some(v) => {
            let v = v.unwrap_or_default().trim();
            match v.parse::<u64>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    return Err(GoalError::new(
                        ErrorKind::ArgumentMissing {
                            flag: Some("--token-budget".into()),
                        },
                        format!("Invalid --token-budget {v:?}; expected a positive integer."),
                    ));
                }
            }
        }
    };
    let out = add::run(
        engine,
        add::AddRequest {
            title,
            objective,
            evidence: a.text("--evidence")?,
            token_budget,
        },
    )?;
    let mut body = Body::default();
    body.put("goal", &out.goal);
    body.put("summary", &summary::for_engine(engine, &out.plan));
    body.insert("revision", json!(out.committed.revision));
    body.put("ledger", &out.ledger());
    let text = format!(
        "{} added goal: {}\n{}",
        engine.profile.display_name,
        out.goal.id(),
        render::status_block(engine, &out.plan)
    );
    body.plan_first(out.plan);
    let mut r = Reply::new(body, text);
    r.warnings = unknown_warnings(&a);
    Ok(r)
}

fn review_blockers(engine: &Engine, rest: &[String]) -> Result<Reply, GoalError> {
    let a = with_flags(
        engine,
        vec![
            host_flag(engine),
            Flag::value("--goal-id"),
            Flag::value("--title"),
            Flag::value("--objective"),
            Flag::value("--evidence"),
            Flag::repeated("--evidence-file"),
        ],
        rest,
    );
    let host_goal = load_host(engine, &a)?;
    if engine.profile.host_goal.required && host_goal.is_none() {
        return Err(GoalError::missing_flag(&engine.profile.host_goal.flag));
    }
    let required = |flag: &str| a.text(flag)?.ok_or_else(|| GoalError::missing_flag(flag));
    let goal_id = required("--goal-id")?;
    let title = required("--title")?;
    let objective = required("--objective")?;
    let evidence = required("--evidence")?;
    let out = review::run(
        engine,
        review::ReviewRequest {
            goal_id,
            title,
            objective,
            evidence,
            host_goal,
            evidence_files: a.all("--evidence-file"),
        },
    )?;
    let text = format!(
        "{} final review blockers recorded: {} -> review_blocked; added {}",
        engine.profile.display_name,
        out.blocked_goal.id(),
        out.goal.id()
    );
    let mut body = Body::default();
    body.put("blockedGoal", &out.blocked_goal);
    body.put("goal", &out.goal);
    body.put("ledgerEntries", &out.ledger_entries());
    body.put("summary", &summary::for_engine(engine, &out.plan));
    body.insert("revision", json!(out.committed.revision));
    body.put("ledger", &out.ledger());
    body.plan_first(out.plan);
    let mut r = Reply::new(body, text);
    r.warnings = unknown_warnings(&a);
    Ok(r)
}

fn repair_cmd(engine: &Engine, rest: &[String]) -> Result<Reply, GoalError> {
    let a = with_flags(
        engine,
        vec![
            Flag::switch("--check"),
            Flag::switch("--accept-plan"),
            Flag::switch("--accept-tampered"),
            Flag::value("--rationale"),
            Flag::switch("--rebuild-index"),
        ],
        rest,
    );
    let modes = [
        "--check",
        "--accept-plan",
        "--accept-tampered",
        "--rebuild-index",
    ]
    .into_iter()
    .filter(|f| a.has(f))
    .map(str::to_owned)
    .collect::<Vec<_>>();
    if modes.len() > 1 {
        return Err(GoalError::conflict(modes, "choose one repair mode"));
    }
    let mode = if a.has("--check") {
        repair::RepairMode::Check
    } else if a.has("--accept-plan") {
        repair::RepairMode::AcceptPlan(
            a.text("--rationale")?
                .ok_or_else(|| GoalError::missing_flag("--rationale"))?,
        )
    } else if a.has("--accept-tampered") {
        repair::RepairMode::AcceptTampered(
            a.text("--rationale")?
                .ok_or_else(|| GoalError::missing_flag("--rationale"))?,
        )
    } else if a.has("--rebuild-index") {
        repair::RepairMode::RebuildIndex
    } else {
        repair::RepairMode::Recover
    };
    let check = mode == repair::RepairMode::Check;
    let out = repair::run(engine, mode)?;
    let mut body = Body::default();
    if check {
        body.put("findings", &out.findings);
    } else {
        body.insert(
            "actions",
            out.actions.iter().map(super::json::repair_action).collect(),
        );
        body.insert("revision", json!(out.revision));
        if let Some(l) = out.ledger() {
            body.put("ledger", &l);
        }
    }
    body.insert("consistency", json!(out.consistency.as_str()));
    let text = render::repair(engine, &out, check);
    let mut r = Reply::new(body, text);
    r.ok = out.ok;
    r.warnings = unknown_warnings(&a);
    Ok(r)
}

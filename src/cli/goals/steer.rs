//! `steer` (docs/engine.md#ge-5): the single-proposal flags of docs/differences.md#r-4 in the
//! anchor's evaluation order, `--proposals-json` batches and
//! `--directive-json` / `--directive-file`. Every mode builds proposal
//! objects and hands them to the canonical parser in
//! [`crate::goals::steer`].

use serde_json::{Map, Value, json};

use super::args::{Args, Flag};
use super::render;
use super::{Body, Reply};
use crate::goals::error::{GoalError, SteeringCode};
use crate::goals::input::{self, InputKind};
use crate::goals::plan::UserModel;
use crate::goals::steer::{self, Channel, Defaults, ItemResult, Kind, Source, Verdict};
use crate::goals::{Engine, handoff};

/// Flags that carry proposal fields (everything but mode, source and key).
const FIELD_FLAGS: &[&str] = &[
    "--evidence",
    "--rationale",
    "--goal-id",
    "--target-goal-id",
    "--title",
    "--objective",
    "--children",
    "--order",
    "--criterion-id",
    "--scenario",
    "--expected-evidence",
    "--user-model",
    "--replacements",
    "--after-json",
    "--blocked-reason",
    "--user-decision",
    "--batch-id",
    "--member-ids",
    "--final-goal-id",
];

/// Every flag of `steer`.
pub(super) fn flags() -> Vec<Flag> {
    let mut f = vec![
        Flag::value("--kind"),
        Flag::value("--source"),
        Flag::value("--idempotency-key"),
        Flag::value("--proposals-json"),
        Flag::value("--directive-json"),
        Flag::value("--directive-file"),
    ];
    for name in FIELD_FLAGS {
        let flag = Flag::value(name);
        f.push(if *name == "--goal-id" {
            flag.aliases(&["--goal".to_owned()])
        } else {
            flag
        });
    }
    f
}

fn usage_details(engine: &Engine) -> (Vec<String>, String) {
    (
        engine.profile.steering.kinds.clone(),
        handoff::steer_usage(engine),
    )
}

fn field_required(flag: &str) -> GoalError {
    GoalError::steering(
        SteeringCode::FieldRequired,
        json!({"flag": flag}),
        format!("Missing {flag}."),
    )
}

fn field_empty(field: &str) -> GoalError {
    GoalError::steering(
        SteeringCode::FieldEmpty,
        json!({"field": field}),
        format!("Empty {field}."),
    )
}

/// A text flag: absent ⇒ `None`; present but blank (or without a value) ⇒
/// `…_FIELD_EMPTY` for `field`.
fn text(a: &Args, flag: &str, field: &str) -> Result<Option<String>, GoalError> {
    match a.one(flag)? {
        None => Ok(None),
        Some(v) => {
            let t = v.unwrap_or_default().trim();
            if t.is_empty() {
                Err(field_empty(field))
            } else {
                Ok(Some(t.to_owned()))
            }
        }
    }
}

fn source(a: &Args) -> Result<Option<Source>, GoalError> {
    match a.one("--source")? {
        None => Ok(None),
        Some(v) => {
            let raw = v.unwrap_or_default().trim();
            Source::parse(raw).map(Some).ok_or_else(|| {
                GoalError::steering(
                    SteeringCode::SourceInvalid,
                    json!({"value": raw, "expected": Source::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>()}),
                    format!("Invalid --source: {raw}; expected user_prompt_submit, finding or cli."),
                )
            })
        }
    }
}

fn json_flag(engine: &Engine, a: &Args, flag: &str) -> Result<Option<Value>, GoalError> {
    match a.one(flag)? {
        None => Ok(None),
        Some(v) => {
            let raw = v.unwrap_or_default();
            if raw.trim().is_empty() {
                return Err(field_empty(flag.trim_start_matches('-')));
            }
            Ok(Some(input::load(engine, flag, raw, InputKind::Json)?.value))
        }
    }
}

fn array_required(flag: &str) -> GoalError {
    GoalError::steering(
        SteeringCode::JsonArrayRequired,
        json!({"flag": flag}),
        format!("{flag} must be a JSON array."),
    )
}

fn children(engine: &Engine, a: &Args, flag: &str) -> Result<Option<Value>, GoalError> {
    let Some(v) = json_flag(engine, a, flag)? else {
        return Ok(None);
    };
    let Some(list) = v.as_array() else {
        return Err(array_required(flag));
    };
    let mut out = Vec::with_capacity(list.len());
    for item in list {
        let invalid = || {
            GoalError::steering(
                SteeringCode::ChildInvalid,
                json!({"flag": flag}),
                format!("Each {flag} entry needs a string title and objective."),
            )
        };
        let o = item.as_object().ok_or_else(invalid)?;
        let mut child = o.clone();
        for key in ["title", "objective"] {
            let s = o.get(key).and_then(Value::as_str).ok_or_else(invalid)?;
            if s.trim().is_empty() {
                return Err(field_empty(&format!("child.{key}")));
            }
            child.insert(key.into(), json!(s.trim()));
        }
        out.push(Value::Object(child));
    }
    Ok(Some(Value::Array(out)))
}

fn string_array(
    engine: &Engine,
    a: &Args,
    flag: &str,
    field: &str,
) -> Result<Option<Value>, GoalError> {
    let Some(v) = json_flag(engine, a, flag)? else {
        return Ok(None);
    };
    let Some(list) = v.as_array() else {
        return Err(array_required(flag));
    };
    let mut out = Vec::with_capacity(list.len());
    for item in list {
        let s = item.as_str().ok_or_else(|| {
            GoalError::steering(
                SteeringCode::StringArrayRequired,
                json!({"flag": flag}),
                format!("{flag} must be an array of strings."),
            )
        })?;
        if s.trim().is_empty() {
            return Err(field_empty(field));
        }
        out.push(json!(s.trim()));
    }
    Ok(Some(Value::Array(out)))
}

fn present_field_flags(a: &Args, allowed: &[&str]) -> Vec<String> {
    FIELD_FLAGS
        .iter()
        .chain(["--kind", "--idempotency-key"].iter())
        .filter(|f| !allowed.contains(f) && a.has(f))
        .map(|f| (*f).to_owned())
        .collect()
}

/// Runs `steer`.
pub(super) fn run(engine: &Engine, a: &Args) -> Result<Reply, GoalError> {
    let directive = a.has("--directive-json") || a.has("--directive-file");
    if directive {
        if a.has("--directive-json") && a.has("--directive-file") {
            return Err(GoalError::conflict(
                vec!["--directive-json".into(), "--directive-file".into()],
                "give the directive once",
            ));
        }
        let mut others = present_field_flags(a, &["--idempotency-key"]);
        if a.has("--proposals-json") {
            others.push("--proposals-json".into());
        }
        if !others.is_empty() {
            let mut flags = vec![if a.has("--directive-json") {
                "--directive-json".to_owned()
            } else {
                "--directive-file".to_owned()
            }];
            flags.extend(others);
            return Err(GoalError::conflict(
                flags,
                "a directive is a complete proposal; only --source and --idempotency-key may accompany it",
            ));
        }
        return run_directive(engine, a);
    }
    if a.has("--proposals-json") {
        let value = a.one("--proposals-json")?.flatten().unwrap_or_default();
        if value.trim().is_empty() {
            return Err(field_empty("--proposals-json"));
        }
        if a.text("--kind")?.is_some() {
            return Err(GoalError::steering(
                SteeringCode::BatchConflict,
                json!({"flags": ["--kind", "--proposals-json"]}),
                "Use either --kind (one proposal) or --proposals-json (a batch), not both.",
            ));
        }
        let others = present_field_flags(a, &[]);
        if !others.is_empty() {
            let mut flags = vec!["--proposals-json".to_owned()];
            flags.extend(others);
            return Err(GoalError::conflict(
                flags,
                "batch items carry their own fields; only --source may accompany --proposals-json",
            ));
        }
        return run_batch(engine, a, value);
    }
    run_single(engine, a)
}

fn goal_id(a: &Args) -> Result<Option<String>, GoalError> {
    text(a, "--goal-id", "goalId")
}

fn require_goal(a: &Args) -> Result<(), GoalError> {
    if goal_id(a)?.is_none() && text(a, "--target-goal-id", "targetGoalId")?.is_none() {
        return Err(GoalError::new(
            crate::goals::ErrorKind::GoalIdRequired {
                flag: "--goal-id".into(),
            },
            "Missing --goal-id.",
        ));
    }
    Ok(())
}

fn run_single(engine: &Engine, a: &Args) -> Result<Reply, GoalError> {
    let (expected, usage) = usage_details(engine);
    let kind = match a.one("--kind")? {
        None | Some(None) => {
            return Err(GoalError::steering(
                SteeringCode::KindRequired,
                json!({"flag": "--kind", "expected": expected, "usage": usage}),
                format!("Missing --kind.\n\n{usage}"),
            ));
        }
        Some(Some(v)) => match Kind::parse(v.trim()) {
            Some(k) => k,
            None => {
                return Err(GoalError::steering(
                    SteeringCode::KindInvalid,
                    json!({"value": v.trim(), "expected": expected, "usage": usage}),
                    format!("Invalid --kind: {}.\n\n{usage}", v.trim()),
                ));
            }
        },
    };
    let src = source(a)?;
    let key = text(a, "--idempotency-key", "idempotencyKey")?;
    let evidence =
        text(a, "--evidence", "evidence")?.ok_or_else(|| field_required("--evidence"))?;
    let rationale =
        text(a, "--rationale", "rationale")?.ok_or_else(|| field_required("--rationale"))?;
    let title = text(a, "--title", "title")?;
    let objective = text(a, "--objective", "objective")?;
    // `--after-json` may carry the values the anchor's flags would (docs/engine.md#ge-5).
    let after = a.has("--after-json");
    match kind {
        Kind::AddSubgoal if !after => {
            if title.is_none() {
                return Err(field_required("--title"));
            }
            if objective.is_none() {
                return Err(field_required("--objective"));
            }
        }
        Kind::SplitSubgoal => {
            require_goal(a)?;
            if !a.has("--children") && !after {
                return Err(field_required("--children"));
            }
        }
        Kind::ReorderPending => {
            if !a.has("--order") && !after {
                return Err(field_required("--order"));
            }
        }
        Kind::RevisePendingWording => {
            require_goal(a)?;
            if title.is_none() && objective.is_none() && !after {
                return Err(GoalError::steering(
                    SteeringCode::UpdateRequired,
                    json!({"kind": kind.as_str()}),
                    "revise_pending_wording needs --title and/or --objective.",
                ));
            }
        }
        Kind::ReviseCriterion => {
            require_goal(a)?;
            if text(a, "--criterion-id", "criterionId")?.is_none() {
                return Err(field_required("--criterion-id"));
            }
            if !a.has("--scenario") && !a.has("--expected-evidence") && !a.has("--user-model") {
                return Err(GoalError::steering(
                    SteeringCode::UpdateRequired,
                    json!({"kind": kind.as_str()}),
                    "revise_criterion needs --scenario, --expected-evidence and/or --user-model.",
                ));
            }
        }
        Kind::AddSubgoal | Kind::AnnotateLedger => {}
        Kind::MarkBlockedSuperseded | Kind::Unblock => require_goal(a)?,
        Kind::ReviseBatch => {
            if text(a, "--batch-id", "batchId")?.is_none() {
                return Err(field_required("--batch-id"));
            }
        }
    }
    let model = match a.one("--user-model")? {
        None => None,
        Some(v) => {
            let raw = v.unwrap_or_default().trim();
            if UserModel::parse(raw).is_none() {
                return Err(GoalError::steering(
                    SteeringCode::UserModelInvalid,
                    json!({"value": raw, "expected": ["happy", "edge", "regression", "adversarial"]}),
                    format!(
                        "Invalid --user-model: {raw}; expected happy, edge, regression or adversarial."
                    ),
                ));
            }
            Some(raw.to_owned())
        }
    };
    if a.has("--children") && a.has("--replacements") {
        return Err(GoalError::conflict(
            vec!["--children".into(), "--replacements".into()],
            "both name the replacement goals; give one",
        ));
    }
    let mut m = Map::new();
    m.insert("kind".into(), json!(kind.as_str()));
    if let Some(s) = src {
        m.insert("source".into(), json!(s.as_str()));
    }
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            m.insert(k.into(), v);
        }
    };
    put("idempotencyKey", key.map(Value::String));
    put("evidence", Some(json!(evidence)));
    put("rationale", Some(json!(rationale)));
    put("goalId", goal_id(a)?.map(Value::String));
    put(
        "targetGoalId",
        text(a, "--target-goal-id", "targetGoalId")?.map(Value::String),
    );
    let (tk, ok) = if kind == Kind::RevisePendingWording {
        ("revisedTitle", "revisedObjective")
    } else {
        ("title", "objective")
    };
    put(tk, title.map(Value::String));
    put(ok, objective.map(Value::String));
    let kids = match children(engine, a, "--children")? {
        Some(c) => Some(c),
        None => children(engine, a, "--replacements")?,
    };
    let kids = kids.filter(|c| {
        !(kind == Kind::MarkBlockedSuperseded && c.as_array().is_some_and(Vec::is_empty))
    });
    put("childGoals", kids);
    put(
        "pendingOrder",
        string_array(engine, a, "--order", "pendingOrder")?,
    );
    put(
        "criterionId",
        text(a, "--criterion-id", "criterionId")?.map(Value::String),
    );
    put(
        "scenario",
        text(a, "--scenario", "scenario")?.map(Value::String),
    );
    put(
        "expectedEvidence",
        text(a, "--expected-evidence", "expectedEvidence")?.map(Value::String),
    );
    put("userModel", model.map(Value::String));
    put(
        "blockedReason",
        text(a, "--blocked-reason", "blockedReason")?.map(Value::String),
    );
    put(
        "userDecision",
        text(a, "--user-decision", "userDecision")?.map(Value::String),
    );
    put(
        "batchId",
        text(a, "--batch-id", "batchId")?.map(Value::String),
    );
    put(
        "memberIds",
        string_array(engine, a, "--member-ids", "memberIds")?,
    );
    put(
        "finalGoalId",
        text(a, "--final-goal-id", "finalGoalId")?.map(Value::String),
    );
    if let Some(after) = json_flag(engine, a, "--after-json")? {
        if !after.is_object() {
            return Err(GoalError::new(
                crate::goals::ErrorKind::JsonInputInvalid {
                    flag: "--after-json".into(),
                    legacy: false,
                },
                "Invalid JSON input: --after-json must be a JSON object.",
            ));
        }
        put("after", Some(after));
    }
    let out = steer::apply_one(engine, &Value::Object(m), Channel::Cli, &Defaults::none())?;
    Ok(single_reply(engine, out, a.has("--json")))
}

fn run_directive(engine: &Engine, a: &Args) -> Result<Reply, GoalError> {
    let (value, text_raw) = if let Some(v) = a.one("--directive-json")? {
        let raw = v.unwrap_or_default();
        if raw.trim().is_empty() {
            return Err(field_empty("--directive-json"));
        }
        let loaded = input::load(engine, "--directive-json", raw, InputKind::Json)?;
        (loaded.value, loaded.text)
    } else {
        let path = a
            .one("--directive-file")?
            .flatten()
            .unwrap_or_default()
            .trim()
            .to_owned();
        if path.is_empty() {
            return Err(field_empty("--directive-file"));
        }
        let flag = "--directive-file";
        let invalid = |d: String| {
            GoalError::new(
                crate::goals::ErrorKind::JsonInputInvalid {
                    flag: flag.into(),
                    legacy: false,
                },
                format!("Invalid JSON input: {d}"),
            )
        };
        let (bytes, _) = input::read_repo_file(
            engine,
            flag,
            &path,
            engine.profile.limits.max_input_bytes,
            &invalid,
        )?;
        let value = crate::json::parse_strict(&bytes).map_err(|e| invalid(e.to_string()))?;
        (value, String::from_utf8_lossy(&bytes).into_owned())
    };
    let defaults = Defaults {
        source: source(a)?,
        directive_text: Some(text_raw),
        idempotency_key: text(a, "--idempotency-key", "idempotencyKey")?,
        lock_timeout: None,
    };
    let out = steer::apply_one(engine, &value, Channel::Directive, &defaults)?;
    Ok(single_reply(engine, out, a.has("--json")))
}

fn run_batch(engine: &Engine, a: &Args, raw: &str) -> Result<Reply, GoalError> {
    let value = input::load(engine, "--proposals-json", raw, InputKind::Json)?.value;
    let items = match value {
        Value::Array(items) if !items.is_empty() => items,
        _ => {
            return Err(GoalError::steering(
                SteeringCode::BatchArrayRequired,
                json!({"flag": "--proposals-json"}),
                "--proposals-json must be a non-empty JSON array.",
            ));
        }
    };
    let defaults = Defaults {
        source: source(a)?,
        ..Defaults::none()
    };
    let out = steer::apply_batch(engine, &items, &defaults)?;
    let display = &engine.profile.display_name;
    let mut text = format!(
        "{display} steer batch: {} {} proposal(s)",
        if out.accepted { "accepted" } else { "rejected" },
        out.results.len()
    );
    if let Some(e) = &out.error {
        text.push_str(&format!("\nrejected: {}", e.message));
    }
    // The status block renders every goal; JSON output never shows it.
    if !a.has("--json") {
        text.push('\n');
        text.push_str(&render::status_block(engine, &out.plan));
    }
    let mut body = Body::default();
    body.insert("accepted", json!(out.accepted));
    body.insert("rejectedReasons", json!(out.reasons));
    body.insert(
        "results",
        Value::Array(out.results.iter().map(item_json).collect()),
    );
    let ledger = out.ledger();
    let mut warnings = Vec::new();
    for r in &out.results {
        for w in r.warning_values() {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    body.plan(out.plan);
    body.insert("revision", json!(out.revision));
    body.put("ledger", &ledger);
    if let Some(e) = &out.error {
        body.insert("error", error_json(e));
    }
    let mut r = Reply::new(body, text);
    r.ok = out.accepted;
    r.warnings = warnings;
    Ok(r)
}

fn item_json(r: &ItemResult) -> Value {
    json!({
        "accepted": r.verdict != Verdict::Rejected,
        "deduped": r.verdict == Verdict::Deduped,
        "audit": r.audit,
        "rejectedReasons": r.reasons,
    })
}

fn error_json(e: &GoalError) -> Value {
    let mut m = Map::new();
    m.insert("code".into(), json!(e.code()));
    m.insert("message".into(), json!(e.message));
    if let Some(d) = e.details() {
        m.insert("details".into(), d);
    }
    Value::Object(m)
}

fn single_reply(engine: &Engine, out: steer::SteerOutcome, json_mode: bool) -> Reply {
    let item = &out.item;
    let mut text = format!(
        "{} steer: {} {}",
        engine.profile.display_name,
        item.verdict.as_str(),
        item.kind.as_str()
    );
    if !item.reasons.is_empty() {
        text.push_str(&format!("\nrejected: {}", item.reasons.join("; ")));
    }
    if let Some(k) = item.audit.get("idempotencyKey").and_then(Value::as_str) {
        text.push_str(&format!("\nidempotency-key: {k}"));
    }
    if !json_mode {
        text.push('\n');
        text.push_str(&render::status_block(engine, &out.plan));
    }
    let mut body = Body::default();
    body.insert("accepted", json!(item.verdict != Verdict::Rejected));
    body.insert("rejectedReasons", json!(item.reasons));
    body.insert("deduped", json!(item.verdict == Verdict::Deduped));
    body.insert("audit", item.audit.clone());
    let ledger = out.ledger();
    let warnings = item.warning_values();
    let ok = item.verdict != Verdict::Rejected;
    let error = out.error.as_ref().map(error_json);
    if engine.profile.compat.camel_summary {
        let s = crate::goals::summary::for_engine(engine, &out.plan);
        body.put("summary", &s);
        body.put("planSummary", &s);
    }
    body.plan(out.plan);
    body.insert("revision", json!(out.revision));
    body.put("ledger", &ledger);
    if let Some(e) = error {
        body.insert("error", e);
    }
    let mut r = Reply::new(body, text);
    r.ok = ok;
    r.warnings = warnings;
    r
}

//! The canonical proposal parser (docs/engine.md#ge-5): every channel — CLI
//! single flags, `--proposals-json` items, `--directive-json`/`--directive-file`,
//! the UserPromptSubmit hook and library callers — ends in [`parse_proposal`].
//!
//! Parse-level problems (a non-object, an unknown kind, an invalid source,
//! a wrong JSON type, a blank text field, an invalid child) are errors with
//! the docs/differences.md#r-3 codes and abort before any state is read. Everything else is
//! left for the audited invariants of [`super::validate`].

use serde_json::{Map, Value, json};

use crate::goals::error::{GoalError, SteeringCode};

use crate::wire::wire_enum as wire;

wire!(
    /// A steering mutation kind: the seven of docs/differences.md#r-1, then `unblock` and
    /// `revise_batch` (docs/engine.md#ge-5).
    pub Kind {
        AddSubgoal = "add_subgoal",
        SplitSubgoal = "split_subgoal",
        ReorderPending = "reorder_pending",
        RevisePendingWording = "revise_pending_wording",
        ReviseCriterion = "revise_criterion",
        AnnotateLedger = "annotate_ledger",
        MarkBlockedSuperseded = "mark_blocked_superseded",
        Unblock = "unblock",
        ReviseBatch = "revise_batch",
    }
);

wire!(
    /// Where a proposal came from (recorded as `source`, provenance only).
    pub Source {
        UserPromptSubmit = "user_prompt_submit",
        Finding = "finding",
        Cli = "cli",
    }
);

wire!(
    /// The channel a proposal arrived on (recorded as `channel` in every audit).
    pub Channel {
        Cli = "cli",
        Batch = "batch",
        Directive = "directive",
        Hook = "hook",
        Library = "library",
    }
);

impl Channel {
    /// The `source` of a proposal that carries none (docs/engine.md#ge-5).
    pub fn default_source(self) -> Source {
        match self {
            Channel::Hook => Source::UserPromptSubmit,
            _ => Source::Cli,
        }
    }

    /// The name used for this channel's input in error details.
    pub fn input_name(self) -> &'static str {
        match self {
            Channel::Cli => "--kind",
            Channel::Batch => "--proposals-json",
            Channel::Directive => "--directive-json",
            Channel::Hook => "directive",
            Channel::Library => "proposal",
        }
    }
}

/// Text fields: strings, trimmed; present but blank is `…_FIELD_EMPTY`.
pub(crate) const TEXT_FIELDS: &[&str] = &[
    "evidence",
    "rationale",
    "goalId",
    "targetGoalId",
    "criterionId",
    "title",
    "objective",
    "revisedTitle",
    "revisedObjective",
    "blockedReason",
    "directiveText",
    "promptSignature",
    "idempotencyKey",
    "scenario",
    "expectedEvidence",
    "userDecision",
    "batchId",
    "finalGoalId",
];

/// String-array fields (entries trimmed, blank entries are `…_FIELD_EMPTY`).
pub(crate) const STRING_ARRAYS: &[&str] = &[
    "targetGoalIds",
    "pendingOrder",
    "pendingGoalIds",
    "memberIds",
];

/// Every top-level key of the canonical proposal (docs/differences.md#r-4 plus docs/engine.md
/// docs/engine.md#ge-5); `now` only on the library channel.
pub(crate) const CANONICAL_FIELDS: &[&str] = &[
    "kind",
    "source",
    "evidence",
    "rationale",
    "targetGoalId",
    "targetGoalIds",
    "goalId",
    "criterionId",
    "title",
    "objective",
    "childGoals",
    "revisedTitle",
    "revisedObjective",
    "pendingOrder",
    "pendingGoalIds",
    "blockedReason",
    "scenario",
    "expectedEvidence",
    "userModel",
    "after",
    "directiveText",
    "promptSignature",
    "idempotencyKey",
    "userDecision",
    "batchId",
    "memberIds",
    "finalGoalId",
];

/// Keys of the `after` object (docs/engine.md#ge-5).
pub(crate) const AFTER_FIELDS: &[&str] = &[
    "title",
    "objective",
    "pendingGoalIds",
    "children",
    "memberIds",
    "finalGoalId",
];

/// What a channel supplies besides the proposal itself.
#[derive(Debug, Clone, Default)]
pub struct Defaults {
    /// `source` for a proposal that carries none (`--source` of the
    /// directive and batch channels); `None` ⇒ the channel default.
    pub source: Option<Source>,
    /// The raw directive text (directive and hook channels): recorded as
    /// `directiveText`, and the proposal gets a `promptSignature` derived
    /// from the directive when it carries none.
    pub directive_text: Option<String>,
    /// `--idempotency-key` of the directive channel: must equal the
    /// directive's key when both are present, else it fills the key in.
    pub idempotency_key: Option<String>,
    /// Lock wait for this call (the hook channel passes the profile's
    /// `lock/hookTimeoutMs`); `None` ⇒ the engine's CLI wait.
    pub lock_timeout: Option<std::time::Duration>,
}

impl Defaults {
    /// No overrides: the channel's default source and the engine's lock wait.
    pub fn none() -> Defaults {
        Defaults::default()
    }
}

/// A parsed proposal: the normalised object (text trimmed, `source`,
/// `directiveText`, `promptSignature` and `idempotencyKey` filled in) and
/// its kind and provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// The kind.
    pub kind: Kind,
    /// The resolved source.
    pub source: Source,
    /// The channel.
    pub channel: Channel,
    /// Position in a `--proposals-json` batch.
    pub index: Option<usize>,
    /// Every key of the proposal, normalised.
    pub fields: Map<String, Value>,
}

impl Proposal {
    /// A text field.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }

    /// A string-array field.
    pub fn strings(&self, key: &str) -> Option<Vec<&str>> {
        string_list(self.fields.get(key)?)
    }

    /// The `after` object.
    pub fn after(&self) -> Option<&Map<String, Value>> {
        self.fields.get("after").and_then(Value::as_object)
    }
}

fn string_list(v: &Value) -> Option<Vec<&str>> {
    v.as_array()?.iter().map(Value::as_str).collect()
}

/// `promptSignature` of a directive: lowercase hex SHA-256 of its compact,
/// sorted-key JSON (docs/engine.md#ge-5). The hook channel uses the same
/// function, so a directive resubmitted through either channel dedupes.
pub fn directive_signature(directive: &Value) -> String {
    crate::digest::sha256_hex(crate::json::canonical(directive).as_bytes())
}

struct Ctx {
    channel: Channel,
    index: Option<usize>,
}

impl Ctx {
    fn details(&self, mut d: Value) -> Value {
        if let Some(i) = self.index {
            d["index"] = json!(i);
        }
        if self.channel != Channel::Cli {
            d["input"] = json!(self.channel.input_name());
        }
        d
    }

    fn at(&self) -> String {
        match self.index {
            Some(i) => format!(" (item {i})"),
            None => String::new(),
        }
    }

    fn err(&self, code: SteeringCode, details: Value, message: String) -> GoalError {
        GoalError::steering(
            code,
            self.details(details),
            format!("{message}{}", self.at()),
        )
    }

    fn wrong_type(&self, field: &str, expected: &str) -> GoalError {
        self.err(
            SteeringCode::BatchItemInvalid,
            json!({"field": field, "expected": expected}),
            format!("Invalid steering proposal: {field} must be {expected}."),
        )
    }

    fn empty(&self, field: &str) -> GoalError {
        self.err(
            SteeringCode::FieldEmpty,
            json!({"field": field}),
            format!("Empty {field}."),
        )
    }
}

fn text(ctx: &Ctx, field: &str, v: &Value) -> Result<Value, GoalError> {
    let Some(s) = v.as_str() else {
        return Err(ctx.wrong_type(field, "a string"));
    };
    let t = s.trim();
    if crate::text::is_blank(t) {
        return Err(ctx.empty(field));
    }
    Ok(Value::String(t.to_owned()))
}

fn strings(ctx: &Ctx, field: &str, v: &Value) -> Result<Value, GoalError> {
    let Some(list) = v.as_array() else {
        return Err(ctx.err(
            SteeringCode::JsonArrayRequired,
            json!({"key": field}),
            format!("{field} must be a JSON array."),
        ));
    };
    let mut out = Vec::with_capacity(list.len());
    for item in list {
        let Some(s) = item.as_str() else {
            return Err(ctx.err(
                SteeringCode::StringArrayRequired,
                json!({"key": field}),
                format!("{field} must be an array of strings."),
            ));
        };
        let t = s.trim();
        if crate::text::is_blank(t) {
            return Err(ctx.empty(field));
        }
        out.push(Value::String(t.to_owned()));
    }
    Ok(Value::Array(out))
}

/// Validates a children list (`childGoals`, `after.children`, CLI
/// `--children`/`--replacements`): an array of objects with non-blank
/// string `title` and `objective`; other keys are kept for the invariants.
fn children(ctx: &Ctx, field: &str, v: &Value) -> Result<Value, GoalError> {
    let Some(list) = v.as_array() else {
        return Err(ctx.err(
            SteeringCode::JsonArrayRequired,
            json!({"key": field}),
            format!("{field} must be a JSON array."),
        ));
    };
    let mut out = Vec::with_capacity(list.len());
    for item in list {
        let invalid = || {
            ctx.err(
                SteeringCode::ChildInvalid,
                json!({"key": field}),
                format!("Each {field} entry needs a title and an objective."),
            )
        };
        let Some(o) = item.as_object() else {
            return Err(invalid());
        };
        let mut child = o.clone();
        for key in ["title", "objective"] {
            let Some(s) = o.get(key).and_then(Value::as_str) else {
                return Err(invalid());
            };
            let t = s.trim();
            if crate::text::is_blank(t) {
                return Err(ctx.empty(&format!("child.{key}")));
            }
            child.insert(key.into(), Value::String(t.to_owned()));
        }
        out.push(Value::Object(child));
    }
    Ok(Value::Array(out))
}

fn after(ctx: &Ctx, v: &Value) -> Result<Value, GoalError> {
    let Some(o) = v.as_object() else {
        return Err(ctx.wrong_type("after", "an object"));
    };
    let mut out = Map::new();
    for (k, val) in o {
        let field = format!("after.{k}");
        let norm = match k.as_str() {
            _ if val.is_null() => continue,
            "title" | "objective" | "finalGoalId" => text(ctx, &field, val)?,
            "pendingGoalIds" | "memberIds" => strings(ctx, &field, val)?,
            "children" => children(ctx, &field, val)?,
            _ => val.clone(),
        };
        out.insert(k.clone(), norm);
    }
    Ok(Value::Object(out))
}

/// Parses one proposal arriving on `channel` (`index`: its position in a
/// batch). `null` members count as absent.
pub fn parse_proposal(
    value: &Value,
    channel: Channel,
    defaults: &Defaults,
    index: Option<usize>,
) -> Result<Proposal, GoalError> {
    let ctx = Ctx { channel, index };
    let Some(obj) = value.as_object() else {
        return Err(ctx.err(
            SteeringCode::BatchItemInvalid,
            json!({"flag": channel.input_name()}),
            "A steering proposal must be a JSON object.".into(),
        ));
    };
    let kind = match obj.get("kind") {
        Some(Value::String(s)) if Kind::parse(s.trim()).is_some() => {
            Kind::parse(s.trim()).expect("checked")
        }
        other => {
            let shown = other.cloned().unwrap_or(Value::Null);
            return Err(ctx.err(
                SteeringCode::KindInvalid,
                json!({"value": shown}),
                format!(
                    "Invalid steering kind: {}.",
                    shown
                        .as_str()
                        .map_or_else(|| shown.to_string(), str::to_owned)
                ),
            ));
        }
    };
    let source = match obj.get("source") {
        None | Some(Value::Null) => defaults.source.unwrap_or(channel.default_source()),
        Some(v) => match v.as_str().map(str::trim).and_then(Source::parse) {
            Some(s) => s,
            None => {
                return Err(ctx.err(
                    SteeringCode::SourceInvalid,
                    json!({"value": v, "expected": Source::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>()}),
                    format!(
                        "Invalid steering source: {}; expected user_prompt_submit, finding or cli.",
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned)
                    ),
                ));
            }
        },
    };
    let mut fields = Map::new();
    for (k, v) in obj {
        if v.is_null() {
            continue;
        }
        let norm = match k.as_str() {
            "kind" => json!(kind.as_str()),
            "source" => continue,
            k if TEXT_FIELDS.contains(&k) => text(&ctx, k, v)?,
            k if STRING_ARRAYS.contains(&k) => strings(&ctx, k, v)?,
            "childGoals" => children(&ctx, "childGoals", v)?,
            "after" => after(&ctx, v)?,
            "now" if channel == Channel::Library => match v.as_str() {
                Some(s) if crate::time::parse_rfc3339(s).is_some() => v.clone(),
                _ => return Err(ctx.wrong_type("now", "an RFC 3339 timestamp")),
            },
            _ => v.clone(),
        };
        fields.insert(k.clone(), norm);
    }
    fields.insert("source".into(), json!(source.as_str()));
    if let Some(raw) = &defaults.directive_text {
        if !fields.contains_key("promptSignature") {
            fields.insert("promptSignature".into(), json!(directive_signature(value)));
        }
        let t = raw.trim();
        if !t.is_empty() {
            fields.insert("directiveText".into(), json!(t));
        }
    }
    if let Some(k) = &defaults.idempotency_key {
        match fields.get("idempotencyKey").and_then(Value::as_str) {
            Some(own) if own != k.trim() => {
                return Err(GoalError::conflict(
                    vec!["--idempotency-key".into(), "idempotencyKey".into()],
                    "the directive carries a different idempotencyKey",
                ));
            }
            Some(_) => {}
            None => {
                let t = k.trim();
                if t.is_empty() {
                    return Err(ctx.empty("idempotencyKey"));
                }
                fields.insert("idempotencyKey".into(), json!(t));
            }
        }
    }
    Ok(Proposal {
        kind,
        source,
        channel,
        index,
        fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(v: Value, channel: Channel) -> Result<Proposal, GoalError> {
        parse_proposal(&v, channel, &Defaults::none(), None)
    }

    #[test]
    fn sources_default_per_channel() {
        let v = json!({"kind": "annotate_ledger", "evidence": "e", "rationale": "r"});
        assert_eq!(
            parse(v.clone(), Channel::Batch).unwrap().source,
            Source::Cli
        );
        assert_eq!(
            parse(v.clone(), Channel::Library).unwrap().source,
            Source::Cli
        );
        assert_eq!(
            parse(v.clone(), Channel::Hook).unwrap().source,
            Source::UserPromptSubmit
        );
        let mut with_null = v.clone();
        with_null["source"] = Value::Null;
        assert_eq!(
            parse(with_null, Channel::Directive).unwrap().source,
            Source::Cli
        );
        let mut bad = v;
        bad["source"] = json!("robot");
        assert_eq!(
            parse(bad, Channel::Batch).unwrap_err().code(),
            "ULW_LOOP_STEERING_SOURCE_INVALID"
        );
    }

    #[test]
    fn parse_level_codes() {
        let cases = [
            (json!(5), "ULW_LOOP_STEERING_BATCH_ITEM_INVALID"),
            (json!({"kind": "nope"}), "ULW_LOOP_STEERING_KIND_INVALID"),
            (json!({"evidence": "e"}), "ULW_LOOP_STEERING_KIND_INVALID"),
            (
                json!({"kind": "add_subgoal", "title": "  "}),
                "ULW_LOOP_STEERING_FIELD_EMPTY",
            ),
            (
                json!({"kind": "add_subgoal", "title": 3}),
                "ULW_LOOP_STEERING_BATCH_ITEM_INVALID",
            ),
            (
                json!({"kind": "reorder_pending", "pendingOrder": "G1"}),
                "ULW_LOOP_STEERING_JSON_ARRAY_REQUIRED",
            ),
            (
                json!({"kind": "reorder_pending", "pendingOrder": [1]}),
                "ULW_LOOP_STEERING_STRING_ARRAY_REQUIRED",
            ),
            (
                json!({"kind": "split_subgoal", "childGoals": [{"title": "t"}]}),
                "ULW_LOOP_STEERING_CHILD_INVALID",
            ),
            (
                json!({"kind": "split_subgoal", "after": {"children": [{"title": "t", "objective": " "}]}}),
                "ULW_LOOP_STEERING_FIELD_EMPTY",
            ),
            (
                json!({"kind": "add_subgoal", "after": []}),
                "ULW_LOOP_STEERING_BATCH_ITEM_INVALID",
            ),
            (
                json!({"kind": "add_subgoal", "now": "2026-01-01T00:00:00.000Z"}),
                "",
            ),
        ];
        for (v, code) in cases {
            match parse(v.clone(), Channel::Batch) {
                Ok(p) => {
                    assert_eq!(code, "", "{v} parsed");
                    assert_eq!(
                        p.fields["now"], "2026-01-01T00:00:00.000Z",
                        "kept for the invariants"
                    );
                }
                Err(e) => assert_eq!(e.code(), code, "{v}"),
            }
        }
        let e = parse(
            json!({"kind": "add_subgoal", "now": "later"}),
            Channel::Library,
        )
        .unwrap_err();
        assert_eq!(e.code(), "ULW_LOOP_STEERING_BATCH_ITEM_INVALID");
    }

    #[test]
    fn directive_fields_are_filled_in() {
        let v = json!({"kind": "annotate_ledger", "evidence": " e ", "rationale": "r"});
        let d = Defaults {
            directive_text: Some("  {\"kind\": \"annotate_ledger\"}  ".into()),
            idempotency_key: Some("k1".into()),
            ..Defaults::none()
        };
        let p = parse_proposal(&v, Channel::Directive, &d, None).unwrap();
        assert_eq!(p.text("evidence"), Some("e"));
        assert_eq!(
            p.text("directiveText"),
            Some("{\"kind\": \"annotate_ledger\"}")
        );
        assert_eq!(
            p.text("promptSignature"),
            Some(directive_signature(&v).as_str())
        );
        assert_eq!(p.text("idempotencyKey"), Some("k1"));
        let mut other = v;
        other["idempotencyKey"] = json!("k2");
        assert_eq!(
            parse_proposal(&other, Channel::Directive, &d, None)
                .unwrap_err()
                .code(),
            "ULW_LOOP_ARGUMENT_CONFLICT"
        );
    }

    proptest! {
        #[test]
        fn arbitrary_json_never_panics(text in "[ -~]{0,200}") {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                for c in Channel::ALL {
                    let _ = parse_proposal(&v, *c, &Defaults::none(), Some(0));
                }
            }
        }
    }
}

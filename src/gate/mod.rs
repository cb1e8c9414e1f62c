//! Quality-gate documents and their rules (docs/gates.md).
//!
//! A gate is a JSON document in which reviewers attest that a run, a batch
//! or a goal is done. [`validate`] checks everything that can be checked —
//! shape, signers, placeholders, integer counts, every referenced artifact
//! through the sandbox (and its digest), and, with plan context, criterion
//! references and coverage — in one pass that reports every finding in the
//! documented order (docs/gates.md#qg-7). Everything fails closed: a gate passes only when
//! every check ran and passed.
//!
//! # For the goal engine (`checkpoint`, docs/engine.md#ge-3 steps 6–8)
//!
//! ```text
//! let book = GateBook::from_rules(&rule_set)?;             // RulesError → ULW_LOOP_RULES_INVALID
//! let rules = book.get(&plan.gate_rules)?;                 // or the profile's gate/final (docs/gates.md#qg-2)
//! let scope = GateScope::Plan(GateContext { scope, goal_id, scope_dir: attempt_dir,
//!                                          criteria, batch_alternative, checkpoint: true,
//!                                          plan_gate_rules });
//! let outcome = gate::validate(&root, rules, gate_bytes, &scope);
//! match outcome.rejection() {
//!     Some(r) => /* ULW_LOOP_QUALITY_GATE_INVALID: r.message, r.details = {field, code, findings} */,
//!     None => /* ledger: outcome.normalized(), outcome.sha256() (qualityGateSha256),
//!                outcome.files() (files, roles), outcome.warnings() (warnings) */,
//! }
//! ```
//!
//! The template of `checkpoint --print-template` is [`template::build_template`];
//! surface resolution for `create-goals` is `surface::resolve`; `gate check`
//! on a [`crate::workspace::Workspace`] is [`run::check`].

mod artifacts;
mod check;
pub(crate) mod context;
mod files;
mod five;
mod number;
pub(crate) mod outcome;
mod plan;
pub(crate) mod preflight;
pub mod run;
pub(crate) mod schema;
mod shape;
pub(crate) mod surface;
pub mod template;
mod ultragoal;
mod words;

use serde_json::{Value, json};

use crate::digest::sha256_hex;
use crate::evidence::Root;
use crate::evidence::placeholder::Placeholders;
use crate::finding::{Code, Severity};
use crate::rules::gates::{CommonRules, GateRuleFile, GateRules, UnknownFields};

pub use context::{BatchAlternative, GateContext, GateScope, Scope, ScopeCriterion};
pub use outcome::{FileRole, GateFile, GateFinding, GateOutcome, GateRejection, GateVerdict};

use check::Checker;
use files::Files;
use shape::Shape;

/// Validates one gate document against `rules`.
///
/// `root` supplies the workspace `Dir`, the sandbox's lexical limits and
/// forbidden locations, and the hard-link policy; file sizes are capped by
/// the gate's `limits.maxArtifactBytes`. `document` is the gate exactly as
/// supplied (its SHA-256 is recorded). Nothing is written.
///
/// ```
/// use cap_std::fs::Dir;
/// use evidence_gate::evidence::Root;
/// use evidence_gate::gate::{self, GateScope, GateVerdict};
/// use evidence_gate::rules::{RuleSet, evidence::EvidenceRules, gates::GateBook};
/// use evidence_gate::sandbox::{PathLimits, RelPath};
///
/// let rules = RuleSet::embedded()?;
/// let evidence: EvidenceRules = rules.family()?;
/// let book = GateBook::from_rules(&rules)?;
/// let dir = Dir::open_ambient_dir("fixtures/gates", cap_std::ambient_authority())?;
/// let document = dir.read("lazycodex.json")?;
/// let root = Root::new(dir, &evidence)?;
/// let scope = GateScope::Standalone {
///     dir: RelPath::parse(".omo/evidence", PathLimits::default()).map_err(|p| format!("{p:?}"))?,
/// };
/// let outcome = gate::validate(&root, book.get("lazycodex").unwrap(), &document, &scope);
/// assert_eq!(outcome.verdict(), GateVerdict::Pass);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn validate(
    root: &Root,
    rules: GateRules<'_>,
    document: &[u8],
    scope: &GateScope,
) -> GateOutcome {
    let common = rules.common;
    let mut findings = Vec::new();
    if let Some(ctx) = scope.plan()
        && let Some(plan_rules) = &ctx.plan_gate_rules
        && plan_rules != rules.name()
    {
        findings.push(
            GateFinding::new(
                Code::GateRulesNotPlan,
                "qualityGate",
                format!(
                    "The gate was checked with the {} rules, but the plan's gateRules is {plan_rules}.",
                    rules.name()
                ),
            )
            .with_details(json!({"field": "qualityGate", "rules": rules.name(), "planGateRules": plan_rules})),
        );
    }
    let mut outcome = GateOutcome {
        verdict: GateVerdict::Fail,
        rules: rules.name().to_owned(),
        family: rules.file.family(),
        scope: scope.summary(),
        findings: Vec::new(),
        files: Vec::new(),
        normalized: Value::Null,
        sha256: sha256_hex(document),
    };
    match parse_document(document, common) {
        Err(f) => findings.push(*f),
        Ok((text, value)) => {
            let doc = value.as_object().expect("parse_document returns objects");
            let keep_reports =
                matches!(rules.file, GateRuleFile::FiveSection(r) if r.require_report_verdict_line);
            let files = Files::new(
                root,
                scope.dir(),
                scope.plan().is_some(),
                common.limits.max_artifacts,
                common.limits.max_artifact_bytes,
                keep_reports,
            );
            let placeholders =
                Placeholders::new(&common.placeholders.exact, &common.placeholders.contains);
            let mut ck = Checker::new(placeholders, files);
            let shape = match rules.file {
                GateRuleFile::FiveSection(r) => {
                    five::validate(&mut ck, r, common, doc, text, scope);
                    five::shape()
                }
                GateRuleFile::Ultragoal(r) => {
                    ultragoal::validate(&mut ck, r, common, doc, scope);
                    ultragoal::shape(r)
                }
            };
            unknown_keys(&mut ck, &value, &shape, common.unknown_fields, rules.file);
            let (checked, files) = ck.finish();
            findings.extend(checked);
            outcome.files = files;
            outcome.normalized = shape::normalize(&value, &shape);
        }
    }
    outcome.verdict = GateVerdict::of(&findings);
    outcome.findings = findings;
    outcome
}

/// Step 1: size, strict JSON (no duplicate keys at any depth), an object.
fn parse_document<'d>(
    document: &'d [u8],
    common: &CommonRules,
) -> Result<(&'d str, Value), Box<GateFinding>> {
    let max = common.limits.max_gate_bytes;
    let invalid = |message: String, details: Value| {
        Box::new(
            GateFinding::new(Code::GateJsonInvalid, "qualityGate", message).with_details(details),
        )
    };
    if document.len() as u64 > max {
        return Err(invalid(
            format!(
                "Final quality gate is larger than limits.maxGateBytes ({max} bytes; at least {} given).",
                document.len()
            ),
            json!({"field": "qualityGate", "size": document.len(), "max": max}),
        ));
    }
    let value = crate::json::parse_strict(document).map_err(|e| {
        invalid(
            format!("Final quality gate is not valid JSON: {e}."),
            json!({"field": "qualityGate", "line": e.line, "column": e.column}),
        )
    })?;
    if !value.is_object() {
        return Err(invalid(
            format!(
                "Final quality gate must be a JSON object, not {}.",
                check::type_name(&value)
            ),
            json!({"field": "qualityGate"}),
        ));
    }
    let text = std::str::from_utf8(document).expect("parse_strict accepted UTF-8");
    Ok((text, value))
}

/// The last step: keys the family does not define.
fn unknown_keys(
    ck: &mut Checker<'_>,
    value: &Value,
    shape: &Shape,
    policy: UnknownFields,
    file: &GateRuleFile,
) {
    let severity = match policy {
        UnknownFields::Ignore => return,
        UnknownFields::Warn => Severity::Warning,
        UnknownFields::Reject => Severity::Error,
    };
    let mut unknown = Vec::new();
    shape::unknown_keys(value, shape, "", &mut unknown);
    let family = file.family().name();
    for field in unknown {
        let message = match policy {
            UnknownFields::Reject => format!(
                "{} is not a field of the {family} gate, and the rules reject unknown fields.",
                check::shown(&field)
            ),
            _ => format!(
                "{} is not a field of the {family} gate; it is ignored.",
                check::shown(&field)
            ),
        };
        ck.push(
            GateFinding::new(Code::GateFieldUnknown, &field, message)
                .with_severity(severity)
                .with_details(json!({"field": field})),
        );
    }
}

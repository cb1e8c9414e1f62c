//! The audit object (docs/differences.md#r-4 with docs/engine.md#ge-5) and the steering
//! ledger entries (docs/differences.md#r-4 with docs/engine.md#ge-5): `steering_accepted` /
//! `criteria_revised`, `steering_rejected`, `steering_deduped` (docs/engine.md#ge-5) and
//! `batch_updated`.

use serde_json::{Map, Value, json};

use super::dedupe::{Origin, Prior};
use super::proposal::{Kind, Proposal};
use super::resolve::Resolved;
use super::validate::Judgement;
use crate::goals::journal::LedgerKind;

/// The audit of a proposal.
pub(crate) fn audit(p: &Proposal, r: &Resolved, digest: &str, j: &Judgement) -> Map<String, Value> {
    let evidence = p.text("evidence").unwrap_or_default();
    let rationale = p.text("rationale").unwrap_or_default();
    let mut m = Map::new();
    m.insert("kind".into(), json!(p.kind.as_str()));
    m.insert("source".into(), json!(p.source.as_str()));
    m.insert("targetGoalIds".into(), json!(r.targets));
    m.insert("evidence".into(), json!(evidence));
    m.insert("rationale".into(), json!(rationale));
    m.insert(
        "invariant".into(),
        json!({
            "accepted": j.accepted(),
            "structuralInvariantAccepted": j.accepted(),
            "evidenceBackedNecessity": !evidence.is_empty() && !rationale.is_empty(),
            "noEasierCompletion": !j.weakening,
            "rejectedReasons": j.reasons,
            "reasons": j.reasons,
            "warnings": j.warnings,
        }),
    );
    for k in [
        "criterionId",
        "directiveText",
        "promptSignature",
        "idempotencyKey",
    ] {
        if let Some(v) = p.text(k) {
            m.insert(k.into(), json!(v));
        }
    }
    m.insert("channel".into(), json!(p.channel.as_str()));
    m.insert("proposalDigest".into(), json!(digest));
    if let Some(d) = p.text("userDecision") {
        m.insert("userDecision".into(), json!(d));
    }
    m
}

/// The steering entry shape (docs/differences.md#r-1) for an accepted or rejected proposal.
pub(crate) fn entry(
    now: &str,
    p: &Proposal,
    r: &Resolved,
    digest: &str,
    audit: Map<String, Value>,
    message: Option<String>,
) -> Map<String, Value> {
    let accepted = audit
        .get("invariant")
        .and_then(|i| i.get("accepted"))
        .and_then(Value::as_bool)
        == Some(true);
    let kind = match (accepted, p.kind) {
        (false, _) => LedgerKind::SteeringRejected,
        (true, Kind::ReviseCriterion) => LedgerKind::CriteriaRevised,
        (true, _) => LedgerKind::SteeringAccepted,
    };
    let mut e = Map::new();
    e.insert("at".into(), json!(now));
    e.insert("kind".into(), json!(kind.as_str()));
    e.insert(
        "evidence".into(),
        json!(p.text("evidence").unwrap_or_default()),
    );
    e.insert(
        "message".into(),
        json!(message.unwrap_or_else(|| p.text("rationale").unwrap_or_default().to_owned())),
    );
    e.insert("steering".into(), Value::Object(audit));
    e.insert("mutationKind".into(), json!(p.kind.as_str()));
    if let Some(t) = r.target() {
        e.insert("goalId".into(), json!(t));
    }
    for k in ["criterionId", "idempotencyKey"] {
        if let Some(v) = p.text(k) {
            e.insert(k.into(), json!(v));
        }
    }
    e.insert("channel".into(), json!(p.channel.as_str()));
    e.insert("proposalDigest".into(), json!(digest));
    e
}

/// The `seq` a prior accepted proposal has (or will get, for an earlier
/// item of the same batch: `batch_seq` maps an item index to its seq).
pub(crate) fn prior_seq(prior: &Prior, batch_seq: &dyn Fn(usize) -> Option<u64>) -> Option<u64> {
    match prior.origin {
        Origin::Ledger { seq, .. } => seq,
        Origin::Batch { item } => batch_seq(item),
    }
}

/// The `steering_deduped` entry of a replay (docs/engine.md#ge-5).
pub(crate) fn deduped_entry(
    now: &str,
    p: &Proposal,
    r: &Resolved,
    digest: &str,
    deduped_seq: Option<u64>,
) -> Map<String, Value> {
    let mut e = Map::new();
    e.insert("at".into(), json!(now));
    e.insert("kind".into(), json!(LedgerKind::SteeringDeduped.as_str()));
    e.insert("mutationKind".into(), json!(p.kind.as_str()));
    e.insert("source".into(), json!(p.source.as_str()));
    e.insert("channel".into(), json!(p.channel.as_str()));
    for k in ["idempotencyKey", "promptSignature"] {
        if let Some(v) = p.text(k) {
            e.insert(k.into(), json!(v));
        }
    }
    e.insert("proposalDigest".into(), json!(digest));
    e.insert("dedupedSeq".into(), json!(deduped_seq));
    if let Some(t) = r.target() {
        e.insert("goalId".into(), json!(t));
    }
    e.insert(
        "evidence".into(),
        json!(p.text("evidence").unwrap_or_default()),
    );
    e.insert(
        "message".into(),
        json!(match deduped_seq {
            Some(s) => format!(
                "Replay of the steering proposal accepted at seq {s}; the plan is unchanged."
            ),
            None => "Replay of an accepted steering proposal; the plan is unchanged.".to_owned(),
        }),
    );
    e
}

/// The `batch_updated` entry (docs/differences.md#r-1): full batch arrays before and after.
pub(crate) fn batch_updated(
    now: &str,
    before: &Value,
    after: &Value,
    extra: Map<String, Value>,
) -> Map<String, Value> {
    let mut e = Map::new();
    e.insert("at".into(), json!(now));
    e.insert("kind".into(), json!(LedgerKind::BatchUpdated.as_str()));
    e.insert("before".into(), before.clone());
    e.insert("after".into(), after.clone());
    e.insert(
        "message".into(),
        json!("Validation batch membership updated after steering."),
    );
    e.extend(extra);
    e
}

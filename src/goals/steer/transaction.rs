//! The steering transaction: parse every item first, then one lock, the
//! idempotency lookup, the invariants and the application against the
//! evolving plan, and one commit (docs/engine.md#ge-5).

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::apply::{self, Applied};
use super::dedupe::{self, Hit, KeyIndex, Origin, Prior};
use super::proposal::{Channel, Defaults, Proposal, parse_proposal};
use super::resolve::{self, Resolved};
use super::validate::{self, Judgement};
use super::{BatchOutcome, ItemResult, SteerOutcome, Verdict, audit, snapshot};
use crate::goals::Engine;
use crate::goals::error::{ErrorKind, GoalError, SteeringCode};
use crate::goals::ops::lock_plan_reaching_timed;
use crate::goals::plan::{Plan, PlanRead};
use crate::goals::profile::Profile;
use crate::goals::state::StatePaths;
use crate::goals::txn::Write;

enum Eval {
    Deduped(Prior),
    Rejected(Judgement, Option<Prior>),
    Accepted {
        judgement: Judgement,
        applied: Applied,
        snapshots: (Value, Value),
        batches: Option<(Value, Value)>,
    },
}

struct Evaluated {
    r: Resolved,
    digest: String,
    eval: Eval,
}

fn batches_value(plan: &Plan) -> Value {
    plan.doc()
        .get("validationBatches")
        .cloned()
        .unwrap_or(Value::Null)
}

fn evaluate(
    plan: &mut Plan,
    profile: &Profile,
    p: &Proposal,
    index: &KeyIndex,
    batch: &[Prior],
    now: &str,
    paths: &StatePaths,
) -> Result<Evaluated, GoalError> {
    let r = resolve::resolve(p);
    let digest = resolve::digest(p, &r);
    let conflict = match dedupe::lookup(index, batch, p, &r, &digest) {
        Some(Hit::Same(prior)) => {
            return Ok(Evaluated {
                r,
                digest,
                eval: Eval::Deduped(prior),
            });
        }
        Some(Hit::Conflict(prior)) => Some(prior),
        None => None,
    };
    // The goals the proposal could touch, whole: judged, snapshotted and
    // changed in full. (Read whole when the plan was read, unless an earlier
    // item of the batch created them.)
    for id in &r.targets {
        plan.read_goal(id, paths)?;
    }
    let judgement = validate::judge(plan, profile, p, &r, conflict.is_some());
    if !judgement.accepted() {
        return Ok(Evaluated {
            r,
            digest,
            eval: Eval::Rejected(judgement, conflict),
        });
    }
    let before = snapshot::before(plan, &r.targets);
    let batches_before = batches_value(plan);
    let applied = apply::apply(plan, profile, p, &r, now);
    let snapshots = snapshot::pair(before, plan, &applied.created);
    let batches_after = batches_value(plan);
    let batches = (batches_before != batches_after).then_some((batches_before, batches_after));
    Ok(Evaluated {
        r,
        digest,
        eval: Eval::Accepted {
            judgement,
            applied,
            snapshots,
            batches,
        },
    })
}

/// The goals `proposals` target, as each names them: read whole with the
/// plan ([`crate::goals::plan::Plan::for_mutation`]), so that a target whose
/// cut-down form is in doubt sends the plan to a whole reading.
fn targets<'p>(proposals: impl IntoIterator<Item = &'p Proposal>) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for p in proposals {
        for t in resolve::resolve(p).targets {
            if !all.contains(&t) {
                all.push(t);
            }
        }
    }
    all
}

fn warning_values(codes: &[&'static str]) -> Vec<Value> {
    codes
        .iter()
        .map(|c| {
            json!({
                "code": c,
                "message": "The proposal's wording reads like weakening completion (skip, bypass or remove tests, review or the quality gate); it was judged on its structure only.",
            })
        })
        .collect()
}

impl ItemResult {
    /// Warnings as `[{code, message}]`.
    pub fn warning_values(&self) -> Vec<Value> {
        warning_values(&self.warnings)
    }
}

fn key_parts(key: &str) -> (&'static str, &str) {
    match key.split_once(':') {
        Some(("p", rest)) => ("promptSignature", rest),
        Some((_, rest)) => ("idempotencyKey", rest),
        None => ("idempotencyKey", key),
    }
}

fn rejection(
    reasons: &[String],
    conflict: Option<&Prior>,
    digest: &str,
    index: Option<usize>,
    message: String,
    prior_seq: Option<u64>,
) -> GoalError {
    match conflict {
        Some(prior) => {
            let (namespace, key) = key_parts(&prior.key);
            let mut details = json!({
                "key": key, "namespace": namespace, "priorSeq": prior_seq,
                "priorDigest": prior.digest, "digest": digest, "rejectedReasons": reasons,
            });
            if let Some(i) = index {
                details["index"] = json!(i);
            }
            GoalError::new(ErrorKind::SteeringKeyConflict { details }, message)
        }
        None => {
            let mut details = json!({"rejectedReasons": reasons});
            if let Some(i) = index {
                details["index"] = json!(i);
            }
            if reasons.iter().any(|r| r == validate::WEAKENS_COMPLETION) {
                GoalError::new(
                    ErrorKind::SteeringWeakensCompletion { details },
                    format!(
                        "{message} This profile refuses steering that weakens completion (skipping or bypassing tests, verification, review or the quality gate, or auto-completing work): keep the completion bar and record a blocker instead."
                    ),
                )
            } else {
                GoalError::new(ErrorKind::SteeringRejected { details }, message)
            }
        }
    }
}

fn with_flag(mut audit: Map<String, Value>, seq: Option<u64>) -> Value {
    audit.insert("deduped".into(), json!(true));
    audit.insert("dedupedSeq".into(), json!(seq));
    Value::Object(audit)
}

/// Applies one proposal arriving on `channel` (docs/engine.md#ge-5,
/// docs/engine.md#ge-5): parse, then lock, dedupe, judge, apply and commit.
pub fn apply_one(
    engine: &Engine,
    value: &Value,
    channel: Channel,
    defaults: &Defaults,
) -> Result<SteerOutcome, GoalError> {
    let p = parse_proposal(value, channel, defaults, None)?;
    apply_parsed(engine, &p, defaults.lock_timeout)
}

/// [`apply_one`] for an already parsed proposal.
pub fn apply_parsed(
    engine: &Engine,
    p: &Proposal,
    lock_timeout: Option<Duration>,
) -> Result<SteerOutcome, GoalError> {
    let timeout = lock_timeout.unwrap_or(engine.lock_timeout());
    let reach = targets([p]);
    let reach: Vec<&str> = reach.iter().map(String::as_str).collect();
    let (mut locked, mut plan, plan_read) =
        lock_plan_reaching_timed(engine, "steer", &reach, timeout)?;
    let index = dedupe::resolve(&mut locked, &[p], "steer")?;
    let now = p
        .text("now")
        .map_or_else(|| locked.now.clone(), str::to_owned);
    let ev = evaluate(
        &mut plan,
        &engine.profile,
        p,
        &index,
        &[],
        &now,
        &engine.paths,
    )?;
    let revision = plan.revision();
    let max_record = engine.profile.limits.max_ledger_record_bytes;
    let (item, error, writes_plan, entries) = match ev.eval {
        Eval::Deduped(prior) => {
            let seq = audit::prior_seq(&prior, &|_| None);
            let prior_audit = dedupe::prior_audit(&locked.dir, &engine.paths, &prior, max_record)?
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_else(|| audit::audit(p, &ev.r, &ev.digest, &Judgement::default()));
            let e = audit::deduped_entry(&now, p, &ev.r, &ev.digest, seq);
            let item = ItemResult {
                verdict: Verdict::Deduped,
                kind: p.kind,
                source: p.source,
                reasons: Vec::new(),
                audit: with_flag(prior_audit, seq),
                warnings: Vec::new(),
                digest: ev.digest,
                conflict: None,
            };
            (item, None, false, vec![e])
        }
        Eval::Rejected(j, conflict) => {
            let a = audit::audit(p, &ev.r, &ev.digest, &j);
            let e = audit::entry(&now, p, &ev.r, &ev.digest, a.clone(), None);
            let prior_seq = conflict
                .as_ref()
                .and_then(|c| audit::prior_seq(c, &|_| None));
            let error = rejection(
                &j.reasons,
                conflict.as_ref(),
                &ev.digest,
                None,
                format!("Steering proposal rejected: {}.", j.reasons.join("; ")),
                prior_seq,
            );
            let item = ItemResult {
                verdict: Verdict::Rejected,
                kind: p.kind,
                source: p.source,
                reasons: j.reasons.clone(),
                audit: Value::Object(a),
                warnings: j.warnings.clone(),
                digest: ev.digest,
                conflict,
            };
            (item, Some(error), false, vec![e])
        }
        Eval::Accepted {
            judgement,
            applied,
            snapshots,
            batches,
        } => {
            let mut a = audit::audit(p, &ev.r, &ev.digest, &judgement);
            // Every accepted entry carries its snapshots, as the Node tool
            // writes them (docs/differences.md#r-4) — an `annotate_ledger` too, whose two
            // snapshots are equal because it changes nothing.
            a.insert("before".into(), snapshots.0);
            a.insert("after".into(), snapshots.1);
            let mut entries = vec![audit::entry(&now, p, &ev.r, &ev.digest, a.clone(), None)];
            if let Some((before, after)) = &batches {
                let mut extra = Map::new();
                extra.insert("mutationKind".into(), json!(p.kind.as_str()));
                extra.insert("channel".into(), json!(p.channel.as_str()));
                extra.insert("proposalDigest".into(), json!(ev.digest));
                entries.push(audit::batch_updated(&now, before, after, extra));
            }
            a.shift_remove("before");
            a.shift_remove("after");
            let item = ItemResult {
                verdict: Verdict::Accepted,
                kind: p.kind,
                source: p.source,
                reasons: Vec::new(),
                audit: Value::Object(a),
                warnings: judgement.warnings.clone(),
                digest: ev.digest,
                conflict: None,
            };
            (item, None, applied.writes_plan, entries)
        }
    };
    let (write, kept) = if writes_plan {
        (Write::Plan(Box::new(plan)), None)
    } else {
        (Write::AuditOnly { revision }, Some(plan))
    };
    let mut committed = locked.commit(write, entries)?;
    let plan = committed.plan.take().or(kept).expect("written or kept");
    Ok(SteerOutcome {
        item,
        error,
        revision: committed.revision,
        head: committed.head,
        entries: committed.entries,
        plan,
        plan_read,
    })
}

/// Applies an atomic batch (docs/engine.md#ge-5): every item is parsed
/// first, then judged in order against the evolving plan under one lock;
/// any rejection leaves the plan unchanged and audits every rejected item.
pub fn apply_batch(
    engine: &Engine,
    items: &[Value],
    defaults: &Defaults,
) -> Result<BatchOutcome, GoalError> {
    if items.is_empty() {
        return Err(GoalError::steering(
            SteeringCode::BatchArrayRequired,
            json!({"flag": "--proposals-json"}),
            "--proposals-json must be a non-empty JSON array.",
        ));
    }
    let parsed: Vec<Proposal> = items
        .iter()
        .enumerate()
        .map(|(i, v)| parse_proposal(v, Channel::Batch, defaults, Some(i)))
        .collect::<Result<_, _>>()?;
    let timeout = defaults.lock_timeout.unwrap_or(engine.lock_timeout());
    let reach = targets(&parsed);
    let reach: Vec<&str> = reach.iter().map(String::as_str).collect();
    let (mut locked, mut plan, plan_read) =
        lock_plan_reaching_timed(engine, "steer", &reach, timeout)?;
    let all: Vec<&Proposal> = parsed.iter().collect();
    let index = dedupe::resolve(&mut locked, &all, "steer")?;
    let original_batches = batches_value(&plan);
    let revision = plan.revision();
    let mut priors: Vec<Prior> = Vec::new();
    let mut evals = Vec::with_capacity(parsed.len());
    for (i, p) in parsed.iter().enumerate() {
        let now = p
            .text("now")
            .map_or_else(|| locked.now.clone(), str::to_owned);
        let ev = evaluate(
            &mut plan,
            &engine.profile,
            p,
            &index,
            &priors,
            &now,
            &engine.paths,
        )?;
        if matches!(ev.eval, Eval::Accepted { .. }) {
            for key in dedupe::keys(p) {
                priors.push(Prior {
                    key,
                    digest: Some(ev.digest.clone()),
                    mutation_kind: Some(p.kind.as_str().to_owned()),
                    targets: ev.r.targets.clone(),
                    origin: Origin::Batch { item: i },
                });
            }
        }
        evals.push((now, ev));
    }
    let size = parsed.len();
    let batch_digest = crate::digest::sha256_hex(
        evals
            .iter()
            .map(|(_, e)| e.digest.as_str())
            .collect::<String>()
            .as_bytes(),
    );
    let rejected = evals
        .iter()
        .any(|(_, e)| matches!(e.eval, Eval::Rejected(..)));
    let writes_plan = evals
        .iter()
        .any(|(_, e)| matches!(&e.eval, Eval::Accepted { applied, .. } if applied.writes_plan));
    let prefix = if writes_plan && !rejected {
        plan.pending.len()
    } else {
        0
    };
    let first_seq = locked.view.head.last_seq + 1 + prefix as u64;
    let batch_seq = |item: usize| (!rejected).then_some(first_seq + item as u64);
    let max_record = engine.profile.limits.max_ledger_record_bytes;

    let mut results = Vec::with_capacity(size);
    let mut entries = Vec::new();
    let mut first_rejection: Option<(usize, Vec<String>, Option<Prior>, String)> = None;
    let mut summary = Vec::new();
    let mut audits_by_item: Vec<Option<Map<String, Value>>> = Vec::with_capacity(size);
    for (i, ((now, ev), p)) in evals.into_iter().zip(&parsed).enumerate() {
        match ev.eval {
            Eval::Deduped(prior) => {
                let seq = audit::prior_seq(&prior, &batch_seq);
                let prior_audit = match prior.origin {
                    Origin::Batch { item } => audits_by_item[item].clone(),
                    Origin::Ledger { .. } => {
                        dedupe::prior_audit(&locked.dir, &engine.paths, &prior, max_record)?
                            .and_then(|v| v.as_object().cloned())
                    }
                }
                .unwrap_or_else(|| audit::audit(p, &ev.r, &ev.digest, &Judgement::default()));
                if !rejected {
                    entries.push(audit::deduped_entry(&now, p, &ev.r, &ev.digest, seq));
                }
                audits_by_item.push(None);
                results.push(ItemResult {
                    verdict: Verdict::Deduped,
                    kind: p.kind,
                    source: p.source,
                    reasons: Vec::new(),
                    audit: with_flag(prior_audit, seq),
                    warnings: Vec::new(),
                    digest: ev.digest,
                    conflict: None,
                });
            }
            Eval::Rejected(j, conflict) => {
                let a = audit::audit(p, &ev.r, &ev.digest, &j);
                let line = format!("index {i}: {}", j.reasons.join(", "));
                let mut e = audit::entry(&now, p, &ev.r, &ev.digest, a.clone(), Some(line.clone()));
                e.insert(
                    "batch".into(),
                    json!({"index": i, "size": size, "digest": batch_digest}),
                );
                entries.push(e);
                summary.push(line);
                if first_rejection.is_none() {
                    first_rejection =
                        Some((i, j.reasons.clone(), conflict.clone(), ev.digest.clone()));
                }
                audits_by_item.push(None);
                results.push(ItemResult {
                    verdict: Verdict::Rejected,
                    kind: p.kind,
                    source: p.source,
                    reasons: j.reasons.clone(),
                    audit: Value::Object(a),
                    warnings: j.warnings.clone(),
                    digest: ev.digest,
                    conflict,
                });
            }
            Eval::Accepted {
                judgement,
                snapshots,
                ..
            } => {
                let mut a = audit::audit(p, &ev.r, &ev.digest, &judgement);
                let plain = a.clone();
                a.insert("before".into(), snapshots.0);
                a.insert("after".into(), snapshots.1);
                if !rejected {
                    entries.push(audit::entry(&now, p, &ev.r, &ev.digest, a, None));
                }
                audits_by_item.push(Some(plain.clone()));
                results.push(ItemResult {
                    verdict: Verdict::Accepted,
                    kind: p.kind,
                    source: p.source,
                    reasons: Vec::new(),
                    audit: Value::Object(plain),
                    warnings: judgement.warnings.clone(),
                    digest: ev.digest,
                    conflict: None,
                });
            }
        }
    }
    if rejected {
        let (index, reasons, conflict, digest) = first_rejection.expect("a rejected item");
        let prior_seq = conflict
            .as_ref()
            .and_then(|c| audit::prior_seq(c, &|_| None));
        let error = rejection(
            &reasons,
            conflict.as_ref(),
            &digest,
            Some(index),
            format!("Steering batch rejected: {}.", summary.join("; ")),
            prior_seq,
        );
        let unchanged = locked.read_plan()?;
        let committed = locked.commit(Write::AuditOnly { revision }, entries)?;
        return Ok(BatchOutcome {
            accepted: false,
            results,
            reasons,
            error: Some(error),
            plan: unchanged,
            revision: committed.revision,
            head: committed.head,
            entries: committed.entries,
            plan_read: PlanRead::Whole,
        });
    }
    let final_batches = batches_value(&plan);
    if final_batches != original_batches {
        let mut extra = Map::new();
        extra.insert("channel".into(), json!(Channel::Batch.as_str()));
        extra.insert(
            "batch".into(),
            json!({"size": size, "digest": batch_digest}),
        );
        entries.push(audit::batch_updated(
            &parsed[0]
                .text("now")
                .map_or_else(|| locked.now.clone(), str::to_owned),
            &original_batches,
            &final_batches,
            extra,
        ));
    }
    let (write, kept) = if writes_plan {
        (Write::Plan(Box::new(plan)), None)
    } else {
        (Write::AuditOnly { revision }, Some(plan))
    };
    let mut committed = locked.commit(write, entries)?;
    let plan = committed.plan.take().or(kept).expect("written or kept");
    Ok(BatchOutcome {
        accepted: true,
        results,
        reasons: Vec::new(),
        error: None,
        plan,
        revision: committed.revision,
        head: committed.head,
        entries: committed.entries,
        plan_read,
    })
}

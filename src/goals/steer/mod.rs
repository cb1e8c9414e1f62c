//! Steering (goal-engine.md §5): structured, evidence-backed plan mutations.
//!
//! Every channel — `cli` (`steer --kind …`), `batch` (`--proposals-json`),
//! `directive` (`--directive-json` / `--directive-file`), `hook` (the
//! UserPromptSubmit marker) and `library` — goes through the same steps:
//!
//! 1. [`parse_proposal`] — the canonical parser; parse-level problems are
//!    `ULW_LOOP_STEERING_*` errors and nothing is read or written;
//! 2. under the mutation lock: field resolution ([`resolve`]), the
//!    idempotency lookup in `.ledger.keys` ([`dedupe`]), the structural
//!    invariants ([`validate`]), application on the working copy
//!    ([`apply`]), compact snapshots ([`snapshot`]);
//! 3. one commit: accepted proposals write the plan (except
//!    `annotate_ledger`) and their entries; rejected and deduped ones append
//!    their audit only (`steering_rejected`, `steering_deduped`).
//!
//! # Entry points
//!
//! * [`apply_one`]`(engine, value, channel, defaults)` — one proposal on any
//!   channel; the signature is stable.
//! * [`apply_batch`]`(engine, items, defaults)` — an atomic batch.
//! * [`judge_and_apply`] — the pure core (no I/O, no idempotency lookup),
//!   for property tests and dry runs.
//!
//! # The hook channel
//!
//! The UserPromptSubmit handler builds an [`Engine`] for the payload's
//! `cwd` and session, extracts the directive object after the marker, and
//! calls:
//!
//! ```no_run
//! # use evidence_gate::goals::{Engine, steer::{self, Channel, Defaults, Verdict}};
//! # fn demo(engine: &Engine, directive: &serde_json::Value, raw: &str) -> Result<(), evidence_gate::goals::GoalError> {
//! let defaults = Defaults {
//!     directive_text: Some(raw.to_owned()), // recorded as `directiveText`;
//!                                           // also derives `promptSignature`
//!     lock_timeout: Some(std::time::Duration::from_millis(engine.profile.lock.hook_timeout_ms)),
//!     ..Defaults::none()
//! };
//! let out = steer::apply_one(engine, directive, Channel::Hook, &defaults)?;
//! match out.verdict() {
//!     Verdict::Accepted | Verdict::Deduped => { /* "accepted <kind> (source <source>)" */ }
//!     Verdict::Rejected => { /* out.item.reasons; the rejection is already audited */ }
//! }
//! # Ok(()) }
//! ```
//!
//! `source` defaults to `user_prompt_submit` on that channel. `Err(_)` is a
//! parse-level problem, a missing plan (`ULW_LOOP_PLAN_MISSING`) or
//! `ULW_LOOP_LOCK_TIMEOUT`; nothing was written then. Worker recognition
//! from hook payloads belongs to the hook (see [`crate::goals::team`]):
//! a worker's directive is never passed here.

pub mod apply;
pub mod audit;
pub mod dedupe;
pub mod proposal;
pub mod resolve;
pub mod snapshot;
pub mod validate;

use std::time::Duration;

use serde_json::{Map, Value, json};

pub use proposal::{
    Channel, Defaults, Kind, Proposal, Source, directive_signature, parse_proposal,
};
pub use validate::Judgement;

use super::Engine;
use super::error::{ErrorKind, GoalError, SteeringCode};
use super::journal::Head;
use super::ops::{ledger_json, lock_plan_timed};
use super::plan::Plan;
use super::profile::Profile;
use super::txn::Write;
use apply::Applied;
use dedupe::{Hit, KeyIndex, Origin, Prior};
use resolve::Resolved;

/// What happened to a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Applied (exit 0).
    Accepted,
    /// A replay of an accepted proposal; nothing changed (exit 0).
    Deduped,
    /// Rejected by an invariant; audited (exit 1).
    Rejected,
}

impl Verdict {
    /// `accepted`, `deduped` or `rejected`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Accepted => "accepted",
            Verdict::Deduped => "deduped",
            Verdict::Rejected => "rejected",
        }
    }
}

/// The result of one proposal (alone, or as a batch item).
#[derive(Debug, Clone)]
pub struct ItemResult {
    /// What happened.
    pub verdict: Verdict,
    /// The proposal's kind.
    pub kind: Kind,
    /// Its source.
    pub source: Source,
    /// Rejection reasons (empty unless rejected).
    pub reasons: Vec<String>,
    /// The audit object (a replay: the prior audit plus `deduped: true`).
    pub audit: Value,
    /// Warning codes (`WEAKENED_COMPLETION_WORDING`).
    pub warnings: Vec<&'static str>,
    /// The proposal digest.
    pub digest: String,
    /// The earlier proposal its key collided with.
    pub conflict: Option<Prior>,
}

/// The result of [`apply_one`].
#[derive(Debug)]
pub struct SteerOutcome {
    /// The proposal's result.
    pub item: ItemResult,
    /// `ULW_LOOP_STEERING_REJECTED` or `…_KEY_CONFLICT` for a rejection.
    pub error: Option<GoalError>,
    /// The plan after the command.
    pub plan: Plan,
    /// Plan revision after the command.
    pub revision: u64,
    /// Ledger head after the command.
    pub head: Head,
    /// Every entry appended, in order.
    pub entries: Vec<Value>,
}

impl SteerOutcome {
    /// What happened.
    pub fn verdict(&self) -> Verdict {
        self.item.verdict
    }
    /// `{lastSeq, head}`.
    pub fn ledger(&self) -> Value {
        ledger_json(&self.head)
    }
}

/// The result of [`apply_batch`].
#[derive(Debug)]
pub struct BatchOutcome {
    /// Every item was accepted or deduped, and the batch was applied.
    pub accepted: bool,
    /// Per item, in order.
    pub results: Vec<ItemResult>,
    /// The reasons of the first rejected item.
    pub reasons: Vec<String>,
    /// The rejection error (first rejected item).
    pub error: Option<GoalError>,
    /// The plan after the command (unchanged when rejected).
    pub plan: Plan,
    /// Plan revision after the command.
    pub revision: u64,
    /// Ledger head after the command.
    pub head: Head,
    /// Every entry appended, in order.
    pub entries: Vec<Value>,
}

impl BatchOutcome {
    /// `{lastSeq, head}`.
    pub fn ledger(&self) -> Value {
        ledger_json(&self.head)
    }
}

/// Judges `p` against `plan` and, when it is accepted, applies it (no I/O,
/// no idempotency lookup). The plan is untouched when it is rejected.
pub fn judge_and_apply(plan: &mut Plan, profile: &Profile, p: &Proposal, now: &str) -> Judgement {
    let r = resolve::resolve(p);
    let j = validate::judge(plan, profile, p, &r, false);
    if j.accepted() {
        apply::apply(plan, profile, p, &r, now);
    }
    j
}

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
) -> Evaluated {
    let r = resolve::resolve(p);
    let digest = resolve::digest(p, &r);
    let conflict = match dedupe::lookup(index, batch, p, &r, &digest) {
        Some(Hit::Same(prior)) => {
            return Evaluated {
                r,
                digest,
                eval: Eval::Deduped(prior),
            };
        }
        Some(Hit::Conflict(prior)) => Some(prior),
        None => None,
    };
    let judgement = validate::judge(plan, profile, p, &r, conflict.is_some());
    if !judgement.accepted() {
        return Evaluated {
            r,
            digest,
            eval: Eval::Rejected(judgement, conflict),
        };
    }
    let before = snapshot::before(plan, &r.targets);
    let batches_before = batches_value(plan);
    let applied = apply::apply(plan, profile, p, &r, now);
    let snapshots = snapshot::pair(before, plan, &applied.created);
    let batches_after = batches_value(plan);
    let batches = (batches_before != batches_after).then_some((batches_before, batches_after));
    Evaluated {
        r,
        digest,
        eval: Eval::Accepted {
            judgement,
            applied,
            snapshots,
            batches,
        },
    }
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
            GoalError::new(ErrorKind::SteeringRejected { details }, message)
        }
    }
}

fn with_flag(mut audit: Map<String, Value>, seq: Option<u64>) -> Value {
    audit.insert("deduped".into(), json!(true));
    audit.insert("dedupedSeq".into(), json!(seq));
    Value::Object(audit)
}

/// Applies one proposal arriving on `channel` (goal-engine.md §5.2–§5.7,
/// §5.10): parse, then lock, dedupe, judge, apply and commit.
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
    let (locked, mut plan) = lock_plan_timed(engine, "steer", timeout)?;
    let index = KeyIndex::load(&locked.dir, &engine.paths, locked.view.keys_bytes)?;
    let now = p
        .text("now")
        .map_or_else(|| locked.now.clone(), str::to_owned);
    let ev = evaluate(&mut plan, &engine.profile, p, &index, &[], &now);
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
            if applied.writes_plan {
                a.insert("before".into(), snapshots.0);
                a.insert("after".into(), snapshots.1);
            }
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
    })
}

/// Applies an atomic batch (goal-engine.md §5.9): every item is parsed
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
    let (locked, mut plan) = lock_plan_timed(engine, "steer", timeout)?;
    let index = KeyIndex::load(&locked.dir, &engine.paths, locked.view.keys_bytes)?;
    let original_batches = batches_value(&plan);
    let revision = plan.revision();
    let mut priors: Vec<Prior> = Vec::new();
    let mut evals = Vec::with_capacity(parsed.len());
    for (i, p) in parsed.iter().enumerate() {
        let now = p
            .text("now")
            .map_or_else(|| locked.now.clone(), str::to_owned);
        let ev = evaluate(&mut plan, &engine.profile, p, &index, &priors, &now);
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
    let broken = usize::from(locked.lock_was_broken());
    let prefix = broken
        + if writes_plan && !rejected {
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
                applied,
                snapshots,
                ..
            } => {
                let mut a = audit::audit(p, &ev.r, &ev.digest, &judgement);
                let plain = a.clone();
                if applied.writes_plan {
                    a.insert("before".into(), snapshots.0);
                    a.insert("after".into(), snapshots.1);
                }
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
    })
}

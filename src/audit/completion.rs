//! Completion claims (docs/verify.md#ev-7 step 3): a plan whose aggregate
//! completion is recorded must have the final-gate ledger entry that wrote
//! it, and no goal may still wait for a user decision.

use serde_json::{Value, json};

use crate::evidence::{Code, Finding};
use crate::goals::lifecycle;
use crate::goals::plan::{GoalStatus, Plan};

/// An `aggregate_completed` ledger entry.
#[derive(Debug, Clone)]
pub(crate) struct FinalEntry {
    pub(crate) seq: Option<u64>,
    pub(crate) line: u64,
    pub(crate) revision: Option<u64>,
    /// Appended by crash recovery with a fresh seq (`recovered: true`).
    pub(crate) recovered: bool,
    /// `qualityGateSha256` (written by evidence-gate).
    pub(crate) gate_sha256: Option<String>,
    /// Carries a validated final gate: `qualityGateSha256`, or the Node
    /// tools' normalised `qualityGate` object.
    pub(crate) has_gate: bool,
    /// The embedded `qualityGate` document (absent when it was omitted for
    /// size), re-validated by the audit.
    pub(crate) gate: Option<Value>,
}

impl FinalEntry {
    /// The final-gate part of an `aggregate_completed` entry at `line`.
    pub(crate) fn of(line: u64, entry: &Value) -> FinalEntry {
        let gate_sha256 = entry
            .get("qualityGateSha256")
            .and_then(Value::as_str)
            .map(str::to_owned);
        FinalEntry {
            seq: crate::ledger::chain_fields(entry).map(|(s, _)| s),
            line,
            revision: entry.get("revision").and_then(Value::as_u64),
            recovered: entry.get("recovered").and_then(Value::as_bool) == Some(true),
            has_gate: gate_sha256.is_some()
                || entry.get("qualityGate").is_some_and(Value::is_object),
            gate_sha256,
            gate: entry
                .get("qualityGate")
                .filter(|g| {
                    g.is_object() && g.get("omitted").and_then(Value::as_bool) != Some(true)
                })
                .cloned(),
        }
    }
}

/// `COMPLETION_UNBACKED` findings of a plan, located at `goals` (its path).
/// `last_seq` is the ledger's last chained seq: a completion whose entry lies
/// beyond it exists only in the plan's `lastMutation` (a crash before the
/// append, or a forged plan) and is not backed until the ledger holds it.
/// Only a chained entry backs a completion (docs/threat-model.md#i10), unless
/// `legacy_ok` (`--allow-legacy` and a wholly unchained ledger).
///
/// `revalidate` re-checks the final gate a backing entry carries with the
/// gate rules the checkpoint used (the plan's `gateRules`); it returns why the
/// gate fails, `None` when it passes or cannot be re-checked.
pub(crate) fn check(
    plan: &Plan,
    finals: &[FinalEntry],
    last_seq: u64,
    legacy_ok: bool,
    goals: &str,
    revalidate: &dyn Fn(&Value) -> Option<String>,
) -> Vec<Finding> {
    if !lifecycle::completion_recorded(plan) {
        return Vec::new();
    }
    let Some(rec) = plan.completion() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let unbacked = |message: String, detail: Value| {
        Finding::new(Code::CompletionUnbacked, Some(goals), message).with_detail(detail)
    };
    let recorded_gate = rec.get("qualityGateSha256").and_then(Value::as_str);
    let revision = rec.get("revision").and_then(Value::as_u64);
    // Crash recovery re-appends the entries of `lastMutation` with fresh
    // seqs (docs/state-formats.md#ge-2 step 3), so a recovered final entry of the
    // completing revision backs the record although `ledgerSeq` moved.
    let find = |seq: u64| {
        finals.iter().find(|f| f.seq == Some(seq)).or_else(|| {
            finals.iter().find(|f| {
                f.seq.is_some() && f.recovered && revision.is_some() && f.revision == revision
            })
        })
    };
    let pending = |seq: u64| {
        plan.last_mutation()
            .is_some_and(|(_, from, entries)| seq >= from && seq < from + entries.len() as u64)
    };
    match rec.get("ledgerSeq").and_then(Value::as_u64) {
        Some(seq) => match find(seq) {
            None if seq > last_seq && pending(seq) => out.push(unbacked(
                format!("the completion's `aggregate_completed` entry (seq {seq}) exists only in the plan's lastMutation; the ledger ends at seq {last_seq}. After a crash before the append, `repair` appends it; otherwise the plan was edited"),
                json!({"ledgerSeq": seq, "lastSeq": last_seq}),
            )),
            None => out.push(unbacked(
                format!("the completion record names ledger seq {seq}, which is no `aggregate_completed` entry"),
                json!({"ledgerSeq": seq}),
            )),
            Some(f) if !f.has_gate => out.push(unbacked(
                format!("the `aggregate_completed` entry at ledger line {} carries no final quality gate", f.line),
                json!({"ledgerSeq": seq, "ledgerLine": f.line}),
            )),
            Some(f) if recorded_gate.is_some() && f.gate_sha256.as_deref() != recorded_gate => {
                out.push(unbacked(
                    format!(
                        "the completion record's qualityGateSha256 differs from the gate digest of the `aggregate_completed` entry at ledger line {}",
                        f.line
                    ),
                    json!({"ledgerSeq": seq, "ledgerLine": f.line, "recorded": recorded_gate, "ledger": f.gate_sha256}),
                ));
            }
            Some(f) => {
                if let Some(why) = f.gate.as_ref().and_then(revalidate) {
                    out.push(unbacked(
                        format!("the final gate carried by the `aggregate_completed` entry at ledger line {} does not pass the gate rules the checkpoint used: {why}", f.line),
                        json!({"ledgerSeq": seq, "ledgerLine": f.line, "gate": why}),
                    ));
                }
            }
        },
        None if !finals
            .iter()
            .any(|f| f.has_gate && (f.seq.is_some() || legacy_ok)) =>
        {
            let unchained = finals.iter().any(|f| f.has_gate && f.seq.is_none());
            out.push(unbacked(
                if unchained {
                    "the plan records aggregate completion but its `aggregate_completed` entry is unchained (no seq/prev): only a hash-chained entry backs a completion. A Node-written legacy run passes with `--allow-legacy`".into()
                } else {
                    "the plan records aggregate completion but the ledger has no `aggregate_completed` entry with a final quality gate".into()
                },
                json!({"unchainedEntry": unchained}),
            ))
        }
        None => {
            let backing = finals
                .iter()
                .find(|f| f.has_gate && (f.seq.is_some() || legacy_ok));
            if let Some(f) = backing
                && let Some(why) = f.gate.as_ref().and_then(revalidate)
            {
                out.push(unbacked(
                    format!("the final gate carried by the `aggregate_completed` entry at ledger line {} does not pass the gate rules the checkpoint used: {why}", f.line),
                    json!({"ledgerLine": f.line, "gate": why}),
                ));
            }
        }
    }
    for g in plan.goals() {
        if g.status() == GoalStatus::NeedsUserDecision && !lifecycle::superseded_resolved(plan, g) {
            let id = g.id();
            out.push(unbacked(
                format!("goal `{id}` is still in `needs_user_decision`; completion needs a user decision (unblock, or supersede/waive it) first"),
                json!({"goalId": id}),
            ));
        }
    }
    out
}

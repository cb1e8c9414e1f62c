//! Plan-context checks of the five-section gate (docs/gates.md#qg-5, steps 13–15):
//! criterion references, coverage recomputation, every criterion covered.

use serde_json::json;

use super::check::{Checker, shown};
use super::context::{GateContext, GateScope, Scope, ScopeCriterion, counts};
use super::outcome::GateFinding;
use crate::evidence::Code;
use crate::rules::gates::CoverageRules;

/// A row that names a criterion.
pub(super) struct RefRow {
    /// `manualQa.surfaceEvidence[i].criterionRef`.
    pub(super) field: String,
    /// The trimmed reference.
    pub(super) reference: String,
    /// The row's verdict is `passed` (surface rows only count for coverage).
    pub(super) passed: bool,
}

/// The rows of steps 5 and 6.
#[derive(Default)]
pub(super) struct Rows {
    pub(super) surface: Vec<RefRow>,
    pub(super) adversarial: Vec<RefRow>,
}

/// The informational finding of a gate checked without plan context.
pub(super) fn skipped(scope: &GateScope) -> GateFinding {
    GateFinding::new(
        Code::GatePlanContextSkipped,
        "qualityGate",
        format!(
            "No plan context (no --goal-id): criterion references, coverage recomputation and per-criterion coverage were not checked; artifacts were checked against {}.",
            scope.dir()
        ),
    )
    .with_details(json!({"field": "qualityGate", "scopeDir": scope.dir().as_str()}))
}

/// The criteria set the gate is judged against, and how it is named.
struct Judged<'c> {
    label: String,
    criteria: &'c [ScopeCriterion],
}

enum Resolution<'c> {
    Found(&'c ScopeCriterion),
    Unknown,
    Ambiguous(Vec<String>),
}

fn resolve<'c>(reference: &str, criteria: &'c [ScopeCriterion]) -> Resolution<'c> {
    if let Some((goal, crit)) = reference.split_once(':') {
        return criteria
            .iter()
            .find(|c| c.goal_id == goal && c.criterion_id == crit)
            .map_or(Resolution::Unknown, Resolution::Found);
    }
    let matches: Vec<&ScopeCriterion> = criteria
        .iter()
        .filter(|c| c.criterion_id == reference)
        .collect();
    match matches.as_slice() {
        [] => Resolution::Unknown,
        [one] => Resolution::Found(one),
        many => Resolution::Ambiguous(many.iter().map(|c| c.qualified()).collect()),
    }
}

/// Steps 13–15 (and the `GATE_RULES_NOT_PLAN` warning is added by the
/// caller). `stated` is the gate's `(totalCriteria, passCount)` when both
/// are valid integers.
pub(super) fn check(
    ck: &mut Checker<'_>,
    ctx: &GateContext,
    rules: CoverageRules,
    rows: &Rows,
    stated: Option<(u64, u64)>,
) {
    let run_label = ctx.scope.describe();
    let judged = match (&ctx.batch_alternative, stated) {
        (Some(batch), Some(stated))
            if stated == counts(&batch.criteria) && stated != counts(&ctx.criteria) =>
        {
            Judged {
                label: format!("batch {}", batch.batch_id),
                criteria: &batch.criteria,
            }
        }
        _ => Judged {
            label: run_label,
            criteria: &ctx.criteria,
        },
    };

    // Step 13: references.
    let mut covered: Vec<&ScopeCriterion> = Vec::new();
    for row in rows.surface.iter().chain(&rows.adversarial) {
        match resolve(&row.reference, judged.criteria) {
            Resolution::Found(c) => {
                if row.passed {
                    covered.push(c);
                }
            }
            Resolution::Unknown => ck.push(
                GateFinding::new(
                    Code::GateCriterionRefUnknown,
                    &row.field,
                    format!(
                        "{} references criterion {}, which is not a criterion of the gate's scope ({}).",
                        row.field,
                        shown(&row.reference),
                        judged.label
                    ),
                )
                .with_details(json!({"field": row.field, "ref": row.reference, "scope": judged.label})),
            ),
            Resolution::Ambiguous(candidates) => ck.push(
                GateFinding::new(
                    Code::GateCriterionRefAmbiguous,
                    &row.field,
                    format!(
                        "{} references criterion {}, which several goals of the scope have ({}); qualify it as <goalId>:<criterionId>.",
                        row.field,
                        shown(&row.reference),
                        candidates.join(", ")
                    ),
                )
                .with_details(json!({"field": row.field, "ref": row.reference, "candidates": candidates})),
            ),
        }
    }

    // Step 14: coverage recomputation, except where the batch cross-check
    // of the checkpoint owns it.
    let batch_at_checkpoint = ctx.checkpoint && matches!(ctx.scope, Scope::Batch { .. });
    if rules.recompute
        && !batch_at_checkpoint
        && let Some((total, pass)) = stated
    {
        let (et, ep) = counts(judged.criteria);
        if (total, pass) != (et, ep) {
            let mut details = json!({
                "field": "criteriaCoverage",
                "scope": judged.label,
                "expected": {"totalCriteria": et, "passCount": ep},
                "actual": {"totalCriteria": total, "passCount": pass},
            });
            let mut message = format!(
                "criteriaCoverage states {pass}/{total} criteria but the plan has {ep}/{et} for scope {}",
                judged.label
            );
            if let Some(batch) = &ctx.batch_alternative {
                let (bt, bp) = counts(&batch.criteria);
                details["alternative"] = json!({
                    "scope": format!("batch {}", batch.batch_id),
                    "expected": {"totalCriteria": bt, "passCount": bp},
                });
                message.push_str(&format!(" (or {bp}/{bt} for batch {})", batch.batch_id));
            }
            message.push('.');
            ck.push(
                GateFinding::new(Code::GateCoverageMismatch, "criteriaCoverage", message)
                    .with_details(details),
            );
        }
    }

    // Step 15: every criterion covered by a passed surface row.
    if rules.require_every_criterion_referenced {
        let uncovered: Vec<String> = judged
            .criteria
            .iter()
            .filter(|c| !covered.iter().any(|k| std::ptr::eq(*k, *c)))
            .map(ScopeCriterion::qualified)
            .collect();
        if !uncovered.is_empty() {
            ck.push(
                GateFinding::new(
                    Code::GateCriterionUncovered,
                    "manualQa.surfaceEvidence",
                    format!(
                        "manualQa.surfaceEvidence has no passed row for {} of scope {}: {}.",
                        if uncovered.len() == 1 { "criterion" } else { "criteria" },
                        judged.label,
                        uncovered.join(", ")
                    ),
                )
                .with_details(json!({"field": "manualQa.surfaceEvidence", "scope": judged.label, "uncovered": uncovered})),
            );
        }
    }
}

//! User decisions in CI (docs/threat-model.md#i12, docs/threat-model.md#tm-6): CI has no witness, so a
//! plan's user decision counts as the user's only when the in-tree gate
//! ledger holds the `user_decision_verified` record the Stop hook appended
//! after it found the decision in a recorded user prompt. Every other
//! decision is `USER_DECISION_UNVERIFIED` (warning; error with `--strict`);
//! a verified one is info and never fails `--strict`. A run whose goals are
//! all waived is reported as `RUN_WAIVED`, never as complete.

use std::collections::HashSet;

use cap_std::fs::Dir;
use serde_json::{Value, json};

use super::progress::Progress;
use super::scan::{Opened, entry_kind, open_state_file, scan_ledger_split};
use crate::finding::{Code, Finding, Severity};
use crate::goals::decisions::{self, UserDecision};
use crate::goals::plan::Plan;
use crate::hooks::gate_ledger::GateLedgerKind;
use crate::ledger::Extract;
use crate::ledger::ForeignSeverity;
use crate::sandbox::open;
use crate::sandbox::{PathLimits, RelPath};

/// The kind of the gate-ledger record that backs a user decision.
pub(crate) const VERIFIED_KIND: &str = GateLedgerKind::UserDecisionVerified.as_str();

/// `(goalId, decisionSha256)` of every `user_decision_verified` record of
/// the gate ledger (empty when there is none or it cannot be read: the
/// gate-ledger audit reports that fault itself).
#[derive(Debug, Default)]
pub(crate) struct Verified(HashSet<(String, String)>);

impl Verified {
    /// Reads the gate ledger under `root`.
    pub(crate) fn read(root: &Dir, progress: &mut dyn Progress) -> Verified {
        use crate::hooks::diagnostics::STATE_DIR;
        use crate::hooks::gate_ledger::FILE;
        let mut out = HashSet::new();
        let rel = RelPath::parse(STATE_DIR, PathLimits::default()).expect("constant");
        let Ok(dir) = open::open_dir(root, &rel) else {
            return Verified(out);
        };
        let display = format!("{STATE_DIR}/{FILE}");
        let Opened::File(file, _) = open_state_file(&dir, FILE, &display) else {
            return Verified(out);
        };
        // Each record's decision, read where it was parsed: only the members
        // read here are built.
        let read = |v: &Value| {
            let verified = entry_kind(v).and_then(GateLedgerKind::parse)
                == Some(GateLedgerKind::UserDecisionVerified);
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
            let decision = match (s("goalId"), s("decisionSha256")) {
                (Some(g), Some(d)) if verified => Some((g, d)),
                _ => None,
            };
            (decision, false)
        };
        let _ = scan_ledger_split(
            file,
            &display,
            ForeignSeverity::Warning,
            progress,
            &Extract {
                members: Some(&["kind", "event", "goalId", "decisionSha256"]),
                read: &read,
            },
            &mut |_, _, decision| out.extend(decision),
        );
        Verified(out)
    }

    /// The number of verified decisions read.
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.0.len()
    }

    fn backs(&self, d: &UserDecision) -> bool {
        self.0.contains(&(d.goal_id.clone(), d.sha256()))
    }
}

/// The findings of a plan's user decisions, located at `goals` (its path).
pub(crate) fn check(plan: &Plan, verified: &Verified, strict: bool, goals: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in decisions::user_decisions(plan) {
        let detail = json!({"goalId": d.goal_id, "decisionId": d.id(), "decisionSha256": d.sha256(), "waiver": d.waiver});
        if verified.backs(&d) {
            out.push(
                Finding::new(
                    Code::UserDecisionVerified,
                    Some(goals),
                    format!(
                        "goal `{}`: the user decision {} was seen in a user prompt before it was recorded",
                        d.goal_id,
                        d.id()
                    ),
                )
                .with_detail(detail),
            );
            continue;
        }
        let f = Finding::new(
            Code::UserDecisionUnverified,
            Some(goals),
            format!(
                "goal `{}`: the user decision {} has no `{VERIFIED_KIND}` record in the gate ledger — no recorded user prompt carried it, so the agent may have typed it; fix: have the user confirm it in a prompt (its words or its id) and record it again, or finish the goal",
                d.goal_id,
                d.id()
            ),
        )
        .with_detail(detail);
        out.push(if strict {
            f.with_severity(Severity::Error)
        } else {
            f
        });
    }
    if decisions::run_waived(plan) {
        out.push(Finding::new(
            Code::RunWaived,
            Some(goals),
            "every goal was waived by a user decision: the run ended as waived, not complete (no final gate passed)".to_owned(),
        ));
    }
    out
}

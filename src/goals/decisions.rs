//! User decisions recorded in a plan (docs/threat-model.md#i12): a waiver, a
//! supersede or an unblock carrying `userDecision`. The engine records what
//! the caller passed; whether the *user* made the decision is settled by the
//! `user-prompt-submit` witness (the hooks) and reported by the CI audit.
//! This module only names the decisions, their normalized text, their
//! decision id and the time they were recorded.

use serde_json::Value;

use super::lifecycle;
use super::plan::{Goal, Overlay, Plan};
use crate::digest::sha256_hex;

/// One user decision in a plan.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct UserDecision {
    /// The goal it decided.
    pub goal_id: String,
    /// The decision text as recorded.
    pub text: String,
    /// When the engine recorded it (`waiver.at`, `unblockedAt`, else the
    /// goal's `updatedAt`); `None` when the plan holds no time.
    pub at: Option<String>,
    /// Whether it waived the goal (superseded with no replacement).
    pub waiver: bool,
}

impl UserDecision {
    /// SHA-256 of the whitespace-normalized text.
    pub(crate) fn sha256(&self) -> String {
        sha256_hex(normalize(&self.text).as_bytes())
    }

    /// The decision id (`UD-` and 12 hex digits of [`Self::sha256`]): what a
    /// user may quote instead of the whole text.
    pub(crate) fn id(&self) -> String {
        decision_id(&self.text)
    }
}

/// Whitespace-normalized text: runs of whitespace become one space, ends
/// trimmed.
pub(crate) fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The decision id of a decision text.
pub fn decision_id(text: &str) -> String {
    format!("UD-{}", &sha256_hex(normalize(text).as_bytes())[..12])
}

/// Every decision id (`UD-` and 12 lowercase hex digits) quoted in `text`.
pub(crate) fn ids_in(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = text[i..].find("UD-") {
        let at = i + off + 3;
        let hex = b.get(at..at + 12).filter(|h| {
            h.iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        });
        if let Some(h) = hex {
            let id = format!("UD-{}", String::from_utf8_lossy(h));
            if !out.contains(&id) {
                out.push(id);
            }
        }
        i = at;
    }
    out
}

/// Whether a user prompt carries the decision: its normalized text contains
/// the decision's normalized text, or it quotes the decision id.
pub(crate) fn prompt_carries(prompt: &str, decision: &UserDecision) -> bool {
    let text = normalize(&decision.text);
    (!text.is_empty() && normalize(prompt).contains(&text))
        || ids_in(prompt).contains(&decision.id())
}

fn decided(g: Goal<'_>) -> Option<UserDecision> {
    let waiver = g.0.get("waiver").and_then(Value::as_object);
    let text = g.str("userDecision").or_else(|| {
        waiver
            .and_then(|w| w.get("userDecision"))
            .and_then(Value::as_str)
    })?;
    if normalize(text).is_empty() {
        return None;
    }
    let at = waiver
        .and_then(|w| w.get("at"))
        .and_then(Value::as_str)
        .or_else(|| g.str("unblockedAt"))
        .or_else(|| g.str("updatedAt"))
        .map(str::to_owned);
    Some(UserDecision {
        goal_id: g.id().to_owned(),
        text: text.to_owned(),
        at,
        waiver: g.waived(),
    })
}

/// The user decisions of a plan, in plan order.
pub(crate) fn user_decisions(plan: &Plan) -> Vec<UserDecision> {
    plan.goals().filter_map(decided).collect()
}

/// A run is **waived** (docs/threat-model.md#tm-6 "I12 matching") when it is
/// complete without a recorded completion and no goal of it completed:
/// every goal was waived (superseded with no replacement). Such a run ends,
/// but it is never "complete".
pub(crate) fn run_waived(plan: &Plan) -> bool {
    !lifecycle::completion_recorded(plan)
        && plan.goals().next().is_some()
        && plan
            .goals()
            .all(|g| g.overlay() == Some(Overlay::Superseded) && g.waived())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization_ids_and_matching() {
        assert_eq!(
            normalize("  drop\n the   flaky\ttest "),
            "drop the flaky test"
        );
        let d = UserDecision {
            goal_id: "G1".into(),
            text: "drop the  flaky test".into(),
            at: None,
            waiver: true,
        };
        assert_eq!(d.id(), decision_id("drop the flaky test"));
        assert!(d.id().starts_with("UD-") && d.id().len() == 15);
        assert!(prompt_carries("yes —\ndrop the flaky\n test, thanks", &d));
        assert!(prompt_carries(&format!("approve {}", d.id()), &d));
        assert!(!prompt_carries("drop the test", &d));
        assert_eq!(
            ids_in("UD-0123456789ab UD-xyz UD-0123456789ab"),
            ["UD-0123456789ab"]
        );
    }
}

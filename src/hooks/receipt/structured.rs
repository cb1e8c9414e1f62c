//! Structured receipts (docs/hook-contracts.md#h-3): an evidence payload v1 verified fully
//! by the same library call as `evidence-gate verify`, bound to the event's
//! session, agent and turn.

use std::time::Instant;

use cap_std::fs::Dir;
use serde_json::Value;

use crate::evidence::payload::{self, Payload};
use crate::evidence::{Code, Finding, Root, Verdict, VerifiedFile, VerifyOptions, verify_payload};
use crate::rules::evidence::EvidenceRules;

/// The event identifiers a payload's `agent` binding is compared with.
#[derive(Debug, Clone, Default)]
pub struct Binding {
    /// Session id.
    pub session: Option<String>,
    /// Agent id.
    pub agent_id: Option<String>,
    /// Agent type.
    pub agent_type: Option<String>,
    /// Turn id.
    pub turn: Option<String>,
}

/// Verifies a payload document; on success returns the verified deliverables.
pub fn verify(
    root: &Dir,
    path: &str,
    value: Value,
    binding: &Binding,
    rules: &EvidenceRules,
    deadline: Instant,
) -> Result<Vec<VerifiedFile>, Vec<Finding>> {
    let payload: Payload = payload::from_value(value).map_err(|f| {
        vec![Finding::new(
            Code::ReceiptPayloadInvalid,
            Some(path),
            format!("the evidence payload is invalid: {}", f.message),
        )]
    })?;
    check_binding(path, &payload, binding)?;
    let dir = root.try_clone().map_err(|e| vec![unreadable(path, &e)])?;
    let root = Root::new(dir, rules).map_err(|e| {
        vec![Finding::new(
            Code::ReceiptUnreadable,
            Some(path),
            format!("the verifier rules are unusable: {e}"),
        )]
    })?;
    let opts = VerifyOptions {
        plan: None,
        deadline: Some(deadline),
        payload_path: Some(path),
    };
    let report = verify_payload(&root, &payload, path, opts);
    if report.verdict() == Verdict::Pass {
        return Ok(report.files().to_vec());
    }
    let mut findings: Vec<Finding> = report
        .findings()
        .iter()
        .filter(|f| f.severity == crate::evidence::Severity::Error)
        .map(|f| {
            if f.code == Code::VerifyTimeout {
                Finding::new(
                    Code::ReceiptVerifyTimeout,
                    Some(path),
                    "verifying the evidence payload exceeded subagent_stop.verify_budget_ms",
                )
            } else {
                f.clone()
            }
        })
        .collect();
    if findings.is_empty() {
        findings.push(Finding::new(
            Code::ReceiptUnreadable,
            Some(path),
            "the evidence payload could not be verified",
        ));
    }
    Err(findings)
}

fn check_binding(path: &str, p: &Payload, b: &Binding) -> Result<(), Vec<Finding>> {
    let Some(agent) = &p.agent else {
        return Ok(());
    };
    let pairs = [
        ("agent.session", &agent.session, &b.session),
        ("agent.id", &agent.id, &b.agent_id),
        ("agent.type", &agent.kind, &b.agent_type),
        ("agent.turn", &agent.turn, &b.turn),
    ];
    let findings: Vec<Finding> = pairs
        .iter()
        .filter_map(|(field, declared, actual)| match (declared, actual) {
            (Some(d), Some(a)) if d != a => Some(Finding::new(
                Code::ReceiptBindingMismatch,
                Some(path),
                format!("{field} is `{d}` but this stop is `{a}`: the payload belongs to another session, agent or turn"),
            )),
            _ => None,
        })
        .collect();
    if findings.is_empty() {
        Ok(())
    } else {
        Err(findings)
    }
}

fn unreadable(path: &str, e: &std::io::Error) -> Finding {
    Finding::new(
        Code::ReceiptUnreadable,
        Some(path),
        format!("could not read the receipt: {e}"),
    )
}

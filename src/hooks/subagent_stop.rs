//! `subagent-stop`: the evidence receipt gate (docs/hook-contracts.md#h-3). A gated worker
//! cannot end its turn until its final message names a receipt that
//! verifies; the attempt budget, not `stop_hook_active`, is the loop guard.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use cap_std::fs::Dir;
use regex::Regex;
use serde_json::{Map, Value, json};

use super::code::HookCode;
use super::diagnostics::{Diagnostics, STATE_DIR};
use super::directive::{Template, excerpt};
use super::event::{Decision, Envelope, StopEvent};
use super::gate_ledger::{self, GateLedgerKind};
use super::host::encode::cap_bytes;
use super::receipt::{self, Binding, FilePolicy, Verified, attempts, grammar, path, plain, reuse};
use super::transcript::{self, Markers};
use super::witness::{self, HookState, StateFault};
use crate::ambient::Ambient;
use crate::finding::Finding;
use crate::rules::RuleSet;
use crate::rules::evidence::EvidenceRules;
use crate::rules::hooks::{Directives, HooksRules, SubagentStopRules};
use crate::sandbox::{PathLimits, RelPath};
use crate::store::{LockError, LockOptions, MutationLock};

/// Placeholders of the block-reason template.
pub const PLACEHOLDERS: &[&str] = &[
    "ATTEMPT_COUNT",
    "MAX_ATTEMPTS",
    "FINDINGS",
    "LAST_ASSISTANT_MESSAGE",
    "EVIDENCE_ROOT",
    "RECEIPT_MARKER",
    "AGENT_TYPE",
];
const MAX_STATIC_TEMPLATE: usize = 1024;
const MAX_FINDINGS_BYTES: usize = 512;
const MAX_FINDING_LINES: usize = 5;
/// Time kept after the verification budget for the gate lock, the state
/// writes and the output, before `hooks.deadline_ms` (as for steering).
const WATCHDOG_MARGIN_MS: u64 = 500;

/// The compiled `subagent_stop` policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The raw family.
    pub rules: SubagentStopRules,
    gated: Regex,
    evidence_root: RelPath,
    template: Template,
    file: FilePolicy,
    evidence: EvidenceRules,
}

impl Policy {
    /// Compiles the policy; an error names the rules key at fault.
    pub fn compile(set: &RuleSet) -> Result<Policy, String> {
        let rules: SubagentStopRules = set.family().map_err(|e| e.to_string())?;
        let directives: Directives = set.family().map_err(|e| e.to_string())?;
        let evidence: EvidenceRules = set.family().map_err(|e| e.to_string())?;
        let hooks: HooksRules = set.family().map_err(|e| e.to_string())?;
        // A verification that runs out of budget must end in a counted block
        // (RECEIPT_VERIFY_TIMEOUT): the budget has to end before the
        // watchdog allows, with time left for the writes and the output.
        let room = hooks.deadline_ms.saturating_sub(WATCHDOG_MARGIN_MS);
        if rules.verify_budget_ms > room {
            return Err(format!(
                "/subagent_stop/verify_budget_ms: {} leaves no time to block before the watchdog allows; at most hooks.deadline_ms ({}) − {WATCHDOG_MARGIN_MS} = {room}",
                rules.verify_budget_ms, hooks.deadline_ms
            ));
        }
        let gated = Regex::new(&rules.gated_agents)
            .map_err(|e| format!("/subagent_stop/gated_agents: {e}"))?;
        let evidence_root = RelPath::parse(&rules.evidence_root, PathLimits::default())
            .map_err(|p| format!("/subagent_stop/evidence_root: {}", p.describe()))?;
        let text = directives.0.get(&rules.directive).ok_or_else(|| {
            format!(
                "/subagent_stop/directive: no directive template named `{}`",
                rules.directive
            )
        })?;
        let template = Template::compile(text, PLACEHOLDERS)
            .map_err(|e| format!("/directives/{}: {e}", rules.directive))?;
        if template.static_len() > MAX_STATIC_TEMPLATE {
            return Err(format!(
                "/directives/{}: the static text is over {MAX_STATIC_TEMPLATE} bytes",
                rules.directive
            ));
        }
        if !template.uses("RECEIPT_MARKER") {
            return Err(format!(
                "/directives/{}: the template must contain {{{{RECEIPT_MARKER}}}}",
                rules.directive
            ));
        }
        let file = FilePolicy {
            reject_hardlinks: rules.reject_hardlinks,
            max_bytes: rules.max_receipt_bytes,
            substance: plain::Substance {
                min_chars: rules.min_receipt_chars,
                placeholder_patterns: rules
                    .placeholder_patterns
                    .iter()
                    .map(|p| p.to_lowercase())
                    .collect(),
            },
            require_structured: rules.require_structured,
            check_freshness: rules.check_freshness,
        };
        Ok(Policy {
            rules,
            gated,
            evidence_root,
            template,
            file,
            evidence,
        })
    }

    /// True when the agent type is gated (empty, absent and unmatched are not).
    pub fn is_gated(&self, kind: Option<&str>) -> bool {
        kind.is_some_and(|k| !k.is_empty() && self.gated.is_match(k))
    }
}

/// Everything one decision needs.
pub struct Ctx<'a> {
    /// Ambient access (transcripts).
    pub amb: &'a dyn Ambient,
    /// The run's diagnostics.
    pub diag: &'a Diagnostics<'a>,
    /// The workspace root (`cwd`).
    pub root: &'a Dir,
    /// `cwd`'s canonical form when it is the process's directory.
    pub canonical_cwd: Option<&'a Path>,
    /// The workspace's canonical root, resolved once per call (names the
    /// per-user state); `None` when it could not be resolved.
    pub workspace: Option<&'a Path>,
    /// The envelope.
    pub env: &'a Envelope,
    /// The stop fields.
    pub stop: &'a StopEvent,
    /// Common hook rules.
    pub hooks: &'a HooksRules,
    /// The compiled policy.
    pub policy: &'a Policy,
    /// The merged rules (their `sha256:` digest goes into each record).
    pub rules: &'a RuleSet,
    /// Test fault: the verification budget is already spent.
    pub budget_spent: bool,
    /// When the hook process started (the watchdog counts from here).
    pub started: Instant,
}

/// Evaluates a stop in the normative order of docs/hook-contracts.md#h-3.
pub fn decide(c: &Ctx<'_>) -> Decision {
    let agent = c.env.agent.clone().unwrap_or_default();
    if !c.policy.is_gated(agent.kind.as_deref()) {
        return Decision::Allow;
    }
    let mut earlier = 0;
    let checked = check_receipt(c, &mut earlier);
    let hs = match HookState::open(c.amb, &c.env.cwd, c.workspace) {
        Ok(s) => s,
        Err(f) => return halt(c, HookCode::HookStateIo, &f),
    };
    let lock_opts = LockOptions {
        timeout: Duration::from_millis(c.hooks.lock_wait_ms),
        command: "hook subagent-stop".into(),
    };
    let lock = match MutationLock::acquire(hs.dir(), witness::LOCK, &lock_opts) {
        Ok(l) => l,
        Err(LockError::Timeout { waited_ms, .. }) => {
            let f = StateFault {
                path: hs.display(witness::LOCK),
                what: format!("the gate lock was not taken within {waited_ms} ms"),
                error: "another hook call holds it".into(),
                fix: "wait for the other hook call to end; if none runs, run `evidence-gate doctor --fix`",
            };
            return halt(c, HookCode::HookLockTimeout, &f);
        }
        Err(LockError::Unsafe { what }) => {
            let f = StateFault::io(
                hs.display(witness::LOCK),
                "the gate lock file is unusable",
                &format!("the lock file is {what}"),
            );
            return halt(c, HookCode::HookStateIo, &f);
        }
        Err(LockError::Io(e)) => {
            let f = StateFault::io(
                hs.display(witness::LOCK),
                "the gate lock could not be taken",
                &e,
            );
            return halt(c, HookCode::HookStateIo, &f);
        }
    };
    let decision = decide_locked(c, &hs, checked, earlier);
    let _ = lock.release();
    decision
}

fn claimant(env: &Envelope) -> reuse::Claimant {
    let agent = env.agent.clone().unwrap_or_default();
    reuse::Claimant {
        session_id: env.session_id.clone(),
        agent_id: agent.id,
        agent_type: agent.kind,
        turn_id: env.turn_id.clone(),
    }
}

fn check_receipt(c: &Ctx<'_>, earlier: &mut usize) -> Result<Verified, Vec<Finding>> {
    let rules = &c.policy.rules;
    let named = grammar::extract(c.stop.last_message.as_deref(), &rules.receipt_marker)
        .map_err(|f| vec![*f])?;
    *earlier = named.earlier_receipts;
    let cwd = path::Cwd {
        given: &c.env.cwd,
        canonical: c.canonical_cwd,
    };
    let rel = path::resolve(&named.token, &cwd, &c.policy.evidence_root).map_err(|f| vec![*f])?;
    let agent = c.env.agent.clone().unwrap_or_default();
    let binding = Binding {
        session: c.env.session_id.clone(),
        agent_id: agent.id,
        agent_type: agent.kind,
        turn: c.env.turn_id.clone(),
    };
    let now = Instant::now();
    let deadline = if c.budget_spent {
        now.checked_sub(Duration::from_millis(1)).unwrap_or(now)
    } else {
        verify_deadline(now, c.started, rules.verify_budget_ms, c.hooks.deadline_ms)
    };
    let birth = || {
        c.stop
            .child_transcript
            .as_deref()
            .and_then(|p| transcript::birth_time(c.amb, p))
    };
    receipt::verify(&receipt::Check {
        root: c.root,
        path: &rel,
        policy: &c.policy.file,
        evidence: &c.policy.evidence,
        binding: &binding,
        deadline,
        transcript_birth: &birth,
    })
}

/// The verification deadline: the budget starts `now` but never ends later
/// than the watchdog's deadline less the margin for the block's writes, so
/// time spent before verification (a large stdin or transcript) cannot turn
/// a budget overrun into the watchdog's allow.
fn verify_deadline(now: Instant, started: Instant, budget_ms: u64, deadline_ms: u64) -> Instant {
    let latest = started + Duration::from_millis(deadline_ms.saturating_sub(WATCHDOG_MARGIN_MS));
    (now + Duration::from_millis(budget_ms)).min(latest)
}

fn decide_locked(
    c: &Ctx<'_>,
    hs: &HookState,
    checked: Result<Verified, Vec<Finding>>,
    earlier: usize,
) -> Decision {
    let me = claimant(c.env);
    let rules = &c.policy.rules;
    let state = hs.dir();
    let ttl = Duration::from_secs(rules.attempt_ttl_hours * 3600);
    if let Err(f) = hs.migrate(c.root, ttl) {
        return halt(c, HookCode::HookStateIo, &f);
    }
    match hs.reconcile(c.root, &base_entry(c, None)) {
        Ok(r) => report_reconciled(c, &r),
        Err(f) => return halt(c, HookCode::HookStateIo, &f),
    }
    let findings = match checked {
        Ok(v) if rules.reuse_protection => {
            match reuse::check(state, &v.normalized_sha256, &v.path, &me) {
                Ok(None) => Ok(v),
                Ok(Some(f)) => Err(vec![f]),
                Err(e) => {
                    let f = StateFault::io(
                        hs.display(reuse::DIR),
                        "the receipt index could not be read",
                        &e,
                    );
                    return halt(c, HookCode::HookStateIo, &f);
                }
            }
        }
        other => other,
    };
    let counter = attempts::file_name(me.session_id.as_deref(), me.agent_id.as_deref());
    let findings = match findings {
        Ok(v) => return accept(c, hs, &v, earlier, &counter),
        Err(f) => f,
    };
    if context_pressure(c) {
        let mut entry = base_entry(c, Some(GateLedgerKind::ReceiptWaived));
        entry.insert("reason".into(), json!("context_pressure"));
        entry.insert("findings".into(), findings_value(&findings));
        if let Err(f) = hs.append(c.root, entry) {
            return halt(c, HookCode::HookStateIo, &f);
        }
        c.diag.write(
            HookCode::SubagentContextPressure,
            "allow",
            "context pressure in the worker's transcript waived its receipt",
            Some(json!({"findings": codes(&findings)})),
        );
        let _ = attempts::clear(state, &counter);
        return Decision::Allow;
    }
    let count = attempts::read(state, &counter, ttl);
    let max = rules.max_attempts;
    if count < max {
        let owner = attempts::Owner {
            session_id: me.session_id.as_deref(),
            agent_id: me.agent_id.as_deref(),
            agent_type: me.agent_type.as_deref(),
        };
        if let Err(e) = attempts::write(state, &counter, &owner, count + 1, &findings) {
            let f = StateFault::io(
                hs.display(attempts::DIR),
                "the attempt counter could not be written",
                &e,
            );
            return halt(c, HookCode::HookStateIo, &f);
        }
        let agent_type = me.agent_type.as_deref().unwrap_or_default();
        return Decision::Block {
            reason: render_reason(
                c.policy,
                c.hooks.max_reason_bytes,
                agent_type,
                c.stop.last_message.as_deref(),
                count + 1,
                &findings,
            ),
        };
    }
    let mut entry = base_entry(c, Some(GateLedgerKind::ReceiptOverride));
    entry.insert("findings".into(), findings_value(&findings));
    entry.insert("count".into(), json!(count));
    // The release is recorded in the witness and the mirror (docs/threat-model.md#i1); a release
    // that cannot be recorded does not happen.
    if let Err(f) = hs.append(c.root, entry) {
        return halt(c, HookCode::HookStateIo, &f);
    }
    let notify = rules.notify_on_override;
    let outcome = if notify { "notify" } else { "allow" };
    c.diag.write(
        HookCode::SubagentCapReached,
        outcome,
        "the attempt cap was reached; the worker stopped without accepted evidence",
        Some(json!({"count": count, "max": max, "findings": codes(&findings), "ledger_recorded": true})),
    );
    let _ = attempts::clear(state, &counter);
    if notify {
        Decision::Notify {
            message: format!(
                "evidence-gate: {} stopped without accepted evidence after {max} refusals ({}); the override was recorded in {STATE_DIR}/ledger.jsonl.",
                me.agent_type.as_deref().unwrap_or("a worker"),
                codes(&findings).join(", ")
            ),
        }
    } else {
        Decision::Allow
    }
}

fn accept(c: &Ctx<'_>, hs: &HookState, v: &Verified, earlier: usize, counter: &str) -> Decision {
    let state = hs.dir();
    let mut entry = base_entry(c, Some(GateLedgerKind::ReceiptAccepted));
    entry.insert("receipt".into(), v.ledger_value());
    let mut files = vec![json!({"path": v.path, "size": v.size, "sha256": v.sha256})];
    files.extend(
        v.deliverables
            .iter()
            .map(|f| json!({"path": f.path, "size": f.size, "sha256": f.sha256})),
    );
    entry.insert("files".into(), Value::Array(files));
    if earlier > 0 {
        entry.insert("earlier_receipts".into(), json!(earlier));
    }
    if let Err(f) = hs.append(c.root, entry) {
        return halt(c, HookCode::HookStateIo, &f);
    }
    if c.policy.rules.reuse_protection
        && let Err(e) = reuse::claim(state, &v.normalized_sha256, &v.path, &claimant(c.env))
    {
        let f = StateFault::io(
            hs.display(reuse::DIR),
            "the receipt digest could not be claimed",
            &e,
        );
        return halt(c, HookCode::HookStateIo, &f);
    }
    if let Err(e) = attempts::clear(state, counter) {
        let f = StateFault::io(
            hs.display(attempts::DIR),
            "the attempt counter could not be deleted",
            &e,
        );
        return halt(c, HookCode::HookStateIo, &f);
    }
    Decision::Allow
}

/// A marker inside a compaction record the host wrote in the child
/// transcript's tail releases the worker (docs/threat-model.md#i5), unless its
/// own final message carries one (writing the phrase is no escape). Tool
/// output, assistant and user text never count; a host without a recorded
/// compaction record shape has no escape at all.
fn context_pressure(c: &Ctx<'_>) -> bool {
    // Without a pinned shape nothing can release the worker: the markers are
    // not even compiled (their SIMD searchers probe the CPU on first use).
    if !super::host_records::escape_enabled(c.env.host) {
        return false;
    }
    let markers = Markers::new(&c.hooks.context_pressure_markers);
    if c.stop
        .last_message
        .as_deref()
        .is_some_and(|m| markers.found_in(m.as_bytes()))
    {
        return false;
    }
    transcript::host_pressure(
        c.amb,
        c.env.host,
        c.stop.child_transcript.as_deref(),
        c.hooks.transcript_tail_bytes,
        &markers,
    )
}

/// A fault in the hook's own trust state blocks (docs/threat-model.md#i2): the
/// agent is told what failed and the user, in `systemMessage`, that they
/// must act.
fn halt(c: &Ctx<'_>, code: HookCode, f: &StateFault) -> Decision {
    c.diag.write(
        code,
        "block",
        &format!("{}; the stop was blocked until the user acts", f.what),
        Some(json!({"path": f.path, "error": f.error, "fix": f.fix})),
    );
    Decision::Halt {
        reason: format!(
            "evidence-gate {code}: {} ({}: {}). This is a fault in the hook's own state, not in your work: do not try to work around it. The stop stays blocked until the user fixes it ({}).",
            f.what, f.path, f.error, f.fix
        ),
        message: format!(
            "evidence-gate: {code} at {} — the user must act: {}. Gated worker stops are blocked until then.",
            f.path, f.fix
        ),
    }
}

/// Records in diagnostics what the mirror compare repaired (the ledger
/// records themselves were appended by the reconciliation).
fn report_reconciled(c: &Ctx<'_>, r: &witness::Reconciled) {
    if r.rewound > 0 {
        c.diag.write(
            HookCode::GateLedgerRewound,
            "repair",
            "the in-tree gate ledger had lost records of its witness; it was restored",
            Some(json!({"restored_records": r.rewound, "file": format!("{STATE_DIR}/{}", gate_ledger::FILE)})),
        );
    }
    if r.forged > 0 {
        c.diag.write(
            HookCode::GateLedgerForged,
            "repair",
            "the in-tree gate ledger held records its witness never wrote; they were dropped and recorded",
            Some(json!({"forged_records": r.forged, "file": format!("{STATE_DIR}/{}", gate_ledger::FILE)})),
        );
    }
}

fn base_entry(c: &Ctx<'_>, kind: Option<GateLedgerKind>) -> Map<String, Value> {
    let agent = c.env.agent.clone().unwrap_or_default();
    let mut m = Map::new();
    if let Some(kind) = kind {
        m.insert("kind".into(), json!(kind.as_str()));
    }
    m.insert(
        "ts".into(),
        json!(crate::time::rfc3339_ms(SystemTime::now())),
    );
    m.insert("host".into(), json!(c.env.host.name()));
    m.insert("session_id".into(), json!(c.env.session_id));
    m.insert("agent_id".into(), json!(agent.id));
    m.insert("agent_type".into(), json!(agent.kind));
    m.insert("turn_id".into(), json!(c.env.turn_id));
    m.insert("rules_digest".into(), json!(c.rules.digest()));
    m
}

fn codes(findings: &[Finding]) -> Vec<&'static str> {
    findings.iter().map(|f| f.code.name()).collect()
}

fn findings_value(findings: &[Finding]) -> Value {
    Value::Array(
        findings
            .iter()
            .map(|f| json!({"code": f.code.name(), "path": f.path, "message": f.message}))
            .collect(),
    )
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `- CODE: message` lines: at most `lines`, then `- … and N more`, within
/// `budget` bytes.
fn findings_block(findings: &[Finding], lines: usize, budget: usize) -> String {
    let shown = findings.len().min(lines.max(1));
    let mut out: Vec<String> = findings[..shown]
        .iter()
        .map(|f| format!("- {}: {}", f.code.name(), one_line(&f.message)))
        .collect();
    let more = findings.len() - shown;
    if more > 0 {
        out.push(format!("- … and {more} more"));
    }
    cap_bytes(&out.join("\n"), budget)
}

/// The block reason (docs/hook-contracts.md#h-3): the excerpt shrinks first, then the
/// findings, and as a last resort the text is cut at a character boundary.
pub fn render_reason(
    policy: &Policy,
    max: usize,
    agent_type: &str,
    last_message: Option<&str>,
    attempt: u64,
    findings: &[Finding],
) -> String {
    let rules = &policy.rules;
    let render = |excerpt_chars: usize, lines: usize| {
        let findings = findings_block(findings, lines, MAX_FINDINGS_BYTES);
        let last = excerpt(last_message, excerpt_chars);
        policy.template.render(&|slot| match slot {
            "ATTEMPT_COUNT" => attempt.to_string(),
            "MAX_ATTEMPTS" => rules.max_attempts.to_string(),
            "FINDINGS" => findings.clone(),
            "LAST_ASSISTANT_MESSAGE" => last.clone(),
            "EVIDENCE_ROOT" => rules.evidence_root.clone(),
            "RECEIPT_MARKER" => rules.receipt_marker.clone(),
            "AGENT_TYPE" => agent_type.to_owned(),
            _ => String::new(),
        })
    };
    let mut excerpt_chars = rules.message_excerpt_chars;
    loop {
        let text = render(excerpt_chars, MAX_FINDING_LINES);
        if text.len() <= max {
            return text;
        }
        if excerpt_chars == 0 {
            break;
        }
        excerpt_chars /= 2;
    }
    for lines in (1..MAX_FINDING_LINES).rev() {
        let text = render(0, lines);
        if text.len() <= max {
            return text;
        }
    }
    cap_bytes(&render(0, 1), max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verification_deadline_never_passes_the_watchdog_margin() {
        let started = Instant::now();
        // Early in the run the budget decides.
        let now = started + Duration::from_millis(10);
        assert_eq!(
            verify_deadline(now, started, 2500, 4000),
            now + Duration::from_millis(2500)
        );
        // After 3 s spent reading input, the watchdog's deadline less the
        // margin decides: 4000 − 500 ms after the start.
        let now = started + Duration::from_millis(3000);
        assert_eq!(
            verify_deadline(now, started, 2500, 4000),
            started + Duration::from_millis(3500)
        );
    }
}

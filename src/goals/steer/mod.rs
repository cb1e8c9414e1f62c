//! Steering (docs/engine.md#ge-5): structured, evidence-backed plan mutations.
//!
//! Every channel — `cli` (`steer --kind …`), `batch` (`--proposals-json`),
//! `directive` (`--directive-json` / `--directive-file`), `hook` (the
//! UserPromptSubmit marker) and `library` — goes through the same steps:
//!
//! 1. [`parse_proposal`] — the canonical parser; parse-level problems are
//!    `ULW_LOOP_STEERING_*` errors and nothing is read or written;
//! 2. under the mutation lock: field resolution (`resolve`), the
//!    idempotency lookup in `.ledger.keys` (`dedupe`), the structural
//!    invariants (`validate`), application on the working copy
//!    (`apply`), compact snapshots (`snapshot`);
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
//! The UserPromptSubmit handler builds an [`Engine`](crate::goals::Engine) for the payload's
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
//! from hook payloads belongs to the hook (see `crate::goals::team`):
//! a worker's directive is never passed here.

pub(crate) mod apply;
pub(crate) mod audit;
pub(crate) mod dedupe;
pub(crate) mod proposal;
pub(crate) mod resolve;
pub(crate) mod snapshot;
mod transaction;
pub(crate) mod validate;

use serde_json::Value;

pub use proposal::{
    Channel, Defaults, Kind, Proposal, Source, directive_signature, parse_proposal,
};
pub use transaction::{apply_batch, apply_one, apply_parsed};
pub use validate::Judgement;

use super::error::GoalError;
use super::journal::Head;
use super::ops::outcome::LedgerHead;
use super::plan::{Plan, PlanRead};
use super::profile::Profile;
use dedupe::Prior;

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
    /// How the plan was read: from its cut-down body,
    /// [`SteerOutcome::plan`] holds of the goals the proposal did not
    /// target or change only what that body keeps of their criteria
    /// ([`Plan::is_partial`]; `goals.json` holds them whole).
    pub plan_read: PlanRead,
}

impl SteerOutcome {
    /// What happened.
    pub fn verdict(&self) -> Verdict {
        self.item.verdict
    }
    /// `{lastSeq, head}`.
    pub fn ledger(&self) -> LedgerHead {
        LedgerHead::from(&self.head)
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
    /// How [`BatchOutcome::plan`] was read (as [`SteerOutcome::plan_read`];
    /// a rejected batch's plan is read whole again).
    pub plan_read: PlanRead,
}

impl BatchOutcome {
    /// `{lastSeq, head}`.
    pub fn ledger(&self) -> LedgerHead {
        LedgerHead::from(&self.head)
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

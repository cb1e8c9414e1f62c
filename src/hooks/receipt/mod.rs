//! The receipt check of `subagent-stop` (docs/hook-contracts.md#h-3): grammar, path
//! rules, plain and structured receipts, freshness, reuse claims and the
//! attempt counter.

pub mod attempts;
pub mod grammar;
pub mod path;
pub mod plain;
pub mod reuse;
pub mod structured;

use std::time::{Duration, Instant, SystemTime};

use cap_std::fs::Dir;
use serde_json::{Value, json};

use crate::evidence::{Code, Finding, VerifiedFile};
use crate::rules::evidence::EvidenceRules;
use crate::sandbox::RelPath;
use crate::sandbox::open::{self, FileChecks, FileProblem};

pub use structured::Binding;

/// Largest structured receipt (evidence payload v1 limit).
const MAX_PAYLOAD_BYTES: u64 = 1024 * 1024;
/// Receipts modified more than this before the transcript's birth are stale.
const FRESHNESS_SLACK: Duration = Duration::from_secs(2);

/// Plain file or evidence payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A text file.
    Plain,
    /// An evidence payload v1.
    Payload,
}

impl Form {
    /// The ledger's `form` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plain => "plain",
            Self::Payload => "payload",
        }
    }
}

/// A receipt that passed every check before the reuse check.
#[derive(Debug, Clone)]
pub struct Verified {
    /// Workspace-relative path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of the file.
    pub sha256: String,
    /// The normalized digest reuse protection keys on (docs/threat-model.md#i4;
    /// [`reuse::Normalized`]).
    pub normalized_sha256: String,
    /// Its form.
    pub form: Form,
    /// `checked`, `unchecked` or `disabled`.
    pub freshness: &'static str,
    /// Deliverables verified by a payload.
    pub deliverables: Vec<VerifiedFile>,
}

impl Verified {
    /// The ledger's `receipt` object.
    pub fn ledger_value(&self) -> Value {
        json!({
            "path": self.path,
            "size": self.size,
            "sha256": self.sha256,
            "normalized_sha256": self.normalized_sha256,
            "form": self.form.as_str(),
            "freshness": self.freshness,
        })
    }
}

/// Policy of the file checks.
#[derive(Debug, Clone)]
pub struct FilePolicy {
    /// `subagent_stop.reject_hardlinks`.
    pub reject_hardlinks: bool,
    /// `subagent_stop.max_receipt_bytes`.
    pub max_bytes: u64,
    /// The substance rule.
    pub substance: plain::Substance,
    /// `subagent_stop.require_structured`.
    pub require_structured: bool,
    /// `subagent_stop.check_freshness`.
    pub check_freshness: bool,
}

/// Everything one receipt check needs.
pub struct Check<'a> {
    /// The workspace root.
    pub root: &'a Dir,
    /// The receipt path (already resolved by [`path::resolve`]).
    pub path: &'a RelPath,
    /// File policy.
    pub policy: &'a FilePolicy,
    /// Verifier rules for payloads.
    pub evidence: &'a EvidenceRules,
    /// Event identifiers.
    pub binding: &'a Binding,
    /// Verification budget.
    pub deadline: Instant,
    /// The child transcript's birth time, asked only when needed.
    pub transcript_birth: &'a dyn Fn() -> Option<SystemTime>,
}

/// Verifies the receipt file (no lock held).
pub fn verify(c: &Check<'_>) -> Result<Verified, Vec<Finding>> {
    let display = c.path.as_str();
    let one = |f: Finding| vec![f];
    let (mut file, meta) =
        open::open_leaf(c.root, c.path).map_err(|p| one(problem(display, &p)))?;
    let checks = FileChecks {
        reject_hard_links: c.policy.reject_hardlinks,
        max_bytes: c.policy.max_bytes,
        reject_empty: true,
    };
    open::check_handle(&meta, &checks).map_err(|p| one(problem(display, &p)))?;
    let json_candidate = display.ends_with(".json");
    let keep = if json_candidate {
        MAX_PAYLOAD_BYTES as usize
    } else {
        plain::INSPECT_BYTES
    };
    let mut head = Vec::new();
    let mut normalized = reuse::Normalized::new();
    let hashed = open::hash_handle_with(
        &mut file,
        &meta,
        &checks,
        Some(c.deadline),
        keep,
        &mut head,
        &mut |b| normalized.update(b),
    )
    .map_err(|p| one(problem(display, &p)))?;
    let mut normalized_sha256 = normalized.finish();
    let mtime = meta.modified().ok().map(|t| t.into_std());
    let starts_with_brace = head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    let mut form = Form::Plain;
    let mut deliverables = Vec::new();
    if json_candidate && starts_with_brace {
        if hashed.size > MAX_PAYLOAD_BYTES {
            return Err(one(Finding::new(
                Code::ReceiptPayloadInvalid,
                Some(display),
                format!("a JSON receipt is limited to {MAX_PAYLOAD_BYTES} bytes"),
            )));
        }
        let value = crate::json::parse_strict(&head).map_err(|e| {
            one(Finding::new(
                Code::ReceiptPayloadInvalid,
                Some(display),
                format!("the JSON receipt does not parse: {e}"),
            ))
        })?;
        if value.get("evidence").is_some() {
            form = Form::Payload;
            normalized_sha256 = reuse::normalized_payload(&value);
            deliverables =
                structured::verify(c.root, display, value, c.binding, c.evidence, c.deadline)?;
        }
    }
    if form == Form::Plain {
        if c.policy.require_structured {
            return Err(one(Finding::new(
                Code::ReceiptStructuredRequired,
                Some(display),
                "plain receipts are not accepted here; write an evidence payload (`{\"evidence\": 1, …}`) naming the deliverables",
            )));
        }
        let inspect = &head[..head.len().min(plain::INSPECT_BYTES)];
        plain::check(display, inspect, hashed.size, &c.policy.substance).map_err(|f| one(*f))?;
    }
    let freshness = if !c.policy.check_freshness {
        "disabled"
    } else {
        match ((c.transcript_birth)(), mtime) {
            (Some(birth), Some(m)) => {
                if m + FRESHNESS_SLACK < birth {
                    return Err(one(Finding::new(
                        Code::ReceiptStale,
                        Some(display),
                        "the receipt was last modified before this worker started; write a receipt for this task",
                    )
                    .with_detail(json!({
                        "receipt_mtime": crate::time::rfc3339_ms(m),
                        "transcript_birth": crate::time::rfc3339_ms(birth),
                    }))));
                }
                "checked"
            }
            _ => "unchecked",
        }
    };
    Ok(Verified {
        path: display.to_owned(),
        size: hashed.size,
        sha256: hashed.sha256,
        normalized_sha256,
        form,
        freshness,
        deliverables,
    })
}

/// Maps a sandbox problem with the receipt file to its finding.
pub fn problem(path: &str, p: &FileProblem) -> Finding {
    let (code, message) = match p {
        FileProblem::Symlink { component } => (
            Code::ReceiptSymlink,
            format!("`{component}` is a symlink; receipts are never reached through symlinks"),
        ),
        FileProblem::EscapesRoot => (
            Code::ReceiptOutsideRoot,
            "the receipt path leads outside the workspace".to_owned(),
        ),
        FileProblem::Missing => (
            Code::ReceiptNotFound,
            "no file exists at the receipt path".into(),
        ),
        FileProblem::NotRegular { kind } => (
            Code::ReceiptNotRegular,
            format!("the receipt path names a {kind}, not a regular file"),
        ),
        FileProblem::Empty => (Code::ReceiptEmpty, "the receipt file is empty".into()),
        FileProblem::HardLinked { nlink } => (
            Code::ReceiptHardlink,
            format!("the receipt has {nlink} hard links; write it as a file of its own"),
        ),
        FileProblem::TooLarge { size, max } => (
            Code::ReceiptTooLarge,
            format!("the receipt is at least {size} bytes; the limit is {max}"),
        ),
        FileProblem::Changed => (
            Code::ReceiptUnreadable,
            "the receipt changed while it was being verified".into(),
        ),
        FileProblem::Deadline => (
            Code::ReceiptVerifyTimeout,
            "verifying the receipt exceeded subagent_stop.verify_budget_ms".into(),
        ),
        FileProblem::Io(e) => (
            Code::ReceiptUnreadable,
            format!("could not read the receipt: {e}"),
        ),
    };
    Finding::new(code, Some(path), message)
}

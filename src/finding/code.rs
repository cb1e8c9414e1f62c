//! The catalogue of finding codes. Names are stable API: CI systems, SARIF
//! rules and users' scripts key on them. The table of docs/codes.md#finding-codes is checked
//! against [`Code::ALL`] by a test.

use std::fmt;

use serde::{Serialize, Serializer};

/// How a finding bears on the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Definitive: the evidence is wrong.
    Fail,
    /// The verifier could not decide (I/O error, invalid rules, unreadable input).
    Unverifiable,
    /// Reported, never fails on its own (unless a strict mode escalates it).
    Warning,
    /// Informational.
    Info,
}

macro_rules! codes {
    ($( $variant:ident = $name:literal, $class:ident, $summary:literal; )*) => {
        /// A stable finding code; `Display` is the SCREAMING_SNAKE name.
        #[non_exhaustive]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $(
                #[doc = $summary]
                $variant,
            )*
        }

        impl Code {
            /// Every code, in catalogue order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The stable SCREAMING_SNAKE name.
            pub fn name(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            /// Default class of a finding with this code.
            pub fn class(self) -> Class {
                match self { $(Code::$variant => Class::$class,)* }
            }

            /// One-sentence meaning (docs/codes.md table, SARIF rule help).
            pub fn summary(self) -> &'static str {
                match self { $(Code::$variant => $summary,)* }
            }

            /// Looks a code up by its name.
            pub fn from_name(name: &str) -> Option<Code> {
                match name { $($name => Some(Code::$variant),)* _ => None }
            }
        }
    };
}

codes! {
    // docs/verify.md#ev-2 step 1: lexical.
    PathEmpty = "PATH_EMPTY", Fail, "A declared path is empty.";
    PathControlChar = "PATH_CONTROL_CHAR", Fail, "A path contains NUL, another control character or a bidirectional control (U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069).";
    PathBackslash = "PATH_BACKSLASH", Fail, "A path contains a backslash; paths use forward slashes.";
    PathAbsolute = "PATH_ABSOLUTE", Fail, "A path is absolute (leading `/`, drive letter or UNC prefix); paths are relative to the root.";
    PathTraversal = "PATH_TRAVERSAL", Fail, "A path contains a `..` component.";
    PathNotClean = "PATH_NOT_CLEAN", Fail, "A path has `.` or empty components or a trailing `/` (it must equal its clean form).";
    PathTooLong = "PATH_TOO_LONG", Fail, "A path exceeds `limits.maxPathBytes` or a component exceeds `limits.maxComponentBytes`.";
    PathForbidden = "PATH_FORBIDDEN", Fail, "A path lies in a forbidden location (`.git`, the engine's own state directories).";
    // docs/verify.md#ev-2 step 2: policy.
    PathNotAllowed = "PATH_NOT_ALLOWED", Fail, "A deliverable matches no `deliverables.allow` glob or matches a `deliverables.deny` glob.";
    ArtifactOutsideEvidenceRoot = "ARTIFACT_OUTSIDE_EVIDENCE_ROOT", Fail, "An artifact path does not lie under the evidence root.";
    // docs/verify.md#ev-2 step 3: confined open.
    PathSymlink = "PATH_SYMLINK", Fail, "A symlink was met at some component of the path; symlinks are never followed.";
    PathEscapesRoot = "PATH_ESCAPES_ROOT", Fail, "The sandbox reported an escape from the root (defence in depth; validated paths cannot produce it).";
    FileMissing = "FILE_MISSING", Fail, "Nothing exists at the path, or a component on the way is not a directory.";
    // docs/verify.md#ev-2 step 4: handle checks.
    NotRegularFile = "NOT_REGULAR_FILE", Fail, "The path names a directory, FIFO, socket or device, not a regular file.";
    FileEmpty = "FILE_EMPTY", Fail, "The file is empty.";
    FileHardlinked = "FILE_HARDLINKED", Fail, "The file has more than one hard link (it may be reachable from outside the root).";
    FileTooLarge = "FILE_TOO_LARGE", Fail, "The file is larger than `limits.maxFileBytes`.";
    // docs/verify.md#ev-2 steps 5-6: hash and re-check.
    DigestMismatch = "DIGEST_MISMATCH", Fail, "The file's SHA-256 differs from the declared `sha256`.";
    DigestInvalid = "DIGEST_INVALID", Fail, "A declared `sha256` is not 64 lowercase hex digits.";
    FileChangedDuringCheck = "FILE_CHANGED_DURING_CHECK", Fail, "The file's size, modification time or identity changed while it was verified.";
    // docs/verify.md#ev-2 globs.
    GlobTooFewMatches = "GLOB_TOO_FEW_MATCHES", Fail, "A glob deliverable matched fewer files than its `min`.";
    GlobTooManyMatches = "GLOB_TOO_MANY_MATCHES", Fail, "A glob deliverable matched more files than its `max`.";
    GlobInvalid = "GLOB_INVALID", Fail, "A glob is unparsable, contains `..`, starts with `/`, or has `min` < 1 or `max` < `min`, or the payload declares more globs than `limits.maxGlobDeliverables`.";
    // docs/verify.md#ev-3 payload-level.
    EvidenceParseError = "EVIDENCE_PARSE_ERROR", Fail, "The payload is not JSON, is over the size limit, is not UTF-8 or has duplicate keys.";
    EvidenceSchemaInvalid = "EVIDENCE_SCHEMA_INVALID", Fail, "The payload has wrong types, unknown or missing fields, or `evidence` is not 1.";
    EvidenceNoDeliverables = "EVIDENCE_NO_DELIVERABLES", Fail, "`deliverables` is empty: nothing to check is a failure, never a pass.";
    EvidenceSelfOnly = "EVIDENCE_SELF_ONLY", Fail, "Every deliverable is the payload (or receipt) file itself or lies under the evidence root: evidence must prove something other than itself; name a file the work changed.";
    ArtifactIdDuplicate = "ARTIFACT_ID_DUPLICATE", Fail, "Two artifacts share one `id`.";
    ArtifactRefUnknown = "ARTIFACT_REF_UNKNOWN", Fail, "A verification check names an artifact id that does not exist.";
    ArtifactKindUnknown = "ARTIFACT_KIND_UNKNOWN", Fail, "An artifact `kind` is not listed in the rules' `artifactKinds`.";
    VerdictNotPassed = "VERDICT_NOT_PASSED", Fail, "`verification.verdict` is `failed` or `blocked`.";
    VerdictInconsistent = "VERDICT_INCONSISTENT", Fail, "The verdict is `passed` but a listed check has a non-zero `exitCode`.";
    PlaceholderText = "PLACEHOLDER_TEXT", Fail, "A required text is a placeholder (`todo`, `tbd`, `<replace:`, `{{`, …).";
    GoalUnknown = "GOAL_UNKNOWN", Fail, "`goalId` names no goal of the plan (plan context only).";
    CriterionUnknown = "CRITERION_UNKNOWN", Fail, "A `criterionIds` entry names no criterion of the goal (plan context only).";
    // docs/verify.md#ev-5: could not verify.
    IoError = "IO_ERROR", Unverifiable, "An I/O error other than the mapped ones (for example permission denied) prevented a decision.";
    RulesInvalid = "RULES_INVALID", Unverifiable, "A rules file (embedded, repository override or `--rules`) is not valid.";
    RootUnavailable = "ROOT_UNAVAILABLE", Unverifiable, "The root directory does not exist or cannot be opened.";
    PayloadUnreadable = "PAYLOAD_UNREADABLE", Unverifiable, "The payload file itself cannot be read (missing, not a regular file, permission denied).";
    VerifyTimeout = "VERIFY_TIMEOUT", Unverifiable, "Verification did not finish within its time budget.";
    WalkDepthLimit = "WALK_DEPTH_LIMIT", Unverifiable, "A directory walk (glob expansion, evidence payload discovery) met a directory nested deeper than 128 levels below its start and did not enter it, so what lies below was not checked.";
    // docs/state-formats.md#ge-2: ledger chain verification.
    LedgerTornTail = "LEDGER_TORN_TAIL", Fail, "Bytes after the ledger's last newline do not parse as a JSON object (a torn write).";
    LedgerUnterminated = "LEDGER_UNTERMINATED", Warning, "The ledger's last record is a JSON object without its terminating newline.";
    LedgerRecordInvalid = "LEDGER_RECORD_INVALID", Fail, "A ledger record is not a JSON object.";
    LedgerNotChained = "LEDGER_NOT_CHAINED", Fail, "The ledger has no hash-chained record at all (written only by legacy tools, or stripped of its chain); a warning with `--allow-legacy`.";
    LedgerChainBroken = "LEDGER_CHAIN_BROKEN", Fail, "A chained record's `prev` differs from the hash of the record before it (an edit).";
    LedgerSeqGap = "LEDGER_SEQ_GAP", Fail, "A chained record's `seq` is not the previous chained `seq` + 1.";
    LedgerRevisionRegressed = "LEDGER_REVISION_REGRESSED", Fail, "A chained record's `revision` is lower than an earlier one's.";
    LedgerForeignRecord = "LEDGER_FOREIGN_RECORD", Fail, "An unchained record appears after the chain start (always an error in the CI audit: no downgrade).";
    LedgerBehindPlan = "LEDGER_BEHIND_PLAN", Warning, "The plan is one revision ahead of the ledger and carries the missing entries (recoverable).";
    LedgerPlanMismatch = "LEDGER_PLAN_MISMATCH", Fail, "The plan's revision and the ledger's last revision disagree beyond recovery.";
    LedgerArchiveMismatch = "LEDGER_ARCHIVE_MISMATCH", Fail, "`plan_created.replaced.previousHead` differs from the archived ledger's last record.";
    // docs/gates.md#qg-7: gate documents. File checks of gate artifacts use the sandbox codes above.
    GateJsonInvalid = "GATE_JSON_INVALID", Fail, "The gate is not JSON, has a duplicate key, is not an object or exceeds `limits.maxGateBytes`.";
    GateSectionMissing = "GATE_SECTION_MISSING", Fail, "A required gate section is absent or not an object.";
    GateFieldRequired = "GATE_FIELD_REQUIRED", Fail, "A gate text field is absent or blank, or a required gate array or value is absent.";
    GateFieldType = "GATE_FIELD_TYPE", Fail, "A gate field has the wrong JSON type (for example `fullRerun` not a boolean, `blockers` not an array).";
    GateFieldPlaceholder = "GATE_FIELD_PLACEHOLDER", Fail, "A gate text, path or array element is a placeholder (`todo`, `tbd`, `<replace:…>`, …).";
    GateArrayEmpty = "GATE_ARRAY_EMPTY", Fail, "A gate list that must be non-empty is empty.";
    GateValueMismatch = "GATE_VALUE_MISMATCH", Fail, "A gate field does not have its required literal value (`APPROVE`, `passed`, `true`, `CLEAR`, a status set).";
    GateRoleNotAccepted = "GATE_ROLE_NOT_ACCEPTED", Fail, "A gate section's `by` is not one of the rule file's acceptors for that section.";
    GateBlockersNotEmpty = "GATE_BLOCKERS_NOT_EMPTY", Fail, "A gate section's `blockers` is not empty.";
    GateVerdictInvalid = "GATE_VERDICT_INVALID", Fail, "A surface row is not `passed`, or an adversarial case is neither `passed` nor `not_applicable` with a reason.";
    GateSurfaceUnsupported = "GATE_SURFACE_UNSUPPORTED", Fail, "A manual-QA `surface` is not one of the rules' `qaSurfaces`.";
    GateArtifactKindUnsupported = "GATE_ARTIFACT_KIND_UNSUPPORTED", Fail, "A gate artifact `kind` is not one of the rules' `artifactKinds`.";
    GateArtifactIdDuplicate = "GATE_ARTIFACT_ID_DUPLICATE", Fail, "Two gate artifacts share one `id`.";
    GateArtifactRefUnknown = "GATE_ARTIFACT_REF_UNKNOWN", Fail, "A gate row's `artifactRefs` names an artifact id that does not exist.";
    GateSurfaceArtifactIncompatible = "GATE_SURFACE_ARTIFACT_INCOMPATIBLE", Fail, "A surface row references an artifact whose kind is not allowed for its surface.";
    GateArtifactOutsideScope = "GATE_ARTIFACT_OUTSIDE_SCOPE", Fail, "A gate artifact or report path does not lie strictly below the scope directory (attempt directory or evidence root).";
    GateArtifactLimit = "GATE_ARTIFACT_LIMIT", Fail, "The gate names more distinct artifact and report paths than `limits.maxArtifacts`.";
    GateCoverageNotInteger = "GATE_COVERAGE_NOT_INTEGER", Fail, "A coverage count is fractional, in exponent form, negative or out of range.";
    GateCoverageEmpty = "GATE_COVERAGE_EMPTY", Fail, "`criteriaCoverage.totalCriteria` is 0: a gate that covers nothing proves nothing.";
    GateCoverageIncomplete = "GATE_COVERAGE_INCOMPLETE", Fail, "`criteriaCoverage.passCount` is below `totalCriteria`.";
    GateCoverageInconsistent = "GATE_COVERAGE_INCONSISTENT", Fail, "`criteriaCoverage.passCount` is above `totalCriteria`.";
    GateCoverageMismatch = "GATE_COVERAGE_MISMATCH", Fail, "The gate's coverage counts differ from the counts recomputed from the plan's scope criteria.";
    GateCriterionRefUnknown = "GATE_CRITERION_REF_UNKNOWN", Fail, "A `criterionRef` names no criterion of the gate's scope.";
    GateCriterionRefAmbiguous = "GATE_CRITERION_REF_AMBIGUOUS", Fail, "A bare `criterionRef` matches criteria of several goals of the scope.";
    GateCriterionUncovered = "GATE_CRITERION_UNCOVERED", Fail, "Scope criteria have no `passed` surface row referencing them.";
    GateReportVerdictMissing = "GATE_REPORT_VERDICT_MISSING", Fail, "A report file lacks the `VERDICT: <recommendation>` line the rules require.";
    GateCodeQualityWatch = "GATE_CODE_QUALITY_WATCH", Warning, "The five-section `codeReview.codeQualityStatus` is `WATCH`: the gate passes and the review must be surfaced.";
    GateFieldUnknown = "GATE_FIELD_UNKNOWN", Warning, "A gate key the family does not define (an error with `unknownFields: reject`).";
    GatePlanContextSkipped = "GATE_PLAN_CONTEXT_SKIPPED", Info, "`gate check` ran without `--goal-id`: plan-context checks were skipped.";
    GateRulesNotPlan = "GATE_RULES_NOT_PLAN", Warning, "The gate was checked with rules other than the plan's `gateRules`.";
    // docs/hook-contracts.md#h-3, docs/hook-contracts.md#h-9: SubagentStop evidence receipts.
    ReceiptMissing = "RECEIPT_MISSING", Fail, "The worker's final message names no receipt (no marker, empty token or no message).";
    ReceiptPlaceholder = "RECEIPT_PLACEHOLDER", Fail, "The receipt token or the receipt's content is a placeholder (`<path>`, `{{`, `<replace:`, …).";
    ReceiptPathInvalid = "RECEIPT_PATH_INVALID", Fail, "The receipt path is lexically invalid (NUL, `..`, trailing separator, `~`, backslash, foreign drive).";
    ReceiptOutsideRoot = "RECEIPT_OUTSIDE_ROOT", Fail, "The receipt path does not lie under the evidence root of the workspace.";
    ReceiptSymlink = "RECEIPT_SYMLINK", Fail, "A symlink was met on the receipt path (the evidence root included).";
    ReceiptHardlink = "RECEIPT_HARDLINK", Fail, "The receipt has more than one hard link.";
    ReceiptNotFound = "RECEIPT_NOT_FOUND", Fail, "No file exists at the receipt path.";
    ReceiptNotRegular = "RECEIPT_NOT_REGULAR", Fail, "The receipt path names a directory, FIFO, socket or device.";
    ReceiptEmpty = "RECEIPT_EMPTY", Fail, "The receipt file is empty.";
    ReceiptUnreadable = "RECEIPT_UNREADABLE", Fail, "An I/O error prevented reading the receipt.";
    ReceiptTooLarge = "RECEIPT_TOO_LARGE", Fail, "The receipt exceeds `subagent_stop.max_receipt_bytes`.";
    ReceiptNotText = "RECEIPT_NOT_TEXT", Fail, "A plain receipt is not UTF-8 text.";
    ReceiptTooShort = "RECEIPT_TOO_SHORT", Fail, "A plain receipt has fewer than `subagent_stop.min_receipt_chars` characters after trimming.";
    ReceiptStale = "RECEIPT_STALE", Fail, "The receipt was last modified before the worker's transcript was created.";
    ReceiptReused = "RECEIPT_REUSED", Fail, "The receipt's digest was already accepted for another agent or turn.";
    ReceiptStructuredRequired = "RECEIPT_STRUCTURED_REQUIRED", Fail, "A plain receipt was given while evidence payloads are required.";
    ReceiptVerifyTimeout = "RECEIPT_VERIFY_TIMEOUT", Fail, "Verifying the receipt exceeded `subagent_stop.verify_budget_ms`.";
    ReceiptPayloadInvalid = "RECEIPT_PAYLOAD_INVALID", Fail, "A structured receipt is not valid JSON or not a valid evidence payload v1.";
    ReceiptBindingMismatch = "RECEIPT_BINDING_MISMATCH", Fail, "A structured receipt is bound to another session, agent or turn.";
    // docs/verify.md#ev-7: repository mode of `verify-evidence` (the CI audit).
    LedgerDigestMismatch = "LEDGER_DIGEST_MISMATCH", Fail, "A file recorded in a ledger's `files` (accepted evidence, gate artifacts, receipts) no longer has the recorded size and SHA-256.";
    LedgerFileMissing = "LEDGER_FILE_MISSING", Fail, "A file recorded in a ledger's `files` no longer exists in the tree.";
    LedgerFilesInvalid = "LEDGER_FILES_INVALID", Fail, "A ledger entry's `files` (or a gate-ledger `receipt`) is not a list of `{path, size, sha256}` objects with 64-hex digests.";
    PlanCorrupt = "PLAN_CORRUPT", Fail, "A state directory's `goals.json` is not valid JSON, exceeds the plan size limit, breaks the plan's field rules, or its completion keys disagree.";
    CompletionUnbacked = "COMPLETION_UNBACKED", Fail, "The plan records aggregate completion without a matching final-gate `aggregate_completed` ledger entry, or while a goal is still in `needs_user_decision`.";
    LedgerReceiptReused = "LEDGER_RECEIPT_REUSED", Fail, "The hook gate ledger accepts one receipt digest for two different agents or turns.";
    LedgerReceiptWaived = "LEDGER_RECEIPT_WAIVED", Warning, "The hook gate ledger records a `receipt_waived` entry: a worker stopped without accepted evidence under context pressure (a failure with `--strict`).";
    LedgerReceiptOverride = "LEDGER_RECEIPT_OVERRIDE", Warning, "The hook gate ledger records a `receipt_override` entry: the attempt cap let a worker stop without accepted evidence (a failure with `--strict`).";
    LedgerRewound = "LEDGER_REWOUND", Fail, "A goal ledger in the tree fell behind the head a hook observed on this machine (per-user witness): records were cut or rewritten. Checked only by local `verify-evidence` where the witness exists.";
    GateLedgerRewound = "GATE_LEDGER_REWOUND", Warning, "The hook gate ledger records that its in-tree copy had lost records of the per-user witness (deleted or truncated) and was restored (a failure with `--strict`).";
    GateLedgerForged = "GATE_LEDGER_FORGED", Warning, "The hook gate ledger records that its in-tree copy held records the per-user witness never wrote; they were dropped (a failure with `--strict`).";
    NothingToVerify = "NOTHING_TO_VERIFY", Fail, "Repository mode found no goal-engine state directory, hook gate ledger or evidence payload to audit (`--allow-empty` accepts that).";
    // docs/verify.md#ev-7 step 1: legacy lines before the chain start.
    LedgerLegacyPrefix = "LEDGER_LEGACY_PREFIX", Info, "Unchained records written before hash chaining precede the first chained record; the chain does not cover them (the last one is anchored by the first chained record's `prev`).";
    // Tamper evidence beyond the chain: the engine's own index of the last record.
    // docs/threat-model.md#i7: the plan bound to its ledger.
    PlanTampered = "PLAN_TAMPERED", Fail, "`goals.json` differs from the plan body its ledger recorded (`planSha256`), or names no ledger head although its ledger binds plans: the plan was edited outside the goal engine.";
    LedgerTampered = "LEDGER_TAMPERED", Fail, "The ledger record the plan names as its head (`lastMutation.ledgerHead`) is missing or hashes differently, or a record the engine did not write under this plan follows it: the ledger was cut, edited or extended by hand.";
    TamperAcknowledged = "TAMPER_ACKNOWLEDGED", Warning, "The ledger records a `tamper_acknowledged` entry: `repair --accept-tampered` adopted a plan its ledger did not vouch for (a failure with `--strict`).";
    PlanNotBound = "PLAN_NOT_BOUND", Info, "Neither the plan nor its ledger carries the plan/ledger binding (written by the Node tools or an older evidence-gate): hand edits of this plan cannot be detected until the engine next writes it.";
    // docs/threat-model.md#i12: only the user decides.
    UserDecisionUnverified = "USER_DECISION_UNVERIFIED", Warning, "A plan records a user decision (waiver, supersede or unblock with `--user-decision`) that no `user_decision_verified` gate-ledger record backs: the user-prompt witness never saw the user make it (a failure with `--strict`).";
    UserDecisionVerified = "USER_DECISION_VERIFIED", Info, "A plan's user decision is backed by a `user_decision_verified` gate-ledger record: a user prompt of the session carried it before it was recorded.";
    RunWaived = "RUN_WAIVED", Info, "Every goal of the plan was waived by a user decision: the run ended as waived, not complete (no final gate passed).";
    SteeringKeyReaccepted = "STEERING_KEY_REACCEPTED", Fail, "A chained steering entry was accepted under an idempotency key or prompt signature an earlier chained entry of the same ledger had already been accepted under: the engine's dedupe was bypassed (its key index `.ledger.keys`/`.ledger.keyhash` edited), so one proposal was applied twice.";
    LedgerIndexMismatch = "LEDGER_INDEX_MISMATCH", Fail, "`.ledger.idx` names a last record the ledger no longer holds at that offset (or a longer ledger): the ledger was rewritten after the engine last wrote it, e.g. its last record edited in place.";
    // docs/threat-model.md#i8: `--base REF`, recorded history is append-only against git.
    LedgerRewritten = "LEDGER_REWRITTEN", Fail, "With `--base REF`: a ledger present at REF does not keep REF's bytes as its prefix at HEAD (cut, edited or re-chained), and no archived run of the engine holds them.";
    StateVanished = "STATE_VANISHED", Fail, "With `--base REF`: a state directory, plan, ledger or archived run present at REF is gone at HEAD (deleted, moved or renamed), and no archived run the successor names holds it.";
    StateHidden = "STATE_HIDDEN", Fail, "With `--base REF`: a plan or ledger lies in a dot-named directory under a state directory (other than the engine's `.archive`), where the audit does not look.";
    ArchivedEvidenceChanged = "ARCHIVED_EVIDENCE_CHANGED", Warning, "With `--base REF`: a run archived in this change recorded a file that no longer has the recorded digest (a failure with `--strict`).";
    RulesChanged = "RULES_CHANGED", Warning, "With `--base REF`: `.evidence-gate/rules.json` differs from REF (added, changed or removed); the change moves the auditor's own policy (a failure with `--strict`).";
    WiringChanged = "WIRING_CHANGED", Warning, "With `--base REF`: a hook wiring file in the repository (`.codex/hooks.json`, `.claude/settings.json`, …) differs from REF (a failure with `--strict`).";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for c in Code::ALL {
            assert!(seen.insert(c.name()), "duplicate {}", c.name());
            assert_eq!(Code::from_name(c.name()), Some(*c));
            assert!(
                c.name()
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b == b'_')
            );
            assert!(c.summary().ends_with('.'));
        }
    }
}

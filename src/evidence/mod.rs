//! Evidence payload v1, the verifier pipeline and the verdict. Reads the
//! filesystem only through [`crate::sandbox`]; findings and their codes are
//! [`crate::finding`]'s (re-exported here, where the verifier's callers
//! look for them).

pub mod payload;
pub(crate) mod placeholder;
pub mod verify;

pub use crate::finding::{
    Class, Code, Finding, Report, ReportBuilder, ReportKind, Severity, Stats, Verdict,
    VerifiedFile, code, report,
};
pub use payload::Payload;
pub use verify::{
    ClaimPolicy, FileClaim, FileProgress, PlanContext, Root, VerifyOptions, verify_files,
    verify_payload, verify_payload_with_progress,
};

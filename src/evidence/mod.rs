//! Evidence payload v1, the verifier pipeline, findings with stable codes and
//! the verdict. Reads the filesystem only through [`crate::sandbox`].

pub mod code;
pub mod payload;
pub mod placeholder;
pub mod report;
pub mod verify;

pub use code::{Class, Code};
pub use payload::Payload;
pub use report::{
    Finding, Report, ReportBuilder, ReportKind, Severity, Stats, Verdict, VerifiedFile,
};
pub use verify::{
    ClaimPolicy, FileClaim, FileProgress, PlanContext, Root, VerifyOptions, verify_files,
    verify_payload, verify_payload_with_progress,
};
